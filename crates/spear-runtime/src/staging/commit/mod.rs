//! Committing what a command staged: every change judged first, then the allowed ones put into
//! the workspace through [`WorkspaceFs`], the refused ones dropped and reported.
//!
//! 1. Plan: the upper layer of each root is compared with the host, entry by entry, into a list of
//!    operations in tree order (parents before children, a removal before what replaces it).
//!    A file whose content and mode did not change is no change (a copy-up by an open for
//!    writing, a `touch`): at most its modification time is set.
//! 2. Judge: every operation goes to the caller's [`Judge`] with a view of the workspace as the
//!    command left it (the layer over the host). A removal is judged as a unit with everything
//!    below it: one protected entry inside keeps the whole tree (a nested repository moved away
//!    keeps its `.git/config` and hooks where they are). What is below a refused directory or
//!    removal is dropped with it.
//! 3. Together: a git operation's changes (refs, index, logs, a linked worktree's metadata in
//!    `.git/worktrees/NAME`) are committed all or none. When a change inside a repository's git
//!    directory (the path up to its first `.git` component that is a directory, on the host or in
//!    the command's view) is refused, every other change planned in that git directory is dropped
//!    with it and counted ([`CommitReport::kept_together`]); changes outside it are independent
//!    and still applied. Done before host-run configuration is put to the person (nobody is asked
//!    about a change that is dropped anyway) and again after, for what was not approved. Attack
//!    stopped: `git worktree add -b x ../wt` answered as done while its `gitdir` was kept out,
//!    leaving a branch, half a worktree's metadata and an agent told it worked.
//! 4. Conflicts: an entry the host changed while the command ran (its ctime is later than the
//!    command's start) is not overwritten or removed; the staged version is kept aside and named.
//!    Attack stopped: two spear processes on one workspace undoing each other's changes.
//! 5. Apply: removals, directories, modes, files (renamed out of the layer, or copied when it is
//!    on another filesystem), links, times. The state before of every tracked entry, and of
//!    everything a removal takes (ignored files and a git directory's too, within
//!    [`MAX_UNTRACKED_KEPT`]), is read just before it changes, for the checkpoint; every removal
//!    is named in the result. Nothing is applied when the plan could not be made (the layer
//!    unreadable or over its bound): all or nothing at that step.
//!
//! A command any part of whose changes was kept out (refused, or host-run configuration not
//! approved) did not do what it did in its own view: its result is `denied`, never `ok`, and a
//! 0 exit code becomes [`spear_core::exit_code::REFUSED`] ([`CommitReport::apply_to`]).
//!
//! What the plan removes is what the command's view lost, never what metadata the command could
//! set says: a whiteout (overlayfs makes one only for an entry removed in the merged view), or an
//! opaque directory marked with the mount's own attribute, which overlayfs never lets a command
//! set ([`spear_sandbox::opaque_xattr`]). A removal of a repository's core is refused by the
//! judge whatever made it ([`Judge`]; spear-policy's `git_core`).

mod apply;
mod committer;
mod judge;
mod layers;
mod plan;
mod report;

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use spear_workspace::{Workspace, WorkspaceFs};

pub use judge::{Judge, Proposed};
pub use report::{CommitReport, OverLimit};

use super::area::Staging;
use super::limits::{MAX_STAGED_ENTRIES, MAX_UNTRACKED_KEPT};
use super::tracked::TrackedRules;
use super::upper::{Staged, UpperError, read_layer};
use crate::checkpoint::CheckpointStore;
use committer::Committer;
use judge::Judged;
use layers::{Layers, StagedView};
use plan::Planner;

impl Staging {
    /// Judges and commits what the command staged (see the module's doc). `store`, when given,
    /// receives the earlier content of every tracked entry that changes; `tracked` says which
    /// entries those are.
    ///
    /// Bounded: a layer holding more entries than the staging's limit, or more changes planned
    /// than it, commits nothing ([`CommitReport::over_limit`]); `stop` is asked while the
    /// changes are judged, and when it says so nothing is committed either
    /// ([`CommitReport::stopped`]). Once the first change is applied, the rest are (applying is
    /// the short part: renames).
    // One step after another, each short; split, it would only pass its state around.
    #[allow(clippy::too_many_lines)]
    pub fn commit(
        &self,
        ws: &Workspace,
        fs: &WorkspaceFs,
        judge: &dyn Judge,
        store: Option<&CheckpointStore>,
        tracked: &TrackedRules,
        stop: &dyn Fn() -> bool,
    ) -> CommitReport {
        let mut report = CommitReport::default();
        // Attack: a report shared by two readers (a job's end) committed twice.
        if self
            .committed
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return report;
        }
        let layers = match self.read_layers() {
            Ok(l) => l,
            Err(UpperError::Limit(_)) => {
                report.over_limit = Some(OverLimit {
                    max: self.max_changes,
                    planned: None,
                });
                return report;
            }
            Err(e) => {
                report.unreadable = Some(e.to_string());
                return report;
            }
        };
        let started = std::time::Instant::now();
        let mut ops = Vec::new();
        for (root, tree, _) in &layers.trees {
            if let Staged::Dir {
                children, opaque, ..
            } = tree
            {
                let mut planner = Planner {
                    fs,
                    ws,
                    out: &mut ops,
                    special: &mut report.special,
                    failures: &mut report.failures,
                };
                planner.dir(*root, Path::new(""), children, *opaque, true);
            }
        }
        if ops.len() > self.max_changes {
            report.over_limit = Some(OverLimit {
                max: self.max_changes,
                planned: Some(ops.len()),
            });
            return report;
        }
        let view = StagedView {
            layers: &layers,
            host: fs,
        };
        let mut committer = Committer {
            ws,
            fs,
            store,
            tracked,
            layers: &layers,
            started: self.started,
            report,
            blocked: Vec::new(),
            refused_at: Vec::new(),
            conflict_dir: None,
            staging: self,
            to_sync: Vec::new(),
            untracked_budget: MAX_UNTRACKED_KEPT,
        };
        let planned = started.elapsed();
        let mut judged: Vec<Option<Judged>> = Vec::with_capacity(ops.len());
        for (n, p) in ops.iter().enumerate() {
            if n % 1024 == 0 && stop() {
                let mut report = committer.report;
                report.stopped = Some(ops.len());
                return report;
            }
            judged.push(committer.judge_one(p, judge, &view));
        }
        if stop() {
            let mut report = committer.report;
            report.stopped = Some(ops.len());
            return report;
        }
        // Nobody is asked about a change dropped with its git operation anyway; what is not
        // approved takes the rest of its git operation with it.
        committer.keep_git_ops_whole(&ops, &mut judged, &view);
        committer.ask(&ops, &mut judged, judge);
        committer.keep_git_ops_whole(&ops, &mut judged, &view);
        let judged_at = started.elapsed();
        let mut i = 0;
        while i < ops.len() {
            // A directory new to the host, everything in it allowed: one rename for the tree.
            if let Some(end) = committer.movable_tree(&ops, &judged, i)
                && committer.move_tree(&ops[i..end], &judged[i..end])
            {
                i = end;
                continue;
            }
            if let Some(j) = judged[i].take() {
                committer.apply_one(&ops[i], j);
            }
            i += 1;
        }
        committer.sync();
        tracing::debug!(
            changes = ops.len(),
            plan_ms = planned.as_millis(),
            judge_ms = judged_at.saturating_sub(planned).as_millis(),
            apply_ms = started.elapsed().saturating_sub(judged_at).as_millis(),
            "staged changes committed"
        );
        committer.report
    }

    fn read_layers(&self) -> Result<Layers, UpperError> {
        let mut trees = Vec::new();
        for layer in &self.layers {
            let fd = self
                .open_upper(layer.root)
                .map_err(|source| UpperError::Os {
                    rel: PathBuf::new(),
                    source,
                })?;
            // A layer with more entries than the commit takes is not read whole: its size is
            // bounded by the limit, not by what the command wrote.
            let bound = self.max_changes.min(MAX_STAGED_ENTRIES);
            let tree = read_layer(fd.as_fd(), bound, self.opaque_xattr)?;
            trees.push((layer.root, tree, fd));
        }
        Ok(Layers { trees })
    }
}
