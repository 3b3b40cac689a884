//! How a sandbox runs commands ([`SandboxConfig`]).

use std::path::PathBuf;

use spear_core::GuaranteeSet;

use crate::ResourceLimits;
use crate::cgroup::{CgroupLimits, SessionBudget};
use crate::network::NetworkConfig;

/// How a sandbox runs commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// The bubblewrap binary.
    pub bwrap: PathBuf,
    /// Per-process limits.
    pub rlimits: ResourceLimits,
    /// The network path of networked profiles.
    pub network: NetworkConfig,
    /// Per-tree limits; `None` turns cgroup limits off (library callers only; spear's own
    /// front ends always set them).
    pub cgroup: Option<CgroupLimits>,
    /// What all of this sandbox's commands together may hold (a parent cgroup over each
    /// command's, made at the first command and removed with the sandbox); `None`: each command's
    /// cgroup directly under spear's own, limited only by itself. Ignored without `cgroup`.
    pub session: Option<SessionBudget>,
    /// Also remember successful preflights across processes (for one-command-per-process front
    /// ends such as `spear exec`).
    pub persist_preflight: bool,
    /// Keep a sandbox set up for a session's next command
    /// ([`Sandbox::prewarm`](crate::Sandbox::prewarm)): for front ends that run many commands
    /// (`spear mcp`), not for one-command processes.
    pub warm: bool,
    /// Which confinement runs commands ([`BackendChoice`]).
    pub backend: BackendChoice,
    /// The guarantees `BackendChoice::Auto` must find in a backend before it takes it: the
    /// operator's `[sandbox] require`; `None` (unset) means every guarantee bubblewrap gives, so
    /// that without the operator's word spear refuses rather than confining less.
    pub auto_require: Option<GuaranteeSet>,
}

/// Which confinement runs commands: `[sandbox] backend` of the operator's configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// bubblewrap where it can make its namespaces on this host; else the landlock backend, only
    /// if it gives every guarantee of [`SandboxConfig::auto_require`]; else every command is
    /// refused, naming what is missing.
    Auto,
    /// bubblewrap only (the library's default: what it always was).
    #[default]
    Bubblewrap,
    /// The landlock backend only (`landlock` module of this crate).
    Landlock,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            bwrap: PathBuf::from("/usr/bin/bwrap"),
            rlimits: ResourceLimits::default(),
            cgroup: Some(CgroupLimits::default()),
            session: Some(SessionBudget::default()),
            network: NetworkConfig::default(),
            persist_preflight: false,
            warm: false,
            backend: BackendChoice::Bubblewrap,
            auto_require: None,
        }
    }
}
