//! No import circle between the files of spear's execution crates.
//!
//! A file imports another when it names an item the other holds: through `use`, or through a path
//! in its code (`crate::a::B`, `super::c`, `child::f()`). An item is held by the file of the
//! longest module prefix of its path, after following `pub use` re-exports to where the item is
//! defined, so a `mod.rs` that only declares and re-exports its children is not a link between
//! them. Test modules (`#[cfg(test)] mod x;` and inline `#[cfg(test)] mod x { .. }`) are left out:
//! a test imports what it tests. Paths inside macro invocations are not seen.
//!
//! A circle means two files cannot be read, changed or moved one without the other; the fix is to
//! move what both need into a file named for what it is. The test names every circle it finds
//! with its links, and a positive control shows the analysis sees a circle where there is one.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The crates whose files must form no circle.
const CHECKED: &[&str] = &["spear-tools", "spear-runtime", "spear-sandbox"];

type ModPath = Vec<String>;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A crate's source: every file under `src/`, by module path, and the text of each.
struct Crate {
    files: BTreeMap<ModPath, syn::File>,
}

impl Crate {
    fn load(src: &Path) -> Crate {
        let mut found = BTreeMap::new();
        collect(src, src, &mut found);
        let mut tests = BTreeSet::new();
        for (module, file) in &found {
            for item in &file.items {
                if let syn::Item::Mod(m) = item
                    && m.content.is_none()
                    && is_test(&m.attrs)
                {
                    let mut path = module.clone();
                    path.push(m.ident.to_string());
                    tests.insert(path);
                }
            }
        }
        found.retain(|module, _| !tests.iter().any(|t| module.starts_with(t)));
        Crate { files: found }
    }

    fn from_sources(sources: &[(&str, &str)]) -> Crate {
        let files = sources
            .iter()
            .map(|(module, text)| {
                let path = module
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                (path, syn::parse_file(text).unwrap())
            })
            .collect();
        Crate { files }
    }

    /// The links between files: module -> modules whose items it names.
    fn links(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut named = BTreeMap::new();
        let mut reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>> = BTreeMap::new();
        for (module, file) in &self.files {
            let mut seen = Seen {
                crate_: self,
                module,
                paths: Vec::new(),
                reexports: BTreeMap::new(),
            };
            seen.visit_file(file);
            reexports.insert(module.clone(), seen.reexports);
            named.insert(module.clone(), seen.paths);
        }
        named
            .into_iter()
            .map(|(module, paths)| {
                let targets = paths
                    .iter()
                    .filter_map(|p| self.holder(p, &reexports, 0))
                    .filter(|t| *t != module)
                    .collect();
                (module, targets)
            })
            .collect()
    }

    /// The file that holds the item `path` names (absolute, without `crate`).
    fn holder(
        &self,
        path: &[String],
        reexports: &BTreeMap<ModPath, BTreeMap<String, ModPath>>,
        depth: usize,
    ) -> Option<ModPath> {
        let prefix = (0..=path.len())
            .rev()
            .find(|&i| self.files.contains_key(&path[..i]))?;
        let module = path[..prefix].to_vec();
        if let Some(name) = path.get(prefix)
            && let Some(target) = reexports.get(&module).and_then(|r| r.get(name))
            && depth < 8
            && target.as_slice() != &path[..=prefix]
        {
            let mut followed = target.clone();
            followed.extend_from_slice(&path[prefix + 1..]);
            return self.holder(&followed, reexports, depth + 1);
        }
        Some(module)
    }

    /// `path` as written in `module`, made absolute; `None` for paths outside the crate.
    fn absolute(&self, module: &[String], path: &[String]) -> Option<ModPath> {
        let first = path.first()?;
        if first == "crate" {
            return Some(path[1..].to_vec());
        }
        if first == "super" || first == "self" {
            let mut base = module.to_vec();
            let mut rest = path;
            while let Some(head) = rest.first() {
                match head.as_str() {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
            base.extend_from_slice(rest);
            return Some(base);
        }
        let mut child = module.to_vec();
        child.push(first.clone());
        self.files.contains_key(&child).then(|| {
            let mut full = module.to_vec();
            full.extend_from_slice(path);
            full
        })
    }
}

/// Walks `dir`, parsing every `.rs` file under the module path its place gives it.
fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<ModPath, syn::File>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap().with_extension("");
            let mut module: ModPath = relative
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("lib" | "main" | "mod")
            ) {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.insert(module, file);
        }
    }
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// What one file names: absolute paths of crate items, and its own re-exports by name.
struct Seen<'a> {
    crate_: &'a Crate,
    module: &'a [String],
    paths: Vec<ModPath>,
    reexports: BTreeMap<String, ModPath>,
}

impl Seen<'_> {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, public: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, public);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.used(prefix, &n.ident, &n.ident, public),
            syn::UseTree::Rename(r) => self.used(prefix, &r.ident, &r.rename, public),
            syn::UseTree::Glob(_) => {
                if let Some(abs) = self.crate_.absolute(self.module, prefix) {
                    self.paths.push(abs);
                }
            }
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree, public);
                }
            }
        }
    }

    fn used(&mut self, prefix: &[String], ident: &syn::Ident, name: &syn::Ident, public: bool) {
        let mut path = prefix.to_vec();
        if ident != "self" {
            path.push(ident.to_string());
        }
        let Some(abs) = self.crate_.absolute(self.module, &path) else {
            return;
        };
        if public {
            let name = if ident == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                name.to_string()
            };
            self.reexports.insert(name, abs.clone());
        }
        self.paths.push(abs);
    }
}

impl<'ast> Visit<'ast> for Seen<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if is_test(&u.attrs) {
            return;
        }
        let public = !matches!(u.vis, syn::Visibility::Inherited);
        self.use_tree(&mut Vec::new(), &u.tree, public);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: ModPath = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1
            && let Some(abs) = self.crate_.absolute(self.module, &segments)
        {
            self.paths.push(abs);
        }
        syn::visit::visit_path(self, p);
    }
}

/// The circles: strongly connected sets of more than one file (Tarjan's algorithm).
fn circles(links: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct Tarjan<'a> {
        links: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a ModPath) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.links.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut set = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on_stack.remove(w);
                    set.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.out.push(set);
                }
            }
        }
    }
    let mut t = Tarjan {
        links,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in links.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "lib.rs".to_owned()
    } else {
        module.join("::")
    }
}

/// Every circle of `krate`, each with its links, as lines of text.
fn report(krate: &Crate) -> Vec<String> {
    let links = krate.links();
    circles(&links)
        .iter()
        .map(|set| {
            let members: BTreeSet<&ModPath> = set.iter().collect();
            let edges: Vec<String> = set
                .iter()
                .flat_map(|a| {
                    links[a]
                        .iter()
                        .filter(|b| members.contains(b))
                        .map(move |b| format!("{} -> {}", name(a), name(b)))
                })
                .collect();
            edges.join(", ")
        })
        .collect()
}

#[test]
fn no_import_circle_between_files_of_the_execution_crates() {
    let mut found = Vec::new();
    for krate in CHECKED {
        let src = repo().join("crates").join(krate).join("src");
        let loaded = Crate::load(&src);
        assert!(loaded.files.len() > 5, "{krate}: too few files read");
        found.extend(report(&loaded).into_iter().map(|c| format!("{krate}: {c}")));
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_analysis_sees_circles_and_follows_reexports() {
    // Positive control: a direct circle through `use`, and one through a path in code.
    let circle = Crate::from_sources(&[
        ("", "mod a; mod b;"),
        ("a", "use crate::b::B; pub struct A;"),
        ("b", "pub struct B; fn f() -> crate::a::A { crate::a::A }"),
    ]);
    assert_eq!(report(&circle), ["a -> b, b -> a"]);
    // A child naming an item its parent defines, while the parent calls the child.
    let parent = Crate::from_sources(&[
        ("", "mod p;"),
        ("p", "mod c; pub struct Shared; fn run() { c::go() }"),
        ("p::c", "pub fn go() { let _ = super::Shared; }"),
    ]);
    assert_eq!(report(&parent), ["p -> p::c, p::c -> p"]);
    // A parent that only re-exports is no link: the child's name for a sibling's item goes to the
    // sibling's file; test modules are not seen.
    let clean = Crate::from_sources(&[
        ("", "mod p; pub use p::Shared;"),
        ("p", "mod c; mod s; pub use s::Shared; pub use c::go;"),
        ("p::s", "pub struct Shared;"),
        (
            "p::c",
            "use super::Shared; pub fn go() -> Shared { Shared } \
             #[cfg(test)] mod tests { use crate::p::c::go; }",
        ),
        ("p::d", "pub fn d() -> crate::Shared { crate::p::go() }"),
    ]);
    assert_eq!(report(&clean), Vec::<String>::new());
    let links = clean.links();
    let c = vec!["p".to_owned(), "c".to_owned()];
    let s = vec!["p".to_owned(), "s".to_owned()];
    let d = vec!["p".to_owned(), "d".to_owned()];
    assert_eq!(links[&c], BTreeSet::from([s.clone()]));
    assert_eq!(links[&d], BTreeSet::from([s, c]));
}
