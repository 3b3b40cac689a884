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
//! Where a cgroup v2 hierarchy cannot serve as it stands, `v2_plan` reads the chain of cgroups
//! from the root down to spear's own and names the exact step that would make it serve (which
//! ancestor must enable which controller, or a cgroup of spear's own beside a shared one); the
//! detection's reason, and so `spear doctor`, carry it.
//!
//! The systemd and cgroup v2 backends are written against the kernel and systemd documentation;
//! the hosts spear is tested on have neither systemd nor a usable cgroup v2 hierarchy, so only
//! their pure parts (argv, file values, detection) are tested here. The cgroup v1 backend is
//! tested against the real kernel, as root and as an unprivileged user with a delegated subtree
//! (`scripts/delegate-cgroup.sh`).

mod backend;
mod backend_kind;
mod command_cgroup;
mod delegated;
mod detect;
mod error;
mod limits;
mod ops;
mod parse;
mod session_cgroup;
mod systemd;
mod systemd_units;
mod v1;
mod v1_control;
mod v2;
mod v2_control;
mod v2_plan;

pub use backend::CgroupBackend;
pub use backend_kind::BackendKind;
pub use command_cgroup::CommandCgroup;
pub use detect::{HostPaths, RESOURCE_CONTROL_ENV, detect, detect_with};
pub use error::CgroupError;
pub use limits::{CgroupLimits, LimitsHit, SessionBudget};
pub use session_cgroup::SessionCgroup;
