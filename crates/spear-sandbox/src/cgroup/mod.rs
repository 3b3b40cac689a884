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
    /// limits applied. Nothing is spawned yet.
    fn prepare(&self, limits: &CgroupLimits, name: &str) -> Result<CommandCgroup, CgroupError>;
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
