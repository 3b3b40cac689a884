//! What the host offers a sandbox: its system directories, curated `/etc`, toolchains, and the
//! credential stores that must be masked. The only I/O here is looking (stat, readlink); the
//! choices are pure functions of what was seen, tested on their own.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};

use spear_core::credentials::{home_stores, is_credential_store};

use crate::spec::{Mask, SystemDir};

/// Entries of `/etc` that programs need (`ssl/certs`, not `ssl`, which holds `private/`): users and groups (names for `ls -l`, `id`), name
/// resolution files, the dynamic linker cache, time zone, TLS certificates, alternatives, shells and
/// profile, locale and MIME tables. Never `shadow`, `sudoers`, `ssh`, `npmrc`, `pip.conf`,
/// `gitconfig` or anything else that holds secrets or credentials of the host.
pub const ETC_ENTRIES: &[&str] = &[
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "magic",
    "magic.mime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "perl",
    "profile",
    "protocols",
    "services",
    "shells",
    "ssl/certs",
    "ssl/openssl.cnf",
    "terminfo",
    "timezone",
];

/// Prefixes of `/etc` entries that language runtimes read (`python3.11`, `java-17-openjdk`).
const ETC_PREFIXES: &[&str] = &["python3", "java-"];

/// Top-level directories of a Linux root that hold programs and libraries.
const SYSTEM_NAMES: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// A toolchain or dependency tree, bound read-only when it exists: where it is (the variable
/// when the host sets it, else the default under home), which parts of it are bound (the whole
/// tree when there are none), and whether the variable is exported into the sandbox.
struct Tree {
    var: Option<&'static str>,
    home: Option<&'static str>,
    parts: &'static [&'static str],
}

/// Toolchains and the dependency trees builds read. Only caches and installs: never the whole
/// `~/.m2` or `~/.gradle` (settings and properties there hold repository passwords), and of a
/// `GOPATH` only the module cache and the installed binaries (its `src` holds other projects).
/// A name ending in `*` is a prefix matched against the entries of its directory.
const TOOLCHAIN_TREES: &[Tree] = &[
    Tree {
        var: Some("CARGO_HOME"),
        home: Some(".cargo"),
        parts: &[],
    },
    Tree {
        var: Some("RUSTUP_HOME"),
        home: Some(".rustup"),
        parts: &[],
    },
    Tree {
        var: Some("PYENV_ROOT"),
        home: Some(".pyenv"),
        parts: &[],
    },
    Tree {
        var: Some("UV_PYTHON_INSTALL_DIR"),
        home: None,
        parts: &[],
    },
    Tree {
        var: None,
        home: Some(".local/share/uv"),
        parts: &[],
    },
    Tree {
        var: None,
        home: Some(".local/lib"),
        parts: &["python3*"],
    },
    Tree {
        var: None,
        home: Some("miniconda3"),
        parts: &[],
    },
    Tree {
        var: None,
        home: Some("anaconda3"),
        parts: &[],
    },
    Tree {
        var: None,
        home: Some("miniforge3"),
        parts: &[],
    },
    Tree {
        var: None,
        home: Some("mambaforge"),
        parts: &[],
    },
    Tree {
        var: Some("NVM_DIR"),
        home: Some(".nvm"),
        parts: &[],
    },
    Tree {
        var: Some("GOROOT"),
        home: None,
        parts: &[],
    },
    Tree {
        var: Some("GOMODCACHE"),
        home: None,
        parts: &[],
    },
    Tree {
        var: Some("GOPATH"),
        home: Some("go"),
        parts: &["pkg/mod", "bin"],
    },
    Tree {
        var: Some("JAVA_HOME"),
        home: None,
        parts: &[],
    },
    Tree {
        var: None,
        home: Some(".m2"),
        parts: &["repository"],
    },
    Tree {
        var: Some("GRADLE_USER_HOME"),
        home: Some(".gradle"),
        parts: &["caches", "wrapper"],
    },
];

/// Fixed toolchain locations (`/usr/local` is visible through `/usr` already).
const TOOLCHAIN_FIXED: &[&str] = &["/opt"];

/// The host's `/usr` and top-level system directories as they are: a merged-/usr host gets
/// symlinks, an older one gets binds.
pub fn system_dirs(root: &Path) -> Vec<SystemDir> {
    let mut dirs = vec![SystemDir::Bind(PathBuf::from("/usr"))];
    for name in SYSTEM_NAMES {
        let host = root.join(name);
        let inside = Path::new("/").join(name);
        if let Ok(target) = fs::read_link(&host) {
            dirs.push(SystemDir::Symlink {
                path: inside,
                target,
            });
        } else if host.is_dir() {
            dirs.push(SystemDir::Bind(inside));
        }
    }
    dirs
}

/// The curated `/etc` entries that exist on this host.
pub fn etc_entries(etc: &Path) -> Vec<PathBuf> {
    let mut names: Vec<String> = ETC_ENTRIES.iter().map(|s| (*s).to_owned()).collect();
    if let Ok(dir) = fs::read_dir(etc) {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if ETC_PREFIXES.iter().any(|p| name.starts_with(p)) {
                names.push(name);
            }
        }
    }
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| etc.join(n).exists())
        .map(|n| Path::new("/etc").join(n))
        .filter(|p| !is_credential_store(p))
        .collect()
}

/// What toolchain discovery reads from the host.
#[derive(Clone, Copy)]
pub struct ToolchainInputs<'a> {
    /// The operator's PATH.
    pub path: Option<&'a OsStr>,
    /// Reads a host environment variable.
    pub var: &'a dyn Fn(&str) -> Option<PathBuf>,
    /// The user's home.
    pub home: &'a Path,
    /// Workspace roots (host paths): never on PATH, never a toolchain.
    pub roots: &'a [PathBuf],
    /// Whether a path exists as a directory (a stat on the host; a table in tests).
    pub is_dir: &'a dyn Fn(&Path) -> bool,
    /// The entries of a directory, each with what it is, without following links (empty when it
    /// cannot be read).
    pub list: &'a dyn Fn(&Path) -> Vec<(OsString, EntryKind)>,
}

/// What a directory entry is, not following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A symbolic link.
    Link,
    /// Anything else.
    Other,
}

/// The sandbox's PATH and the toolchain directories to bind read-only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Toolchains {
    /// The PATH inside the sandbox, in the operator's order.
    pub path: Vec<PathBuf>,
    /// Directories to bind read-only. Credential files inside them are masked
    /// ([`crate::secret_masks`]).
    pub binds: Vec<PathBuf>,
    /// The toolchain variables of the trees that are bound (`CARGO_HOME`, `GOPATH`, ...), with
    /// the host's value or the default location.
    pub vars: Vec<(String, PathBuf)>,
}

/// Chooses PATH and toolchain binds. A PATH entry is kept when it is absolute, exists, and lies in
/// no workspace root: a writable root on PATH would let a planted `ls` run where the decision layer
/// assumed the system's. Entries outside the system directories become read-only binds, as do the
/// toolchain and dependency trees (`TOOLCHAIN_TREES`). Never a credential store, never the home
/// directory itself or one of its ancestors (that would expose every store under it). The
/// credential files inside a bound tree, at any depth, are the masks of [`crate::secret_masks`].
pub fn toolchains(inputs: &ToolchainInputs<'_>) -> Toolchains {
    // Each directory is listed once: a listing costs four system calls on the host.
    let listed = std::cell::RefCell::new(std::collections::HashMap::new());
    let list = |dir: &Path| -> Vec<(OsString, EntryKind)> {
        if let Some(seen) = listed.borrow().get(dir) {
            return Vec::clone(seen);
        }
        let entries = (inputs.list)(dir);
        listed
            .borrow_mut()
            .insert(dir.to_path_buf(), entries.clone());
        entries
    };
    let mut out = Toolchains::default();
    let in_root = |p: &Path| inputs.roots.iter().any(|r| p.starts_with(r));
    let bindable = |p: &Path| {
        p.is_absolute()
            && !is_credential_store(p)
            && !inputs.home.starts_with(p)
            && !in_root(p)
            && (inputs.is_dir)(p)
    };
    let system = |p: &Path| {
        ["/usr", "/bin", "/sbin", "/lib", "/lib64"]
            .iter()
            .any(|s| p.starts_with(s))
    };
    if let Some(path) = inputs.path {
        for dir in std::env::split_paths(path) {
            let normal = dir.components().all(|c| {
                matches!(
                    c,
                    std::path::Component::RootDir | std::path::Component::Normal(_)
                )
            });
            if !normal || !bindable(&dir) || out.path.contains(&dir) {
                continue;
            }
            if !system(&dir) {
                out.binds.push(dir.clone());
            }
            out.path.push(dir);
        }
    }
    for tree in TOOLCHAIN_TREES {
        let from_var = tree.var.and_then(|v| (inputs.var)(v));
        let Some(base) = from_var.or_else(|| tree.home.map(|d| inputs.home.join(d))) else {
            continue;
        };
        let mut chosen = Vec::new();
        if tree.parts.is_empty() {
            chosen.push(base.clone());
        }
        for part in tree.parts {
            chosen.extend(expand_glob(&base, part, &list));
        }
        let chosen: Vec<PathBuf> = chosen
            .into_iter()
            .filter(|d| bindable(d) && !system(d))
            .collect();
        let visible = !chosen.is_empty() || (system(&base) && (inputs.is_dir)(&base));
        if let (Some(var), true) = (tree.var, visible) {
            out.vars.push((var.to_owned(), base.clone()));
        }
        out.binds.extend(chosen);
    }
    for fixed in TOOLCHAIN_FIXED {
        let dir = PathBuf::from(fixed);
        if bindable(&dir) {
            out.binds.push(dir);
        }
    }
    out.binds.sort();
    out.binds.dedup();
    // A bind inside another bind adds nothing.
    let all = out.binds.clone();
    out.binds
        .retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
    out
}

/// `base` joined with `rel`, each `*`-ended component matched against the entries of its
/// directory; only paths that exist (as the listing shows them) are returned.
fn expand_glob(
    base: &Path,
    rel: &str,
    list: &dyn Fn(&Path) -> Vec<(OsString, EntryKind)>,
) -> Vec<PathBuf> {
    let mut found = vec![base.to_path_buf()];
    for part in rel.split('/') {
        let prefix = part.strip_suffix('*');
        found = found
            .iter()
            .flat_map(|dir| {
                list(dir)
                    .into_iter()
                    .filter(|(name, _)| {
                        let name = name.to_string_lossy();
                        prefix.map_or(name == part, |pre| name.starts_with(pre))
                    })
                    .map(|(name, _)| dir.join(name))
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    found
}

/// The entries of `dir` on the host, not following links; empty when it cannot be read.
pub fn host_list(dir: &Path) -> Vec<(OsString, EntryKind)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| {
            let kind = match e.file_type() {
                Ok(t) if t.is_symlink() => EntryKind::Link,
                Ok(t) if t.is_dir() => EntryKind::Dir,
                _ => EntryKind::Other,
            };
            (e.file_name(), kind)
        })
        .collect()
}

/// The credential stores under `home` that exist inside one of `bound` (host paths that the
/// sandbox binds): each must be masked. `exists` reports what is there (`Some(true)` for a
/// directory, `Some(false)` for anything else).
pub fn credential_masks(
    home: &Path,
    bound: &[PathBuf],
    exists: &dyn Fn(&Path) -> Option<bool>,
) -> Vec<Mask> {
    home_stores(home)
        .into_iter()
        .filter(|store| bound.iter().any(|b| store.starts_with(b) && store != b))
        .filter_map(|store| match exists(&store) {
            Some(true) => Some(Mask::Dir(store)),
            Some(false) => Some(Mask::File(store)),
            None => None,
        })
        .collect()
}

/// What is at `path` on the host, without following a final symlink: `Some(true)` for a
/// directory, `Some(false)` for anything else, `None` when nothing is.
pub fn host_entry(path: &Path) -> Option<bool> {
    fs::symlink_metadata(path).ok().map(|m| m.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    /// A host as a list of paths: a trailing `/` marks a directory, `@` a link.
    struct FakeFs(Vec<&'static str>);

    impl FakeFs {
        fn is_dir(&self, d: &Path) -> bool {
            self.0
                .iter()
                .any(|x| x.strip_suffix('/').is_some_and(|x| Path::new(x) == d))
        }

        fn list(&self, d: &Path) -> Vec<(OsString, EntryKind)> {
            self.0
                .iter()
                .filter_map(|x| {
                    let (path, kind) = if let Some(x) = x.strip_suffix('/') {
                        (x, EntryKind::Dir)
                    } else if let Some(x) = x.strip_suffix('@') {
                        (x, EntryKind::Link)
                    } else {
                        (*x, EntryKind::Other)
                    };
                    let path = Path::new(path);
                    (path.parent() == Some(d))
                        .then(|| (path.file_name().unwrap_or_default().to_owned(), kind))
                })
                .collect()
        }

        fn choose(&self, path: &str, vars: &[(&str, &str)]) -> Toolchains {
            let var = |name: &str| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| PathBuf::from(v))
            };
            let path = OsString::from(path);
            let roots = [p("/work/proj")];
            toolchains(&ToolchainInputs {
                path: Some(&path),
                var: &var,
                home: Path::new("/root"),
                roots: &roots,
                is_dir: &|d| self.is_dir(d),
                list: &|d| self.list(d),
            })
        }
    }

    #[test]
    fn toolchain_choice() {
        let fs = FakeFs(vec![
            "/root/.cargo/",
            "/root/.cargo/bin/",
            "/root/.pyenv/",
            "/root/.pyenv/shims/",
            "/usr/bin/",
            "/bin/",
            "/opt/",
            "/usr/local/bin/",
            "/work/proj/bin/",
            "/root/.ssh/",
            "/root/",
            "/srv/go/",
        ]);
        let t = fs.choose(
            "/root/.cargo/bin:/root/.cargo/bin:relative:/root/.pyenv/shims:/work/proj/bin:/root/.ssh:/root:/usr/local/bin:/usr/bin:/missing:/bin:/usr/../etc",
            &[("GOROOT", "/srv/go")],
        );
        assert_eq!(
            t.path,
            vec![
                p("/root/.cargo/bin"),
                p("/root/.pyenv/shims"),
                p("/usr/local/bin"),
                p("/usr/bin"),
                p("/bin")
            ]
        );
        assert_eq!(
            t.binds,
            vec![
                p("/opt"),
                p("/root/.cargo"),
                p("/root/.pyenv"),
                p("/srv/go")
            ]
        );
        let vars: Vec<&str> = t.vars.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(vars, ["CARGO_HOME", "PYENV_ROOT", "GOROOT"]);
    }

    /// Each row: the host's trees, its variables, and the binds and exported variables expected.
    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a table: one row per host layout of toolchain trees, with the binds and variables expected"
    )]
    fn toolchain_trees_table() {
        type Row = (
            &'static str,
            Vec<&'static str>,
            Vec<(&'static str, &'static str)>,
            Vec<&'static str>,
            Vec<(&'static str, &'static str)>,
        );
        let rows: Vec<Row> = vec![
            ("nothing installed", vec![], vec![], vec![], vec![]),
            (
                "rustup and cargo, whole (their credential files are masked)",
                vec![
                    "/root/.rustup/",
                    "/root/.cargo/",
                    "/root/.cargo/bin/",
                    "/root/.cargo/registry/",
                    "/root/.cargo/git/",
                    "/root/.cargo/env",
                    "/root/.cargo/credentials.toml",
                    "/root/.cargo/credentials",
                    "/root/.cargo/evil@",
                ],
                vec![],
                vec!["/root/.cargo", "/root/.rustup"],
                vec![
                    ("CARGO_HOME", "/root/.cargo"),
                    ("RUSTUP_HOME", "/root/.rustup"),
                ],
            ),
            (
                "CARGO_HOME elsewhere",
                vec!["/srv/cargo/", "/root/.cargo/"],
                vec![("CARGO_HOME", "/srv/cargo")],
                vec!["/srv/cargo"],
                vec![("CARGO_HOME", "/srv/cargo")],
            ),
            (
                "pyenv with a pip.conf in one version",
                vec![
                    "/root/.pyenv/",
                    "/root/.pyenv/bin/",
                    "/root/.pyenv/versions/",
                    "/root/.pyenv/versions/3.12.1/",
                    "/root/.pyenv/versions/3.12.1/pip.conf",
                    "/root/.pyenv/versions/3.12.1/lib/",
                    "/root/.pyenv/versions/3.11.0/",
                ],
                vec![],
                vec!["/root/.pyenv"],
                vec![("PYENV_ROOT", "/root/.pyenv")],
            ),
            (
                "uv, pip --user and conda",
                vec![
                    "/root/.local/",
                    "/root/.local/share/",
                    "/root/.local/share/uv/",
                    "/root/.local/share/uv/python/",
                    "/root/.local/share/uv/credentials/",
                    "/root/.local/lib/",
                    "/root/.local/lib/python3.11/",
                    "/root/.local/lib/python3.12/",
                    "/root/.local/lib/perl5/",
                    "/root/miniconda3/",
                    "/root/miniconda3/.condarc",
                    "/root/miniconda3/bin/",
                    "/root/mambaforge/",
                    "/srv/uvpy/",
                ],
                vec![("UV_PYTHON_INSTALL_DIR", "/srv/uvpy")],
                vec![
                    "/root/.local/lib/python3.11",
                    "/root/.local/lib/python3.12",
                    "/root/.local/share/uv",
                    "/root/mambaforge",
                    "/root/miniconda3",
                    "/srv/uvpy",
                ],
                vec![("UV_PYTHON_INSTALL_DIR", "/srv/uvpy")],
            ),
            (
                "nvm with a global npmrc",
                vec![
                    "/root/.nvm/",
                    "/root/.nvm/nvm.sh",
                    "/root/.nvm/versions/",
                    "/root/.nvm/versions/node/",
                    "/root/.nvm/versions/node/v20.1.0/",
                    "/root/.nvm/versions/node/v20.1.0/bin/",
                    "/root/.nvm/versions/node/v20.1.0/etc/",
                    "/root/.nvm/versions/node/v20.1.0/etc/npmrc",
                    "/root/.nvm/versions/node/v20.1.0/etc/other",
                    "/root/.nvm/.npmrc",
                ],
                vec![],
                vec!["/root/.nvm"],
                vec![("NVM_DIR", "/root/.nvm")],
            ),
            (
                "go: the module cache and binaries, not src",
                vec![
                    "/root/go/",
                    "/root/go/src/",
                    "/root/go/bin/",
                    "/root/go/pkg/",
                    "/root/go/pkg/mod/",
                    "/usr/lib/go/",
                ],
                vec![("GOROOT", "/usr/lib/go")],
                vec!["/root/go/bin", "/root/go/pkg/mod"],
                vec![("GOROOT", "/usr/lib/go"), ("GOPATH", "/root/go")],
            ),
            (
                "GOMODCACHE set",
                vec!["/cache/gomod/"],
                vec![("GOMODCACHE", "/cache/gomod")],
                vec!["/cache/gomod"],
                vec![("GOMODCACHE", "/cache/gomod")],
            ),
            (
                "maven and gradle: caches, never their settings",
                vec![
                    "/root/.m2/",
                    "/root/.m2/repository/",
                    "/root/.m2/settings.xml",
                    "/root/.m2/settings-security.xml",
                    "/root/.gradle/",
                    "/root/.gradle/caches/",
                    "/root/.gradle/wrapper/",
                    "/root/.gradle/gradle.properties",
                    "/root/.gradle/daemon/",
                ],
                vec![],
                vec![
                    "/root/.gradle/caches",
                    "/root/.gradle/wrapper",
                    "/root/.m2/repository",
                ],
                vec![("GRADLE_USER_HOME", "/root/.gradle")],
            ),
            (
                "a tree inside the workspace is never a toolchain",
                vec!["/work/proj/.cargo/"],
                vec![("CARGO_HOME", "/work/proj/.cargo")],
                vec![],
                vec![],
            ),
        ];
        for (name, fs, vars, binds, exported) in rows {
            let t = FakeFs(fs).choose("/usr/bin", &vars);
            let want: Vec<PathBuf> = binds.iter().map(|b| p(b)).collect();
            assert_eq!(t.binds, want, "{name}");
            let want: Vec<(String, PathBuf)> = exported
                .iter()
                .map(|(n, v)| ((*n).to_owned(), p(v)))
                .collect();
            assert_eq!(t.vars, want, "{name}");
        }
    }

    /// Discovery asks about a directory once per part of a tree (`GOPATH`'s `pkg/mod` and `bin`
    /// both look into it); each directory reaches the host's lister once, and the answer is the
    /// same as from a lister that is asked every time.
    #[test]
    fn toolchain_discovery_lists_each_directory_once() {
        let fs = FakeFs(vec![
            "/root/go/",
            "/root/go/bin/",
            "/root/go/src/",
            "/root/go/pkg/",
            "/root/go/pkg/mod/",
            "/root/.local/",
            "/root/.local/lib/",
            "/root/.local/lib/python3.12/",
            "/opt/",
        ]);
        let calls = std::cell::RefCell::new(Vec::<PathBuf>::new());
        let counting = |d: &Path| {
            calls.borrow_mut().push(d.to_path_buf());
            fs.list(d)
        };
        let inputs = |list: &dyn Fn(&Path) -> Vec<(OsString, EntryKind)>| {
            toolchains(&ToolchainInputs {
                path: None,
                var: &|_| None,
                home: Path::new("/root"),
                roots: &[],
                is_dir: &|d| fs.is_dir(d),
                list,
            })
        };
        let chosen = inputs(&counting);
        let mut asked = calls.borrow().clone();
        assert!(
            asked.contains(&p("/root/go")),
            "positive control: the trees were listed: {asked:?}"
        );
        let all = asked.len();
        asked.sort();
        asked.dedup();
        assert_eq!(all, asked.len(), "a directory was listed twice");
        assert_eq!(chosen, inputs(&|d| fs.list(d)));
        assert_eq!(
            chosen.binds,
            vec![
                p("/opt"),
                p("/root/.local/lib/python3.12"),
                p("/root/go/bin"),
                p("/root/go/pkg/mod")
            ]
        );
    }

    #[test]
    fn masks_only_existing_stores_inside_binds() {
        let bound = [p("/h/.cargo"), p("/h/.config/tool")];
        let exists = |q: &Path| match q.to_str() {
            Some("/h/.cargo/credentials.toml") => Some(false),
            Some("/h/.cargo/credentials" | "/h/.ssh") => None,
            _ => Some(true),
        };
        let masks = credential_masks(Path::new("/h"), &bound, &exists);
        assert_eq!(masks, vec![Mask::File(p("/h/.cargo/credentials.toml"))]);
    }

    #[test]
    fn etc_is_curated() {
        let entries = etc_entries(Path::new("/etc"));
        assert!(entries.contains(&p("/etc/passwd")));
        for secret in [
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/sudoers",
            "/etc/ssh",
            "/etc/npmrc",
        ] {
            assert!(!entries.contains(&p(secret)), "{secret}");
        }
    }

    #[test]
    fn system_layout_of_this_host() {
        let dirs = system_dirs(Path::new("/"));
        assert_eq!(dirs[0], SystemDir::Bind(p("/usr")));
        assert!(dirs.iter().any(|d| matches!(d,
            SystemDir::Symlink { path, .. } | SystemDir::Bind(path) if path == Path::new("/bin"))));
    }
}
