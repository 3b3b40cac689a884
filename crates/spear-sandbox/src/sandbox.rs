//! The sandbox instance: checks mechanisms, runs the cached preflight, and runs commands.
//!
//! There is no code path from "a mechanism is unavailable" to "run it anyway": every check below
//! returns an error before the spawner is reached.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spear_core::{Capability, Guarantee, GuaranteeSet, Guarantees};

use crate::ResourceLimits;
use crate::argv::build_argv;
use crate::cgroup::{
    BackendKind, CgroupBackend, CgroupError, CgroupLimits, CommandCgroup, LimitsHit, SessionBudget,
    SessionCgroup,
};
use crate::guarantees::{self, NetworkPath, RunFacts};
use crate::network::{self, NetworkConfig, Slirp};
use crate::preflight_store::PreflightStore;
use crate::seccomp::{self, SeccompError};
use crate::spawn::{
    Exit, Finished, Launch, ProcessSpawner, Running, Spawner, Stop, Watch, supervise,
};
use crate::spec::{
    ARGS_CHILD_FD, BwrapSpec, GO_CHILD_FD, INFO_CHILD_FD, READY_CHILD_FD, SpecError,
};
use crate::stage::{StageFailure, StagePlan};
use crate::warm::WarmPool;

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
    /// Keep a sandbox set up for a session's next command ([`Sandbox::prewarm`]): for front
    /// ends that run many commands (`spear mcp`), not for one-command processes.
    pub warm: bool,
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
        }
    }
}

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
        )
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

/// What a finished command did, as the sandbox saw it.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The process tree's end.
    pub finished: Finished,
    /// Which cgroup limits it hit.
    pub limits_hit: LimitsHit,
    /// Which of those were the session's budget rather than its own limits
    /// ([`CommandCgroup::session_limits_hit`]).
    pub session_limits_hit: LimitsHit,
    /// The cgroup could not be removed (named in the text); the command itself ended.
    pub cleanup_error: Option<String>,
    /// bwrap itself failed before the command ran (its message).
    pub setup_error: Option<String>,
    /// slirp4netns could not be confirmed dead; the sandbox's network is poisoned since.
    pub network_error: Option<String>,
    /// What confined it, computed from the bwrap options handed to bwrap and from what happened
    /// (the tree confirmed dead, the network attached and stopped, the cgroup's backend).
    pub guarantees: Guarantees,
}

/// Preflight results cached per (working directory, writability): terminal failures too.
type PreflightCache = HashMap<(PathBuf, bool), Result<(), Arc<SandboxError>>>;

/// A sandbox: one bwrap, one cgroup backend, one preflight cache.
#[derive(Debug)]
pub struct Sandbox {
    launcher: Arc<Launcher>,
    /// The sandbox kept waiting for a session's next command, when [`SandboxConfig::warm`].
    warm: Option<WarmPool>,
    preflight: Mutex<PreflightCache>,
    terminal: Mutex<Option<Arc<SandboxError>>>,
    network_poisoned: AtomicBool,
    network_preflight: Mutex<NetworkPreflightCache>,
}

/// Network preflight results per (working directory, roots): successes, and failures of tools
/// that are simply not there.
type NetworkPreflightCache = HashMap<(PathBuf, Vec<PathBuf>), Result<(), Arc<SandboxError>>>;

/// Numbers the commands of this process, across sandbox instances, so cgroup names never collide.
static COMMANDS: AtomicU64 = AtomicU64::new(0);

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
    /// what gives it, or why it cannot. The confinement bits need bwrap and seccomp;
    /// `network_filtered` needs the network path's tools (and no earlier containment failure);
    /// `resource_limits` needs cgroup limits turned on and a backend that limits each command's
    /// tree (not `delegated`). `target_policy` is not the sandbox's to give: its caller judges
    /// what a command staged.
    pub fn can_give(&self, g: Guarantee) -> Result<String, String> {
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
    fn missing_network_tool(&self) -> Option<SandboxError> {
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
    fn can_limit(&self) -> Result<String, String> {
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
    pub fn check_mechanisms(&self) -> Result<(), SandboxError> {
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

    /// Runs the preflight for sandboxes shaped like `spec` once, and caches the result: a real
    /// minimal sandbox whose shell asserts its working directory, the workspace's writability when
    /// the profile writes, `$HOME` and `$TMPDIR`. Terminal failures (bwrap absent, not executable,
    /// refused by the kernel) are remembered for the life of the instance and not re-probed.
    pub fn ensure(&self, spec: &BwrapSpec) -> Result<(), SandboxError> {
        self.check_mechanisms()?;
        let key = (spec.cwd.clone(), spec.profile.workspace_write());
        if let Some(cached) = lock(&self.preflight).get(&key) {
            return cached.clone().map_err(|e| clone_error(&e));
        }
        let store = self
            .launcher
            .config
            .persist_preflight
            .then(PreflightStore::for_user)
            .flatten();
        let store_key = PreflightStore::key(
            &self.launcher.config.bwrap,
            &spec.cwd,
            spec.profile.workspace_write(),
        );
        if let (Some(store), Some(k)) = (&store, &store_key)
            && store.contains(k)
        {
            lock(&self.preflight).insert(key, Ok(()));
            return Ok(());
        }
        let result = self.probe(spec);
        if result.is_ok()
            && let (Some(store), Some(k)) = (&store, &store_key)
        {
            store.record(k);
        }
        match &result {
            Err(e) if e.is_terminal() => {
                let e = Arc::new(clone_error(e));
                *lock(&self.terminal) = Some(e.clone());
                lock(&self.preflight).insert(key, Err(e));
            }
            Ok(()) => {
                lock(&self.preflight).insert(key, Ok(()));
            }
            Err(_) => {}
        }
        result
    }

    /// The network preflight, once per (working directory, roots) and remembered: slirp4netns,
    /// nsenter and nft are there, and a real networked `/bin/true` gets its network attached
    /// through pinned namespaces, its egress policy loaded, and its teardown confirmed. Missing
    /// tools are remembered as failures; other failures are probed again next time.
    pub fn ensure_network(&self, spec: &BwrapSpec) -> Result<(), SandboxError> {
        if self.network_poisoned.load(Ordering::SeqCst) {
            return Err(SandboxError::NetworkPoisoned);
        }
        let key = (
            spec.cwd.clone(),
            spec.roots.iter().map(|r| r.host.clone()).collect(),
        );
        if let Some(cached) = lock(&self.network_preflight).get(&key) {
            return cached.clone().map_err(|e| clone_error(&e));
        }
        if let Some(e) = self.missing_network_tool() {
            lock(&self.network_preflight).insert(key, Err(Arc::new(clone_error(&e))));
            return Err(e);
        }
        let store = self
            .launcher
            .config
            .persist_preflight
            .then(PreflightStore::for_user)
            .flatten();
        let store_key =
            PreflightStore::key(&self.launcher.config.network.slirp4netns, &spec.cwd, true);
        if let (Some(store), Some(k)) = (&store, &store_key)
            && store.contains(&format!("net-{k}"))
        {
            lock(&self.network_preflight).insert(key, Ok(()));
            return Ok(());
        }
        let mut probe = spec.clone();
        probe.command = vec!["/bin/true".into()];
        let watch = probe_watch();
        let outcome = self.run_unchecked(&probe, &watch)?;
        if let Some(e) = outcome.network_error {
            return Err(SandboxError::Preflight(format!("network teardown: {e}")));
        }
        if outcome.finished.exit != Exit::Code(0) {
            return Err(SandboxError::Preflight(format!(
                "a networked /bin/true failed: {}",
                outcome.finished.stderr.text.trim()
            )));
        }
        if let (Some(store), Some(k)) = (&store, &store_key) {
            store.record(&format!("net-{k}"));
        }
        lock(&self.network_preflight).insert(key, Ok(()));
        Ok(())
    }

    fn probe(&self, spec: &BwrapSpec) -> Result<(), SandboxError> {
        let mut probe = spec.clone();
        let cwd = spec.cwd.to_string_lossy();
        let home = spec.home.to_string_lossy();
        let mut script = format!(
            "test \"$PWD\" = {cwd} || {{ echo \"working directory is $PWD, not {cwd}\"; exit 1; }}; \
             test \"$HOME\" = {home} && test -d \"$HOME\" && test -w \"$HOME\" || {{ echo 'HOME is missing or not writable'; exit 1; }}; \
             test -d \"$TMPDIR\" && test -w \"$TMPDIR\" || {{ echo 'TMPDIR is missing or not writable'; exit 1; }}; ",
            cwd = shell_quote(&cwd),
            home = shell_quote(&home),
        );
        if spec.profile.workspace_write() {
            script.push_str("test -w . || { echo 'the workspace is not writable'; exit 1; }; ");
        } else {
            script.push_str(
                "test -w . && { echo 'the workspace is writable in a read-only profile'; exit 1; }; ",
            );
        }
        script.push_str("exit 0");
        probe.command = vec!["/bin/sh".into(), "-c".into(), script.into()];
        // The preflight proves the closed sandbox; the network path is attached per command.
        probe.profile = probe.profile.without(Capability::Network);
        let watch = probe_watch();
        let outcome = self.run_unchecked(&probe, &watch)?;
        let f = &outcome.finished;
        if let Some(msg) = outcome.setup_error {
            return Err(if is_namespace_refusal(&msg) {
                SandboxError::BwrapRefused(msg)
            } else {
                SandboxError::Preflight(msg)
            });
        }
        match (f.exit, f.stop) {
            (Exit::Code(0), Stop::None) => Ok(()),
            _ => Err(SandboxError::Preflight(format!(
                "{} {}",
                f.stdout.text.trim(),
                f.stderr.text.trim()
            ))),
        }
    }

    /// Runs `spec` under `watch`: the guarantees its profile requires checked against what this
    /// host can give (refused with [`SandboxError::GuaranteeUnavailable`] before anything, the
    /// preflight included, is spawned), mechanisms checked, preflight ensured, a fresh cgroup, the
    /// tree supervised and killed on timeout or cancellation, the cgroup removed; the outcome says
    /// which guarantees the run really had ([`RunOutcome::guarantees`]).
    pub fn run(&self, spec: &BwrapSpec, watch: &Watch) -> Result<RunOutcome, SandboxError> {
        // No argv is built here to check `spec`: a spec exists only once its builder has checked
        // that it builds, and the cold path builds it once, in `Launcher::prepare`.
        self.check_required(spec)?;
        self.ensure(spec)?;
        if spec.profile.network() {
            self.ensure_network(spec)?;
        }
        if let Some(outcome) = self.run_warm(spec, watch) {
            return Ok(outcome);
        }
        self.run_unchecked(spec, watch)
    }

    /// Asks for a sandbox shaped like `spec` to be set up for the next command, when this sandbox
    /// keeps one warm ([`SandboxConfig::warm`]) and `spec` can wait warm (closed, read-only, a
    /// program the host has where the sandbox shows it; see [`crate::warm`]). Returns at once: a thread of the sandbox's own
    /// starts it. The caller does first whatever it does before a cold spawn of `spec` (spear's
    /// runner clears links in the session's directories), since the mounts are made now.
    pub fn prewarm(&self, spec: &BwrapSpec) {
        if let Some(pool) = &self.warm {
            pool.prewarm(spec);
        }
    }

    /// Whether [`Sandbox::prewarm`] would set a sandbox up for `spec`: a caller skips its own
    /// preparation for the spawn when not.
    pub fn would_prewarm(&self, spec: &BwrapSpec) -> bool {
        self.warm.as_ref().is_some_and(|pool| pool.would_warm(spec))
    }

    /// Runs `spec` in the waiting sandbox, if there is one for it (`None`: run it cold). Its
    /// timeout counts from the moment its command is handed over.
    fn run_warm(&self, spec: &BwrapSpec, watch: &Watch) -> Option<RunOutcome> {
        let pool = self.warm.as_ref()?;
        let warm = pool.checkout(spec, watch.stdin.is_some())?;
        match warm.release(&spec.command) {
            Ok(released) => {
                tracing::debug!("sandbox released warm");
                let cgroup = released.cgroup;
                let kill = || kill_cgroup(cgroup.as_ref());
                let finished = supervise(released.running, watch, &kill);
                Some(self.collect(finished, None, cgroup, released.guarantees))
            }
            Err(warm) => {
                pool.dispose(warm);
                None
            }
        }
    }

    /// Runs `spec` without the preflight, in named phases: [`Sandbox::prepare`] the inputs,
    /// [`Sandbox::create_cgroup`], [`Sandbox::spawn`], supervise (a networked command gets its
    /// network attached and is released first, [`Sandbox::attach_network`]), and
    /// [`Sandbox::collect`] what it did.
    ///
    /// Every resource is held by a value that releases it when dropped, so an early return leaves
    /// nothing behind: the command cgroup is killed and removed by [`CommandCgroup`]'s `Drop`, the
    /// network path's pipes are closed with [`NetworkPipes`] and [`HeldNetwork`] (a held command
    /// that never got "go" runs nothing), and the options, staging plan and seccomp program are
    /// owned fds.
    fn run_unchecked(&self, spec: &BwrapSpec, watch: &Watch) -> Result<RunOutcome, SandboxError> {
        if spec.profile.network() && self.network_poisoned.load(Ordering::SeqCst) {
            return Err(SandboxError::NetworkPoisoned);
        }
        let inputs = self.launcher.prepare(spec)?;
        let argv_bits = inputs.guarantees;
        let cgroup = self.launcher.create_cgroup("spear")?;
        let (running, network) =
            self.launcher
                .spawn(inputs, cgroup.as_ref(), watch.stdin.as_deref(), &[])?;
        tracing::debug!("sandbox spawned");
        let kill = || kill_cgroup(cgroup.as_ref());
        let slirp = match network {
            None => None,
            Some(held) => match self.attach_network(held) {
                Ok(slirp) => Some(slirp),
                Err(e) => return Err(abort_held(running, watch, &kill, e)),
            },
        };
        let finished = supervise(running, watch, &kill);
        Ok(self.collect(finished, slirp, cgroup, argv_bits))
    }

    /// Phase 4, networked commands first: the network attached to the held sandbox (pinned
    /// namespaces, slirp4netns, the egress policy), then the command released with "go". On
    /// failure `held` is dropped unreleased, so the hold runs nothing.
    fn attach_network(&self, held: HeldNetwork) -> Result<Slirp, network::NetworkError> {
        let slirp = network::attach(&self.launcher.config.network, &held.info, &held.ready)?;
        held.release();
        Ok(slirp)
    }

    /// Phase 5: what the command did. slirp4netns stopped (a teardown that cannot be confirmed
    /// poisons this sandbox's network for good), the limits read while the cgroup exists, the
    /// cgroup removed with its failure reported, bwrap's own setup failure picked out.
    fn collect(
        &self,
        finished: Finished,
        slirp: Option<Slirp>,
        cgroup: Option<CommandCgroup>,
        argv_bits: GuaranteeSet,
    ) -> RunOutcome {
        let network_attached = slirp.is_some();
        let network_error = slirp
            .map(|s| {
                let stopped = network::stop_slirp(&s);
                network::release_tap(s);
                stopped
            })
            .and_then(Result::err)
            .map(|e| {
                self.network_poisoned.store(true, Ordering::SeqCst);
                e.to_string()
            });
        tracing::debug!(exit = ?finished.exit, stop = ?finished.stop, "sandbox finished");
        let limits_hit = cgroup
            .as_ref()
            .map(CommandCgroup::limits_hit)
            .unwrap_or_default();
        let session_limits_hit = cgroup
            .as_ref()
            .map(CommandCgroup::session_limits_hit)
            .unwrap_or_default();
        let backend: Option<BackendKind> = cgroup.as_ref().map(CommandCgroup::kind);
        let cleanup_error = cgroup
            .and_then(|cg| cg.remove().err())
            .map(|e| e.to_string());
        let setup_error = setup_failure(&finished);
        let guarantees = guarantees::after_run(
            argv_bits,
            RunFacts {
                tree_dead: finished.exit != Exit::Unknown && cleanup_error.is_none(),
                network: match (network_attached, &network_error) {
                    (false, _) => NetworkPath::NotAttached,
                    (true, None) => NetworkPath::Stopped,
                    (true, Some(_)) => NetworkPath::NotStopped,
                },
                // A spawned child set its rlimits before exec (a failure fails the spawn).
                rlimits: true,
                cgroup: backend,
            },
        );
        RunOutcome {
            finished,
            limits_hit,
            session_limits_hit,
            cleanup_error,
            setup_error,
            network_error,
            guarantees,
        }
    }
}

/// What starts a sandbox: the configuration, the cgroup backend and the spawner, shared with
/// the thread that starts warm sandboxes ([`crate::warm`]).
#[derive(Debug)]
pub(crate) struct Launcher {
    pub(crate) config: SandboxConfig,
    pub(crate) backend: Result<Arc<dyn CgroupBackend>, String>,
    pub(crate) spawner: Arc<dyn Spawner>,
    /// The session's cgroup, made at the first command. Each command's cgroup holds it too, so it
    /// is removed (what is left in it killed) after both the launcher and the last of them.
    pub(crate) session: Mutex<Option<Arc<SessionCgroup>>>,
}

impl Launcher {
    /// Phase 1: what the command needs before it has a cgroup, each checked: the argv (the spec
    /// validated again), the options on an fd, the staging plan, the network path's pipes (refused
    /// outright once the network is poisoned), bwrap itself, and the seccomp program. Nothing runs.
    pub(crate) fn prepare(&self, spec: &BwrapSpec) -> Result<Inputs, SandboxError> {
        let argv = build_argv(spec)?;
        let networked = spec.profile.network();
        let options = options_fd(&argv.options).map_err(SandboxError::Spawn)?;
        let stage = if spec.staged.is_empty() {
            None
        } else {
            Some(Arc::new(
                StagePlan::prepare(&spec.staged).map_err(SandboxError::Spawn)?,
            ))
        };
        let pipes = if networked {
            Some(NetworkPipes::new().map_err(SandboxError::Spawn)?)
        } else {
            None
        };
        check_bwrap(&self.config.bwrap)?;
        let seccomp = seccomp::program_fd()?;
        tracing::debug!("seccomp program ready");
        let guarantees = guarantees::from_argv(spec, &argv.options);
        Ok(Inputs {
            guarantees,
            command: argv.command,
            options,
            stage,
            pipes,
            seccomp,
        })
    }

    /// Phase 2: the command's own cgroup, when limits are active; refused when they are and no
    /// backend can enforce them. The [`CommandCgroup`] is the guard: dropped on any later return,
    /// it kills what joined it and removes it.
    ///
    /// Named `<prefix>-<spear's pid>-<n>`: `spear` for a command's, `spear-warm` for a sandbox
    /// waiting for a session's next command (told apart from the trees of commands that ran).
    pub(crate) fn create_cgroup(
        &self,
        prefix: &str,
    ) -> Result<Option<CommandCgroup>, SandboxError> {
        let Some(limits) = &self.config.cgroup else {
            return Ok(None);
        };
        let backend = self
            .backend
            .as_ref()
            .map_err(|why| SandboxError::NoCgroupBackend(why.clone()))?;
        let session = match &self.config.session {
            Some(budget) => Some(self.session(backend.as_ref(), budget, limits)?),
            None => None,
        };
        let n = COMMANDS.fetch_add(1, Ordering::Relaxed);
        let name = format!("{prefix}-{}-{n}", std::process::id());
        let cgroup = backend.prepare_in(session.as_ref(), limits, &name)?;
        tracing::debug!(name, "cgroup prepared");
        Ok(Some(cgroup))
    }

    /// The session's cgroup, made now if this is its first command: named
    /// `spear-session-<spear's pid>-<n>`. One that cannot be made is an error (the command does
    /// not run), and is tried again at the next command.
    fn session(
        &self,
        backend: &dyn CgroupBackend,
        budget: &SessionBudget,
        limits: &CgroupLimits,
    ) -> Result<Arc<SessionCgroup>, SandboxError> {
        let mut session = lock(&self.session);
        if let Some(made) = session.as_ref() {
            return Ok(Arc::clone(made));
        }
        let n = COMMANDS.fetch_add(1, Ordering::Relaxed);
        let name = format!("spear-session-{}-{n}", std::process::id());
        let made = Arc::new(backend.prepare_session(budget, limits, &name)?);
        tracing::debug!(name, "session cgroup prepared");
        *session = Some(Arc::clone(&made));
        Ok(made)
    }

    /// Phase 3: bwrap started with the inputs, joining `cgroup` before it execs. The options, the
    /// staging plan and the seccomp program are closed on return (the child has its own copies);
    /// of the network path's pipes only the parent's ends stay. A failure says what to do: bwrap
    /// missing or not executable, or the staging step that failed in the child.
    pub(crate) fn spawn(
        &self,
        inputs: Inputs,
        cgroup: Option<&CommandCgroup>,
        stdin: Option<&OwnedFd>,
        more: &[BorrowedFd<'_>],
    ) -> Result<(Running, Option<HeldNetwork>), SandboxError> {
        let (program, args) = self.command_line(inputs.command, cgroup);
        let mut inherit = vec![inputs.options.as_fd()];
        if let Some(pipes) = &inputs.pipes {
            inherit.extend(pipes.child_ends());
        }
        inherit.extend_from_slice(more);
        let launch = Launch {
            program,
            args,
            seccomp: inputs.seccomp.as_fd(),
            inherit,
            join: cgroup.map(CommandCgroup::join_fds).unwrap_or_default(),
            rlimits: self.config.rlimits,
            stage: inputs.stage.clone(),
            stdin: stdin.map(AsFd::as_fd),
        };
        let spawned = self.spawner.spawn(&launch);
        drop(launch);
        match spawned {
            Ok(running) => Ok((running, inputs.pipes.map(NetworkPipes::into_parent_ends))),
            Err(e) => Err(match inputs.stage.as_ref().and_then(|p| p.reported()) {
                Some(failure) => SandboxError::Stage(failure),
                None => self.spawn_error(e),
            }),
        }
    }

    /// The program and arguments that start bwrap: the cgroup backend's wrapper first when it has
    /// one (`systemd-run ... --`), then bwrap reading its options from [`ARGS_CHILD_FD`], then
    /// `--` and the command.
    fn command_line(
        &self,
        command: Vec<OsString>,
        cgroup: Option<&CommandCgroup>,
    ) -> (PathBuf, Vec<OsString>) {
        let mut args: Vec<OsString> = Vec::new();
        let program = match cgroup.map(CommandCgroup::argv_prefix) {
            Some([first, rest @ ..]) => {
                args.extend(rest.iter().cloned());
                args.push(self.config.bwrap.clone().into_os_string());
                PathBuf::from(first)
            }
            _ => self.config.bwrap.clone(),
        };
        args.push("--args".into());
        args.push(ARGS_CHILD_FD.to_string().into());
        args.push("--".into());
        args.extend(command);
        (program, args)
    }

    /// Why bwrap could not be started, as the error that says what to do about it.
    fn spawn_error(&self, e: io::Error) -> SandboxError {
        let bwrap = || self.config.bwrap.clone();
        match e.kind() {
            io::ErrorKind::NotFound => SandboxError::BwrapAbsent(bwrap()),
            io::ErrorKind::PermissionDenied => {
                SandboxError::BwrapInexecutable(bwrap(), e.to_string())
            }
            _ if e.raw_os_error() == Some(libc::ENOEXEC) => {
                SandboxError::BwrapInexecutable(bwrap(), e.to_string())
            }
            _ => SandboxError::Spawn(e),
        }
    }
}

/// What [`Launcher::prepare`] makes for one command.
pub(crate) struct Inputs {
    /// The guarantees its bwrap options give ([`guarantees::from_argv`]), before the run confirms
    /// its candidates.
    pub(crate) guarantees: GuaranteeSet,
    /// What runs after bwrap's `--`: the network hold, if any, then the command.
    command: Vec<OsString>,
    /// bwrap's options ([`options_fd`]).
    options: OwnedFd,
    /// How the writable roots are staged in the child; `None` for a read-only sandbox.
    stage: Option<Arc<StagePlan>>,
    /// The network path's pipes, for a networked command.
    pipes: Option<NetworkPipes>,
    /// The seccomp program.
    seccomp: OwnedFd,
}

/// The network path's pipes, as made before the spawn: bwrap reports its child on `info`; the
/// hold in front of the command ([`crate::spec::NETWORK_HOLD`]) says "r" on `ready` once the sandbox is
/// set up, and waits for "go" on `go`. Each end is closed when dropped.
struct NetworkPipes {
    info: (OwnedFd, OwnedFd),
    go: (OwnedFd, OwnedFd),
    ready: (OwnedFd, OwnedFd),
}

impl NetworkPipes {
    /// Three close-on-exec pipes.
    fn new() -> io::Result<Self> {
        let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
        Ok(NetworkPipes {
            info: pipe()?,
            go: pipe()?,
            ready: pipe()?,
        })
    }

    /// The child's ends, in the order it gets them after the options fd: [`INFO_CHILD_FD`],
    /// [`GO_CHILD_FD`], [`READY_CHILD_FD`].
    fn child_ends(&self) -> [BorrowedFd<'_>; 3] {
        [self.info.1.as_fd(), self.go.0.as_fd(), self.ready.1.as_fd()]
    }

    /// The parent's ends. Our copies of the child's ends are closed here, so that their EOFs mean
    /// what they say (bwrap or the hold is gone).
    fn into_parent_ends(self) -> HeldNetwork {
        HeldNetwork {
            info: self.info.0,
            ready: self.ready.0,
            go: self.go.1,
        }
    }
}

/// A networked command held in front of its program, from spear's side: bwrap's report, the
/// hold's "set up", and the "go" that releases it. Dropped without [`HeldNetwork::release`], the
/// hold reads EOF and exits 125 without running the command.
pub(crate) struct HeldNetwork {
    info: OwnedFd,
    ready: OwnedFd,
    go: OwnedFd,
}

impl HeldNetwork {
    /// Lets the command run: the network is up and the egress policy in place. Every pipe is
    /// closed after.
    fn release(self) {
        if rustix::io::write(&self.go, b"go\n").is_err() {
            tracing::error!("could not release a networked sandbox");
        }
    }
}

/// Kills every process in the command's cgroup; a failure is logged (the PID namespace still
/// dies with the pidfd kill of `supervise`).
fn kill_cgroup(cgroup: Option<&CommandCgroup>) {
    if let Some(cg) = cgroup
        && let Err(e) = cg.kill_all()
    {
        tracing::error!("killing a sandbox's cgroup failed: {e}");
    }
}

/// A networked command whose network could not be attached: it is held, and never released. Its
/// tree is killed and reaped at once; the error is bwrap's own words when bwrap failed on its side
/// of the setup, else the network's.
fn abort_held(
    running: Running,
    watch: &Watch,
    kill: &dyn Fn(),
    e: network::NetworkError,
) -> SandboxError {
    kill();
    let _ = rustix::process::pidfd_send_signal(&running.pidfd, rustix::process::Signal::KILL);
    let reap = Watch {
        timeout: Duration::ZERO,
        ..watch.clone()
    };
    let reaped = supervise(running, &reap, kill);
    match setup_failure(&reaped) {
        Some(setup) => SandboxError::Preflight(setup),
        None => SandboxError::Network(e),
    }
}

/// bwrap reports its own setup failures as `bwrap: ...` on stderr and exit status 1, before the
/// command ran.
fn setup_failure(f: &Finished) -> Option<String> {
    let text = f.stderr.text.trim();
    (f.exit == Exit::Code(1) && f.stdout.total_bytes == 0 && text.starts_with("bwrap: "))
        .then(|| text.lines().next().unwrap_or(text).to_owned())
}

/// bwrap's options, NUL-separated, in an anonymous file read from its start (`--args`): bwrap
/// reads it whole and closes it before the command runs.
fn options_fd(options: &[OsString]) -> io::Result<OwnedFd> {
    use std::io::{Seek, Write};
    use std::os::unix::ffi::OsStrExt;
    let fd = rustix::fs::memfd_create("spear-bwrap-args", rustix::fs::MemfdFlags::CLOEXEC)?;
    let mut file = std::fs::File::from(fd);
    let mut bytes = Vec::with_capacity(options.iter().map(|o| o.len() + 1).sum());
    for o in options {
        bytes.extend_from_slice(o.as_bytes());
        bytes.push(0);
    }
    file.write_all(&bytes)?;
    file.seek(io::SeekFrom::Start(0))?;
    Ok(file.into())
}

// The options fd and the network path's pipes reach the child in this order
// (`Launch::inherit`), after the seccomp program: `--args`, the hold and bwrap's `--info-fd` use
// these numbers.
// A warm sandbox's hold gets its pipes in the same places, after the options fd.
const _: () = assert!(
    crate::warm::WARM_ARGV_CHILD_FD == ARGS_CHILD_FD + 1
        && crate::warm::WARM_READY_CHILD_FD == ARGS_CHILD_FD + 2
);
const _: () = assert!(
    ARGS_CHILD_FD == crate::SECCOMP_CHILD_FD + 1
        && INFO_CHILD_FD == ARGS_CHILD_FD + 1
        && GO_CHILD_FD == INFO_CHILD_FD + 1
        && READY_CHILD_FD == GO_CHILD_FD + 1
);

/// How a preflight probe is watched: 30 s, small output caps.
fn probe_watch() -> Watch {
    Watch {
        timeout: Duration::from_secs(30),
        output_cap: 16 * 1024,
        flood_bytes: 1 << 20,
        cancel: None,
        tee: None,
        stdin: None,
    }
}

/// Whether a bwrap setup failure is the kernel refusing namespaces (terminal), rather than a
/// problem with this particular sandbox's mounts.
fn is_namespace_refusal(msg: &str) -> bool {
    const SIGNS: &[&str] = &[
        "namespace",
        "uid map",
        "gid map",
        "setgroups",
        "Operation not permitted",
        "Permission denied",
    ];
    SIGNS.iter().any(|s| msg.contains(s))
        && !msg.contains("mkdir")
        && !msg.contains("Can't find source path")
}

/// Checks that `bwrap` exists and is an executable file.
fn check_bwrap(bwrap: &Path) -> Result<(), SandboxError> {
    use rustix::fs::{Access, access};
    match std::fs::metadata(bwrap) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(SandboxError::BwrapAbsent(bwrap.to_path_buf()))
        }
        Err(e) => Err(SandboxError::BwrapInexecutable(
            bwrap.to_path_buf(),
            e.to_string(),
        )),
        Ok(m) if !m.is_file() => Err(SandboxError::BwrapInexecutable(
            bwrap.to_path_buf(),
            "not a regular file".into(),
        )),
        Ok(_) => access(bwrap, Access::EXEC_OK)
            .map_err(|e| SandboxError::BwrapInexecutable(bwrap.to_path_buf(), e.to_string())),
    }
}

/// A copy of a cached error (io errors are not `Clone`; their text is kept).
fn clone_error(e: &SandboxError) -> SandboxError {
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Quotes `s` for `sh` in single quotes.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
