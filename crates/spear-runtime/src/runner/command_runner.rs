//! The runner itself ([`CommandRunner`]): made over a workspace, a configuration and a sandbox,
//! with the host looked at once; its spec, run and outcome live beside it.

use std::sync::Arc;

use spear_sandbox::{Sandbox, secret_masks, user_private_dir};
use spear_workspace::Workspace;

use super::config::{HostOffer, RunnerConfig, ScratchMode};
use super::discover::{HostView, bound_trees, passwd_name, resolver_file, root_hosts};
use crate::scratch::SessionScratch;
use crate::staging::sweep_stale;

/// Runs commands in the sandbox: the only way a command reaches one.
#[derive(Debug)]
pub struct CommandRunner {
    pub(super) workspace: Arc<Workspace>,
    pub(super) sandbox: Arc<Sandbox>,
    pub(super) config: RunnerConfig,
    pub(super) host: HostView,
    /// The session's `/tmp`, `/var/tmp` and home, in [`ScratchMode::Session`].
    pub(super) scratch: Option<SessionScratch>,
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
}
