//! A repository's core: what no command and no tool may remove.
//!
//! A git directory is one git takes for a repository: it holds a `HEAD` file, an `objects`
//! directory and a `refs` directory (a `.git`, or a bare repository by any name). Its core is those
//! three entries; removing any of them, or the git directory itself, leaves no repository: the
//! history, every branch and the stash are gone, and what the workspace's checkpoints keep of a
//! command's changes is no substitute for them.
//!
//! What stays allowed: everything git itself removes during ordinary work (loose objects after
//! `git gc`, `refs/heads/x` after `git branch -d`, the index, logs, `ORIG_HEAD`, lock files), the
//! working files of any repository, and a git directory's other entries.
//!
//! Attack stopped: a command emptying a repository's git directory, by `rm -rf .git` or without
//! removing anything the classifier could see (an overlay attribute that makes a directory
//! replace the one below it), so that a commit that looks like no change deletes the history.

use std::path::Path;

use spear_workspace::{EntryKind, Location, TreeView};

/// The entries of a git directory that make it one.
const CORE: &[(&str, EntryKind)] = &[
    ("HEAD", EntryKind::File),
    ("objects", EntryKind::Dir),
    ("refs", EntryKind::Dir),
];

/// Whether the directory at `loc`, as `view` shows it, is one git takes for a repository. One
/// look for anything else (`HEAD` first: what holds it is a directory), since every entry a
/// removal takes is asked.
pub fn is_git_dir(view: &dyn TreeView, loc: &Location) -> bool {
    CORE.iter().all(|(name, kind)| {
        view.kind(&Location {
            root: loc.root,
            rel: loc.rel.join(name),
        }) == Some(*kind)
    })
}

/// When removing the entry at `loc` would remove a repository's core as the host shows it
/// (`host`): the git directory it is, or the git directory whose core entry it is. `None` for
/// every other removal, including entries below the core (`objects/ab/cdef...`).
pub fn removes_core(host: &dyn TreeView, loc: &Location) -> Option<String> {
    if is_git_dir(host, loc) {
        return Some(format!(
            "it is a git repository's directory (`{}`)",
            shown(&loc.rel)
        ));
    }
    let name = loc.rel.file_name()?.to_str()?;
    if !CORE.iter().any(|(core, _)| *core == name) {
        return None;
    }
    let parent = Location {
        root: loc.root,
        rel: loc.rel.parent()?.to_path_buf(),
    };
    is_git_dir(host, &parent).then(|| {
        format!(
            "it is `{name}` of the git repository `{}`",
            shown(&parent.rel)
        )
    })
}

fn shown(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        rel.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ffi::OsString;
    use std::path::PathBuf;

    use super::*;

    /// A tree of kinds by path.
    struct Tree(BTreeMap<PathBuf, EntryKind>);

    impl Tree {
        fn of(entries: &[(&str, EntryKind)]) -> Tree {
            let mut map = BTreeMap::new();
            map.insert(PathBuf::new(), EntryKind::Dir);
            for (p, k) in entries {
                map.insert(PathBuf::from(p), *k);
            }
            Tree(map)
        }
    }

    impl TreeView for Tree {
        fn kind(&self, loc: &Location) -> Option<EntryKind> {
            self.0.get(&loc.rel).copied()
        }
        fn link_target(&self, _: &Location) -> Option<OsString> {
            None
        }
        fn read_head(&self, _: &Location, _: usize) -> Option<Vec<u8>> {
            None
        }
    }

    fn repo(prefix: &str) -> Vec<(String, EntryKind)> {
        [
            ("", EntryKind::Dir),
            ("/HEAD", EntryKind::File),
            ("/objects", EntryKind::Dir),
            ("/objects/ab", EntryKind::Dir),
            ("/objects/ab/cdef", EntryKind::File),
            ("/refs", EntryKind::Dir),
            ("/refs/heads", EntryKind::Dir),
            ("/refs/heads/main", EntryKind::File),
            ("/index", EntryKind::File),
            ("/logs", EntryKind::Dir),
            ("/config", EntryKind::File),
        ]
        .iter()
        .map(|(p, k)| (format!("{prefix}{p}"), *k))
        .collect()
    }

    #[test]
    fn the_core_of_every_git_directory_and_nothing_else() {
        let mut entries = repo(".git");
        entries.extend(repo("vendor/dep/.git"));
        entries.extend(repo("mirror.git"));
        entries.extend([
            ("src".to_owned(), EntryKind::Dir),
            ("src/HEAD".to_owned(), EntryKind::File),
            ("src/objects".to_owned(), EntryKind::Dir),
            ("notrepo".to_owned(), EntryKind::Dir),
            ("notrepo/HEAD".to_owned(), EntryKind::File),
            ("notrepo/objects".to_owned(), EntryKind::Dir),
            ("linked".to_owned(), EntryKind::File),
        ]);
        let refs: Vec<(&str, EntryKind)> = entries.iter().map(|(p, k)| (p.as_str(), *k)).collect();
        let tree = Tree::of(&refs);
        let table: &[(&str, Option<&str>)] = &[
            (".git", Some("a git repository's directory (`.git`)")),
            (".git/HEAD", Some("`HEAD` of the git repository `.git`")),
            (
                ".git/objects",
                Some("`objects` of the git repository `.git`"),
            ),
            (".git/refs", Some("`refs` of the git repository `.git`")),
            ("vendor/dep/.git", Some("(`vendor/dep/.git`)")),
            (
                "vendor/dep/.git/refs",
                Some("`refs` of the git repository `vendor/dep/.git`"),
            ),
            ("mirror.git", Some("(`mirror.git`)")),
            (
                "mirror.git/objects",
                Some("`objects` of the git repository `mirror.git`"),
            ),
            // What git removes itself, and what is not core.
            (".git/index", None),
            (".git/logs", None),
            (".git/config", None),
            (".git/objects/ab", None),
            (".git/objects/ab/cdef", None),
            (".git/refs/heads", None),
            (".git/refs/heads/main", None),
            // Not a repository: a `HEAD` and `objects` without `refs`.
            ("notrepo", None),
            ("notrepo/HEAD", None),
            ("src/HEAD", None),
            ("linked", None),
            ("vendor", None),
            ("absent/.git", None),
        ];
        for (rel, want) in table {
            let loc = Location {
                root: 0,
                rel: PathBuf::from(rel),
            };
            let got = removes_core(&tree, &loc);
            match want {
                Some(part) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(part)),
                    "{rel}: {got:?}"
                ),
                None => assert_eq!(got, None, "{rel}"),
            }
        }
    }
}
