//! The cgroup of one command ([`CommandCgroup`]): joined before exec, killed through pidfds (or
//! `cgroup.kill`), read for the limits it hit, and removed with everything in it; controlled
//! through the backend that made it.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::backend_kind::BackendKind;
use super::error::CgroupError;
use super::limits::LimitsHit;
use super::ops::{self, CgroupDir};
use super::parse;
use super::session_cgroup::SessionCgroup;
use super::systemd_units::ScopeControl;
use super::{v1_control, v2_control};

/// How a command's cgroup is controlled after it is prepared.
#[derive(Debug)]
pub(crate) enum Control {
    /// Delegated: nothing to do.
    Nothing,
    /// A systemd scope unit.
    Systemd(ScopeControl),
    /// cgroup v1: `dirs[0]` is the freezer.
    V1,
    /// cgroup v2: `dirs[0]` is the only directory.
    V2,
}

/// The cgroup of one command, from [`CgroupBackend::prepare`](super::CgroupBackend::prepare) to
/// [`CommandCgroup::remove`].
#[derive(Debug)]
pub struct CommandCgroup {
    kind: BackendKind,
    name: String,
    pub(super) argv_prefix: Vec<OsString>,
    /// cgroupfs directories in join order; the first is the one kills go through.
    pub(super) dirs: Vec<CgroupDir>,
    control: Control,
    /// Set once removed, so that `Drop` does nothing more.
    removed: bool,
    /// The session it is inside, kept alive until this cgroup is removed (a field, so dropped
    /// after `Drop::drop` removed this one).
    pub(super) session: Option<Arc<SessionCgroup>>,
}

impl CommandCgroup {
    pub(crate) fn new(kind: BackendKind, name: &str, control: Control) -> Self {
        Self {
            kind,
            name: name.to_owned(),
            argv_prefix: Vec::new(),
            dirs: Vec::new(),
            control,
            removed: false,
            session: None,
        }
    }

    /// The session it is inside, if any.
    pub fn session(&self) -> Option<&Arc<SessionCgroup>> {
        self.session.as_ref()
    }

    /// Which of its session's budgets stopped it: a limit was hit in this command ([`limits_hit`](
    /// Self::limits_hit)) while its own limit was never reached and the session's was. Read
    /// before [`remove`](Self::remove). cgroup v1 (from `pids.peak` and
    /// `memory.max_usage_in_bytes` against the limits) and v2 (`pids.peak`, `memory.events.local`);
    /// nothing for systemd and delegated, and nothing outside a session.
    pub fn session_limits_hit(&self) -> LimitsHit {
        let Some(session) = &self.session else {
            return LimitsHit::default();
        };
        let own = self.limits_hit();
        match &self.control {
            Control::V1 => v1_control::session_limits_hit(&self.dirs, &session.dirs, own),
            Control::V2 => v2_control::session_limits_hit(&self.dirs, &session.dirs, own),
            Control::Nothing | Control::Systemd(_) => LimitsHit::default(),
        }
    }

    /// Which backend made it.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// The per-command name it was prepared with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// argv to put in front of the bwrap argv (systemd-run ... --); empty for cgroupfs/delegated.
    pub fn argv_prefix(&self) -> &[OsString] {
        &self.argv_prefix
    }

    /// Open, write-only fds of the cgroup.procs files the child must join before exec: the spawner
    /// writes b"0" to each of them from the child between fork and exec (only write(2); no
    /// allocation). Empty for systemd/delegated.
    ///
    /// The fds are close-on-exec. The kernel checks the permission to move with the credentials the
    /// file was opened with, so they must be used by a process of the same user (the child).
    /// On cgroup v1 the freezer comes first: a process that joined any of its cgroups is then
    /// always in the one [`kill_all`](Self::kill_all) freezes.
    pub fn join_fds(&self) -> Vec<BorrowedFd<'_>> {
        self.dirs
            .iter()
            .filter_map(|d| d.procs.as_ref().map(AsFd::as_fd))
            .collect()
    }

    /// The cgroupfs directories of this command, in join order (empty for systemd/delegated); for
    /// `spear doctor`, logs and tests.
    pub fn dirs(&self) -> Vec<&Path> {
        self.dirs.iter().map(|d| d.path.as_path()).collect()
    }

    /// Kills every process in the cgroup (v2 cgroup.kill; v1 freeze + pidfd kill + thaw), and
    /// waits (bounded) until it is empty.
    ///
    /// It ends the processes that have joined: call it once the spawn has returned (the child
    /// joins before exec, so a returned spawn means it is in). A child still between fork and its
    /// join is not in the cgroup yet and is not killed.
    ///
    /// On cgroup v1 (and v2 kernels older than 5.14, without `cgroup.kill`) the freezer cgroup is
    /// frozen first and every pid read from its `cgroup.procs` is opened as a pidfd and signalled
    /// through it, then the cgroup is thawed, until it is empty. Freezing is what makes this safe:
    /// a frozen process cannot fork (so the list is complete) and cannot exit, so its pid cannot be
    /// freed and reused by another process between reading it and opening it. The one exception
    /// is the OOM killer, which thaws its victim; to close that gap each pidfd's process is
    /// checked to be in this cgroup (through `/proc/<pid>/cgroup`) after it is opened and before it
    /// is signalled, and a check made before a successful signal through the pidfd was about the
    /// pidfd's process. No numeric pid is ever passed to kill(2).
    ///
    /// Delegated: a no-op (the caller's PID-namespace kill is what ends the tree). systemd:
    /// `systemctl --user kill --signal=SIGKILL <unit>.scope`, then waits until the unit is gone.
    /// At most about ten seconds in all; then an error names the cgroup.
    pub fn kill_all(&self) -> Result<(), CgroupError> {
        match &self.control {
            Control::Nothing => Ok(()),
            Control::Systemd(scope) => scope.kill_all(),
            Control::V1 => v1_control::kill_all(&self.dirs),
            Control::V2 => v2_control::kill_all(&self.dirs),
        }
    }

    /// Whether a limit was hit: memory (v1 `memory.failcnt` > 0 or `memory.oom_control` `oom_kill` >
    /// 0; v2 `memory.events` `oom_kill` / `max`), tasks (v1 `pids.events` "max N" > 0; v2
    /// `pids.events` `max` > 0).
    ///
    /// Read before [`remove`](Self::remove). A file that cannot be read counts as not hit and is
    /// logged. systemd: read from the scope's cgroup while the unit exists; once its last process
    /// has exited systemd collects the unit and this reports nothing hit. Delegated: nothing hit
    /// (the outer runtime keeps its own counters).
    pub fn limits_hit(&self) -> LimitsHit {
        match &self.control {
            Control::Nothing => LimitsHit::default(),
            Control::Systemd(scope) => scope.limits_hit(),
            Control::V1 => v1_control::limits_hit(&self.dirs),
            Control::V2 => self
                .dirs
                .first()
                .map(|d| v2_control::limits_hit(&d.path))
                .unwrap_or_default(),
        }
    }

    /// Whether the process `pid` (our spawned child, for tests) is in this cgroup: in every one of
    /// its cgroupfs directories, or in its systemd scope. Always false for delegated.
    pub fn contains_pid(&self, pid: u32) -> Result<bool, CgroupError> {
        let path = PathBuf::from(format!("/proc/{pid}/cgroup"));
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(source) => {
                return Err(CgroupError::Io {
                    op: "read",
                    path,
                    source,
                });
            }
        };
        let lines = parse::parse_proc_cgroup(&text);
        Ok(match &self.control {
            Control::Nothing => false,
            Control::Systemd(scope) => scope.contains(&lines),
            Control::V1 | Control::V2 => self
                .dirs
                .iter()
                .all(|d| parse::cgroup_path(&lines, d.hierarchy) == Some(d.rel.as_str())),
        })
    }

    /// Kills what is left and removes the cgroup; none is left behind. Also done (best effort,
    /// logged with `tracing::warn`) on Drop.
    pub fn remove(mut self) -> Result<(), CgroupError> {
        self.cleanup()
    }

    fn cleanup(&mut self) -> Result<(), CgroupError> {
        if self.removed {
            return Ok(());
        }
        let killed = self.kill_all();
        let removed = match &self.control {
            Control::Nothing | Control::Systemd(_) => Ok(()),
            Control::V1 | Control::V2 => ops::remove_dirs(&mut self.dirs),
        };
        self.removed = true;
        killed.and(removed)
    }
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        if let Err(error) = self.cleanup() {
            tracing::warn!(cgroup = %self.name, backend = %self.kind, %error, "could not remove a command's cgroup");
        }
    }
}
