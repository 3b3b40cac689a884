//! Building the workspace and the policy from flags, the environment and configuration files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use spear_policy::limits::{BuiltIn, LimitError, LimitFlags, Limits, OperatorLimits};
use spear_policy::{CommandPolicy, OperatorConfig, PolicyConfig, WorkspacePolicyFile};
use spear_runtime::HostSnapshot;
use spear_sandbox::{CgroupLimits, SessionBudget};
use spear_workspace::{Workspace, WorkspaceConfig};

/// Flags shared by the subcommands that need a workspace.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkspaceArgs {
    /// The workspace directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Only the workspace directory: no extra roots, no enclosing build tree.
    #[arg(long)]
    pub single_root: bool,
    /// Accept host absolute paths into the workspace as well as mount paths.
    #[arg(long)]
    pub allow_absolute_paths: bool,
    /// The operator configuration file (default: ~/.config/spear/config.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Host files no command may read and no sandbox shows (not a flag: a listening server's
    /// TLS key, set by the server for its sessions).
    #[arg(skip)]
    pub secrets: Vec<PathBuf>,
}

/// A failure at the edge, reported to the user with exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// The current directory is unusable.
    #[error("cannot determine the current directory: {0}")]
    Cwd(String),
    /// The workspace cannot be opened.
    #[error(transparent)]
    Workspace(#[from] spear_workspace::WorkspaceError),
    /// A configuration file is broken.
    #[error(transparent)]
    Config(#[from] spear_policy::ConfigError),
    /// `HOME` (or an XDG directory variable) cannot be used.
    #[error(transparent)]
    HostDir(#[from] spear_runtime::HostDirError),
    /// A limit is malformed or out of bounds.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// An entry of `[network] allow` is malformed.
    #[error("in [network] allow of the operator configuration: {0}")]
    NetworkAllow(String),
    /// `[policy] allow_host_config` or `[targets] unprotect` names what they cannot.
    #[error("in {file}: {error}")]
    Policy {
        /// The configuration file.
        file: String,
        /// What is wrong.
        error: String,
    },
    /// An entry of `[env] pass` or an `--env` name is refused.
    #[error("in [env] pass of the operator configuration or --env: {0}")]
    EnvPass(String),
    /// `[web]` cannot be used.
    #[error("in {file}: {error}")]
    Web {
        /// The configuration file.
        file: String,
        /// The key and what is wrong with it.
        error: spear_policy::web::WebConfigError,
    },
}

/// The workspace and the policy for one invocation.
pub struct Context {
    pub policy: CommandPolicy,
    /// The runner configuration the policy's view of the sandbox was computed from.
    runner: spear_runtime::RunnerConfig,
    /// The operator's `[limits]`, unchecked, and the file it came from (for errors).
    operator_limits: (OperatorLimits, String),
    /// The operator's `[web]`, checked.
    pub web: spear_policy::web::WebSettings,
    /// The operator's `[state]` quotas, checked.
    pub quotas: spear_policy::quotas::Quotas,
    /// The operator's `[sandbox] gpu`, unresolved.
    pub gpu: Option<String>,
}

impl Context {
    /// Opens the workspace and loads the operator's and the workspace's configuration.
    pub fn open(args: &WorkspaceArgs, host: &HostSnapshot) -> Result<Self, ContextError> {
        Context::open_with_env(args, &[], host)
    }

    /// [`Context::open`], with `--env` names passed into every sandbox besides `[env] pass`.
    /// Everything of the host it depends on (the environment, the current directory) comes from
    /// `host`.
    pub fn open_with_env(
        args: &WorkspaceArgs,
        env: &[String],
        host: &HostSnapshot,
    ) -> Result<Self, ContextError> {
        // One reading of HOME for every check below and for the runner ([`spear_runtime::host_dirs`]).
        let home = spear_runtime::host_home(host)?;
        let xdg_config = spear_runtime::host_xdg_config_home(host)?;
        let config_path = if let Some(path) = &args.config {
            Some(from_cwd(path, host)?)
        } else {
            OperatorConfig::default_path(xdg_config.as_deref(), home.as_deref())
        };
        let operator = match &config_path {
            Some(path) => OperatorConfig::load(path)?,
            None => OperatorConfig::default(),
        };
        let operator_limits = (
            operator.limits.clone(),
            config_path.map_or_else(
                || "the operator configuration".to_owned(),
                |p| p.display().to_string(),
            ),
        );
        // Out-of-bounds values in the file are refused at startup, whatever the flags, and so is
        // a session budget below one command's limit.
        Limits::resolve(
            &operator_limits.0,
            &operator_limits.1,
            &LimitFlags::default(),
        )?
        .resolve_session(&operator_limits.1, &LimitFlags::default(), &BUILT_IN)?;
        // And what the operator lets through without asking must name real entries.
        operator
            .check_policy()
            .map_err(|error| ContextError::Policy {
                file: operator_limits.1.clone(),
                error,
            })?;
        // And quotas on spear's state.
        let quotas = spear_policy::quotas::Quotas::resolve(&operator.state, &operator_limits.1)?;
        // So is a `[web]` table that cannot be used.
        let web = operator.web.settings().map_err(|error| ContextError::Web {
            file: operator_limits.1.clone(),
            error,
        })?;
        let launch = match &args.workspace {
            Some(dir) => from_cwd(dir, host)?,
            None => host
                .cwd()
                .map_err(|e| ContextError::Cwd(e.to_owned()))?
                .to_path_buf(),
        };
        let mut ws_config = WorkspaceConfig::new(&launch)
            .with_identity_mount_env(host.var("SPEAR_SANDBOX_IDENTITY_MOUNT"));
        ws_config.single_root = args.single_root;
        ws_config.allow_absolute_paths = args.allow_absolute_paths;
        ws_config.extra_roots = operator
            .workspace
            .roots
            .iter()
            .map(|r| expand_home(r, home.as_deref()))
            .collect();
        let workspace = Workspace::open(&ws_config)?;
        for (root, why) in workspace.dropped_roots() {
            tracing::warn!("workspace root {} dropped: {why}", root.display());
        }
        let mut config = PolicyConfig::new(home.clone()).with_operator(&operator);
        config.xdg_config_home = xdg_config;
        config.named_paths = config
            .named_paths
            .iter()
            .map(|p| expand_home(p, home.as_deref()))
            .collect();
        if let Some(file) = WorkspacePolicyFile::load(&workspace)? {
            config = config.with_workspace(&file);
        }
        // The runner's configuration comes first: the policy judges paths by what the sandboxes
        // that configuration builds will show.
        let mut runner = build_runner_config(&operator.network.allow, host)?;
        // The backend is the operator's alone; `auto` weighs Landlock against the guarantees
        // required (the operator's and the workspace's), or against everything bubblewrap
        // gives when the operator set no `require`.
        runner.sandbox.backend = match operator.sandbox.backend {
            spear_policy::SandboxBackend::Auto => spear_sandbox::BackendChoice::Auto,
            spear_policy::SandboxBackend::Bubblewrap => spear_sandbox::BackendChoice::Bubblewrap,
            spear_policy::SandboxBackend::Landlock => spear_sandbox::BackendChoice::Landlock,
        };
        runner.sandbox.auto_require = operator.sandbox.require.map(|_| config.required);
        config.state_dir.clone_from(&runner.state_dir);
        runner.secrets.clone_from(&args.secrets);
        config.secrets.clone_from(&args.secrets);
        runner.env_pass = operator
            .env
            .pass
            .iter()
            .chain(env)
            .map(|p| spear_sandbox::EnvPass::parse(p))
            .collect::<Result<_, _>>()
            .map_err(|e| ContextError::EnvPass(e.to_string()))?;
        // One look at the host, for the policy's view and for the runner's mounts alike.
        runner.discovered = Some(std::sync::Arc::new(spear_runtime::HostOffer::discover(
            &workspace, &runner,
        )));
        config.sandbox = spear_runtime::sandbox_view(&workspace, &runner);
        Ok(Context {
            policy: CommandPolicy::new(Arc::new(workspace), config),
            runner,
            operator_limits,
            web,
            quotas,
            gpu: operator.sandbox.gpu.clone(),
        })
    }
}

impl Context {
    /// The limits of this invocation: the flags over the operator's `[limits]`, within bounds.
    /// The session's budget is resolved too ([`Limits::resolve_session`]): one below one
    /// command's limit is an error.
    pub fn limits(&self, flags: &LimitFlags) -> Result<Limits, ContextError> {
        let mut limits = Limits::resolve(&self.operator_limits.0, &self.operator_limits.1, flags)?;
        limits.resolve_session(&self.operator_limits.1, flags, &BUILT_IN)?;
        Ok(limits)
    }

    /// The runner configuration for this invocation: the host's environment, the operator's
    /// network allowances and `limits`, preflights remembered per user (the configuration the
    /// policy's view of the sandbox was computed from: limits change nothing of that view).
    pub fn runner_config(&self, limits: &Limits) -> spear_runtime::RunnerConfig {
        let mut config = self.runner.clone();
        apply_limits(&mut config, limits);
        config
    }
}

/// The runner configuration from the host and the operator's `[network] allow` entries.
fn build_runner_config(
    network_allow: &[String],
    host: &HostSnapshot,
) -> Result<spear_runtime::RunnerConfig, ContextError> {
    let mut config = spear_runtime::RunnerConfig::from_snapshot(host);
    config.sandbox.persist_preflight = true;
    config.sandbox.network.allow = network_allow
        .iter()
        .map(|a| a.parse())
        .collect::<Result<_, String>>()
        .map_err(ContextError::NetworkAllow)?;
    Ok(config)
}

/// The built-in limits of the sandbox, for the policy's checks that compare them.
pub(crate) const BUILT_IN: BuiltIn = BuiltIn {
    tasks: CgroupLimits::DEFAULT_TASKS_MAX,
    memory_bytes: CgroupLimits::DEFAULT_MEMORY_MAX_BYTES,
    session_tasks: SessionBudget::DEFAULT_TASKS_MAX,
    session_memory_bytes: SessionBudget::DEFAULT_MEMORY_MAX_BYTES,
};

/// Puts `limits` into the runner's configuration; `None` keeps the runner's default.
pub fn apply_limits(config: &mut spear_runtime::RunnerConfig, limits: &Limits) {
    if let Some(session) = config.sandbox.session.as_mut() {
        if let Some(t) = limits.session_tasks {
            session.tasks_max = t;
        }
        if let Some(m) = limits.session_memory_bytes {
            session.memory_max_bytes = m;
        }
    }
    if let Some(cgroup) = config.sandbox.cgroup.as_mut() {
        if let Some(m) = limits.memory_bytes {
            cgroup.memory_max_bytes = m;
        }
        if let Some(t) = limits.tasks {
            cgroup.tasks_max = t;
        }
        if let Some(c) = limits.cpu_percent {
            cgroup.cpu_percent = c;
        }
    }
    if let Some(cap) = limits.output_cap_bytes {
        config.output_cap = usize::try_from(cap).unwrap_or(usize::MAX);
    }
    if let Some(t) = limits.timeout_secs {
        config.default_timeout = std::time::Duration::from_secs_f64(t);
    }
    if let Some(n) = limits.changes {
        config.commit_max_changes = usize::try_from(n).unwrap_or(usize::MAX);
    }
}

/// `path` as the caller named it: a relative one is the caller's current directory's (`host`'s,
/// which is not this process's when a server runs the call).
fn from_cwd(path: &Path, host: &HostSnapshot) -> Result<PathBuf, ContextError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(host
        .cwd()
        .map_err(|e| ContextError::Cwd(e.to_owned()))?
        .join(path))
}

/// `~/x` in a configuration file means the operator's home.
fn expand_home(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(h)) => h.join(rest),
        _ => path.to_path_buf(),
    }
}
