//! A router session as the CLI's subcommands open one: the workspace, the operator's config, the
//! mode, and spear's state directories (audit log, result store, checkpoints).

use std::sync::Arc;

use spear_runtime::CommandRunner;
use spear_tools::{Role, RouterConfig, RouterStores, ToolRegistry, ToolRouter};

use crate::context::{Context, WorkspaceArgs};
use crate::limit_args::LimitArgs;
use crate::mode_args::ModeArgs;

/// What a session is opened with.
// Each bool is one independent choice of the subcommand that opens the session.
#[allow(clippy::struct_excessive_bools)]
pub struct SessionArgs<'a> {
    /// The host the call comes from (its environment and current directory).
    pub host: &'a spear_runtime::HostSnapshot,
    /// The workspace flags.
    pub workspace: &'a WorkspaceArgs,
    /// The mode flags.
    pub mode: &'a ModeArgs,
    /// The limit flags.
    pub limits: &'a LimitArgs,
    /// The caller's role.
    pub role: Role,
    /// A session id to reuse (stored outputs are readable only by their session).
    pub session: Option<&'a str>,
    /// Whether commands may run as background jobs (only for a process that outlives one call).
    pub background_jobs: bool,
    /// Whether `/tmp`, `/var/tmp` and home persist from one call to the next, for the life of
    /// the session (a process that outlives one call); else each command gets fresh ones.
    pub session_scratch: bool,
    /// `--env` names, passed into every sandbox besides `[env] pass`.
    pub env: &'a [String],
    /// Whether results come back whole, cut only at the runner's output cap (`spear exec`, whose
    /// output goes to a person or a pipe), instead of cut to the tools' preview with the rest in
    /// the result store (a model's context).
    pub whole_output: bool,
    /// Whether the session offers the web pair as the operator's `[web]` says (a session that
    /// runs only a command, `spear exec` or `spear grant`, builds no fetcher).
    pub web: bool,
    /// The sandboxes a `spear serve` keeps between calls: the session's runner uses the one of
    /// its configuration, warm ([`crate::served`]); `None` makes a sandbox of its own.
    pub shelf: Option<&'a crate::served::shelf::Shelf>,
    /// The GPUs the operator grants (`--gpu all|0,1`), resolved against the host before
    /// anything runs; a host without them refuses the session at its start.
    pub gpu: Option<&'a str>,
    /// Who the session is for, named in every audit record (`token:NAME`): a listening
    /// server's session opened for a credential. `None`: the user's own.
    pub principal: Option<&'a str>,
}

/// Opens a router over the workspace with every store on and no confirmer set.
pub fn open(args: &SessionArgs<'_>) -> Result<ToolRouter, String> {
    let ctx =
        Context::open_with_env(args.workspace, args.env, args.host).map_err(|e| e.to_string())?;
    // The flag wins over the operator's `[sandbox] gpu`.
    let gpu = match (args.gpu, ctx.gpu.as_deref()) {
        (Some(flag), _) => Some(crate::gpu_grant::resolve("--gpu", flag)?),
        (None, Some(config)) => Some(crate::gpu_grant::resolve("[sandbox] gpu =", config)?),
        (None, None) => None,
    };
    // Limits out of bounds are refused here, before the session serves anything.
    let limits = ctx
        .limits(&args.limits.flags())
        .map_err(|e| e.to_string())?;
    let mut config = ctx.runner_config(&limits);
    config.gpu = gpu;
    if !args.background_jobs && args.shelf.is_none() {
        // One call, one command, no job: the command's own limits (never above the session's
        // budget, checked above) bound the session, and a parent cgroup would only cost time.
        config.sandbox.session = None;
    }
    let mut router_config_web = spear_tools::WebPair::off();
    if args.session_scratch {
        config.scratch = spear_runtime::ScratchMode::Session;
        // A session runs many commands: the next one's sandbox waits set up, and the bound
        // trees are watched for credential files created during it.
        config.sandbox.warm = true;
        config.watch_trees = true;
    }
    if args.web {
        // One fetcher for the session; one that cannot be set up leaves the pair withdrawn (and
        // `spear doctor` says why), not the session unopened.
        // Guarded against the secrets of spear's environment and of the caller's (a served
        // call's), besides the backend's key.
        router_config_web =
            spear_tools::WebPair::from_settings(&ctx.web).with_environment(args.host.env());
        if let Some(why) = router_config_web.unavailable() {
            tracing::warn!("the web pair is not offered: {why}");
        }
    }
    let quotas = ctx.quotas;
    let policy = Arc::new(ctx.policy);
    let runner = Arc::new(match args.shelf {
        Some(shelf) => {
            // A server's calls come one after another: the next one's sandbox waits set up, and
            // the bound trees are watched (each call then reads their events, not every stamp).
            config.sandbox.warm = true;
            config.watch_trees = true;
            let sandbox = shelf.sandbox(&config.sandbox);
            CommandRunner::with_shared_sandbox(policy.shared_workspace(), config, sandbox)
        }
        None => CommandRunner::new(policy.shared_workspace(), config),
    });
    let mut router_config = RouterConfig::new(args.mode.mode());
    router_config.no_network = args.mode.no_network;
    router_config.role = args.role;
    router_config.background_jobs = args.background_jobs;
    router_config.web = router_config_web;
    if let Some(t) = limits.timeout_secs {
        // The operator's default timeout is the terminal's default, and never above what a call
        // may ask for.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "within the timeout bounds (1 s to a day)"
        )]
        let secs = t.ceil() as u64;
        router_config.limits.terminal_timeout_secs = secs;
        router_config.limits.terminal_max_timeout_secs =
            router_config.limits.terminal_max_timeout_secs.max(secs);
    }
    if let Some(session) = args.session {
        session.clone_into(&mut router_config.session);
    }
    if args.whole_output {
        router_config.limits.preview_chars = usize::MAX;
    }
    let stores = RouterStores {
        audit: Some(crate::state_home::audit(args.host, &quotas).map(
            |log| match args.principal {
                Some(principal) => log.for_principal(principal),
                None => log,
            },
        )?),
        results: if args.whole_output {
            None
        } else {
            Some(crate::state_home::results(
                args.host,
                &router_config.session,
                &quotas,
            )?)
        },
        checkpoints: Some(crate::state_home::checkpoints(
            args.host,
            policy.workspace(),
            &quotas,
        )?),
    };
    ToolRouter::new(
        ToolRegistry::coding(),
        policy,
        runner,
        router_config,
        stores,
    )
    .map_err(|e| e.to_string())
}
