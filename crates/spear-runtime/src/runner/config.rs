//! How a runner runs commands ([`RunnerConfig`]): the sandbox, limits, staging, the host's
//! environment and identity, and what the host offers ([`HostOffer`]) when a front end has looked
//! already.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spear_sandbox::{
    EnvPass, Mask, SandboxConfig, SystemDir, TmpfsSizes, Toolchains, user_private_dir,
};

use crate::git_identity::GitIdentity;
use crate::host::HostSnapshot;
use crate::scratch::DEFAULT_SESSION_CAP;
use crate::staging::default_bases;

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
    /// Where writable commands' writes are staged (see `staging::default_bases`), in
    /// order of preference. With none usable, writable commands are refused.
    pub staging: Vec<PathBuf>,
    /// The host environment the sandbox's environment is chosen from.
    pub host_env: Vec<(OsString, OsString)>,
    /// The user's real home directory (a private tmpfs in the sandbox).
    pub home: PathBuf,
    /// Whether `/tmp`, `/var/tmp` and home are fresh for every command or kept for the runner's
    /// whole life (see [`SessionScratch`](crate::SessionScratch)).
    pub scratch: ScratchMode,
    /// The cap of a session's area, in bytes.
    pub session_cap: u64,
    /// The host's git identity, given to every sandbox (see [`GitIdentity`]).
    pub git_identity: GitIdentity,
    /// Host variables the operator passes into every sandbox.
    pub env_pass: Vec<EnvPass>,
    /// spear's state directory (`host_dirs::spear_state_dir`), never shown in a sandbox:
    /// masked wherever a bound path or root would show it or a part of it.
    pub state_dir: Option<PathBuf>,
    /// Host files of the operator's that no sandbox shows, masked as the state directory is
    /// (wherever a bound path or root would show them): the private key of a listening server's
    /// TLS certificate (`spear mcp --listen --tls-key`). Attack stopped: an agent reading the
    /// node's key through a bound tree and impersonating the node to every client.
    pub secrets: Vec<PathBuf>,
    /// What the host offers every sandbox, when a front end has looked already (to compute the
    /// policy's view with [`sandbox_view`](crate::sandbox_view)): a runner made with it mounts
    /// exactly what that view described, and does not look again. `None`: the runner looks when it
    /// is made.
    pub discovered: Option<Arc<HostOffer>>,
    /// The most changes one command's commit takes; past them it commits none and says so
    /// ([`crate::staging::MAX_COMMITTED_CHANGES`] unless the operator's `[limits] changes` says
    /// otherwise).
    pub commit_max_changes: usize,
    /// The GPUs the operator granted (`spear exec --gpu`), bound into every sandbox of this
    /// runner; `None`: no GPU is visible.
    pub gpu: Option<spear_sandbox::GpuBinds>,
    /// Where the scans of bound trees for credential files are kept between processes
    /// ([`spear_sandbox::secret_masks`]); `None`: in this process only.
    pub scan_cache: Option<PathBuf>,
    /// Whether this process lives for many commands (a session, `spear serve`): the bound trees'
    /// directories are then watched (inotify), so that a credential file created in one during
    /// the session is masked from the next command on. Otherwise each runner checks every
    /// directory's stamp when it is made, and each command the files found.
    pub watch_trees: bool,
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
            secrets: Vec::new(),
            discovered: None,
            commit_max_changes: crate::staging::MAX_COMMITTED_CHANGES,
            gpu: None,
            scan_cache: user_private_dir("secret-scan"),
            watch_trees: false,
        }
    }
}

/// What the host offers a sandbox over a workspace: its system directories, curated `/etc`
/// entries, toolchains, and the credential files inside them, as seen once
/// ([`HostOffer::discover`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostOffer {
    /// The workspace roots (host paths) it was discovered for: toolchains inside them are left out.
    pub(super) roots: Vec<PathBuf>,
    pub(super) system: Vec<SystemDir>,
    pub(super) etc: Vec<PathBuf>,
    pub(super) toolchains: Toolchains,
    /// The credential files and directories inside the system directories and the toolchains, at
    /// any depth, as found when it looked ([`spear_sandbox::secret_masks`]).
    pub(super) secrets: Vec<Mask>,
}

impl HostOffer {
    /// The credential files and directories it found inside the trees every sandbox binds.
    pub fn secrets(&self) -> &[Mask] {
        &self.secrets
    }
}
