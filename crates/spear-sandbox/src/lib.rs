//! spear's execution layer: how to confine a process, and nothing about why.
//!
//! What this crate guarantees:
//! - [`build_argv`] is a pure function from a [`BwrapSpec`] to the bubblewrap argv; the sandbox sees
//!   only what the spec names, and a spec that asks for something unimplemented or unsafe is an
//!   error before anything runs.
//! - Every mechanism a command needs (bwrap, seccomp, the cgroup backend when limits are active) is
//!   checked before it is spawned; a missing one is an error and no process.
//! - A spawned command is held through a pidfd from the moment it exists and is signalled only
//!   through it. A timeout or a cancellation kills its whole tree (the PID namespace and the
//!   cgroup); nothing of it outlives the call.
//!
//! This crate imports no spear crate but `spear-core`: it knows nothing of modes or policy.

pub mod cgroup;
pub mod seccomp;
