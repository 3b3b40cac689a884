//! What a command changed in the workspace, found by comparing the workspace around the call, and
//! what each changed entry held before, so that the change can be checked, reported and undone.
//!
//! A command in a writable sandbox may write anywhere in the roots, and no analysis of a script can
//! say where. So [`ChangeTracker::before`] walks every root (through [`WorkspaceFs::walk_meta`]:
//! no link followed, each entry's own metadata) and [`ChangeTracker::after`] walks again; an entry
//! whose kind, size, mode, inode, modification or status-change time differs, or that appeared
//! or vanished, changed. `ctime` moves on every content change and cannot be set back by an
//! unprivileged process, so a command cannot hide a write by restoring the modification time.
//!
//! Prior content comes from a baseline the tracker keeps in memory for the session: the first walk
//! reads every tracked file (through [`WorkspaceFs`], never by host path), later walks read only
//! what changed since. Only the prior content of entries a command changed goes to the checkpoint
//! store (content-addressed), when the command has ended. Not tracked, and not walked: `.git`
//! directories (git's own history covers them; their protected entries are guarded by
//! [`crate::protect`]) and what the root's `.gitignore` or `.git/info/exclude` ignored when the
//! tracker first walked (build outputs, which a build rewrites by the thousand). The rules are
//! read once: they are the workspace's own, and a command must not be able to hide its later
//! changes by rewriting them.
//!
//! Bounds: more than [`ChangeLimits::max_entries`] entries fails closed (nothing runs); a file
//! over [`ChangeLimits::max_file_bytes`], or beyond [`ChangeLimits::max_total_bytes`] of
//! baseline, is tracked by metadata only and its change is reported as not restorable.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use spear_workspace::{
    Budget, EntryKind, EntryMeta, FsError, Location, Node, Walk, Workspace, WorkspaceFs,
};

use crate::checkpoint::{CheckpointStore, EntryState};

/// Bounds of the tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeLimits {
    /// Entries walked over all roots, per walk.
    pub max_entries: usize,
    /// Largest file whose content is kept.
    pub max_file_bytes: u64,
    /// Content kept in the baseline, in all.
    pub max_total_bytes: u64,
}

impl Default for ChangeLimits {
    fn default() -> Self {
        ChangeLimits {
            max_entries: 1_000_000,
            max_file_bytes: 16 << 20,
            max_total_bytes: 256 << 20,
        }
    }
}

/// Why changes could not be tracked. Callers fail closed: the command does not run.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// The walk failed (a limit, an unreadable directory, a directory swapped for a link).
    #[error("the workspace could not be walked to track the command's changes: {0}")]
    Walk(#[from] FsError),
}

/// One entry a command changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Where it is.
    pub loc: Location,
    /// Its audit label.
    pub label: String,
    /// What it was before: `None` when its content was not kept (too large, over budget).
    pub before: Option<EntryState>,
    /// Whether it exists now.
    pub exists_now: bool,
    /// Its kind now, or before when it is gone.
    pub kind: EntryKind,
}

/// The workspace as one walk saw it.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    entries: HashMap<(usize, PathBuf), Seen>,
    /// What each kept entry held when this snapshot was taken: the command's own "before", even
    /// if another command updates the baseline while this one runs (a background job).
    priors: HashMap<(usize, PathBuf), Arc<Kept>>,
}

impl Snapshot {
    /// How many entries the walk saw.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the walk saw nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    meta: EntryMeta,
}

/// What the baseline knows of one entry.
#[derive(Debug, Clone)]
struct Known {
    meta: EntryMeta,
    state: Option<Arc<Kept>>,
}

/// An entry's content as the baseline keeps it, in memory.
#[derive(Debug)]
enum Kept {
    File { mode: u32, content: Held },
    Symlink { target: PathBuf },
    Dir { mode: u32 },
}

/// File content held in memory, counted in the tracker's live total for as long as anything holds
/// it (the baseline, or the snapshot of a command still running), so the budget bounds memory.
#[derive(Debug)]
struct Held {
    bytes: Vec<u8>,
    live: Arc<AtomicU64>,
}

impl Held {
    fn new(bytes: Vec<u8>, live: &Arc<AtomicU64>) -> Self {
        live.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Held {
            bytes,
            live: Arc::clone(live),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.live
            .fetch_sub(self.bytes.len() as u64, Ordering::Relaxed);
    }
}

impl Kept {
    /// The state a checkpoint records, the content stored in `store`; `None` when it cannot be.
    fn to_state(&self, store: &CheckpointStore) -> Option<EntryState> {
        match self {
            Kept::File { mode, content } => {
                store
                    .put_blob(&content.bytes)
                    .ok()
                    .map(|hash| EntryState::File {
                        mode: *mode,
                        hash,
                        size: content.bytes.len() as u64,
                    })
            }
            Kept::Symlink { target } => Some(EntryState::Symlink {
                target: target.clone(),
            }),
            Kept::Dir { mode } => Some(EntryState::Dir { mode: *mode }),
        }
    }
}

/// Finds what commands change, and keeps what changed entries held before. One per session and
/// workspace; calls are serialised.
#[derive(Debug, Default)]
pub struct ChangeTracker {
    limits: ChangeLimits,
    baseline: Mutex<Baseline>,
    /// Each root's ignore rules, read once, at the first walk: the rules are the workspace's
    /// own, so a command that rewrites `.gitignore` must not hide its changes (or make entries
    /// that were there look new) from then on.
    ignores: Mutex<Option<Vec<Gitignore>>>,
    /// Bytes of file content held in memory, by the baseline and by snapshots still in use.
    live: Arc<AtomicU64>,
}

#[derive(Debug, Default)]
struct Baseline {
    known: HashMap<(usize, PathBuf), Known>,
}

impl ChangeTracker {
    /// A tracker with these bounds.
    pub fn new(limits: ChangeLimits) -> Self {
        ChangeTracker {
            limits,
            baseline: Mutex::new(Baseline::default()),
            ignores: Mutex::new(None),
            live: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Walks the workspace before a command and brings the baseline up to date (the content of
    /// new or changed tracked files read into memory, within the bounds).
    pub fn before(&self, ws: &Workspace, fs: &WorkspaceFs) -> Result<Snapshot, ChangeError> {
        let snapshot = self.walk(ws, fs)?;
        let mut baseline = self
            .baseline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        baseline.known.retain(|key, known| {
            snapshot
                .entries
                .get(key)
                .is_some_and(|s| s.meta == known.meta)
        });
        let mut missing: Vec<(&(usize, PathBuf), &Seen)> = snapshot
            .entries
            .iter()
            .filter(|(key, _)| !baseline.known.contains_key(*key))
            .collect();
        missing.sort_by(|a, b| a.0.cmp(b.0));
        for (key, seen) in missing {
            let state = self.capture(fs, key, seen).map(Arc::new);
            baseline.known.insert(
                key.clone(),
                Known {
                    meta: seen.meta,
                    state,
                },
            );
        }
        let mut snapshot = snapshot;
        snapshot.priors = snapshot
            .entries
            .keys()
            .filter_map(|key| {
                let kept = baseline.known.get(key)?.state.as_ref()?;
                Some((key.clone(), Arc::clone(kept)))
            })
            .collect();
        Ok(snapshot)
    }

    /// Walks the workspace after a command and lists what changed since `before`, each with its
    /// state before (its content stored in `store`). Changed entries leave the baseline, so the
    /// next [`ChangeTracker::before`] keeps their new content.
    pub fn after(
        &self,
        ws: &Workspace,
        fs: &WorkspaceFs,
        before: &Snapshot,
        store: &CheckpointStore,
    ) -> Result<Vec<Change>, ChangeError> {
        let now = self.walk(ws, fs)?;
        let mut keys: Vec<&(usize, PathBuf)> = before
            .entries
            .keys()
            .chain(
                now.entries
                    .keys()
                    .filter(|k| !before.entries.contains_key(*k)),
            )
            .collect();
        keys.sort();
        let mut baseline = self
            .baseline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut changes = Vec::new();
        for key in keys {
            let (old, new) = (before.entries.get(key), now.entries.get(key));
            if !differs(old, new) {
                continue;
            }
            let loc = Location {
                root: key.0,
                rel: key.1.clone(),
            };
            let prior = match old {
                None => Some(EntryState::Absent),
                Some(_) => before.priors.get(key).and_then(|kept| kept.to_state(store)),
            };
            baseline.known.remove(key);
            let kind = new.or(old).map_or(EntryKind::Other, |s| s.meta.kind);
            changes.push(Change {
                label: ws.label(&loc),
                loc,
                before: prior,
                exists_now: new.is_some(),
                kind,
            });
        }
        Ok(changes)
    }

    /// Reads a tracked entry into the baseline, or `None` when it is not kept (too large, over
    /// budget, not a file, link or directory, or changed while it was read).
    fn capture(&self, fs: &WorkspaceFs, key: &(usize, PathBuf), seen: &Seen) -> Option<Kept> {
        match seen.meta.kind {
            EntryKind::Dir => Some(Kept::Dir {
                mode: seen.meta.mode & 0o777,
            }),
            EntryKind::Other => None,
            EntryKind::File
                if seen.meta.size > self.limits.max_file_bytes
                    || self.live.load(Ordering::Relaxed) + seen.meta.size
                        > self.limits.max_total_bytes =>
            {
                None
            }
            EntryKind::File | EntryKind::Symlink => {
                let loc = Location {
                    root: key.0,
                    rel: key.1.clone(),
                };
                // Attack: a file grown (or swapped for a tree) since the walk must not blow the
                // budget: one entry, at most the file bound.
                let mut budget = Budget {
                    bytes: self.limits.max_file_bytes,
                    entries: 1,
                };
                let kept = match fs.read_entry(&loc, &mut budget) {
                    // Attack: content read after a write raced the walk would be kept under the
                    // walk's metadata; a size that disagrees is not kept (the file then counts
                    // as changed, its earlier content unknown).
                    Ok(Some(Node::File { mode, bytes }))
                        if bytes.len() as u64 == seen.meta.size =>
                    {
                        Kept::File {
                            mode,
                            content: Held::new(bytes, &self.live),
                        }
                    }
                    Ok(Some(Node::Symlink { target })) => Kept::Symlink {
                        target: PathBuf::from(target),
                    },
                    // Changed or gone between the walk and the read: its content is not known,
                    // and the comparison after the command says whether it matters.
                    _ => return None,
                };
                Some(kept)
            }
        }
    }

    /// Walks every root. `.git` directories and ignored entries are left out (ignored
    /// directories are not entered).
    fn walk(&self, ws: &Workspace, fs: &WorkspaceFs) -> Result<Snapshot, ChangeError> {
        let mut snapshot = Snapshot::default();
        let mut budget = self.limits.max_entries;
        let ignores = {
            let mut frozen = self
                .ignores
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            frozen
                .get_or_insert_with(|| {
                    (0..ws.roots().len())
                        .map(|root| root_ignore(ws, fs, root))
                        .collect()
                })
                .clone()
        };
        for (root, _) in ws.roots().iter().enumerate() {
            let Some(ignore) = ignores.get(root) else {
                continue;
            };
            let mut seen = 0usize;
            fs.walk_meta(root, budget, &mut |rel: &Path, meta: &EntryMeta| {
                seen += 1;
                let is_dir = meta.kind == EntryKind::Dir;
                if (is_dir && rel.file_name() == Some(".git".as_ref()))
                    || ignore.matched_path_or_any_parents(rel, is_dir).is_ignore()
                {
                    return Walk::Skip;
                }
                snapshot
                    .entries
                    .insert((root, rel.to_path_buf()), Seen { meta: *meta });
                Walk::Continue
            })?;
            budget = budget.saturating_sub(seen);
        }
        Ok(snapshot)
    }
}

/// Whether an entry changed between two walks. A directory changes only by appearing,
/// vanishing, changing kind or mode: its own times move whenever an entry in it does, which is
/// that entry's change.
fn differs(old: Option<&Seen>, new: Option<&Seen>) -> bool {
    match (old, new) {
        (None, None) => false,
        (Some(_), None) | (None, Some(_)) => true,
        (Some(a), Some(b)) => {
            let (a, b) = (a.meta, b.meta);
            if a.kind != b.kind {
                return true;
            }
            if a.kind == EntryKind::Dir {
                return a.mode != b.mode || a.ino != b.ino;
            }
            a != b
        }
    }
}

/// The ignore rules of root `root`: its top `.gitignore` and `.git/info/exclude`, read through
/// `fs`. Rules that cannot be read are left out: that only makes more entries tracked.
fn root_ignore(ws: &Workspace, fs: &WorkspaceFs, root: usize) -> Gitignore {
    let Some(r) = ws.roots().get(root) else {
        return Gitignore::empty();
    };
    let mut builder = GitignoreBuilder::new(r.host_path());
    for rel in [".gitignore", ".git/info/exclude"] {
        let loc = Location {
            root,
            rel: PathBuf::from(rel),
        };
        let Ok(bytes) = fs.read_head(&loc, 1 << 20) else {
            continue;
        };
        for line in String::from_utf8_lossy(&bytes).lines() {
            let _ = builder.add_line(None, line);
        }
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The labels of the changed entries a result names: files and links, and directories that
/// appeared or vanished, sorted.
pub fn changed_labels(changes: &[Change]) -> Vec<String> {
    let mut labels: BTreeSet<&str> = BTreeSet::new();
    for c in changes {
        if c.kind != EntryKind::Dir || !c.exists_now || c.before == Some(EntryState::Absent) {
            labels.insert(&c.label);
        }
    }
    labels.into_iter().map(str::to_owned).collect()
}
