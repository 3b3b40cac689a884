//! Protected entries under writable roots: what the sandbox must pin before a command, and what
//! must be undone after it.
//!
//! A protected entry makes another program run code later, outside every sandbox: git hooks and
//! configuration, `.envrc`, editor and agent settings. The operator names them as patterns
//! (`.git/hooks/`, `.git/config`, `.envrc`, ...): a pattern matches, at any depth, an entry whose
//! path relative to its root ends with the pattern's components (a trailing `/` changes nothing;
//! either way the whole entry is protected, and should it be a directory, everything in it).
//! Matching ignores ASCII case, so that a case-insensitive filesystem cannot hide `.GIT/hooks`.
//!
//! Around a command in a writable profile:
//! 1. [`ProtectedEntries::guard`] walks every root (no link followed, nothing skipped) and keeps a
//!    copy of every protected entry. The sandbox binds each existing one read-only
//!    ([`Guard::read_only`]) and binds each directory that holds one as part of a multi-component
//!    pattern (the `.git` of `.git/hooks`) onto itself ([`Guard::anchors`]), which makes it a mount
//!    point that cannot be renamed, removed or replaced.
//! 2. [`Guard::enforce`] walks again and undoes what still got through: an entry created during
//!    the command is removed (`git init sub` leaves `sub/.git` but not its hooks or config); one
//!    that changed (through a hard link made earlier, say) or vanished is put back as it was. An
//!    anchor that is no longer a directory is made one again, and a non-directory where an anchor
//!    would be (a `.git` symlink or gitlink file that redirects git elsewhere) is protected like an
//!    entry: kept as it was if it was there before, removed if it was not.
//!
//! Attack stopped: persistence. A hook or an `.envrc` planted by a command would run later on the
//! host, when the user commits or enters the directory.
//!
//! Bounds: the guard fails closed above [`DEFAULT_MAX_ENTRIES`] entries walked or
//! [`DEFAULT_MAX_BYTES`] bytes kept (both adjustable); the walk after the command has no entry
//! bound, so a command cannot hide what it planted behind a flood of files (its cost is that of
//! walking what the command left behind).

use std::collections::BTreeMap;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use spear_workspace::{Budget, EntryKind, FsError, Location, Node, Walk, Workspace, WorkspaceFs};

/// How many entries the guard walks, over all roots, before it gives up.
pub const DEFAULT_MAX_ENTRIES: usize = 1_000_000;

/// How many bytes of protected entries the guard keeps a copy of before it gives up.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

/// Mode of an anchor directory made again after the command removed or replaced it.
const ANCHOR_MODE: u32 = 0o755;

/// The protected-entry patterns (from the operator's target policy), and the bounds of the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedEntries {
    patterns: Vec<Vec<String>>,
    max_entries: usize,
    max_bytes: u64,
}

impl ProtectedEntries {
    /// Parses `patterns` such as `.git/hooks/` or `.envrc`: empty components and `.` are ignored,
    /// and a pattern with no component left is dropped.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Self {
        ProtectedEntries {
            patterns: patterns
                .iter()
                .map(|p| {
                    p.as_ref()
                        .split('/')
                        .filter(|c| !c.is_empty() && *c != ".")
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                })
                .filter(|parts| !parts.is_empty())
                .collect(),
            max_entries: DEFAULT_MAX_ENTRIES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// The same patterns with other bounds: entries walked before the command (over all roots),
    /// and bytes of protected entries kept.
    #[must_use]
    pub fn with_limits(mut self, max_entries: usize, max_bytes: u64) -> Self {
        self.max_entries = max_entries;
        self.max_bytes = max_bytes;
        self
    }

    /// Before a command in a writable profile: finds every protected entry in every root of `ws`,
    /// keeps a copy of its content, and says what to bind. Fails closed (the command must not run)
    /// when a root cannot be walked entirely, or above the bounds.
    pub fn guard(&self, ws: &Workspace) -> Result<Guard, ProtectError> {
        let fs = ws.fs().map_err(ProtectError::from_fs)?;
        let found = scan(&fs, ws, &self.patterns, self.max_entries)?;
        let mut budget = Budget {
            bytes: self.max_bytes,
            entries: self.max_entries,
        };
        let mut tracked = BTreeMap::new();
        for ((root, rel), (role, kind)) in found {
            let loc = Location { root, rel };
            let before = if role == Role::Anchor && kind == EntryKind::Dir {
                Before::AnchorDir
            } else {
                match fs
                    .read_entry(&loc, &mut budget)
                    .map_err(ProtectError::from_fs)?
                {
                    Some(node) => Before::Entry(node),
                    // Gone since the walk: if it comes back, it is new.
                    None => continue,
                }
            };
            let mount = ws.mount_path(&loc);
            tracked.insert((loc.root, loc.rel), Tracked { mount, before });
        }
        Ok(Guard {
            entries: self.clone(),
            roots: root_paths(ws),
            tracked,
        })
    }
}

/// What [`ProtectedEntries::guard`] found: the protected entries of a workspace as they were
/// before a command.
#[derive(Debug)]
pub struct Guard {
    entries: ProtectedEntries,
    roots: Vec<PathBuf>,
    tracked: BTreeMap<(usize, PathBuf), Tracked>,
}

/// One place the guard keeps: where the sandbox sees it, and what was there.
#[derive(Debug)]
struct Tracked {
    mount: PathBuf,
    before: Before,
}

/// What was at a tracked place before the command.
#[derive(Debug)]
enum Before {
    /// A directory where an anchor is (the `.git` of `.git/hooks`); its content is not kept.
    AnchorDir,
    /// A protected entry, or a non-directory where an anchor would be, with all its content.
    Entry(Node),
}

impl Guard {
    /// Protected entries that exist, as paths inside the sandbox, to bind read-only. Links are
    /// left out (a bind would follow them; they are put back after the command instead), and so
    /// are fifos, sockets and devices.
    pub fn read_only(&self) -> Vec<PathBuf> {
        self.tracked
            .values()
            .filter(|t| {
                matches!(&t.before, Before::Entry(node)
                    if matches!(node.kind(), EntryKind::File | EntryKind::Dir))
            })
            .map(|t| t.mount.clone())
            .collect()
    }

    /// Directories to pin by binding them onto themselves (inside-sandbox paths): every directory
    /// that holds a protected entry as part of a multi-component pattern (the `.git` of
    /// `.git/hooks`, whether or not `hooks` exists yet), deduplicated, never a root itself and never
    /// one that is itself a read-only entry.
    pub fn anchors(&self) -> Vec<PathBuf> {
        let read_only = self.read_only();
        let mut anchors: Vec<PathBuf> = self
            .tracked
            .iter()
            .filter(|((_, rel), t)| {
                matches!(t.before, Before::AnchorDir)
                    && !rel.as_os_str().is_empty()
                    && !read_only.contains(&t.mount)
            })
            .map(|(_, t)| t.mount.clone())
            .collect();
        anchors.dedup();
        anchors
    }

    /// After the command: removes entries created during it, restores changed or vanished ones
    /// (and anchor directories removed or replaced). Returns one [`Repair`] per entry touched,
    /// inside a protected directory the entry within it that changed, labelled as in the audit
    /// log. Every repair that can be made is made; if any could not, the error lists them all.
    pub fn enforce(&self, ws: &Workspace) -> Result<Vec<Repair>, ProtectError> {
        if root_paths(ws) != self.roots {
            return Err(ProtectError::OtherWorkspace);
        }
        let fs = ws.fs().map_err(ProtectError::from_fs)?;
        let now = scan(&fs, ws, &self.entries.patterns, usize::MAX)?;
        let mut fix = Fixer {
            fs: &fs,
            ws,
            repairs: Vec::new(),
            failures: Vec::new(),
        };

        // Created during the command. A new anchor directory stays (`git init sub` keeps
        // `sub/.git`); what it holds was found on its own.
        for ((root, rel), (role, kind)) in &now {
            let key = (*root, rel.clone());
            if self.tracked.contains_key(&key) || (*role == Role::Anchor && *kind == EntryKind::Dir)
            {
                continue;
            }
            fix.remove(&Location {
                root: *root,
                rel: rel.clone(),
            });
        }

        // Anchors first (parents sort before their children), then the entries they hold.
        for ((root, rel), t) in &self.tracked {
            let loc = Location {
                root: *root,
                rel: rel.clone(),
            };
            match &t.before {
                Before::AnchorDir => {
                    if now.get(&(*root, rel.clone())).map(|(_, k)| *k) != Some(EntryKind::Dir) {
                        fix.restore(
                            &loc,
                            &Node::Dir {
                                mode: ANCHOR_MODE,
                                children: BTreeMap::new(),
                            },
                        );
                    }
                }
                Before::Entry(before) => {
                    let mut budget = Budget {
                        bytes: self.entries.max_bytes,
                        entries: self.entries.max_entries,
                    };
                    match fs.read_entry(&loc, &mut budget) {
                        Ok(Some(current)) => fix.reconcile(&loc, before, &current),
                        // Vanished; or too large or unreadable to compare: put it back whole.
                        Ok(None) | Err(_) => fix.restore(&loc, before),
                    }
                }
            }
        }

        if fix.failures.is_empty() {
            Ok(fix.repairs)
        } else {
            Err(ProtectError::Repair {
                repairs: fix.repairs,
                failures: fix.failures,
            })
        }
    }
}

/// Makes repairs and keeps count of them.
struct Fixer<'a> {
    fs: &'a WorkspaceFs,
    ws: &'a Workspace,
    repairs: Vec<Repair>,
    failures: Vec<String>,
}

impl Fixer<'_> {
    /// Removes what is at `loc`; nothing there is nothing to do.
    fn remove(&mut self, loc: &Location) {
        let label = self.ws.label(loc);
        match self.fs.remove_tree(loc) {
            Ok(()) => self.repairs.push(Repair {
                label,
                action: RepairAction::Removed,
            }),
            Err(FsError::NotFound { .. }) => {}
            Err(e) => self.failures.push(format!("could not remove {label}: {e}")),
        }
    }

    /// Puts `node` back at `loc`.
    fn restore(&mut self, loc: &Location, node: &Node) {
        let label = self.ws.label(loc);
        match self.fs.restore(loc, node) {
            Ok(()) => self.repairs.push(Repair {
                label,
                action: RepairAction::Restored,
            }),
            Err(e) => self
                .failures
                .push(format!("could not restore {label}: {e}")),
        }
    }

    /// Makes `loc` what `before` was, given that it is `now`: inside a directory whose mode did
    /// not change, entry by entry; anything else, whole.
    fn reconcile(&mut self, loc: &Location, before: &Node, now: &Node) {
        if before == now {
            return;
        }
        let (
            Node::Dir {
                mode: before_mode,
                children: before_children,
            },
            Node::Dir {
                mode: now_mode,
                children: now_children,
            },
        ) = (before, now)
        else {
            self.restore(loc, before);
            return;
        };
        if before_mode != now_mode {
            self.restore(loc, before);
            return;
        }
        let child = |name: &std::ffi::OsStr| Location {
            root: loc.root,
            rel: loc.rel.join(name),
        };
        for name in now_children.keys() {
            if !before_children.contains_key(name) {
                self.remove(&child(name));
            }
        }
        for (name, was) in before_children {
            match now_children.get(name) {
                Some(is) => self.reconcile(&child(name), was, is),
                None => self.restore(&child(name), was),
            }
        }
    }
}

/// One entry the guard repaired after a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    /// The entry's audit label (`sub/.git/hooks`, `lib:.envrc`).
    pub label: String,
    /// What was done.
    pub action: RepairAction,
}

/// What a [`Repair`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairAction {
    /// The entry was created during the command and is gone again.
    Removed,
    /// The entry changed, was replaced or vanished during the command, and is as it was before.
    Restored,
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.action {
            RepairAction::Removed => {
                write!(f, "removed {} (created during the command)", self.label)
            }
            RepairAction::Restored => write!(
                f,
                "restored {} (changed, replaced or removed during the command)",
                self.label
            ),
        }
    }
}

/// Protected entries could not be guarded or repaired.
#[derive(Debug, thiserror::Error)]
pub enum ProtectError {
    /// A bound was reached: entries walked, bytes or entries kept, or depth.
    #[error(
        "{label}: {what}. Launch spear in a smaller directory (or with --single-root), remove what \
         is not needed (a large generated tree, big files under a protected directory such as \
         .idea/), or run the command read-only"
    )]
    Limit {
        /// Where the bound was reached (audit label).
        label: String,
        /// Which bound.
        what: String,
    },
    /// A root could not be walked or an entry read.
    #[error(
        "{0}. Protected entries can only be guarded in a workspace that can be read entirely; make \
         that path readable by the user running spear, or remove it"
    )]
    Inspect(#[source] FsError),
    /// After the command, some repairs could not be made (the others were).
    #[error(
        "{}{}", failures.join("; "),
        if repairs.is_empty() {
            String::new()
        } else {
            format!(" (done: {})", repairs.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))
        }
    )]
    Repair {
        /// The repairs that were made.
        repairs: Vec<Repair>,
        /// What could not be done, and why.
        failures: Vec<String>,
    },
    /// `enforce` was given another workspace than `guard` (a bug in the caller).
    #[error("the protected entries were guarded in another workspace; nothing was checked")]
    OtherWorkspace,
}

impl ProtectError {
    fn from_fs(e: FsError) -> Self {
        match e {
            FsError::LimitExceeded { label, what } => ProtectError::Limit { label, what },
            other => ProtectError::Inspect(other),
        }
    }
}

/// What a path is to the patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A protected entry: the path ends with a pattern's components.
    Entry,
    /// A directory that holds a protected entry (or would): the path ends with a proper prefix
    /// of a multi-component pattern's components (the `.git` of `.git/hooks`).
    Anchor,
}

/// Whether the components `a` and `b` are the same name, ignoring ASCII case.
fn same(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// Whether `rel` ends with `parts`.
fn ends_with(rel: &[&[u8]], parts: &[String]) -> bool {
    rel.len() >= parts.len()
        && rel[rel.len() - parts.len()..]
            .iter()
            .zip(parts)
            .all(|(a, b)| same(a, b))
}

/// What the path with components `rel` (relative to its root) is to `patterns`. Pure.
fn role(patterns: &[Vec<String>], rel: &[&[u8]]) -> Option<Role> {
    if rel.is_empty() {
        return None;
    }
    if patterns.iter().any(|p| ends_with(rel, p)) {
        return Some(Role::Entry);
    }
    let anchor = patterns
        .iter()
        .any(|p| (1..p.len()).any(|k| ends_with(rel, &p[..k])));
    anchor.then_some(Role::Anchor)
}

/// What [`scan`] finds: by root and path, the role and the kind of each place.
type Found = BTreeMap<(usize, PathBuf), (Role, EntryKind)>;

/// Every place in every root of `ws` that is an entry or an anchor, with its kind. The walk does
/// not look inside an entry (it is kept or removed whole) nor inside anything but a directory.
fn scan(
    fs: &WorkspaceFs,
    ws: &Workspace,
    patterns: &[Vec<String>],
    max_entries: usize,
) -> Result<Found, ProtectError> {
    let mut found = BTreeMap::new();
    let mut seen = 0usize;
    for root in 0..ws.roots().len() {
        let left = max_entries.saturating_sub(seen);
        let mut visit = |rel: &Path, kind: EntryKind| {
            seen += 1;
            let parts: Vec<&[u8]> = rel.iter().map(OsStrExt::as_bytes).collect();
            match role(patterns, &parts) {
                Some(role) => {
                    found.insert((root, rel.to_path_buf()), (role, kind));
                    if role == Role::Anchor && kind == EntryKind::Dir {
                        Walk::Continue
                    } else {
                        Walk::Skip
                    }
                }
                None => Walk::Continue,
            }
        };
        fs.walk(root, left, &mut visit).map_err(|e| match e {
            // The bound is over all roots, not this one.
            FsError::LimitExceeded { label, what } if what.ends_with(" entries") => {
                ProtectError::Limit {
                    label,
                    what: format!("the workspace has more than {max_entries} entries"),
                }
            }
            other => ProtectError::from_fs(other),
        })?;
    }
    Ok(found)
}

/// The host paths of the roots of `ws`.
fn root_paths(ws: &Workspace) -> Vec<PathBuf> {
    ws.roots()
        .iter()
        .map(|r| r.host_path().to_path_buf())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> ProtectedEntries {
        ProtectedEntries::new(&spear_policy::TargetRules::default().protected_patterns())
    }

    #[test]
    fn role_table() {
        let p = defaults();
        let cases: &[(&str, Option<Role>)] = &[
            ("", None),
            (".git", Some(Role::Anchor)),
            ("sub/deeper/.git", Some(Role::Anchor)),
            (".git/hooks", Some(Role::Entry)),
            (".git/config", Some(Role::Entry)),
            ("a/b/.git/hooks", Some(Role::Entry)),
            ("a/b/.git/config", Some(Role::Entry)),
            // Inside an entry: the walk never asks, and the answer does not matter.
            (".git/objects", None),
            (".git/HEAD", None),
            ("hooks", None),
            ("config", None),
            ("x/hooks", None),
            ("git/hooks", None),
            (".gitx/hooks", None),
            (".git/modules/sub/hooks", None),
            (".envrc", Some(Role::Entry)),
            ("a/.envrc", Some(Role::Entry)),
            (".envrc.bak", None),
            ("envrc", None),
            (".gitmodules", Some(Role::Entry)),
            (".vscode", Some(Role::Entry)),
            ("web/.vscode", Some(Role::Entry)),
            (".idea", Some(Role::Entry)),
            (".mcp.json", Some(Role::Entry)),
            (".spear", Some(Role::Entry)),
            (".claude", Some(Role::Entry)),
            (".codex", Some(Role::Entry)),
            (".cursor", Some(Role::Entry)),
            ("src/main.rs", None),
            // Case-insensitive filesystems: `.GIT/HOOKS` is `.git/hooks` to them.
            (".GIT", Some(Role::Anchor)),
            (".Git/Hooks", Some(Role::Entry)),
            (".ENVRC", Some(Role::Entry)),
        ];
        for (rel, want) in cases {
            let parts: Vec<&[u8]> = Path::new(rel).iter().map(OsStrExt::as_bytes).collect();
            assert_eq!(role(&p.patterns, &parts), *want, "{rel:?}");
        }
    }

    #[test]
    fn deeper_patterns_anchor_every_prefix() {
        let p = ProtectedEntries::new(&["a/b/c", "/.//x/", "", "///", "./"]);
        assert_eq!(p.patterns, vec![vec!["a", "b", "c"], vec!["x"]]);
        let cases: &[(&str, Option<Role>)] = &[
            ("a", Some(Role::Anchor)),
            ("z/a", Some(Role::Anchor)),
            ("a/b", Some(Role::Anchor)),
            ("z/a/b", Some(Role::Anchor)),
            ("a/b/c", Some(Role::Entry)),
            ("z/a/b/c", Some(Role::Entry)),
            ("b", None),
            ("b/c", None),
            ("a/c", None),
            ("x", Some(Role::Entry)),
            ("q/x", Some(Role::Entry)),
            ("x/y", None),
        ];
        for (rel, want) in cases {
            let parts: Vec<&[u8]> = Path::new(rel).iter().map(OsStrExt::as_bytes).collect();
            assert_eq!(role(&p.patterns, &parts), *want, "{rel:?}");
        }
    }

    #[test]
    fn an_entry_pattern_wins_over_an_anchor() {
        let p = ProtectedEntries::new(&[".git/", ".git/hooks/"]);
        let parts: Vec<&[u8]> = vec![b".git"];
        assert_eq!(role(&p.patterns, &parts), Some(Role::Entry));
    }

    #[test]
    fn non_utf8_names_are_compared_as_bytes() {
        let p = ProtectedEntries::new(&[".envrc"]);
        let odd: &[u8] = b"\xff\xfe";
        assert_eq!(role(&p.patterns, &[odd, b".envrc"]), Some(Role::Entry));
        assert_eq!(role(&p.patterns, &[b".envrc", odd]), None);
    }

    #[test]
    fn repair_display() {
        let r = Repair {
            label: "sub/.git/hooks".into(),
            action: RepairAction::Removed,
        };
        assert_eq!(
            r.to_string(),
            "removed sub/.git/hooks (created during the command)"
        );
        let r = Repair {
            label: "lib:.envrc".into(),
            action: RepairAction::Restored,
        };
        assert_eq!(
            r.to_string(),
            "restored lib:.envrc (changed, replaced or removed during the command)"
        );
    }
}
