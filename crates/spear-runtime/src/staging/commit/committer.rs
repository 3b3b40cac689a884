//! One commit in progress: what its judging pass and its applying pass share (the workspace, the
//! layers, the report being written, and the places under which nothing more is applied).

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use spear_workspace::{Location, Workspace, WorkspaceFs};

use super::layers::Layers;
use super::report::CommitReport;
use crate::checkpoint::CheckpointStore;
use crate::staging::area::Staging;
use crate::staging::tracked::TrackedRules;
use crate::staging::upper::open_layer_dir;

/// One commit in progress: judges the planned operations (all of them first, `judge`), then
/// applies the allowed ones in order (`apply`).
pub(super) struct Committer<'a> {
    pub(super) ws: &'a Workspace,
    pub(super) fs: &'a WorkspaceFs,
    pub(super) store: Option<&'a CheckpointStore>,
    pub(super) tracked: &'a TrackedRules,
    pub(super) layers: &'a Layers,
    pub(super) started: (i64, i64),
    pub(super) report: CommitReport,
    /// Places under which nothing more is applied (a refused removal or directory).
    pub(super) blocked: Vec<Location>,
    /// Where each refused change lies (for [`Committer::keep_git_ops_whole`]).
    pub(super) refused_at: Vec<Location>,
    pub(super) conflict_dir: Option<PathBuf>,
    pub(super) staging: &'a Staging,
    /// Files installed in a `.git` directory, and their directories: synced at the end.
    pub(super) to_sync: Vec<Location>,
    /// Bytes of removed untracked files the checkpoint may still keep.
    pub(super) untracked_budget: u64,
}

impl Committer<'_> {
    /// Whether `loc` lies at or below a place under which nothing more is applied.
    pub(super) fn is_blocked(&self, loc: &Location) -> bool {
        self.blocked
            .iter()
            .any(|b| b.root == loc.root && loc.rel.starts_with(&b.rel))
    }

    /// The layer directory holding `loc`'s staged entry, opened.
    pub(super) fn layer_parent(&self, loc: &Location) -> Option<(OwnedFd, OsString)> {
        let (_, fd) = self.layers.tree(loc.root)?;
        let parent = loc.rel.parent()?;
        let name = loc.rel.file_name()?.to_os_string();
        Some((open_layer_dir(fd.as_fd(), parent).ok()?, name))
    }
}
