//! Cgroup limits and the backends that enforce them.
//!
//! [`CgroupLimits`] is one contract (memory, swap, tasks, CPU) with several backends, chosen by what
//! the host offers ([`detect`]):
//! - a systemd user scope (`systemd-run --user --scope --collect`) where a user bus exists;
//! - direct cgroupfs, where a writable cgroup v2 subtree is delegated to us, or the cgroup v1
//!   controllers are writable (root on a hybrid host, or a v1 subtree delegated to the user);
//! - `delegated`, where an outer container runtime owns the cgroup
//!   (`SPEAR_RESOURCE_CONTROL=delegated`).
//!
//! Each command gets its own [`CommandCgroup`], removed afterwards. With limits active and no
//! backend, [`detect`] fails and the caller spawns nothing.
//!
//! A session (a `spear mcp` server, one `spear exec`, one sandbox of `spear serve`) may also have
//! a [`SessionCgroup`]: a parent cgroup holding the session's [`SessionBudget`] of tasks and
//! memory, with each command's cgroup created inside it
//! ([`CgroupBackend::prepare_in`]). The kernel charges every task and page of a command to its
//! own cgroup and to the session's, so the session's commands and background jobs together stay
//! within the budget, and each command within its own limits.
//!
//! Invariants:
//! - A [`CommandCgroup`] exists with every limit written before anything is spawned into it; a
//!   limit that cannot be written is an error, never a cgroup without it.
//! - A cgroupfs command joins its cgroups between fork and exec through [`CommandCgroup::join_fds`],
//!   so no instruction of the command runs outside them, and every process it forks is born inside.
//! - Processes are killed through pidfds only (or the kernel's `cgroup.kill`), never through a
//!   numeric pid: see [`CommandCgroup::kill_all`].
//! - Nothing is left behind: [`CommandCgroup::remove`] (or its `Drop`) kills what is left and
//!   removes every directory it created.
//!
//! The systemd and cgroup v2 backends are written against the kernel and systemd documentation;
//! the hosts spear is tested on have neither systemd nor a usable cgroup v2 hierarchy, so only
//! their pure parts (argv, file values, detection) are tested here. The cgroup v1 backend is
//! tested against the real kernel, as root and as an unprivileged user with a delegated subtree
//! (`scripts/delegate-cgroup.sh`).

mod delegated;
mod detect;
mod ops;
mod parse;
mod systemd;
mod v1;
mod v2;

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use detect::{HostPaths, RESOURCE_CONTROL_ENV, detect, detect_with};

/// The resource contract enforced on each command's process tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupLimits {
    /// Memory the tree may use (anonymous memory and page cache), in bytes.
    pub memory_max_bytes: u64,
    /// Swap the tree may use on top of `memory_max_bytes`, in bytes.
    pub swap_max_bytes: u64,
    /// Tasks (processes and threads) the tree may hold at once.
    pub tasks_max: u32,
    /// CPU time per wall-clock time, in percent of one CPU (`800` is eight CPUs' worth).
    pub cpu_percent: u32,
}

impl CgroupLimits {
    /// The default memory limit: 2 GiB.
    pub const DEFAULT_MEMORY_MAX_BYTES: u64 = 2 << 30;
    /// The default swap limit: none.
    pub const DEFAULT_SWAP_MAX_BYTES: u64 = 0;
    /// The default task limit.
    pub const DEFAULT_TASKS_MAX: u32 = 256;
    /// The default CPU limit: eight CPUs' worth.
    pub const DEFAULT_CPU_PERCENT: u32 = 800;

    /// Checks that every limit can be enforced: memory, tasks and CPU must be above zero (a zero
    /// would stop the command before it starts, and cgroupfs has no "zero means unlimited").
    pub fn validate(&self) -> Result<(), CgroupError> {
        let problem = if self.memory_max_bytes == 0 {
            Some("memory_max_bytes is 0")
        } else if self.tasks_max == 0 {
            Some("tasks_max is 0")
        } else if self.cpu_percent == 0 {
            Some("cpu_percent is 0")
        } else {
            None
        };
        match problem {
            Some(problem) => Err(CgroupError::InvalidLimits(problem.to_owned())),
            None => Ok(()),
        }
    }
}

impl Default for CgroupLimits {
    fn default() -> Self {
        Self {
            memory_max_bytes: Self::DEFAULT_MEMORY_MAX_BYTES,
            swap_max_bytes: Self::DEFAULT_SWAP_MAX_BYTES,
            tasks_max: Self::DEFAULT_TASKS_MAX,
            cpu_percent: Self::DEFAULT_CPU_PERCENT,
        }
    }
}

/// What every backend checks before it makes a session: the command's limits and the budget
/// make sense, the budget holds one command, and `name` is a plain cgroup name. Attack: a name
/// such as `../x` making a directory outside spear's own cgroup.
fn check_session(
    budget: &SessionBudget,
    command: &CgroupLimits,
    name: &str,
) -> Result<(), CgroupError> {
    command.validate()?;
    budget.validate(command)?;
    if !parse::is_valid_name(name) {
        return Err(CgroupError::InvalidName(name.to_owned()));
    }
    Ok(())
}

/// What all of a session's commands together may hold at once: the parent cgroup of every
/// command's own ([`SessionCgroup`]). Each command keeps its own [`CgroupLimits`] inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionBudget {
    /// Tasks (processes and threads) all of the session's commands may hold at once.
    pub tasks_max: u32,
    /// Memory all of the session's commands may use at once, in bytes.
    pub memory_max_bytes: u64,
}

impl SessionBudget {
    /// The default task budget: four commands at their default limit.
    pub const DEFAULT_TASKS_MAX: u32 = 1024;
    /// The default memory budget: 8 GiB.
    pub const DEFAULT_MEMORY_MAX_BYTES: u64 = 8 << 30;

    /// Checks that the budget can hold one command at its own limits: a budget below a command's
    /// limit would make the command's limit a lie (the session's would stop it first).
    pub fn validate(&self, command: &CgroupLimits) -> Result<(), CgroupError> {
        match budget_problem(self, command) {
            Some(problem) => Err(CgroupError::InvalidLimits(problem)),
            None => Ok(()),
        }
    }
}

impl Default for SessionBudget {
    fn default() -> Self {
        Self {
            tasks_max: Self::DEFAULT_TASKS_MAX,
            memory_max_bytes: Self::DEFAULT_MEMORY_MAX_BYTES,
        }
    }
}

/// What is wrong with `budget` for commands limited by `command`, if anything.
fn budget_problem(budget: &SessionBudget, command: &CgroupLimits) -> Option<String> {
    if budget.tasks_max == 0 {
        Some("the session's task budget is 0".to_owned())
    } else if budget.memory_max_bytes == 0 {
        Some("the session's memory budget is 0".to_owned())
    } else if budget.tasks_max < command.tasks_max {
        Some(format!(
            "the session's task budget ({}) is below one command's task limit ({})",
            budget.tasks_max, command.tasks_max
        ))
    } else if budget.memory_max_bytes < command.memory_max_bytes {
        Some(format!(
            "the session's memory budget ({} bytes) is below one command's memory limit ({} bytes)",
            budget.memory_max_bytes, command.memory_max_bytes
        ))
    } else {
        None
    }
}

/// Which mechanism enforces the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// A transient systemd scope in the user's manager (`systemd-run --user --scope`).
    SystemdScope,
    /// A delegated cgroup v2 subtree, written directly.
    CgroupV2,
    /// The cgroup v1 controllers memory, pids, cpu and freezer, written directly.
    CgroupV1,
    /// An outer container runtime owns the cgroup; spear creates none.
    Delegated,
}

impl BackendKind {
    /// A stable name for logs, `spear doctor` and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SystemdScope => "systemd-scope",
            Self::CgroupV2 => "cgroup-v2",
            Self::CgroupV1 => "cgroup-v1",
            Self::Delegated => "delegated",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong choosing a backend or managing a command's cgroup; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// `SPEAR_RESOURCE_CONTROL` holds something spear does not know.
    #[error(
        "SPEAR_RESOURCE_CONTROL={value:?} is not a resource-control backend: set it to systemd, cgroupfs or \
         delegated, or unset it to let spear choose"
    )]
    UnknownSetting {
        /// The value found.
        value: String,
    },
    /// No backend can enforce the limits on this host.
    #[error(
        "no writable cgroup ({reasons}): run as root on a cgroup v1 host, delegate a cgroup v2 subtree to your \
         user (systemd does this for user sessions), run under systemd with a user bus, or set \
         SPEAR_RESOURCE_CONTROL=delegated if a container runtime limits spear"
    )]
    NoBackend {
        /// Why each backend is unusable, in the order they were tried.
        reasons: String,
    },
    /// `SPEAR_RESOURCE_CONTROL` forces a backend this host does not offer.
    #[error(
        "SPEAR_RESOURCE_CONTROL={setting} but {reason}: unset it to let spear choose, or fix the host"
    )]
    ForcedUnavailable {
        /// The forced backend.
        setting: &'static str,
        /// Why it is unusable.
        reason: String,
    },
    /// A limit that no backend can enforce as asked.
    #[error("invalid cgroup limits: {0}")]
    InvalidLimits(String),
    /// The per-command name cannot name a cgroup.
    #[error(
        "invalid cgroup name {0:?}: use one path component of letters, digits, '_', '.' and '-', starting with \
         a letter or digit (e.g. spear-<pid>-<n>)"
    )]
    InvalidName(String),
    /// A per-command cgroup of that name exists already.
    #[error(
        "cgroup {} already exists: give each command a unique name; if it is left over from a spear that \
         died, remove it with rmdir once it holds no process",
        .0.display()
    )]
    AlreadyExists(PathBuf),
    /// Our cgroup v2 holds other processes, so it cannot enable controllers for children.
    #[error(
        "cgroup {} holds processes other than spear, so it cannot enable controllers for its children (the \
         cgroup v2 \"no internal processes\" rule): start spear in a cgroup of its own, e.g. `systemd-run --user \
         --scope -p Delegate=yes spear ...`",
        .0.display()
    )]
    InternalProcesses(PathBuf),
    /// The host's swap cannot be capped as asked.
    #[error("{0}")]
    SwapUncontrolled(String),
    /// A cgroup file or directory operation failed.
    #[error("cgroup: cannot {op} {}: {source}", path.display())]
    Io {
        /// What spear was doing (`write`, `create`, `remove`, ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The error from the kernel.
        #[source]
        source: std::io::Error,
    },
    /// Killing or removing did not finish in the time allowed.
    #[error(
        "cgroup {}: {what} did not finish within {secs} s; look for stuck processes (state D) in it, then \
         remove it by hand",
        path.display()
    )]
    Timeout {
        /// The cgroup directory.
        path: PathBuf,
        /// What did not finish.
        what: String,
        /// The time allowed.
        secs: u64,
    },
    /// systemd did not do what was asked.
    #[error("systemd: {0}")]
    Systemd(String),
}

/// Whether the command reached one of its limits.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LimitsHit {
    /// Memory use reached the limit (the kernel had to reclaim, refused a charge, or OOM-killed).
    pub memory: bool,
    /// A fork or clone was refused because the task limit was reached.
    pub tasks: bool,
}

/// A way of enforcing [`CgroupLimits`] on this host.
pub trait CgroupBackend: std::fmt::Debug + Send + Sync {
    /// Which mechanism this is.
    fn kind(&self) -> BackendKind;
    /// One line for `spear doctor`: what it uses (e.g. "cgroup v1 at
    /// `/sys/fs/cgroup/{memory,pids,cpu,freezer}/process_api/..`").
    fn describe(&self) -> String;
    /// Creates the cgroup of one command (name is unique per command, e.g. `spear-<pid>-<n>`),
    /// limits applied, directly under spear's own cgroup. Nothing is spawned yet.
    fn prepare(&self, limits: &CgroupLimits, name: &str) -> Result<CommandCgroup, CgroupError> {
        self.prepare_in(None, limits, name)
    }

    /// Creates the cgroup of one command inside `session` (made by this backend's
    /// [`prepare_session`](Self::prepare_session)), or under spear's own cgroup with `None`,
    /// limits applied. The command's cgroup keeps the session alive until it is removed.
    fn prepare_in(
        &self,
        session: Option<&Arc<SessionCgroup>>,
        limits: &CgroupLimits,
        name: &str,
    ) -> Result<CommandCgroup, CgroupError>;

    /// Creates a session's cgroup (name unique per session, e.g. `spear-session-<pid>-<n>`) with
    /// its budget applied, for commands limited by `command` (the budget must hold one of them).
    /// Nothing is spawned into it: commands' cgroups go inside it.
    fn prepare_session(
        &self,
        budget: &SessionBudget,
        command: &CgroupLimits,
        name: &str,
    ) -> Result<SessionCgroup, CgroupError>;

    /// Removes the empty cgroups a spear process that no longer exists left under spear's own
    /// cgroup (killed with SIGKILL, it could not remove them itself). Only empty directories are
    /// removed (rmdir), never a process killed; returns how many. Backends that make nothing
    /// there have nothing to do.
    fn sweep_stale(&self) -> usize {
        0
    }
}

/// One directory of a cgroupfs per-command cgroup.
#[derive(Debug)]
pub(crate) struct CgroupDir {
    /// The hierarchy it belongs to (for matching `/proc/<pid>/cgroup`).
    pub hierarchy: parse::Hierarchy,
    /// Its path inside the hierarchy, as `/proc/<pid>/cgroup` writes it.
    pub rel: String,
    /// Its directory.
    pub path: PathBuf,
    /// Its `cgroup.procs`, open for writing (dropped before the directory is removed).
    pub procs: Option<OwnedFd>,
    /// The directory itself, open and locked while spear holds the cgroup (made by
    /// [`ops::create_dir`]): another spear's sweep leaves it alone (`None` for directories
    /// found rather than made).
    pub lock: Option<OwnedFd>,
}

/// How a command's cgroup is controlled after it is prepared.
#[derive(Debug)]
pub(crate) enum Control {
    /// Delegated: nothing to do.
    Nothing,
    /// A systemd scope unit.
    Systemd(systemd::ScopeControl),
    /// cgroup v1: `dirs[0]` is the freezer.
    V1,
    /// cgroup v2: `dirs[0]` is the only directory.
    V2,
}

/// The cgroup of one command, from [`CgroupBackend::prepare`] to [`CommandCgroup::remove`].
#[derive(Debug)]
pub struct CommandCgroup {
    kind: BackendKind,
    name: String,
    argv_prefix: Vec<OsString>,
    /// cgroupfs directories in join order; the first is the one kills go through.
    dirs: Vec<CgroupDir>,
    control: Control,
    /// Set once removed, so that `Drop` does nothing more.
    removed: bool,
    /// The session it is inside, kept alive until this cgroup is removed (a field, so dropped
    /// after `Drop::drop` removed this one).
    session: Option<Arc<SessionCgroup>>,
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
            Control::V1 => v1::session_limits_hit(&self.dirs, &session.dirs, own),
            Control::V2 => v2::session_limits_hit(&self.dirs, &session.dirs, own),
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
            Control::V1 => v1::kill_all(&self.dirs),
            Control::V2 => v2::kill_all(&self.dirs),
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
            Control::V1 => v1::limits_hit(&self.dirs),
            Control::V2 => self
                .dirs
                .first()
                .map(|d| v2::limits_hit(&d.path))
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

/// How a session's cgroup is controlled.
#[derive(Debug)]
pub(crate) enum SessionControl {
    /// Delegated: nothing was created.
    Nothing,
    /// A transient systemd slice that the commands' scopes are placed in.
    Systemd(systemd::SliceControl),
    /// cgroup v1: one directory per controller of [`v1::CONTROLLERS`], the freezer first.
    V1,
    /// cgroup v2: one directory, its controllers enabled for its children.
    V2,
}

/// The parent cgroup of a session's commands, holding the session's [`SessionBudget`]; from
/// [`CgroupBackend::prepare_session`] to its `Drop` (or [`SessionCgroup::remove`]).
///
/// Shared through an `Arc`: each [`CommandCgroup`] inside it holds one, so the session is removed
/// only after the last of its commands' cgroups. Removing it kills whatever is still inside, at
/// any depth, and removes every directory under it and itself: nothing outlives the session.
#[derive(Debug)]
pub struct SessionCgroup {
    kind: BackendKind,
    name: String,
    budget: SessionBudget,
    /// cgroupfs directories (`procs` always `None`: nothing joins a session directly).
    dirs: Vec<CgroupDir>,
    control: SessionControl,
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
            SessionControl::V1 => v1::dir_of(&self.dirs, "pids"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_budgets() {
        let command = CgroupLimits::default();
        let cases: [(SessionBudget, Option<&str>); 6] = [
            (SessionBudget::default(), None),
            (
                SessionBudget {
                    tasks_max: 256,
                    memory_max_bytes: 2 << 30,
                },
                None,
            ),
            (
                SessionBudget {
                    tasks_max: 255,
                    ..SessionBudget::default()
                },
                Some("the session's task budget (255) is below one command's task limit (256)"),
            ),
            (
                SessionBudget {
                    memory_max_bytes: (2 << 30) - 1,
                    ..SessionBudget::default()
                },
                Some(
                    "the session's memory budget (2147483647 bytes) is below one command's memory limit (2147483648 bytes)",
                ),
            ),
            (
                SessionBudget {
                    tasks_max: 0,
                    ..SessionBudget::default()
                },
                Some("the session's task budget is 0"),
            ),
            (
                SessionBudget {
                    memory_max_bytes: 0,
                    ..SessionBudget::default()
                },
                Some("the session's memory budget is 0"),
            ),
        ];
        for (budget, want) in cases {
            assert_eq!(
                budget_problem(&budget, &command).as_deref(),
                want,
                "{budget:?}"
            );
            assert_eq!(budget.validate(&command).is_ok(), want.is_none());
        }
        assert_eq!(SessionBudget::default().tasks_max, 1024);
        assert_eq!(SessionBudget::default().memory_max_bytes, 8 << 30);
    }
}
