//! The ruleset plan: which host paths get which access rights. Pure: what a directory holds is
//! asked of a function the caller gives (the real one lists the directory), so the table tests
//! run on made-up trees.
//!
//! Landlock grants, it never denies: a rule on a directory gives its rights to everything beneath
//! it. A credential file inside a granted root ([`crate::Mask`]) therefore cannot be carved out of
//! a rule on the root. The plan grants the root `READ_DIR` wholesale (names can be listed), and
//! `READ_FILE | EXECUTE` only on each entry beside the path that leads to a masked entry, at every
//! level of that path, never on the masked entry itself: its contents cannot be read, whatever is
//! granted around it. Attack stopped: a command reading `.env` or `id_rsa` in the workspace, which
//! bubblewrap covers with an empty file.
//!
//! Entries beside a masked path that are symlinks get no rule: a lookup through a link is judged
//! where the link leads, so granting its target would let a workspace link to `~/.ssh` widen the
//! grant. Attack stopped: a planted link turning a sibling grant into a grant of the home
//! directory's credential stores.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// Rules a plan may hold; more is refused ([`PlanError::TooManyRules`]), since each is a file
/// descriptor opened and a rule added before the command runs.
pub(crate) const MAX_RULES: usize = 4096;

/// The access rights of one rule, as spear names them; mapped to Landlock's per ABI by
/// [`super::ruleset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Rights(u8);

impl Rights {
    /// Open a file for reading.
    pub(crate) const READ_FILE: Rights = Rights(1);
    /// List a directory.
    pub(crate) const READ_DIR: Rights = Rights(2);
    /// Execute a file.
    pub(crate) const EXECUTE: Rights = Rights(4);
    /// Open a file for writing and truncate it (a device node: `/dev/null`).
    pub(crate) const WRITE_FILE: Rights = Rights(8);
    /// Everything a private directory allows: make, remove, rename and link entries, write and
    /// truncate files (never device nodes).
    pub(crate) const WRITE_TREE: Rights = Rights(16);
    /// Read and list.
    pub(crate) const READ: Rights = Rights(1 | 2);
    /// Read, list and execute: a system or toolchain directory, a root without masks.
    pub(crate) const READ_EXEC: Rights = Rights(1 | 2 | 4);
    /// A private directory: everything but device nodes.
    pub(crate) const PRIVATE: Rights = Rights(1 | 2 | 4 | 8 | 16);

    /// Both.
    #[must_use]
    pub(crate) const fn union(self, other: Rights) -> Rights {
        Rights(self.0 | other.0)
    }

    /// Whether every right of `other` is here.
    pub(crate) const fn contains(self, other: Rights) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any write right is here.
    pub(crate) const fn writes(self) -> bool {
        self.0 & (Rights::WRITE_FILE.0 | Rights::WRITE_TREE.0) != 0
    }
}

/// What an entry of a listed directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A directory.
    Dir,
    /// A symlink (never followed by the plan).
    Symlink,
    /// Anything else (a file, a device, a socket).
    Other,
}

/// What lists a directory: its entries' names and kinds.
pub(crate) type Lister<'a> = dyn Fn(&Path) -> io::Result<Vec<(OsString, Kind)>> + 'a;

/// One rule: `rights` on `path` and everything beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The host path.
    pub path: PathBuf,
    /// What is granted.
    pub rights: Rights,
    /// Whether the path is opened following a final symlink: only for paths the operator's
    /// configuration or spear chose (a toolchain at `~/.cargo -> /data/cargo`), never for an
    /// entry found by listing a directory a command may write to.
    pub follow: bool,
}

/// What a command may reach, before it is broken into rules ([`plan`]). Every path is a host
/// path, which under Landlock is also the path the command sees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Grants {
    /// Read, list and execute: system directories, toolchains, the operator's host-read paths.
    pub read_exec: Vec<PathBuf>,
    /// Read and list only: the curated `/etc` entries, `/proc`, spear's git configuration.
    pub read: Vec<PathBuf>,
    /// The workspace roots, read-only: read, list and execute, less the masked entries.
    pub roots: Vec<PathBuf>,
    /// Credential stores inside a granted tree: never readable.
    pub masks: Vec<PathBuf>,
    /// Device nodes read and written (`/dev/null`, ...).
    pub devices: Vec<PathBuf>,
    /// spear's private directories for this command: the only places it writes.
    pub private: Vec<PathBuf>,
}

/// Why a plan cannot be made. Nothing runs.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Masking would need more rules than the bound (4096).
    #[error(
        "masking the credential files under `{}` needs {needed} Landlock rules, more than the {max} the landlock backend allows (each entry beside the path to a masked file needs its own); move the credential files out of the workspace, or give the host user namespaces so that spear uses bubblewrap",
        root.display()
    )]
    TooManyRules {
        /// The granted tree.
        root: PathBuf,
        /// Rules it would need, at least.
        needed: usize,
        /// The bound.
        max: usize,
    },
    /// A directory on the path to a masked entry could not be listed.
    #[error(
        "cannot list `{}` to mask the credential files beneath it: {source}; nothing ran",
        path.display()
    )]
    List {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// The rules of `grants`, in order: each granted path, the roots broken around their masks.
/// `list` returns the entries of a directory (names and kinds); it is called only for directories
/// on the path to a masked entry. A mask under no granted tree needs nothing (nothing grants it).
pub(crate) fn plan(grants: &Grants, list: &Lister<'_>) -> Result<Vec<Rule>, PlanError> {
    let mut rules = Vec::new();
    let whole = |path: &PathBuf, rights| Rule {
        path: path.clone(),
        rights,
        follow: true,
    };
    for (paths, rights) in [
        (&grants.read_exec, Rights::READ_EXEC),
        (&grants.read, Rights::READ),
        (&grants.devices, Rights::READ.union(Rights::WRITE_FILE)),
        (&grants.private, Rights::PRIVATE),
    ] {
        for path in paths {
            let masked: Vec<&Path> = masks_under(&grants.masks, path);
            if masked.is_empty() || rights.writes() {
                rules.push(whole(path, rights));
            } else {
                around_masks(path, &masked, rights, list, &mut rules)?;
            }
        }
    }
    for root in &grants.roots {
        let masked = masks_under(&grants.masks, root);
        if masked.is_empty() {
            rules.push(whole(root, Rights::READ_EXEC));
        } else {
            around_masks(root, &masked, Rights::READ_EXEC, list, &mut rules)?;
        }
    }
    Ok(rules)
}

/// The masks strictly beneath `tree` (a mask that is the tree itself hides it all: no rule).
fn masks_under<'a>(masks: &'a [PathBuf], tree: &Path) -> Vec<&'a Path> {
    masks
        .iter()
        .map(PathBuf::as_path)
        .filter(|m| m.starts_with(tree))
        .collect()
}

/// `tree` granted `READ_DIR` (when `rights` list directories) and its other read rights on each
/// entry beside the paths to `masked`, recursively; the masked entries get nothing.
fn around_masks(
    tree: &Path,
    masked: &[&Path],
    rights: Rights,
    list: &Lister<'_>,
    rules: &mut Vec<Rule>,
) -> Result<(), PlanError> {
    if masked.contains(&tree) {
        return Ok(());
    }
    if rights.contains(Rights::READ_DIR) {
        rules.push(Rule {
            path: tree.to_path_buf(),
            rights: Rights::READ_DIR,
            follow: true,
        });
    }
    let file_rights = Rights(rights.0 & !Rights::READ_DIR.0);
    descend(tree, tree, masked, file_rights, list, rules)
}

fn descend(
    root: &Path,
    dir: &Path,
    masked: &[&Path],
    rights: Rights,
    list: &Lister<'_>,
    rules: &mut Vec<Rule>,
) -> Result<(), PlanError> {
    let entries = list(dir).map_err(|source| PlanError::List {
        path: dir.to_path_buf(),
        source,
    })?;
    for (name, kind) in entries {
        let child = dir.join(&name);
        if masked.iter().any(|m| *m == child) {
            continue;
        }
        let below: Vec<&Path> = masked
            .iter()
            .copied()
            .filter(|m| m.starts_with(&child))
            .collect();
        if !below.is_empty() && kind == Kind::Dir {
            descend(root, &child, &below, rights, list, rules)?;
        } else if kind != Kind::Symlink {
            rules.push(Rule {
                path: child,
                rights,
                follow: false,
            });
        }
        if rules.len() > MAX_RULES {
            return Err(PlanError::TooManyRules {
                root: root.to_path_buf(),
                needed: rules.len(),
                max: MAX_RULES,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A made-up tree: directory path -> entries.
    fn tree(entries: &[(&str, &[(&str, Kind)])]) -> BTreeMap<PathBuf, Vec<(OsString, Kind)>> {
        entries
            .iter()
            .map(|(dir, list)| {
                (
                    PathBuf::from(dir),
                    list.iter().map(|(n, k)| (OsString::from(n), *k)).collect(),
                )
            })
            .collect()
    }

    fn run(
        grants: &Grants,
        t: &BTreeMap<PathBuf, Vec<(OsString, Kind)>>,
    ) -> Vec<(String, Rights, bool)> {
        let list = |p: &Path| {
            t.get(p)
                .cloned()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        };
        plan(grants, &list)
            .unwrap()
            .into_iter()
            .map(|r| (r.path.display().to_string(), r.rights, r.follow))
            .collect()
    }

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    const RX: Rights = Rights(Rights::READ_FILE.0 | Rights::EXECUTE.0);

    #[test]
    fn without_masks_each_grant_is_one_rule_with_its_rights() {
        let grants = Grants {
            read_exec: vec![p("/usr"), p("/opt/rust")],
            read: vec![p("/etc/passwd"), p("/proc")],
            roots: vec![p("/w")],
            masks: vec![],
            devices: vec![p("/dev/null")],
            private: vec![p("/tmp/spear-1/tmp"), p("/tmp/spear-1/home")],
        };
        assert_eq!(
            run(&grants, &tree(&[])),
            vec![
                ("/usr".into(), Rights::READ_EXEC, true),
                ("/opt/rust".into(), Rights::READ_EXEC, true),
                ("/etc/passwd".into(), Rights::READ, true),
                ("/proc".into(), Rights::READ, true),
                (
                    "/dev/null".into(),
                    Rights::READ.union(Rights::WRITE_FILE),
                    true
                ),
                ("/tmp/spear-1/tmp".into(), Rights::PRIVATE, true),
                ("/tmp/spear-1/home".into(), Rights::PRIVATE, true),
                ("/w".into(), Rights::READ_EXEC, true),
            ]
        );
    }

    #[test]
    fn a_masked_file_gets_nothing_and_its_siblings_read_and_execute() {
        let grants = Grants {
            roots: vec![p("/w")],
            masks: vec![p("/w/.env")],
            ..Grants::default()
        };
        let t = tree(&[(
            "/w",
            &[
                (".env", Kind::Other),
                ("src", Kind::Dir),
                ("README", Kind::Other),
            ],
        )]);
        assert_eq!(
            run(&grants, &t),
            vec![
                ("/w".into(), Rights::READ_DIR, true),
                ("/w/src".into(), RX, false),
                ("/w/README".into(), RX, false),
            ]
        );
    }

    #[test]
    fn a_deep_mask_breaks_every_level_of_its_path_and_only_that_path() {
        let grants = Grants {
            roots: vec![p("/w")],
            masks: vec![p("/w/a/b/id_rsa"), p("/w/c/.netrc")],
            ..Grants::default()
        };
        let t = tree(&[
            (
                "/w",
                &[("a", Kind::Dir), ("c", Kind::Dir), ("d", Kind::Dir)],
            ),
            ("/w/a", &[("b", Kind::Dir), ("x", Kind::Other)]),
            (
                "/w/a/b",
                &[("id_rsa", Kind::Other), ("id_rsa.pub", Kind::Other)],
            ),
            ("/w/c", &[(".netrc", Kind::Other)]),
        ]);
        assert_eq!(
            run(&grants, &t),
            vec![
                ("/w".into(), Rights::READ_DIR, true),
                ("/w/a/b/id_rsa.pub".into(), RX, false),
                ("/w/a/x".into(), RX, false),
                ("/w/d".into(), RX, false),
            ]
        );
    }

    #[test]
    fn a_masked_directory_gets_nothing_beneath_it() {
        let grants = Grants {
            roots: vec![p("/w")],
            masks: vec![p("/w/.aws")],
            ..Grants::default()
        };
        let t = tree(&[("/w", &[(".aws", Kind::Dir), ("lib", Kind::Dir)])]);
        assert_eq!(
            run(&grants, &t),
            vec![
                ("/w".into(), Rights::READ_DIR, true),
                ("/w/lib".into(), RX, false),
            ]
        );
    }

    #[test]
    fn symlinks_beside_a_masked_path_get_no_rule() {
        // `keys -> /root/.ssh`: granting the entry would grant what it points to.
        let grants = Grants {
            roots: vec![p("/w")],
            masks: vec![p("/w/.env")],
            ..Grants::default()
        };
        let t = tree(&[(
            "/w",
            &[
                (".env", Kind::Other),
                ("keys", Kind::Symlink),
                ("f", Kind::Other),
            ],
        )]);
        assert_eq!(
            run(&grants, &t),
            vec![
                ("/w".into(), Rights::READ_DIR, true),
                ("/w/f".into(), RX, false),
            ]
        );
    }

    #[test]
    fn a_mask_in_a_toolchain_breaks_the_toolchain_grant_too() {
        let grants = Grants {
            read_exec: vec![p("/h/.cargo")],
            masks: vec![p("/h/.cargo/credentials.toml")],
            ..Grants::default()
        };
        let t = tree(&[(
            "/h/.cargo",
            &[("bin", Kind::Dir), ("credentials.toml", Kind::Other)],
        )]);
        assert_eq!(
            run(&grants, &t),
            vec![
                ("/h/.cargo".into(), Rights::READ_DIR, true),
                ("/h/.cargo/bin".into(), RX, false),
            ]
        );
    }

    #[test]
    fn a_mask_that_is_the_root_itself_leaves_the_root_ungranted() {
        let grants = Grants {
            roots: vec![p("/w")],
            masks: vec![p("/w")],
            ..Grants::default()
        };
        assert_eq!(run(&grants, &tree(&[])), vec![]);
    }

    #[test]
    fn too_many_siblings_are_refused_with_the_bound_and_the_way_out() {
        let names: Vec<String> = (0..=MAX_RULES).map(|i| format!("f{i}")).collect();
        let mut entries: Vec<(&str, Kind)> =
            names.iter().map(|n| (n.as_str(), Kind::Other)).collect();
        entries.push((".env", Kind::Other));
        let t = tree(&[("/w", &entries)]);
        let grants = Grants {
            roots: vec![p("/w")],
            masks: vec![p("/w/.env")],
            ..Grants::default()
        };
        let list = |p: &Path| Ok(t.get(p).cloned().unwrap_or_default());
        let err = plan(&grants, &list).unwrap_err();
        assert!(
            matches!(err, PlanError::TooManyRules { max: MAX_RULES, .. }),
            "{err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("move the credential files") && msg.contains("user namespaces"),
            "{msg}"
        );
    }

    #[test]
    fn a_directory_that_cannot_be_listed_is_an_error_not_a_grant() {
        let grants = Grants {
            roots: vec![p("/w")],
            masks: vec![p("/w/.env")],
            ..Grants::default()
        };
        let list = |_: &Path| Err(io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(matches!(plan(&grants, &list), Err(PlanError::List { .. })));
    }
}
