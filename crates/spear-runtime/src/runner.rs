//! `CommandRunner`: from a profile and a workspace to a sandbox, and from its end to a `ToolResult`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spear_core::{
    Capability, CapabilitySet, CommandClass, ExecutionProfile, Guarantee, SandboxView, ToolResult,
    ToolStatus,
};
use spear_sandbox::cgroup::{CgroupLimits, LimitsHit, SessionBudget};
use spear_sandbox::{
    Bind, BwrapSpec, CancelToken, EnvPass, Etc, Exit, GIT_CONFIG_PATH, Mask, OutputTee, RunOutcome,
    Sandbox, SandboxConfig, SandboxError, SpecBuilder, SpecError, Stop, SystemDir, TmpfsSizes,
    ToolchainInputs, Toolchains, Watch, credential_masks, etc_entries, host_entry, host_list,
    prepare_etc_view, sandbox_env, secret_masks, system_dirs, toolchains, user_private_dir,
};
use spear_workspace::Workspace;

use crate::host::HostSnapshot;
use crate::identity::GitIdentity;
use crate::scratch::{DEFAULT_SESSION_CAP, SessionScratch};
use crate::staging::{Staging, default_bases, sweep_stale};

/// The masks that keep spear's state directory `state` out of a sandbox that binds `bound`: the
/// state directory itself where a bound path holds it, and a bound path itself where it lies
/// inside the state directory. What does not exist on the host (`exists` says `None`) needs no
/// mask. Pure but for `exists`.
pub fn state_masks(
    state: &Path,
    bound: &[PathBuf],
    exists: &dyn Fn(&Path) -> Option<bool>,
) -> Vec<Mask> {
    let mut hidden: Vec<&Path> = Vec::new();
    for b in bound {
        let path = if b.starts_with(state) {
            b.as_path()
        } else if state.starts_with(b) {
            state
        } else {
            continue;
        };
        if !hidden.contains(&path) {
            hidden.push(path);
        }
    }
    hidden
        .into_iter()
        .filter_map(|p| match exists(p) {
            Some(true) => Some(Mask::Dir(p.to_path_buf())),
            Some(false) => Some(Mask::File(p.to_path_buf())),
            None => None,
        })
        .collect()
}

/// The default wall-clock limit of a command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(45);

/// How a runner runs commands.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// The sandbox: bwrap, rlimits, cgroup limits.
    pub sandbox: SandboxConfig,
    /// Wall-clock limit when a request names none.
    pub default_timeout: Duration,
    /// Bytes kept per output stream (head and tail).
    pub output_cap: usize,
    /// Bytes per stream after which the command is killed as a flood.
    pub flood_bytes: u64,
    /// Size caps of the private tmpfs mounts.
    pub tmpfs: TmpfsSizes,
    /// Where writable commands' writes are staged (see [`crate::staging::default_bases`]), in
    /// order of preference. With none usable, writable commands are refused.
    pub staging: Vec<PathBuf>,
    /// The host environment the sandbox's environment is chosen from.
    pub host_env: Vec<(OsString, OsString)>,
    /// The user's real home directory (a private tmpfs in the sandbox).
    pub home: PathBuf,
    /// Whether `/tmp`, `/var/tmp` and home are fresh for every command or kept for the runner's
    /// whole life (see [`crate::scratch`]).
    pub scratch: ScratchMode,
    /// The cap of a session's area, in bytes.
    pub session_cap: u64,
    /// The host's git identity, given to every sandbox (see [`crate::identity`]).
    pub git_identity: GitIdentity,
    /// Host variables the operator passes into every sandbox.
    pub env_pass: Vec<EnvPass>,
    /// spear's state directory ([`crate::host_dirs::spear_state_dir`]), never shown in a sandbox:
    /// masked wherever a bound path or root would show it or a part of it.
    pub state_dir: Option<PathBuf>,
    /// What the host offers every sandbox, when a front end has looked already (to compute the
    /// policy's view with [`sandbox_view`]): a runner made with it mounts exactly what that view
    /// described, and does not look again. `None`: the runner looks when it is made.
    pub discovered: Option<Arc<HostOffer>>,
    /// The most changes one command's commit takes; past them it commits none and says so
    /// ([`crate::staging::MAX_COMMITTED_CHANGES`] unless the operator's `[limits] changes` says
    /// otherwise).
    pub commit_max_changes: usize,
    /// Where the scans of bound trees for credential files are kept between processes
    /// ([`spear_sandbox::secret_masks`]); `None`: in this process only.
    pub scan_cache: Option<PathBuf>,
    /// Whether this process lives for many commands (a session, `spear serve`): the bound trees'
    /// directories are then watched (inotify), so that a credential file created in one during
    /// the session is masked from the next command on. Otherwise each runner checks every
    /// directory's stamp when it is made, and each command the files found.
    pub watch_trees: bool,
}

/// What the host offers a sandbox over a workspace: its system directories, curated `/etc`
/// entries, toolchains, and the credential files inside them, as seen once
/// ([`HostOffer::discover`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostOffer {
    /// The workspace roots (host paths) it was discovered for: toolchains inside them are left out.
    roots: Vec<PathBuf>,
    system: Vec<SystemDir>,
    etc: Vec<PathBuf>,
    toolchains: Toolchains,
    /// The credential files and directories inside the system directories and the toolchains, at
    /// any depth, as found when it looked ([`spear_sandbox::secret_masks`]).
    secrets: Vec<Mask>,
}

impl HostOffer {
    /// Looks at the host: system directories, `/etc`, the toolchains of `config`'s environment
    /// that lie outside `workspace`'s roots, and every credential file inside what those bind
    /// (each directory's stamp checked against the scan kept in `config.scan_cache`).
    pub fn discover(workspace: &Workspace, config: &RunnerConfig) -> Self {
        let roots = root_hosts(workspace);
        let system = system_dirs(Path::new("/"));
        let toolchains = host_toolchains(workspace, config);
        let trees = bound_trees(&system, &toolchains);
        let (secrets, _) = secret_masks(
            &trees,
            &roots,
            config.scan_cache.as_deref(),
            spear_sandbox::Depth::Full,
            config.watch_trees,
        );
        HostOffer {
            roots,
            system,
            etc: etc_entries(Path::new("/etc")),
            toolchains,
            secrets,
        }
    }

    /// The credential files and directories it found inside the trees every sandbox binds.
    pub fn secrets(&self) -> &[Mask] {
        &self.secrets
    }

    /// `config`'s offer when it was discovered for `workspace`'s roots, else a fresh look.
    fn for_runner<'a>(
        workspace: &Workspace,
        config: &'a RunnerConfig,
    ) -> std::borrow::Cow<'a, HostOffer> {
        match &config.discovered {
            Some(offer) if offer.roots == root_hosts(workspace) => {
                std::borrow::Cow::Borrowed(&**offer)
            }
            _ => std::borrow::Cow::Owned(HostOffer::discover(workspace, config)),
        }
    }
}

/// The host trees every sandbox binds read-only at their own path: the toolchains, then the
/// system directories bound as they are (`/usr`; last, so that the user's own trees are the
/// first to be watched in a session).
fn bound_trees(system: &[SystemDir], toolchains: &Toolchains) -> Vec<PathBuf> {
    toolchains
        .binds
        .iter()
        .cloned()
        .chain(system.iter().filter_map(|d| match d {
            SystemDir::Bind(p) => Some(p.clone()),
            SystemDir::Symlink { .. } => None,
        }))
        .collect()
}

/// The host paths of `workspace`'s roots.
fn root_hosts(workspace: &Workspace) -> Vec<PathBuf> {
    workspace
        .roots()
        .iter()
        .map(|r| r.host_path().to_path_buf())
        .collect()
}

/// Where a command's `/tmp`, `/var/tmp` and home come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScratchMode {
    /// Fresh size-capped tmpfs mounts, gone with the command (a one-shot `spear exec`).
    #[default]
    PerCommand,
    /// One area for every command of the runner, removed with it (an MCP session).
    Session,
}

impl RunnerConfig {
    /// The configuration for this process ([`RunnerConfig::from_snapshot`] of
    /// [`HostSnapshot::of_process`]): for library callers and tests; front ends take their
    /// snapshot once and call [`RunnerConfig::from_snapshot`].
    pub fn from_host() -> Self {
        RunnerConfig::from_snapshot(&HostSnapshot::of_process())
    }

    /// The configuration for a call from `host`: its environment and `$HOME`, default limits,
    /// and staging under `$XDG_STATE_HOME/spear/staging` (or `~/.local/state/...`), then the
    /// per-user runtime directory.
    pub fn from_snapshot(host: &HostSnapshot) -> Self {
        let host_env: Vec<(OsString, OsString)> = host.env().to_vec();
        // One reading of HOME for every caller ([`crate::host_dirs`]); front ends refuse an
        // unusable one before they get here, so the fallback is only for library callers.
        let home = crate::host_dirs::host_home(host)
            .unwrap_or_else(|e| {
                tracing::warn!("{e}");
                None
            })
            .unwrap_or_else(|| PathBuf::from("/nonexistent-home"));
        let xdg_state = crate::host_dirs::host_xdg_state_home(host).unwrap_or_else(|e| {
            tracing::warn!("{e}");
            None
        });
        let staging = default_bases(xdg_state.as_deref(), Some(&home));
        let state_dir = crate::host_dirs::spear_state_dir(xdg_state.as_deref(), Some(&home));
        let git_identity = GitIdentity::from_host(&host_env, &home);
        RunnerConfig {
            sandbox: SandboxConfig::default(),
            default_timeout: DEFAULT_TIMEOUT,
            output_cap: 1 << 20,
            flood_bytes: 256 << 20,
            tmpfs: TmpfsSizes::default(),
            staging,
            host_env,
            home,
            scratch: ScratchMode::PerCommand,
            session_cap: DEFAULT_SESSION_CAP,
            git_identity,
            env_pass: Vec::new(),
            state_dir,
            discovered: None,
            commit_max_changes: crate::staging::MAX_COMMITTED_CHANGES,
            scan_cache: user_private_dir("secret-scan"),
            watch_trees: false,
        }
    }
}

/// What to run: an argv, executed directly, or a script for bash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// Executed as is; never through a shell.
    Argv(Vec<OsString>),
    /// Run as `bash -o pipefail -c SCRIPT`. Callers that run an agent's script pass it through
    /// `spear_policy::script_to_run` first, so that `cmd | head` is no failure.
    Script(String),
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct CommandRequest {
    /// The command.
    pub command: CommandLine,
    /// What the decision layer granted.
    pub profile: ExecutionProfile,
    /// Host path of the working directory, inside a root; the launch directory when `None`.
    pub workdir: Option<PathBuf>,
    /// Wall-clock limit; the runner's default when `None`.
    pub timeout: Option<Duration>,
    /// Cancellation from outside.
    pub cancel: Option<CancelToken>,
    /// The class the decision layer gave the command, copied into the result.
    pub class: Option<CommandClass>,
    /// Where output goes as it is read (a background job's reader).
    pub tee: Option<Arc<dyn OutputTee>>,
    /// Bytes per stream after which the command is killed as a flood; the runner's when `None`.
    pub flood_bytes: Option<u64>,
    /// The read end of a pipe the caller feeds, as the command's stdin; `/dev/null` when `None`
    /// (every tool call: a model has no stdin to give).
    pub stdin: Option<Arc<std::os::fd::OwnedFd>>,
}

impl CommandRequest {
    /// A request with no working directory, timeout, cancellation or class.
    pub fn new(command: CommandLine, profile: ExecutionProfile) -> Self {
        CommandRequest {
            command,
            profile,
            workdir: None,
            timeout: None,
            cancel: None,
            class: None,
            tee: None,
            flood_bytes: None,
            stdin: None,
        }
    }
}

/// What [`CommandRunner::run_report`] returns.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The result, as [`CommandRunner::run`] returns it.
    pub result: ToolResult,
    /// Why the sandbox is missing or broken, when that is why the command failed (mechanisms
    /// missing, the preflight or setup failed, containment could not be confirmed). Callers stop
    /// trusting writes after this.
    pub sandbox_down: Option<String>,
    /// What a writable command staged, for the caller to judge and commit
    /// ([`Staging::commit`]). Dropping the last handle without committing discards it: nothing
    /// of it reaches the workspace.
    pub staged: Option<Arc<Staging>>,
}

/// What the host offers every sandbox of a runner, looked up once.
#[derive(Debug, Clone)]
struct HostView {
    /// The trees every sandbox binds read-only at their own path, whose credential files are
    /// masked ([`bound_trees`]).
    trees: Vec<PathBuf>,
    system: Vec<SystemDir>,
    etc: Vec<PathBuf>,
    /// Where `/etc` views are prepared, when a private directory could be made.
    etc_views: Option<PathBuf>,
    /// The resolver file of networked sandboxes, when it could be written.
    resolv_conf: Option<PathBuf>,
    toolchains: Toolchains,
    /// spear's git configuration file (the host's identity), when there is one.
    git_config: Option<PathBuf>,
    /// The empty file masked files are bound from, when one could be made.
    empty_file: Option<PathBuf>,
    /// The user's name in the password database.
    user: Option<OsString>,
}

/// The toolchain directories and PATH of every sandbox of a runner over `workspace` with
/// `config` (the host's PATH and toolchain variables, looked at now).
fn host_toolchains(workspace: &Workspace, config: &RunnerConfig) -> Toolchains {
    let roots = root_hosts(workspace);
    let path_var = config
        .host_env
        .iter()
        .find(|(n, _)| n == "PATH")
        .map(|(_, v)| v.clone());
    let env = config.host_env.clone();
    let var = move |name: &str| {
        env.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
    };
    let is_dir = |p: &Path| p.is_dir();
    toolchains(&ToolchainInputs {
        path: path_var.as_deref(),
        var: &var,
        home: &config.home,
        roots: &roots,
        is_dir: &is_dir,
        list: &host_list,
    })
}

/// What every sandbox of a runner over `workspace` with `config` shows of the host, for the
/// decision layer (`PolicyConfig::sandbox`): computed with the functions that build each
/// sandbox's spec (system directories, curated `/etc`, toolchain binds, environment), so the
/// policy and the mounts cannot disagree. Private: `/tmp`, `/dev/shm` and the home directory,
/// each a tmpfs of the sandbox's own.
pub fn sandbox_view(workspace: &Workspace, config: &RunnerConfig) -> SandboxView {
    let offer = HostOffer::for_runner(workspace, config);
    let toolchains = &offer.toolchains;
    let mut shown: Vec<PathBuf> = offer
        .system
        .iter()
        .map(|d| match d {
            SystemDir::Bind(p) | SystemDir::Symlink { path: p, .. } => p.clone(),
        })
        .collect();
    shown.push(PathBuf::from("/proc"));
    shown.extend(offer.etc.iter().cloned());
    shown.extend(toolchains.binds.iter().cloned());
    let mut environment: Vec<String> = sandbox_env(spear_sandbox::EnvInputs {
        host: &config.host_env,
        home: &config.home,
        path: &toolchains.path,
        toolchain_vars: &toolchains.vars,
        user: passwd_name(rustix::process::geteuid().as_raw()).as_deref(),
        pass: &config.env_pass,
    })
    .into_iter()
    .filter_map(|(name, _)| name.into_string().ok())
    .collect();
    // The runner names its git configuration when it can write one (see `HostView::git_config`).
    if config.git_identity.config_text().is_some() && user_private_dir("git").is_some() {
        environment.retain(|n| n != "GIT_CONFIG_SYSTEM");
        environment.push("GIT_CONFIG_SYSTEM".to_owned());
        environment.sort();
    }
    SandboxView {
        home: Some(config.home.clone()),
        shown,
        masked: offer
            .secrets
            .iter()
            .map(|m| m.path().to_path_buf())
            .collect(),
        private: vec![
            PathBuf::from("/tmp"),
            PathBuf::from("/var/tmp"),
            PathBuf::from("/dev/shm"),
            config.home.clone(),
        ],
        environment,
    }
}

/// Runs commands in the sandbox: the only way a command reaches one.
#[derive(Debug)]
pub struct CommandRunner {
    workspace: Arc<Workspace>,
    sandbox: Arc<Sandbox>,
    config: RunnerConfig,
    host: HostView,
    /// The session's `/tmp`, `/var/tmp` and home, in [`ScratchMode::Session`].
    scratch: Option<SessionScratch>,
}

impl CommandRunner {
    /// A runner over `workspace` with the host's sandbox (cgroup backend detected now).
    pub fn new(workspace: Arc<Workspace>, config: RunnerConfig) -> Self {
        let sandbox = Sandbox::new(config.sandbox.clone());
        CommandRunner::with_sandbox(workspace, config, sandbox)
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// A runner with a given sandbox instance (tests substitute backends and spawners).
    pub fn with_sandbox(workspace: Arc<Workspace>, config: RunnerConfig, sandbox: Sandbox) -> Self {
        CommandRunner::with_shared_sandbox(workspace, config, Arc::new(sandbox))
    }

    /// A runner with a sandbox instance that outlives it: a process serving many one-command
    /// calls (`spear serve`) keeps one per sandbox configuration, so that its preflights, its
    /// network poisoning and its warm sandbox carry from one call to the next. The sandbox must
    /// have been made with `config.sandbox`.
    pub fn with_shared_sandbox(
        workspace: Arc<Workspace>,
        config: RunnerConfig,
        sandbox: Arc<Sandbox>,
    ) -> Self {
        let HostOffer {
            system,
            etc,
            toolchains,
            ..
        } = HostOffer::for_runner(&workspace, &config).into_owned();
        let trees = bound_trees(&system, &toolchains);
        if config.watch_trees {
            // A session watches its trees from the start, not from its first command.
            let found = spear_sandbox::Depth::Found;
            let roots = root_hosts(&workspace);
            secret_masks(&trees, &roots, config.scan_cache.as_deref(), found, true);
        }
        let host = HostView {
            trees,
            system,
            etc,
            etc_views: user_private_dir("etc"),
            resolv_conf: resolver_file(),
            toolchains,
            git_config: user_private_dir("git").and_then(|d| config.git_identity.write(&d)),
            empty_file: spear_sandbox::prepare_empty_file(),
            user: passwd_name(rustix::process::geteuid().as_raw()),
        };
        for base in &config.staging {
            sweep_stale(base);
        }
        let scratch = match config.scratch {
            ScratchMode::PerCommand => None,
            ScratchMode::Session => {
                let made = crate::scratch::default_base()
                    .ok_or_else(|| "no private directory for it".to_owned())
                    .and_then(|base| {
                        SessionScratch::create(&base, config.session_cap).map_err(|e| e.to_string())
                    });
                match made {
                    Ok(s) => Some(s),
                    Err(e) => {
                        tracing::warn!(
                            "the session's /tmp and home cannot be kept between commands ({e}); every command gets fresh ones"
                        );
                        None
                    }
                }
            }
        };
        CommandRunner {
            workspace,
            sandbox,
            config,
            host,
            scratch,
        }
    }

    /// The session's area, when this runner keeps `/tmp`, `/var/tmp` and home between commands.
    pub fn session_scratch(&self) -> Option<&SessionScratch> {
        self.scratch.as_ref()
    }

    /// The sandbox instance.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The workspace.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    /// Runs the sandbox preflight for `profile` once (cached on the sandbox, terminal failures
    /// too).
    pub fn ensure_sandbox(&self, profile: &ExecutionProfile) -> Result<(), SandboxError> {
        let request =
            CommandRequest::new(CommandLine::Argv(vec!["/bin/true".into()]), profile.clone());
        let staging = self.stage(profile).map_err(SandboxError::Spec)?;
        // A missing mechanism is reported before anything about this spec, as the sandbox does.
        self.sandbox.check_mechanisms()?;
        let spec = self
            .spec(&request, staging.as_ref())
            .map_err(SandboxError::Spec)?;
        self.sandbox.ensure(&spec)
    }

    /// Fresh layers for a writable profile; none for a read-only one.
    fn stage(&self, profile: &ExecutionProfile) -> Result<Option<Staging>, SpecError> {
        if !profile.workspace_write() {
            return Ok(None);
        }
        Staging::create(&self.config.staging, &self.workspace)
            .map(|s| Some(s.limit_changes(self.config.commit_max_changes)))
            .map_err(|e| SpecError::Staging(format!("the writes could not be staged: {e}")))
    }

    /// Runs the network preflight for this workspace once (cached on the sandbox): a real
    /// networked `/bin/true` with its network attached, its egress policy loaded and its teardown
    /// confirmed.
    pub fn ensure_network(&self) -> Result<(), SandboxError> {
        let profile = ExecutionProfile::from_granted(
            CapabilitySet::of(&[Capability::FilesystemRead, Capability::Network]),
            Vec::new(),
        );
        let request = CommandRequest::new(CommandLine::Argv(vec!["/bin/true".into()]), profile);
        self.sandbox.check_mechanisms()?;
        let spec = self.spec(&request, None).map_err(SandboxError::Spec)?;
        self.sandbox.ensure(&spec)?;
        self.sandbox.ensure_network(&spec)
    }

    /// The sandbox spec of `request`, built and checked by the sandbox ([`BwrapSpec::builder`]);
    /// a writable one stages its roots in `staging`.
    pub fn spec(
        &self,
        request: &CommandRequest,
        staging: Option<&Staging>,
    ) -> Result<BwrapSpec, SpecError> {
        self.spec_builder(request, staging)?.build()
    }

    /// What the sandbox of `request` is for, not yet checked: refused here only when its working
    /// directory lies in no root.
    pub(crate) fn spec_builder(
        &self,
        request: &CommandRequest,
        staging: Option<&Staging>,
    ) -> Result<SpecBuilder, SpecError> {
        let ws = &self.workspace;
        let cwd = match &request.workdir {
            None => ws.launch_mount_dir(),
            Some(dir) => ws
                .locate(dir)
                .map(|loc| ws.mount_path(&loc))
                .ok_or_else(|| SpecError::Unbound(dir.clone()))?,
        };
        let command = match &request.command {
            CommandLine::Argv(argv) => argv.clone(),
            CommandLine::Script(script) => vec![
                "/bin/bash".into(),
                "-o".into(),
                "pipefail".into(),
                "-c".into(),
                script.into(),
            ],
        };
        let roots: Vec<Bind> = ws
            .roots()
            .iter()
            .map(|r| Bind {
                host: r.host_path().to_path_buf(),
                mount: r.mount_path().to_path_buf(),
            })
            .collect();
        let root_hosts: Vec<PathBuf> = roots.iter().map(|r| r.host.clone()).collect();
        let masks = self.masks(request, &root_hosts);
        let mut env = sandbox_env(spear_sandbox::EnvInputs {
            host: &self.config.host_env,
            home: &self.config.home,
            path: &self.host.toolchains.path,
            toolchain_vars: &self.host.toolchains.vars,
            user: self.host.user.as_deref(),
            pass: &self.config.env_pass,
        });
        if self.host.git_config.is_some() {
            env.retain(|(n, _)| n != "GIT_CONFIG_SYSTEM");
            env.push(("GIT_CONFIG_SYSTEM".into(), GIT_CONFIG_PATH.into()));
            env.sort();
        }
        // A mask under the session's own directories could be displaced by a link that a
        // concurrently running job of the session swaps in while bwrap sets up (bwrap follows
        // links in mount points): such a command gets fresh private places instead. A mask
        // inside a toolchain tree is not one: every sandbox of the session binds that tree
        // read-only over its mount point, which no job of the session can rename or replace.
        let private = |p: &Path| {
            let toolchain = self.host.toolchains.binds.iter().any(|b| p.starts_with(b));
            !toolchain
                && (p.starts_with("/tmp")
                    || p.starts_with("/var/tmp")
                    || p.starts_with(&self.config.home))
        };
        let scratch = self
            .scratch
            .as_ref()
            .filter(|_| !masks.iter().any(|m| private(m.path())))
            .map(|s| s.dirs().clone());
        Ok(BwrapSpec::builder(
            request.profile.clone(),
            command,
            cwd,
            self.config.home.clone(),
        )
        .system(self.host.system.clone())
        .etc(self.etc())
        .toolchains(self.host.toolchains.binds.clone())
        .roots(roots)
        .staged(staging.map(Staging::overlays).unwrap_or_default())
        .masks(masks)
        .empty_file(self.host.empty_file.clone())
        .env(env, EnvPass::exact_names(&self.config.env_pass))
        .tmpfs(self.config.tmpfs)
        .scratch(scratch)
        .git_config(self.host.git_config.clone())
        .resolver(self.host.resolv_conf.clone()))
    }

    /// What the sandbox of `request` masks, in order, none inside another: the credential stores
    /// under the home directory and spear's state directory wherever a bound path or one of
    /// `root_hosts` shows them, and the credential files at any depth of the bound trees and of
    /// the request's host-read paths.
    fn masks(&self, request: &CommandRequest, root_hosts: &[PathBuf]) -> Vec<Mask> {
        let ws = &self.workspace;
        let mut bound: Vec<PathBuf> = self.host.toolchains.binds.clone();
        bound.extend(request.profile.host_read_paths().iter().cloned());
        let mut masks = credential_masks(&self.config.home, &bound, &host_entry);
        // Attack: a registry token or password read from a bound tree at any depth (cargo's
        // config.toml, a virtualenv's pip.conf, npm's own npmrc, a conda environment's .condarc).
        // The trees were scanned whole when the runner was made; each command looks again at the
        // files found (a token written into one since), and scans the host-read paths it binds.
        let cache = self.config.scan_cache.as_deref();
        let (found, full) = (spear_sandbox::Depth::Found, spear_sandbox::Depth::Full);
        let watch = self.config.watch_trees;
        masks.extend(secret_masks(&self.host.trees, root_hosts, cache, found, watch).0);
        let host_reads = request.profile.host_read_paths();
        if !host_reads.is_empty() {
            masks.extend(secret_masks(host_reads, root_hosts, cache, full, false).0);
        }
        for mask in credential_masks(&self.config.home, root_hosts, &host_entry) {
            if let Some(loc) = ws.locate(mask.path()) {
                let inside = ws.mount_path(&loc);
                masks.push(match mask {
                    Mask::File(_) => Mask::File(inside),
                    Mask::Dir(_) => Mask::Dir(inside),
                });
            }
        }
        if let Some(state) = &self.config.state_dir {
            // Attack: a command reading spear's audit log, or connecting to the approval socket
            // to approve its own pending calls, through a bound path that shows the state
            // directory.
            masks.extend(state_masks(state, &bound, &host_entry));
            for mask in state_masks(state, root_hosts, &host_entry) {
                if let Some(loc) = ws.locate(mask.path()) {
                    let inside = ws.mount_path(&loc);
                    masks.push(match mask {
                        Mask::File(_) => Mask::File(inside),
                        Mask::Dir(_) => Mask::Dir(inside),
                    });
                }
            }
        }
        masks.sort_by(|a, b| a.path().cmp(b.path()));
        masks.dedup_by(|a, b| a.path() == b.path());
        // What an empty directory already hides needs no mask of its own (nor could it have a
        // mount point there).
        let dirs: Vec<PathBuf> = masks
            .iter()
            .filter_map(|m| match m {
                Mask::Dir(p) => Some(p.clone()),
                Mask::File(_) => None,
            })
            .collect();
        masks.retain(|m| {
            !dirs
                .iter()
                .any(|d| m.path() != d && m.path().starts_with(d))
        });
        masks
    }

    /// The sandbox's `/etc`: a view prepared in the user's private directory (one mount), or the
    /// curated entries bound one by one when no view can be made.
    fn etc(&self) -> Etc {
        let view = self
            .host
            .etc_views
            .as_ref()
            .map(|base| prepare_etc_view(base, Path::new("/etc"), &self.host.etc));
        match view {
            Some(Ok(files)) => Etc::View {
                files,
                dirs: Vec::new(),
            },
            Some(Err(e)) => {
                tracing::warn!("binding /etc entries one by one: no view ({e})");
                Etc::Entries(self.host.etc.clone())
            }
            None => Etc::Entries(self.host.etc.clone()),
        }
    }

    /// Runs `request` to one result. Every failure to confine is a failed result with nothing
    /// spawned; every end of a command that ran is reported as it happened.
    pub fn run(&self, request: &CommandRequest) -> ToolResult {
        self.run_report(request).result
    }

    /// Runs `request` as [`CommandRunner::run`] does, and also says whether it failed because the
    /// sandbox itself is missing or broken (as opposed to the command failing, or a refusal).
    pub fn run_report(&self, request: &CommandRequest) -> RunReport {
        let started = Instant::now();
        let mut report = self.run_inner(request);
        report.result.class = request.class;
        report.result.duration_ms =
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        report
    }

    fn run_inner(&self, request: &CommandRequest) -> RunReport {
        let refused = |e: SpecError| RunReport {
            result: ToolResult::failed(e.to_string()),
            sandbox_down: None,
            staged: None,
        };
        let staging = match self.stage(&request.profile) {
            Ok(s) => s,
            Err(e) => return refused(e),
        };
        let builder = match self.spec_builder(request, staging.as_ref()) {
            Ok(b) => b,
            Err(e) => return refused(e),
        };
        self.execute(request, staging, builder.build())
    }

    /// Fresh layers for `profile` and the spec of `request` over them: what [`Self::prepare`]
    /// compiles before anything is spawned.
    pub(crate) fn compile(
        &self,
        request: &CommandRequest,
    ) -> Result<(Option<Staging>, BwrapSpec), SpecError> {
        let staging = self.stage(&request.profile)?;
        let spec = self.spec_builder(request, staging.as_ref())?.build()?;
        Ok((staging, spec))
    }

    /// Runs `request` in the sandbox of `spec` (a spec the sandbox refused is its refusal, as if
    /// it had been handed the spec), its writes staged in `staging`.
    pub(crate) fn execute(
        &self,
        request: &CommandRequest,
        mut staging: Option<Staging>,
        spec: Result<BwrapSpec, SpecError>,
    ) -> RunReport {
        let timeout = request.timeout.unwrap_or(self.config.default_timeout);
        let watch = Watch {
            timeout,
            output_cap: self.config.output_cap,
            flood_bytes: request.flood_bytes.unwrap_or(self.config.flood_bytes),
            cancel: request.cancel.clone(),
            tee: request.tee.clone(),
            stdin: request.stdin.clone(),
        };
        let outcome = spec.map_err(SandboxError::Spec).and_then(|spec| {
            tracing::debug!("sandbox spec built");
            self.prepare_scratch(&spec);
            let outcome = self.sandbox.run(&spec, &watch);
            if outcome.is_ok() && self.sandbox.would_prewarm(&spec) {
                // The next command's sandbox, if it can wait warm, is set up now: over session
                // directories cleared of links as for a cold spawn.
                self.prepare_scratch(&spec);
                self.sandbox.prewarm(&spec);
            }
            outcome
        });
        let mut sandbox_down = None;
        let result = match outcome {
            Ok(outcome) => {
                let mut result = self.interpret(&outcome, timeout);
                let broken = outcome
                    .setup_error
                    .as_ref()
                    .is_some_and(|_| result.status != ToolStatus::NotFound)
                    || outcome.finished.exit == Exit::Unknown;
                // Attack: a process that survived the kill could still write into the layer
                // while it is judged and committed. When the end of the tree cannot be
                // confirmed, nothing the command wrote is kept.
                if outcome.finished.exit == Exit::Unknown && staging.take().is_some() {
                    result.append_reason("nothing it wrote was kept, since the end of its processes could not be confirmed",
                    );
                }
                if broken {
                    sandbox_down.clone_from(&result.reason);
                }
                result
            }
            Err(e) => {
                // A spec refusal (an unimplemented capability) or a broken network path is not the
                // sandbox being down: closed commands still run confined.
                if e.means_sandbox_down() {
                    sandbox_down = Some(e.to_string());
                }
                ToolResult::failed(e.to_string())
            }
        };
        let mut result = result;
        unmet_after_run(&mut result, &request.profile);
        if let Some(over) = self.scratch.as_ref().and_then(SessionScratch::enforce_cap) {
            result.append_reason(&over);
        }
        RunReport {
            result,
            sandbox_down,
            staged: staging.map(Arc::new),
        }
    }

    /// Readies the session's own directories for `spec`, when it binds them: made if missing, and
    /// rid of links to what the sandbox binds on top.
    fn prepare_scratch(&self, spec: &BwrapSpec) {
        if let (Some(scratch), Some(_)) = (&self.scratch, spec.scratch()) {
            scratch.ensure_dirs();
            for dest in spec
                .toolchains()
                .iter()
                .chain(spec.profile().host_read_paths())
                .chain(spec.roots().iter().map(|r| &r.mount))
            {
                scratch.clear_links_to(dest, spec.home());
            }
        }
    }

    /// Turns what the sandbox saw into a result.
    fn interpret(&self, outcome: &RunOutcome, timeout: Duration) -> ToolResult {
        let f = &outcome.finished;
        let mut result = ToolResult::new(ToolStatus::Failed);
        result.guarantees = Some(outcome.guarantees);
        result.stdout.clone_from(&f.stdout.text);
        result.stderr.clone_from(&f.stderr.text);
        result.truncated = f.stdout.truncated || f.stderr.truncated;
        if let Some(setup) = &outcome.setup_error {
            if setup.contains("execvp") && setup.contains("No such file or directory") {
                result.status = ToolStatus::NotFound;
                result.reason = Some(format!("the program was not found in the sandbox: {setup}"));
            } else {
                result.reason = Some(format!(
                    "the sandbox could not be set up, so the command did not run: {setup}"
                ));
            }
            return result;
        }
        let limits = self.config.sandbox.cgroup;
        match (f.stop, f.exit) {
            (_, Exit::Unknown) => {
                result.reason = Some(
                    "containment failed: spear could not confirm that the command's processes died; check for leftover processes".into(),
                );
            }
            (Stop::Timeout, _) => {
                result.status = ToolStatus::Timeout;
                result.reason = Some(format!(
                    "timed out after {} s; the command and every process it started were killed. Ask for a longer timeout or run something shorter",
                    timeout.as_secs_f64()
                ));
            }
            (Stop::Cancelled, _) => {
                result.status = ToolStatus::Cancelled;
                result.reason =
                    Some("cancelled; the command and every process it started were killed".into());
            }
            (Stop::Flood, _) => {
                result.reason = Some(format!(
                    "the command printed more than {} MiB on one stream and was killed; redirect its output to a file and read parts of it",
                    self.config.flood_bytes >> 20
                ));
            }
            (Stop::None, Exit::Code(0)) => {
                result.status = ToolStatus::Ok;
                result.exit_code = Some(0);
            }
            (Stop::None, Exit::Code(code)) => result.exit_code = Some(code),
            (Stop::None, Exit::Signal(sig)) => {
                result.exit_code = Some(128 + sig);
                result.reason = Some(format!("the sandbox was killed by signal {sig}"));
            }
        }
        for note in limit_notes(
            outcome.limits_hit,
            outcome.session_limits_hit,
            limits,
            self.config.sandbox.session,
        ) {
            result.append_reason(&note);
        }
        if let Some(e) = &outcome.network_error {
            result.status = ToolStatus::Failed;
            result.append_reason(&format!(
                    "network containment failed: {e}; this session refuses networked commands from now on"
                ),
            );
        }
        if let Some(e) = &outcome.cleanup_error {
            result.append_reason(&format!("the command's cgroup could not be removed: {e}"));
        }
        result
    }
}

/// What a result says about the limits a command hit: its own (`hit`, `limits`), or the session's
/// budget (`session_hit`, `session`) when that is what stopped it, with what to do about it.
fn limit_notes(
    hit: LimitsHit,
    session_hit: LimitsHit,
    limits: Option<CgroupLimits>,
    session: Option<SessionBudget>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if session_hit.memory {
        let mib = session.map_or(0, |b| b.memory_max_bytes >> 20);
        notes.push(format!(
            "the session's memory budget ({mib} MiB, all of its commands and background jobs together) is reached and processes were killed; stop a background job with terminal_kill"
        ));
    } else if hit.memory {
        let mib = limits.map_or(0, |l| l.memory_max_bytes >> 20);
        notes.push(format!(
            "the command reached its memory limit ({mib} MiB) and processes were killed"
        ));
    }
    if session_hit.tasks {
        let n = session.map_or(0, |b| b.tasks_max);
        notes.push(format!(
            "the session's task budget of {n} (all of its commands and background jobs together) is reached; forks beyond it failed; stop a background job with terminal_kill"
        ));
    } else if hit.tasks {
        let n = limits.map_or(0, |l| l.tasks_max);
        notes.push(format!(
            "the command reached its limit of {n} tasks; forks beyond it failed"
        ));
    }
    notes
}

/// Writes the resolver file of networked sandboxes (slirp4netns's forwarder) into the user's
/// private directory.
fn resolver_file() -> Option<PathBuf> {
    let dir = user_private_dir("net")?;
    let path = dir.join("resolv.conf");
    let text = format!("nameserver {}\n", spear_sandbox::SLIRP_DNS);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&path, text).ok()?;
    }
    Some(path)
}

/// The name of user `uid` in `/etc/passwd`.
fn passwd_name(uid: u32) -> Option<OsString> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| OsString::from(name))
    })
}

/// A command that ran without a guarantee its profile requires is a failure, whatever it printed
/// (the sandbox refuses before spawning what the host cannot give; this is what the run itself
/// lost, e.g. a tree whose end could not be confirmed). `target_policy` is judged after the
/// runner, by its caller.
fn unmet_after_run(result: &mut ToolResult, profile: &ExecutionProfile) {
    let Some(g) = &result.guarantees else {
        return;
    };
    let mut unmet = profile.required().unmet(g.enforced);
    unmet.remove(Guarantee::TargetPolicy);
    if !unmet.is_empty() {
        result.status = ToolStatus::Failed;
        let text = format!(
            "the command ran without {}, which it requires",
            unmet.names()
        );
        result.append_reason(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Guarantee as G;
    use spear_core::{GuaranteeSet, Guarantees};

    #[test]
    fn notes_name_the_limit_that_stopped_the_command() {
        let limits = Some(CgroupLimits::default());
        let session = Some(SessionBudget {
            tasks_max: 600,
            memory_max_bytes: 4 << 30,
        });
        let none = LimitsHit::default();
        let tasks = LimitsHit {
            tasks: true,
            memory: false,
        };
        let memory = LimitsHit {
            tasks: false,
            memory: true,
        };
        let own_tasks = "the command reached its limit of 256 tasks; forks beyond it failed";
        let session_tasks = "the session's task budget of 600 (all of its commands and background jobs together) is reached; forks beyond it failed; stop a background job with terminal_kill";
        let own_memory =
            "the command reached its memory limit (2048 MiB) and processes were killed";
        let session_memory = "the session's memory budget (4096 MiB, all of its commands and background jobs together) is reached and processes were killed; stop a background job with terminal_kill";
        // (hit, the session's part of it, notes)
        let cases: [(LimitsHit, LimitsHit, Vec<&str>); 5] = [
            (none, none, vec![]),
            (tasks, none, vec![own_tasks]),
            (tasks, tasks, vec![session_tasks]),
            (memory, memory, vec![session_memory]),
            (
                LimitsHit {
                    tasks: true,
                    memory: true,
                },
                memory,
                vec![session_memory, own_tasks],
            ),
        ];
        for (hit, session_hit, want) in cases {
            assert_eq!(
                limit_notes(hit, session_hit, limits, session),
                want,
                "{hit:?} {session_hit:?}"
            );
        }
        assert_eq!(limit_notes(memory, none, limits, session), vec![own_memory]);
    }

    #[test]
    fn a_run_without_a_required_guarantee_fails() {
        let profile = |bits: &[G]| {
            ExecutionProfile::from_granted(CapabilitySet::of(&[Capability::FilesystemRead]), vec![])
                .with_required(GuaranteeSet::of(bits))
        };
        let ran = |bits: &[G]| ToolResult {
            guarantees: Some(Guarantees {
                enforced: GuaranteeSet::of(bits),
                limits: None,
            }),
            ..ToolResult::new(ToolStatus::Ok)
        };
        // (required, enforced, still ok)
        let cases: [(&[G], &[G], bool); 6] = [
            (&[], &[], true),
            (&[G::ProcessBoundary], &[G::ProcessBoundary], true),
            (&[G::ProcessBoundary], &[G::ReadBoundary], false),
            (&[G::NetworkFiltered], &[G::NetworkClosed], true),
            (&[G::ResourceLimits], &[G::NetworkClosed], false),
            // Judged by the runner's caller, after it.
            (&[G::TargetPolicy], &[], true),
        ];
        for (required, enforced, ok) in cases {
            let mut r = ran(enforced);
            unmet_after_run(&mut r, &profile(required));
            assert_eq!(
                r.status == ToolStatus::Ok,
                ok,
                "{required:?} {enforced:?}: {r:?}"
            );
            if !ok {
                assert!(r.reason.unwrap().contains(required[0].as_str()));
            }
        }
        // Nothing ran: nothing to say.
        let mut r = ToolResult::new(ToolStatus::Failed);
        unmet_after_run(&mut r, &profile(&[G::ResourceLimits]));
        assert_eq!(r.reason, None);
    }

    #[test]
    fn the_state_directory_is_masked_wherever_a_bind_shows_it() {
        let p = PathBuf::from;
        let state = p("/h/.local/state/spear");
        // What the fake host holds: the state directory and its socket.
        let exists = |q: &Path| -> Option<bool> {
            match q.to_str() {
                Some("/h/.local/state/spear" | "/h/.local/state/spear/approve") => Some(true),
                Some("/h/.local/state/spear/audit.jsonl") => Some(false),
                _ => None,
            }
        };
        for (bound, want) in [
            // A bind holding it: the state directory is masked.
            (vec![p("/h/.local")], vec![Mask::Dir(state.clone())]),
            (vec![p("/h")], vec![Mask::Dir(state.clone())]),
            // The state directory itself, or a part of it, bound: that bind is masked.
            (vec![state.clone()], vec![Mask::Dir(state.clone())]),
            (
                vec![state.join("approve"), state.join("audit.jsonl")],
                vec![
                    Mask::Dir(state.join("approve")),
                    Mask::File(state.join("audit.jsonl")),
                ],
            ),
            // Two binds holding it: one mask.
            (
                vec![p("/h"), p("/h/.local")],
                vec![Mask::Dir(state.clone())],
            ),
            // Positive controls: binds beside it, and a part that does not exist, mask nothing.
            (vec![p("/h/.local/share"), p("/usr")], vec![]),
            (vec![p("/h/.local/state/spearx")], vec![]),
            (vec![state.join("none")], vec![]),
        ] {
            assert_eq!(state_masks(&state, &bound, &exists), want, "{bound:?}");
        }
    }
}
