//! `spear mcp`: the MCP server over stdio, for agents that start spear as a tool server, or
//! over streamable HTTP on a loopback address (`--listen`), for clients that connect to it with
//! an operator's token (`spear token add`).
use spear_core::ExecutionMode;
use spear_tools::Role;

use crate::context::WorkspaceArgs;
use crate::mode_args::ModeArgs;

/// `spear mcp [--safe|--ask|--auto] [--no-network] [--workspace DIR] [--role ROLE] [--listen ADDR]`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(crate) mode: ModeArgs,
    #[command(flatten)]
    pub(crate) workspace: WorkspaceArgs,
    #[command(flatten)]
    limits: crate::limit_args::LimitArgs,
    /// The caller's role: implementation (default), planning, explorer or reviewer. The last
    /// three see no tool that writes, and their commands run in SAFE.
    #[arg(long, value_name = "ROLE", default_value = "implementation")]
    pub(crate) role: Role,
    /// A call that comes after this many seconds with no call running begins a new turn (refusal
    /// counts, the verdict and `spear undo` start afresh): MCP says nothing of turns.
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) turn_gap: u64,
    /// Pass this host variable into every sandbox (repeatable), besides `[env] pass` of the
    /// operator configuration. A name that changes how programs load code is refused.
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// In ASK (and in AUTO, for host-run configuration), how long a call whose client cannot ask
    /// the user (no elicitation) waits for `spear approve` in another terminal before it is
    /// cancelled and nothing runs.
    #[arg(long, value_name = "SECS", default_value_t = spear_mcp::DEFAULT_APPROVAL_WAIT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) approval_wait: u64,
    /// Give every sandbox of the session these GPUs (`all`, or indices such as `0,1`), as
    /// `spear exec --gpu` does; without a GPU on the host, the server refuses to start.
    #[arg(long, value_name = "all|INDICES")]
    gpu: Option<String>,
    /// Serve over MCP's streamable HTTP transport instead of stdio, on `IP:PORT`
    /// (`127.0.0.1:8787`; port 0 picks one, printed at start) or `unix:/PATH`: each session is a
    /// spear session of its own, and every request needs `Authorization: Bearer TOKEN` (`spear
    /// token add`, or an OAuth access token of `[serve.oauth]`). Anything but loopback or a unix
    /// socket needs --tls-cert and --tls-key, or --insecure-http.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<spear_mcp::ListenAddr>,
    /// With --listen: serve TLS with this certificate chain (PEM, leaf first).
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_key"])]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// With --listen: the certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_cert"])]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// With --listen: also accept the tokens of this file, one per line (`-`: read them from
    /// standard input at start), each granting what the server serves, for its life. Only their
    /// hashes are kept; the file is hidden from every session, as the TLS key is.
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub(crate) token_file: Option<std::path::PathBuf>,
    /// With --listen: serve without TLS on an address that is not loopback. Tokens cross the
    /// network in clear: only on a network you trust.
    #[arg(long, requires = "listen")]
    pub(crate) insecure_http: bool,
    /// With --listen: a name clients reach the server by (repeatable), allowed in `Host`.
    #[arg(long = "public-host", value_name = "NAME[:PORT]", requires = "listen")]
    pub(crate) public_hosts: Vec<String>,
    /// With --listen: a browser origin allowed to post to the server (repeatable; none by
    /// default: a request carrying another `Origin` is refused).
    #[arg(long = "allow-origin", value_name = "URL", requires = "listen")]
    pub(crate) allow_origins: Vec<String>,
    /// With --listen: keep a template session's copy when it ends (its path is logged), instead
    /// of removing it.
    #[arg(long, requires = "listen")]
    pub(crate) keep_rollouts: bool,
    /// With --listen: the most sessions open at once, over every client; one more is answered
    /// 429 (HTTP) until one ends.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000), requires = "listen")]
    pub(crate) max_sessions: u32,
    /// With --listen: the most calls one token (an OAuth access token is one) may have in flight at once, over
    /// all its sessions; one more is answered 429 (HTTP) until an answer comes. A token's own
    /// `--calls` may lower it.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=100_000), requires = "listen")]
    pub(crate) max_calls_per_token: u32,
    /// With --listen: a session with no request for this many seconds ends (its jobs killed,
    /// what it made removed).
    #[arg(long, value_name = "SECS", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=604_800), requires = "listen")]
    pub(crate) session_idle: u64,
    /// With --listen: a template directory this server serves (repeatable). A token that names it
    /// (`spear token add --template DIR`) has each new session work in a copy of its own.
    #[arg(long = "template", value_name = "DIR", requires = "listen")]
    pub(crate) templates: Vec<std::path::PathBuf>,
}

/// Serves until the client closes stdin or a signal arrives. stdout carries only protocol
/// messages; this and every log line go to stderr.
pub fn run(args: &Args, host: &spear_runtime::HostSnapshot) -> Result<i32, String> {
    if let Some(addr) = &args.listen {
        return crate::node::listen(args, host, addr);
    }
    // Signals first: opening the session takes a while (the toolchain trees are scanned and
    // watched), and a SIGTERM meanwhile must stop it cleanly, not kill it.
    let stdio = spear_mcp::Stdio::prepare().map_err(|e| e.to_string())?;
    let (router, root) = open_session(args, host)?;
    eprintln!(
        "{}",
        banner(
            args.mode.mode(),
            args.mode.no_network,
            args.role,
            &root,
            router.session()
        )
    );
    // ASK asks, and so does AUTO about host-run configuration: a client that cannot ask waits
    // for `spear approve`. SAFE's escalations are answered at once when the client cannot ask.
    let (channel, approvals) = if args.mode.mode() == ExecutionMode::Safe {
        (None, None)
    } else {
        approval_channel(host, args.approval_wait)
    };
    let server = spear_mcp::SpearServer::with_approvals(
        router,
        std::time::Duration::from_secs(args.turn_gap),
        approvals,
    )
    .map_err(|e| e.to_string())?;
    let outcome = stdio.run(server).map_err(|e| e.to_string());
    // The socket goes with the server.
    drop(channel);
    outcome?;
    Ok(0)
}

/// One spear session with the server's flags (over stdio the only one; over HTTP one per MCP
/// session), and its workspace's first root, for the banner.
fn open_session(
    args: &Args,
    host: &spear_runtime::HostSnapshot,
) -> Result<(spear_tools::ToolRouter, String), String> {
    open_narrowed(args, host, &args.workspace, &args.mode, None)
}

/// One spear session with the server's flags but the workspace and mode given, for
/// `principal` (named in its audit records).
pub(crate) fn open_narrowed(
    args: &Args,
    host: &spear_runtime::HostSnapshot,
    workspace: &WorkspaceArgs,
    mode: &ModeArgs,
    principal: Option<&str>,
) -> Result<(spear_tools::ToolRouter, String), String> {
    let router = crate::session::open(&crate::session::SessionArgs {
        gpu: args.gpu.as_deref(),
        host,
        workspace,
        mode,
        limits: &args.limits,
        role: args.role,
        session: None,
        background_jobs: true,
        session_scratch: true,
        env: &args.env,
        whole_output: false,
        web: true,
        shelf: None,
        principal,
    })?;
    let root = router
        .workspace()
        .roots()
        .first()
        .map(|r| r.host_path().display().to_string())
        .unwrap_or_default();
    Ok((router, root))
}

/// The approval channel of an ASK or AUTO server, in spear's state directory: without one (no state
/// directory, one that is not private), what a client cannot ask about is cancelled, as before.
pub(crate) fn approval_channel(
    host: &spear_runtime::HostSnapshot,
    wait: u64,
) -> (
    Option<spear_mcp::ApprovalChannel>,
    Option<spear_mcp::ApprovalWait>,
) {
    use spear_mcp::{ApprovalChannel, Approvals, socket_dir};
    let state = match crate::state_home::state_dir(host) {
        Ok(state) => state,
        Err(e) => {
            eprintln!("spear mcp: no `spear approve` channel: {e}");
            return (None, None);
        }
    };
    let approvals = Approvals::new();
    match ApprovalChannel::open(&socket_dir(&state), std::sync::Arc::clone(&approvals)) {
        Ok(channel) => {
            eprintln!(
                "spear mcp: a client that cannot ask the user waits up to {wait} s for `spear approve` in another terminal ({})",
                channel.path().display()
            );
            (
                Some(channel),
                Some(spear_mcp::ApprovalWait {
                    approvals,
                    wait: std::time::Duration::from_secs(wait),
                }),
            )
        }
        Err(e) => {
            eprintln!("spear mcp: no `spear approve` channel: {e}");
            (None, None)
        }
    }
}

/// The one line the server writes at start: the mode, how to get the other two, and the rest of
/// what the session was given.
pub(crate) fn banner(
    mode: ExecutionMode,
    no_network: bool,
    role: Role,
    root: &str,
    session: &str,
) -> String {
    let others: Vec<String> = [ExecutionMode::Safe, ExecutionMode::Ask, ExecutionMode::Auto]
        .into_iter()
        .filter(|m| *m != mode)
        .map(|m| format!("--{} for {}", m.as_str(), m.as_str().to_uppercase()))
        .collect();
    format!(
        "spear mcp: {} mode ({}), role {role}, network {}, workspace {root}, session {session}",
        mode.as_str().to_uppercase(),
        others.join(", "),
        if no_network {
            "off (--no-network)"
        } else {
            "as the mode grants (--no-network takes it away)"
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_names_the_mode_and_the_flags_for_the_other_two() {
        for (mode, flags) in [
            (ExecutionMode::Safe, ["--ask for ASK", "--auto for AUTO"]),
            (ExecutionMode::Ask, ["--safe for SAFE", "--auto for AUTO"]),
            (ExecutionMode::Auto, ["--safe for SAFE", "--ask for ASK"]),
        ] {
            let line = banner(mode, false, Role::Implementation, "/w", "s");
            let name = mode.as_str().to_uppercase();
            assert!(
                line.starts_with(&format!("spear mcp: {name} mode (")),
                "{line}"
            );
            for flag in flags {
                assert!(line.contains(flag), "{flag} not in {line}");
            }
            assert!(!line.contains('\n'));
        }
        assert!(
            banner(ExecutionMode::Ask, true, Role::Reviewer, "/w", "s")
                .contains("network off (--no-network)")
        );
    }
}
