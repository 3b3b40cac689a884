//! Cgroup limits and the backends that enforce them.
//!
//! [`CgroupLimits`] is one contract (memory, swap, tasks, CPU) with several backends, chosen by what
//! the host offers ([`detect`]):
//! - a systemd user scope (`systemd-run --user --scope --collect`) where a user bus exists;
//! - direct cgroupfs, where a writable cgroup v2 subtree is delegated to us, or the cgroup v1
//!   controllers are writable (root on a hybrid host);
//! - `delegated`, where an outer container runtime owns the cgroup
//!   (`SPEAR_RESOURCE_CONTROL=delegated`).
//!
//! Each command gets its own [`CommandCgroup`], removed afterwards. With limits active and no
//! backend, [`detect`] fails and the caller spawns nothing.
