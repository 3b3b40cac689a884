//! What went wrong choosing a backend or managing a cgroup ([`CgroupError`]); each message says
//! what to do.

use std::path::PathBuf;

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
