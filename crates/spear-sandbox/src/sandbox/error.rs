//! Why a command could not be run ([`SandboxError`]), and how a cached one is copied.

use std::io;
use std::path::PathBuf;

use spear_core::{Guarantee, GuaranteeSet};

use crate::cgroup::CgroupError;
use crate::landlock::LandlockError;
use crate::network;
use crate::seccomp::SeccompError;
use crate::spec::SpecError;
use crate::stage::StageFailure;

/// Why a command could not be run. Nothing of it was spawned, except where stated.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The spec was refused.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// bwrap is not there.
    #[error("bubblewrap is not installed at {}: install it (Debian: apt-get install bubblewrap)", .0.display())]
    BwrapAbsent(PathBuf),
    /// bwrap is there but cannot be executed.
    #[error("bubblewrap at {path} cannot be executed ({1}): check its permissions", path = .0.display())]
    BwrapInexecutable(PathBuf, String),
    /// The kernel or bwrap refused to create the sandbox.
    #[error(
        "the kernel refused to create the sandbox: {0}; unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, or an AppArmor profile for bwrap)"
    )]
    BwrapRefused(String),
    /// The preflight sandbox ran but did not look as it must.
    #[error("the sandbox preflight failed: {0}")]
    Preflight(String),
    /// seccomp is unavailable or the filter could not be built.
    #[error(transparent)]
    Seccomp(#[from] SeccompError),
    /// Limits are active and no cgroup backend can enforce them.
    #[error("resource limits are active and cannot be enforced: {0}")]
    NoCgroupBackend(String),
    /// The per-command cgroup could not be created.
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    /// The process could not be started.
    #[error("the sandbox could not be started: {0}")]
    Spawn(io::Error),
    /// The writable roots could not be staged; nothing ran.
    #[error("{0}; the command did not run")]
    Stage(#[from] StageFailure),
    /// The network path could not be set up; the command was killed before it ran.
    #[error("{0}; the command did not run")]
    Network(#[from] network::NetworkError),
    /// A tool of the network path is missing.
    #[error(
        "{tool} is missing, so networked commands cannot be confined and are refused; install {1}",
        tool = .0.display()
    )]
    NetworkTool(PathBuf, &'static str),
    /// An earlier teardown could not be confirmed; this sandbox gives no more network.
    #[error(
        "network containment failed earlier in this session (slirp4netns could not be confirmed dead), so this sandbox refuses every networked command; run it without the network, or restart spear after checking for a leftover slirp4netns"
    )]
    NetworkPoisoned,
    /// The profile requires a guarantee this host (or this sandbox's configuration) cannot give;
    /// checked before anything is spawned, the preflight included.
    #[error(
        "this command requires `{guarantee}` ({what}), which this host cannot give: {why}; nothing ran",
        what = .guarantee.description()
    )]
    GuaranteeUnavailable {
        /// The guarantee.
        guarantee: Guarantee,
        /// Why it cannot be given.
        why: String,
    },
    /// The landlock backend refused the command, or could not prepare it; nothing ran.
    #[error(transparent)]
    Landlock(#[from] LandlockError),
    /// `[sandbox] backend = "auto"`: bubblewrap cannot make its namespaces on this host, and the
    /// landlock backend does not give every guarantee required. Nothing ran.
    #[error(
        "no sandbox backend on this host gives what is required: bubblewrap cannot run here ({bubblewrap}), and the landlock backend does not give {}; nothing ran. Either narrow `[sandbox] require` in the operator configuration to what Landlock gives (`spear doctor` lists it), or give the host user namespaces so that spear uses bubblewrap",
        missing.names()
    )]
    NoBackend {
        /// The required guarantees Landlock does not give.
        missing: GuaranteeSet,
        /// Why bubblewrap cannot run.
        bubblewrap: String,
    },
}

impl SandboxError {
    /// Whether this failure means the sandbox itself is missing or broken (a mechanism absent,
    /// the preflight failed), as opposed to one command's spec refused or the network path
    /// missing, or a required guarantee this host cannot give, after which commands that do not
    /// need it still run confined.
    pub fn means_sandbox_down(&self) -> bool {
        !matches!(
            self,
            SandboxError::Spec(_)
                | SandboxError::Network(_)
                | SandboxError::NetworkTool(..)
                | SandboxError::NetworkPoisoned
                | SandboxError::GuaranteeUnavailable { .. }
        ) && !matches!(self, SandboxError::Landlock(e) if !e.means_backend_down())
    }

    /// Whether this failure is permanent for the life of the sandbox instance (not re-probed).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            SandboxError::BwrapAbsent(_)
                | SandboxError::BwrapInexecutable(..)
                | SandboxError::BwrapRefused(_)
        )
    }
}

/// A copy of a cached error (io errors are not `Clone`; their text is kept).
pub(super) fn clone_error(e: &SandboxError) -> SandboxError {
    match e {
        SandboxError::BwrapAbsent(p) => SandboxError::BwrapAbsent(p.clone()),
        SandboxError::BwrapInexecutable(p, w) => {
            SandboxError::BwrapInexecutable(p.clone(), w.clone())
        }
        SandboxError::BwrapRefused(m) => SandboxError::BwrapRefused(m.clone()),
        SandboxError::NetworkTool(p, pkg) => SandboxError::NetworkTool(p.clone(), pkg),
        other => SandboxError::Preflight(other.to_string()),
    }
}
