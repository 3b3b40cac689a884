//! Building the workspace and the policy from flags, the environment and configuration files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use spear_policy::{CommandPolicy, OperatorConfig, PolicyConfig, WorkspacePolicyFile};
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
}

/// A failure at the edge, reported to the user with exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// The current directory is unusable.
    #[error("cannot determine the current directory: {0}")]
    Cwd(std::io::Error),
    /// The workspace cannot be opened.
    #[error(transparent)]
    Workspace(#[from] spear_workspace::WorkspaceError),
    /// A configuration file is broken.
    #[error(transparent)]
    Config(#[from] spear_policy::ConfigError),
    /// An entry of `[network] allow` is malformed.
    #[error("in [network] allow of the operator configuration: {0}")]
    NetworkAllow(String),
    /// An entry of `[env] pass` or an `--env` name is refused.
    #[error("in [env] pass of the operator configuration or --env: {0}")]
    EnvPass(String),
}

/// The workspace and the policy for one invocation.
pub struct Context {
    pub policy: CommandPolicy,
    /// The runner configuration the policy's view of the sandbox was computed from.
    runner: spear_runtime::RunnerConfig,
}

impl Context {
    /// Opens the workspace and loads the operator's and the workspace's configuration.
    pub fn open(args: &WorkspaceArgs) -> Result<Self, ContextError> {
        Context::open_with_env(args, &[])
    }

    /// [`Context::open`], with `--env` names passed into every sandbox besides `[env] pass`.
    pub fn open_with_env(args: &WorkspaceArgs, env: &[String]) -> Result<Self, ContextError> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute());
        let operator = if let Some(path) = &args.config {
            OperatorConfig::load(path)?
        } else {
            let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
            match OperatorConfig::default_path(xdg.as_deref(), home.as_deref()) {
                Some(path) => OperatorConfig::load(&path)?,
                None => OperatorConfig::default(),
            }
        };
        let launch = match &args.workspace {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().map_err(ContextError::Cwd)?,
        };
        let mut ws_config = WorkspaceConfig::new(&launch).with_identity_mount_env(
            std::env::var("SPEAR_SANDBOX_IDENTITY_MOUNT")
                .ok()
                .as_deref(),
        );
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
        let mut runner = build_runner_config(&operator.network.allow)?;
        runner.env_pass = operator
            .env
            .pass
            .iter()
            .chain(env)
            .map(|p| spear_sandbox::EnvPass::parse(p))
            .collect::<Result<_, _>>()
            .map_err(|e| ContextError::EnvPass(e.to_string()))?;
        config.sandbox = spear_runtime::sandbox_view(&workspace, &runner);
        Ok(Context {
            policy: CommandPolicy::new(Arc::new(workspace), config),
            runner,
        })
    }
}

impl Context {
    /// The runner configuration for this invocation: the host's environment, the operator's
    /// network allowances, preflights remembered per user (the one the policy's view of the
    /// sandbox was computed from).
    pub fn runner_config(&self) -> spear_runtime::RunnerConfig {
        self.runner.clone()
    }
}

/// The runner configuration from the host and the operator's `[network] allow` entries.
fn build_runner_config(
    network_allow: &[String],
) -> Result<spear_runtime::RunnerConfig, ContextError> {
    let mut config = spear_runtime::RunnerConfig::from_host();
    config.sandbox.persist_preflight = true;
    config.sandbox.network.allow = network_allow
        .iter()
        .map(|a| a.parse())
        .collect::<Result<_, String>>()
        .map_err(ContextError::NetworkAllow)?;
    Ok(config)
}

/// `~/x` in a configuration file means the operator's home.
fn expand_home(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(h)) => h.join(rest),
        _ => path.to_path_buf(),
    }
}
