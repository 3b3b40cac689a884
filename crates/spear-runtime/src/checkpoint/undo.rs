//! `undo`: every entry the last turn changed is put back as it was before the turn, all or
//! nothing.
//!
//! 1. Every entry's current state is read (through [`WorkspaceFs`], no link followed) and must be
//!    the state the turn left; any difference is a [`UndoError::Conflict`] and nothing changes.
//! 2. Every blob needed (to restore, and to put back) is read and verified; a missing or changed
//!    one is an error and nothing changes.
//! 3. The steps of [`plan`] run in order: create missing directories (shallowest first), remove
//!    files and links the turn created, remove directories the turn created (deepest first, only
//!    when empty; one that is not is kept and reported), restore files and links. Removals come
//!    before restores so that a file the turn replaced with a directory can come back.
//! 4. If a step fails, the steps already done are undone in reverse (each entry is put back to
//!    what the turn left), and the error says which could not be.
//! 5. The turn is marked undone, so the next `undo` goes to the turn before.

use std::collections::{BTreeMap, HashMap};

use spear_workspace::{EntryKind, FsError, Location, Node, Workspace, WorkspaceFs};

use super::manifest::Entry;
use super::{CheckpointError, CheckpointStore, Conflict, EntryState, UndoError};

/// What `undo` did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UndoReport {
    /// The turn undone.
    pub turn: String,
    /// Entries put back (files, links, directories re-created), by label.
    pub restored: Vec<String>,
    /// Entries the turn created that were removed, by label.
    pub removed: Vec<String>,
    /// Directories the turn created that were kept because they are not empty, by label.
    pub kept: Vec<String>,
}

impl std::fmt::Display for UndoReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "undid turn {}", self.turn)?;
        for (what, list) in [
            ("restored", &self.restored),
            ("removed", &self.removed),
            ("kept (not empty)", &self.kept),
        ] {
            if !list.is_empty() {
                write!(f, "\n  {what}: {}", list.join(", "))?;
            }
        }
        Ok(())
    }
}

/// One step of an undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Make a directory with this mode where there is none (a non-directory there is replaced).
    CreateDir {
        /// Permission bits.
        mode: u32,
    },
    /// Remove the file or link the turn created.
    RemoveFile,
    /// Remove the directory the turn created, if it is empty.
    RemoveDir,
    /// Put the file or link of the before-state back.
    Restore,
}

/// An action on entry `entry` (an index into the plan's input), and the state the entry is in
/// just before it: what a put-back after a later failure returns it to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) entry: usize,
    pub(crate) action: Action,
    pub(crate) prior: EntryState,
}

/// One entry as the plan sees it: its depth below its root, its state before the turn and now.
#[derive(Debug, Clone)]
pub(crate) struct PlanItem<'a> {
    pub(crate) depth: usize,
    pub(crate) before: &'a EntryState,
    pub(crate) now: &'a EntryState,
}

/// The steps that turn every item's `now` into its `before`, in the order they must run. Within a
/// phase, items keep their input order (stable sorts). A directory that is still a directory
/// keeps its current mode. Pure.
pub(crate) fn plan(items: &[PlanItem<'_>]) -> Vec<Step> {
    let indexed: Vec<(usize, &PlanItem<'_>)> = items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.before != it.now)
        .collect();
    let mut steps = Vec::new();

    let mut create: Vec<_> = indexed
        .iter()
        .filter(|(_, it)| it.before.is_dir() && !it.now.is_dir())
        .collect();
    create.sort_by_key(|(_, it)| it.depth);
    for (i, it) in create {
        if let EntryState::Dir { mode } = it.before {
            steps.push(Step {
                entry: *i,
                action: Action::CreateDir { mode: *mode },
                prior: it.now.clone(),
            });
        }
    }

    for (i, it) in &indexed {
        if *it.before == EntryState::Absent && !it.now.is_dir() {
            steps.push(Step {
                entry: *i,
                action: Action::RemoveFile,
                prior: it.now.clone(),
            });
        }
    }

    let mut remove_dirs: Vec<_> = indexed
        .iter()
        .filter(|(_, it)| it.now.is_dir() && !it.before.is_dir())
        .collect();
    remove_dirs.sort_by_key(|(_, it)| std::cmp::Reverse(it.depth));
    for (i, it) in remove_dirs {
        steps.push(Step {
            entry: *i,
            action: Action::RemoveDir,
            prior: it.now.clone(),
        });
    }

    for (i, it) in &indexed {
        if matches!(
            it.before,
            EntryState::File { .. } | EntryState::Symlink { .. }
        ) {
            let prior = if it.now.is_dir() {
                EntryState::Absent
            } else {
                it.now.clone()
            };
            steps.push(Step {
                entry: *i,
                action: Action::Restore,
                prior,
            });
        }
    }
    steps
}

/// An entry of the turn being undone, located in this workspace.
struct Target<'a> {
    loc: Location,
    label: String,
    entry: &'a Entry,
    now: EntryState,
}

/// What a step did.
enum Done {
    Changed,
    /// A directory that was not empty, left in place.
    Kept,
}

impl CheckpointStore {
    /// Undoes the latest turn that is not undone and changed something (see the module doc for
    /// the order and the guarantees). `fs` must be the [`WorkspaceFs`] of `ws`.
    ///
    /// In phases, each one before anything changes refusing the whole undo: locate the turn's
    /// entries in this workspace; check that each is still as the turn left it; plan the steps;
    /// read and verify every blob they need. Then the steps, putting back what was done when one
    /// fails; then the turn is marked undone.
    pub fn undo_last(&self, ws: &Workspace, fs: &WorkspaceFs) -> Result<UndoReport, UndoError> {
        let Some(mut turn) = self.latest_undoable()? else {
            return Err(UndoError::NothingToUndo);
        };
        let turn_id = turn.id().to_owned();
        // What undo stores on the way (the states it may have to put back) never evicts the
        // turn it undoes.
        self.set_current(&turn_id);
        let located = self.as_the_turn_left(fs, locate(ws, &turn_id, &turn.manifest.entries)?)?;
        let items: Vec<PlanItem<'_>> = located
            .iter()
            .map(|t| PlanItem {
                depth: t.loc.rel.components().count(),
                before: &t.entry.before,
                now: &t.now,
            })
            .collect();
        let steps = plan(&items);
        let blobs = self.blobs_for(&steps, &located)?;
        let report = self.run_steps(fs, &turn_id, &steps, &located, &blobs)?;
        // The next undo goes to the turn before.
        turn.mark_undone();
        turn.save().map_err(|source| UndoError::NotMarked {
            turn: turn_id,
            source,
        })?;
        Ok(report)
    }

    /// Phase 1: the entries, each still as the turn left it (or already as before it); every
    /// other state is a conflict, and any conflict refuses the undo.
    fn as_the_turn_left<'e>(
        &self,
        fs: &WorkspaceFs,
        targets: Vec<(String, Location, &'e Entry)>,
    ) -> Result<Vec<Target<'e>>, UndoError> {
        let mut located = Vec::new();
        let mut conflicts = Vec::new();
        for (label, loc, entry) in targets {
            let expected = entry.after.as_ref().map_or_else(
                || "a state that was not recorded".to_owned(),
                EntryState::describe,
            );
            match self.read_state(fs, &loc) {
                // Never recorded after, but still as before: nothing to undo there.
                Ok(now) if entry.after.as_ref() == Some(&now) || now == entry.before => {
                    located.push(Target {
                        loc,
                        label,
                        entry,
                        now,
                    });
                }
                Ok(now) => conflicts.push(Conflict {
                    label,
                    expected,
                    found: now.describe(),
                }),
                Err(e) => conflicts.push(Conflict {
                    label,
                    expected,
                    found: format!("something that cannot be read ({e})"),
                }),
            }
        }
        if conflicts.is_empty() {
            Ok(located)
        } else {
            Err(UndoError::Conflict(conflicts))
        }
    }

    /// Phase 2: every blob a step or a put-back needs, read and verified before anything
    /// changes. Attack stopped: a blob swapped in the store would be written into the workspace.
    fn blobs_for(
        &self,
        steps: &[Step],
        located: &[Target<'_>],
    ) -> Result<HashMap<String, Vec<u8>>, UndoError> {
        let mut blobs = HashMap::new();
        for step in steps {
            let before = &located[step.entry].entry.before;
            let wanted = [
                (step.action == Action::Restore).then_some(before),
                Some(&step.prior),
            ];
            for state in wanted.into_iter().flatten() {
                if let EntryState::File { hash, size, .. } = state {
                    if blobs.contains_key(hash) {
                        continue;
                    }
                    let bytes = self.read_blob(hash)?;
                    if bytes.len() as u64 != *size {
                        return Err(CheckpointError::BlobTampered {
                            hash: hash.clone(),
                            why: "its size is not the recorded one".to_owned(),
                        }
                        .into());
                    }
                    blobs.insert(hash.clone(), bytes);
                }
            }
        }
        Ok(blobs)
    }

    /// Phase 3: the steps in order; on a failure, phase 4: every step done so far is put back, in
    /// reverse, and the error names what could not be.
    fn run_steps(
        &self,
        fs: &WorkspaceFs,
        turn_id: &str,
        steps: &[Step],
        located: &[Target<'_>],
        blobs: &HashMap<String, Vec<u8>>,
    ) -> Result<UndoReport, UndoError> {
        let mut report = UndoReport {
            turn: turn_id.to_owned(),
            ..UndoReport::default()
        };
        let mut done: Vec<&Step> = Vec::new();
        for step in steps {
            let t = &located[step.entry];
            match apply(fs, t, &step.action, blobs) {
                Ok(Done::Changed) => {
                    let list = match step.action {
                        Action::CreateDir { .. } | Action::Restore => &mut report.restored,
                        Action::RemoveFile | Action::RemoveDir => &mut report.removed,
                    };
                    list.push(t.label.clone());
                    done.push(step);
                }
                Ok(Done::Kept) => report.kept.push(t.label.clone()),
                Err(source) => {
                    let mut not_put_back = Vec::new();
                    // The failed step may have done part of its work.
                    if self.read_state(fs, &t.loc).ok().as_ref() != Some(&step.prior)
                        && put_back(fs, &t.loc, &t.label, &step.prior, blobs).is_err()
                    {
                        not_put_back.push(t.label.clone());
                    }
                    for step in done.iter().rev() {
                        let t = &located[step.entry];
                        if put_back(fs, &t.loc, &t.label, &step.prior, blobs).is_err() {
                            not_put_back.push(t.label.clone());
                        }
                    }
                    return Err(UndoError::Failed {
                        turn: turn_id.to_owned(),
                        label: t.label.clone(),
                        source,
                        not_put_back,
                    });
                }
            }
        }
        Ok(report)
    }
}

/// The turn's changed entries in this workspace, by root and path; a root that is gone refuses
/// the undo.
fn locate<'e>(
    ws: &Workspace,
    turn_id: &str,
    entries: &'e [Entry],
) -> Result<Vec<(String, Location, &'e Entry)>, UndoError> {
    let mut targets = Vec::new();
    for entry in entries.iter().filter(|e| e.changed()) {
        // Roots are matched by host path: a root's index can differ between processes.
        let Some(root) = ws.roots().iter().position(|r| r.host_path() == entry.root) else {
            return Err(UndoError::RootGone {
                turn: turn_id.to_owned(),
                label: entry.label.clone(),
                root: entry.root.clone(),
            });
        };
        let loc = Location {
            root,
            rel: entry.rel.clone(),
        };
        targets.push((ws.label(&loc), loc, entry));
    }
    targets.sort_by(|a, b| (a.1.root, &a.1.rel).cmp(&(b.1.root, &b.1.rel)));
    Ok(targets)
}

/// Runs one step on `t`.
fn apply(
    fs: &WorkspaceFs,
    t: &Target<'_>,
    action: &Action,
    blobs: &HashMap<String, Vec<u8>>,
) -> Result<Done, FsError> {
    let kind = fs.entry_kind(&t.loc)?.map(|(k, _)| k);
    // A directory that appeared since the check is never removed with what is in it.
    let no_dir = || {
        if kind == Some(EntryKind::Dir) {
            Err(FsError::IsDirectory {
                label: t.label.clone(),
            })
        } else {
            Ok(())
        }
    };
    match action {
        Action::CreateDir { mode } => {
            no_dir()?;
            fs.restore(
                &t.loc,
                &Node::Dir {
                    mode: *mode,
                    children: BTreeMap::new(),
                },
            )?;
        }
        Action::RemoveFile => {
            no_dir()?;
            if kind.is_some() {
                fs.remove_tree(&t.loc)?;
            }
        }
        Action::RemoveDir => {
            if !fs.remove_empty_dir(&t.loc)? {
                return Ok(Done::Kept);
            }
        }
        Action::Restore => {
            no_dir()?;
            fs.restore(&t.loc, &node_of(&t.entry.before, &t.label, blobs)?)?;
        }
    }
    Ok(Done::Changed)
}

/// Returns the entry at `loc` to `state` (what the turn left, or what a removed directory's place
/// held in between).
fn put_back(
    fs: &WorkspaceFs,
    loc: &Location,
    label: &str,
    state: &EntryState,
    blobs: &HashMap<String, Vec<u8>>,
) -> Result<(), FsError> {
    let kind = fs.entry_kind(loc)?.map(|(k, _)| k);
    match state {
        EntryState::Absent => match kind {
            None => Ok(()),
            Some(EntryKind::Dir) => {
                if fs.remove_empty_dir(loc)? {
                    Ok(())
                } else {
                    Err(FsError::IsDirectory {
                        label: label.to_owned(),
                    })
                }
            }
            Some(_) => fs.remove_tree(loc),
        },
        EntryState::Dir { mode } => match kind {
            Some(EntryKind::Dir) => Ok(()),
            _ => fs.restore(
                loc,
                &Node::Dir {
                    mode: *mode,
                    children: BTreeMap::new(),
                },
            ),
        },
        EntryState::File { .. } | EntryState::Symlink { .. } => {
            if kind == Some(EntryKind::Dir) {
                return Err(FsError::IsDirectory {
                    label: label.to_owned(),
                });
            }
            fs.restore(loc, &node_of(state, label, blobs)?)
        }
    }
}

/// The node a file or link state is restored as, its content from the verified blobs.
fn node_of(
    state: &EntryState,
    label: &str,
    blobs: &HashMap<String, Vec<u8>>,
) -> Result<Node, FsError> {
    let missing = || FsError::Io {
        label: label.to_owned(),
        source: std::io::Error::other("no content was prepared to restore it"),
    };
    match state {
        EntryState::File { mode, hash, .. } => Ok(Node::File {
            mode: *mode,
            bytes: blobs.get(hash).ok_or_else(missing)?.clone(),
        }),
        EntryState::Symlink { target } => Ok(Node::Symlink {
            target: target.clone().into_os_string(),
        }),
        EntryState::Absent | EntryState::Dir { .. } => Err(missing()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(n: u8) -> EntryState {
        EntryState::File {
            mode: 0o644,
            hash: format!("{n:064x}"),
            size: 1,
        }
    }

    fn dir() -> EntryState {
        EntryState::Dir { mode: 0o755 }
    }

    fn link() -> EntryState {
        EntryState::Symlink { target: "t".into() }
    }

    /// (depth, before, now) per item -> (item, action, prior) per step.
    type Case = (
        Vec<(usize, EntryState, EntryState)>,
        Vec<(usize, Action, EntryState)>,
    );

    #[test]
    fn plan_table() {
        use Action::{CreateDir, RemoveDir, RemoveFile, Restore};
        let a = EntryState::Absent;
        let cases: Vec<Case> = vec![
            // Nothing changed: nothing to do.
            (
                vec![(1, file(1), file(1)), (1, a.clone(), a.clone())],
                vec![],
            ),
            // A modified file and a deleted one come back; a created one goes.
            (
                vec![
                    (1, file(1), file(2)),
                    (1, file(3), a.clone()),
                    (1, a.clone(), file(4)),
                ],
                vec![
                    (2, RemoveFile, file(4)),
                    (0, Restore, file(2)),
                    (1, Restore, a.clone()),
                ],
            ),
            // Created directories go deepest first, after the files in them.
            (
                vec![
                    (1, a.clone(), dir()),
                    (2, a.clone(), dir()),
                    (3, a.clone(), file(1)),
                ],
                vec![
                    (2, RemoveFile, file(1)),
                    (1, RemoveDir, dir()),
                    (0, RemoveDir, dir()),
                ],
            ),
            // Deleted directories come back shallowest first, before the files in them.
            (
                vec![
                    (3, file(1), a.clone()),
                    (2, dir(), a.clone()),
                    (1, dir(), a.clone()),
                ],
                vec![
                    (2, CreateDir { mode: 0o755 }, a.clone()),
                    (1, CreateDir { mode: 0o755 }, a.clone()),
                    (0, Restore, a.clone()),
                ],
            ),
            // A file replaced by a directory: the directory goes, then the file comes back.
            (
                vec![(1, file(1), dir())],
                vec![(0, RemoveDir, dir()), (0, Restore, a.clone())],
            ),
            // A directory replaced by a file: the directory comes back over it.
            (
                vec![(1, dir(), file(1))],
                vec![(0, CreateDir { mode: 0o755 }, file(1))],
            ),
            // A link replaced by a file and back; a created link is removed.
            (
                vec![(1, link(), file(1)), (1, a.clone(), link())],
                vec![(1, RemoveFile, link()), (0, Restore, file(1))],
            ),
            // A directory whose mode changed is left as it is.
            (vec![(1, dir(), EntryState::Dir { mode: 0o700 })], vec![]),
        ];
        for (items, want) in cases {
            let plan_items: Vec<PlanItem<'_>> = items
                .iter()
                .map(|(depth, before, now)| PlanItem {
                    depth: *depth,
                    before,
                    now,
                })
                .collect();
            let got: Vec<(usize, Action, EntryState)> = plan(&plan_items)
                .into_iter()
                .map(|s| (s.entry, s.action, s.prior))
                .collect();
            assert_eq!(got, want, "{items:?}");
        }
    }
}
