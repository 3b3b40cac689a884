//! The parent cgroup of a session's commands ([`SessionCgroup`]), holding the session's budget,
//! removed with everything in it after the last of its commands' cgroups.

use std::path::Path;

use super::backend_kind::BackendKind;
use super::error::CgroupError;
use super::limits::SessionBudget;
use super::ops::{self, CgroupDir};
use super::systemd_units::SliceControl;
use super::v1_control;

/// How a session's cgroup is controlled.
#[derive(Debug)]
pub(crate) enum SessionControl {
    /// Delegated: nothing was created.
    Nothing,
    /// A transient systemd slice that the commands' scopes are placed in.
    Systemd(SliceControl),
    /// cgroup v1: one directory per controller of [`super::v1::CONTROLLERS`], the freezer first.
    V1,
    /// cgroup v2: one directory, its controllers enabled for its children.
    V2,
}

/// The parent cgroup of a session's commands, holding the session's [`SessionBudget`]; from
/// [`CgroupBackend::prepare_session`](super::CgroupBackend::prepare_session) to its `Drop` (or
/// [`SessionCgroup::remove`]).
///
/// Shared through an `Arc`: each [`CommandCgroup`](super::CommandCgroup) inside it holds one, so
/// the session is removed only after the last of its commands' cgroups. Removing it kills whatever
/// is still inside, at any depth, and removes every directory under it and itself: nothing
/// outlives the session.
#[derive(Debug)]
pub struct SessionCgroup {
    pub(super) kind: BackendKind,
    pub(super) name: String,
    budget: SessionBudget,
    /// cgroupfs directories (`procs` always `None`: nothing joins a session directly).
    pub(super) dirs: Vec<CgroupDir>,
    pub(super) control: SessionControl,
    removed: bool,
}

impl SessionCgroup {
    pub(crate) fn new(
        kind: BackendKind,
        name: &str,
        budget: SessionBudget,
        control: SessionControl,
    ) -> Self {
        Self {
            kind,
            name: name.to_owned(),
            budget,
            dirs: Vec::new(),
            control,
            removed: false,
        }
    }

    /// Which backend made it.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// The name it was prepared with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The budget it holds.
    pub fn budget(&self) -> SessionBudget {
        self.budget
    }

    /// Its cgroupfs directories (empty for systemd/delegated); for `spear doctor`, logs and tests.
    pub fn dirs(&self) -> Vec<&Path> {
        self.dirs.iter().map(|d| d.path.as_path()).collect()
    }

    /// The tasks its commands hold now (`pids.current`), where it has a pids directory.
    pub fn tasks_current(&self) -> Option<u64> {
        self.pids_file("pids.current")
    }

    /// The most tasks its commands held at once (`pids.peak`, Linux 6.1+), where it has one.
    pub fn tasks_peak(&self) -> Option<u64> {
        self.pids_file("pids.peak")
    }

    fn pids_file(&self, file: &str) -> Option<u64> {
        let dir = match &self.control {
            SessionControl::V1 => v1_control::dir_of(&self.dirs, "pids"),
            SessionControl::V2 => self.dirs.first().map(|d| d.path.as_path()),
            SessionControl::Nothing | SessionControl::Systemd(_) => None,
        }?;
        ops::number(&dir.join(file))
    }

    /// Kills what is left inside it (at any depth), and removes every directory under it and
    /// itself. Also done (best effort, logged) on Drop.
    pub fn remove(mut self) -> Result<(), CgroupError> {
        self.cleanup()
    }

    fn cleanup(&mut self) -> Result<(), CgroupError> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        match &self.control {
            SessionControl::Nothing => Ok(()),
            SessionControl::Systemd(slice) => slice.stop(),
            SessionControl::V1 => ops::remove_trees(&self.dirs, Some(ops::Freezer::V1)),
            SessionControl::V2 => ops::remove_trees(&self.dirs, Some(ops::Freezer::V2)),
        }
    }
}

impl Drop for SessionCgroup {
    fn drop(&mut self) {
        if let Err(error) = self.cleanup() {
            tracing::warn!(cgroup = %self.name, backend = %self.kind, %error, "could not remove a session's cgroup");
        }
    }
}
