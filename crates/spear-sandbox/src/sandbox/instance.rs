//! The sandbox instance ([`Sandbox`]): one bwrap, one cgroup backend, one preflight cache; what it
//! can give a command on this host, and which mechanisms it has, checked without running anything.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use spear_core::Guarantee;

use super::choice::{Confinement, NoBackend};
use super::config::SandboxConfig;
use super::error::{SandboxError, clone_error};
use super::launcher::{Launcher, check_bwrap, lock};
use crate::cgroup::{CgroupBackend, SessionCgroup};
use crate::guarantees;
use crate::seccomp;
use crate::spawn::{ProcessSpawner, Spawner};
use crate::spec::BwrapSpec;
use crate::warm::WarmPool;

/// Preflight results cached per (working directory, writability): terminal failures too.
type PreflightCache = HashMap<(PathBuf, bool), Result<(), Arc<SandboxError>>>;

/// A sandbox: one bwrap, one cgroup backend, one preflight cache.
#[derive(Debug)]
pub struct Sandbox {
    pub(super) launcher: Arc<Launcher>,
    /// The sandbox kept waiting for a session's next command, when [`SandboxConfig::warm`].
    pub(super) warm: Option<WarmPool>,
    pub(super) preflight: Mutex<PreflightCache>,
    pub(super) terminal: Mutex<Option<Arc<SandboxError>>>,
    pub(super) network_poisoned: AtomicBool,
    pub(super) network_preflight: Mutex<NetworkPreflightCache>,
    /// The confinement, resolved at first use ([`Sandbox::confinement`]).
    pub(super) confinement: OnceLock<Result<Confinement, NoBackend>>,
}

/// Network preflight results per (working directory, roots): successes, and failures of tools
/// that are simply not there.
type NetworkPreflightCache = HashMap<(PathBuf, Vec<PathBuf>), Result<(), Arc<SandboxError>>>;

impl Sandbox {
    /// A sandbox with the host's cgroup backend ([`crate::cgroup::detect`]) and real processes.
    pub fn new(config: SandboxConfig) -> Self {
        let backend = crate::cgroup::detect().map_err(|e| e.to_string());
        if let Ok(backend) = &backend {
            // What a spear killed with SIGKILL left behind goes now.
            backend.sweep_stale();
        }
        Sandbox::with_parts(config, backend, Arc::new(ProcessSpawner))
    }

    /// A sandbox with a given backend (or the reason there is none) and spawner.
    pub fn with_parts(
        config: SandboxConfig,
        backend: Result<Box<dyn CgroupBackend>, String>,
        spawner: Arc<dyn Spawner>,
    ) -> Self {
        let launcher = Arc::new(Launcher {
            backend: backend.map(Arc::from),
            spawner,
            config,
            session: Mutex::new(None),
        });
        Sandbox {
            warm: launcher.config.warm.then(|| WarmPool::new(&launcher)),
            launcher,
            preflight: Mutex::new(HashMap::new()),
            terminal: Mutex::new(None),
            network_poisoned: AtomicBool::new(false),
            network_preflight: Mutex::new(HashMap::new()),
            confinement: OnceLock::new(),
        }
    }

    /// Whether a network teardown could not be confirmed: every later networked command on this
    /// sandbox is refused.
    pub fn network_containment_failed(&self) -> bool {
        self.network_poisoned.load(Ordering::SeqCst)
    }

    /// The configuration.
    pub fn config(&self) -> &SandboxConfig {
        &self.launcher.config
    }

    /// The session's cgroup, once its first command made it ([`SandboxConfig::session`]); for
    /// `spear doctor`, logs and tests.
    pub fn session(&self) -> Option<Arc<SessionCgroup>> {
        lock(&self.launcher.session).clone()
    }

    /// The cgroup backend, or why there is none.
    pub fn backend(&self) -> Result<&dyn CgroupBackend, &str> {
        self.launcher.backend.as_deref().map_err(String::as_str)
    }

    /// Whether this sandbox, on this host, can give `g` to a command, without running anything:
    /// what gives it, or why it cannot, under the confinement it resolved to
    /// ([`Sandbox::confinement`]; one that cannot be resolved gives nothing).
    pub fn can_give(&self, g: Guarantee) -> Result<String, String> {
        match self.confinement() {
            Err(e) => Err(e.to_string()),
            Ok(Confinement::Bubblewrap) => self.can_give_bubblewrap(g),
            Ok(Confinement::Landlock { abi }) => {
                if self.landlock_gives().contains(g) {
                    Ok(format!(
                        "the landlock backend (Landlock ABI {abi}) and seccomp"
                    ))
                } else {
                    Err(format!(
                        "the landlock backend (Landlock ABI {abi}) does not give it: {}",
                        landlock_lacks(g)
                    ))
                }
            }
        }
    }

    /// [`Sandbox::can_give`] under bubblewrap. The confinement bits need bwrap and seccomp;
    /// `network_filtered` needs the network path's tools (and no earlier containment failure);
    /// `resource_limits` needs cgroup limits turned on and a backend that limits each command's
    /// tree (not `delegated`). `target_policy` is not the sandbox's to give: its caller judges
    /// what a command staged.
    pub(super) fn can_give_bubblewrap(&self, g: Guarantee) -> Result<String, String> {
        match g {
            Guarantee::ProcessBoundary
            | Guarantee::WriteBoundary
            | Guarantee::ReadBoundary
            | Guarantee::EnvironmentScrubbed
            | Guarantee::NetworkClosed => self.can_confine().map(|()| {
                format!(
                    "bubblewrap at {} and seccomp",
                    self.launcher.config.bwrap.display()
                )
            }),
            Guarantee::NetworkFiltered => self.can_filter_network(),
            Guarantee::ResourceLimits => self.can_limit(),
            Guarantee::TargetPolicy => {
                Ok("judged by spear's tools after each command, not by the sandbox".to_owned())
            }
        }
    }

    /// bwrap and seccomp are usable, and no terminal failure was seen.
    fn can_confine(&self) -> Result<(), String> {
        if let Some(e) = lock(&self.terminal).as_ref() {
            return Err(e.to_string());
        }
        check_bwrap(&self.launcher.config.bwrap).map_err(|e| e.to_string())?;
        seccomp::kernel_supports_seccomp().map_err(|e| e.to_string())
    }

    /// The first tool of the network path (slirp4netns, nsenter, nft) that is not there.
    pub(super) fn missing_network_tool(&self) -> Option<SandboxError> {
        let net = &self.launcher.config.network;
        [
            (&net.slirp4netns, "slirp4netns"),
            (&net.nsenter, "util-linux"),
            (&net.nft, "nftables"),
        ]
        .into_iter()
        .find(|(tool, _)| !tool.is_file())
        .map(|(tool, package)| SandboxError::NetworkTool(tool.clone(), package))
    }

    /// The network path's tools are there and its containment never failed.
    fn can_filter_network(&self) -> Result<String, String> {
        if self.network_poisoned.load(Ordering::SeqCst) {
            return Err(SandboxError::NetworkPoisoned.to_string());
        }
        if let Some(missing) = self.missing_network_tool() {
            return Err(missing.to_string());
        }
        let net = &self.launcher.config.network;
        Ok(format!(
            "{} with the egress policy by {}",
            net.slirp4netns.display(),
            net.nft.display()
        ))
    }

    /// Cgroup limits are on, and a backend limits each command's tree.
    pub(super) fn can_limit(&self) -> Result<String, String> {
        if self.launcher.config.cgroup.is_none() {
            return Err("cgroup limits are turned off in this sandbox's configuration".to_owned());
        }
        match &self.launcher.backend {
            Err(why) => Err(format!("no cgroup backend ({why})")),
            Ok(b) if !guarantees::backend(b.kind()).limits_the_tree() => Err(format!(
                "the cgroup backend is `{}`: an outer runtime limits spear as a whole, and spear creates no cgroup per command",
                b.kind()
            )),
            Ok(b) => Ok(format!("{}: {}", b.kind(), b.describe())),
        }
    }

    /// Refuses `spec` when its profile requires a guarantee this sandbox cannot give. Attack
    /// stopped: a command that must be limited (or filtered) running without it because the host
    /// lost the mechanism; checked before the preflight, so nothing at all is spawned.
    /// [`Sandbox::run`] calls it first; a caller that prepares a command before running it can
    /// call it then too.
    pub fn check_required(&self, spec: &BwrapSpec) -> Result<(), SandboxError> {
        let host = |g: Guarantee| self.can_give(g);
        match guarantees::unmet_before_spawn(spec.profile.required(), spec.profile.network(), &host)
        {
            Some((guarantee, why)) => Err(SandboxError::GuaranteeUnavailable { guarantee, why }),
            None => Ok(()),
        }
    }

    /// Checks every mechanism a command needs, without running anything: the bwrap binary,
    /// seccomp, and the cgroup backend when limits are active.
    /// Under the landlock backend: Landlock, seccomp, and a cgroup the child joins itself.
    pub fn check_mechanisms(&self) -> Result<(), SandboxError> {
        if let Confinement::Landlock { abi } = self.confinement()? {
            if abi == 0 {
                return Err(crate::landlock::LandlockError::Unavailable.into());
            }
            seccomp::kernel_supports_seccomp()?;
            self.landlock_cgroup()
                .map_err(crate::landlock::LandlockError::NoCgroup)?;
            return Ok(());
        }
        if let Some(e) = lock(&self.terminal).as_ref() {
            return Err(clone_error(e));
        }
        check_bwrap(&self.launcher.config.bwrap)?;
        seccomp::kernel_supports_seccomp()?;
        if self.launcher.config.cgroup.is_some()
            && let Err(why) = &self.launcher.backend
        {
            return Err(SandboxError::NoCgroupBackend(why.clone()));
        }
        Ok(())
    }
}

/// Why the landlock backend does not give `g` (see `landlock` module of this crate).
fn landlock_lacks(g: Guarantee) -> &'static str {
    match g {
        Guarantee::ProcessBoundary => "it has no PID namespace",
        Guarantee::ReadBoundary => {
            "Landlock governs opening files, not looking them up: every host path's metadata and host processes' /proc entries stay visible"
        }
        Guarantee::NetworkFiltered => "it has no network path (no network namespace)",
        Guarantee::WriteBoundary => {
            "this kernel's Landlock (before ABI 3) does not govern truncation, or no cgroup of spear's own can hold the command"
        }
        _ => "this host lacks Landlock, or a cgroup of spear's own to hold the command",
    }
}
