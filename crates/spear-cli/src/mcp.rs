//! `spear mcp`: the MCP server over stdio, for agents that start spear as a tool server, or
//! over streamable HTTP on a loopback address (`--listen`), for clients that connect to it with
//! an operator's token (`spear token add`).

use std::sync::Arc;

use spear_core::ExecutionMode;
use spear_tools::Role;

use crate::context::WorkspaceArgs;
use crate::mode_args::ModeArgs;

/// `spear mcp [--safe|--ask|--auto] [--no-network] [--workspace DIR] [--role ROLE] [--listen ADDR]`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    mode: ModeArgs,
    #[command(flatten)]
    workspace: WorkspaceArgs,
    #[command(flatten)]
    limits: crate::limit_args::LimitArgs,
    /// The caller's role: implementation (default), planning, explorer or reviewer. The last
    /// three see no tool that writes, and their commands run in SAFE.
    #[arg(long, value_name = "ROLE", default_value = "implementation")]
    role: Role,
    /// A call that comes after this many seconds with no call running begins a new turn (refusal
    /// counts, the verdict and `spear undo` start afresh): MCP says nothing of turns.
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    turn_gap: u64,
    /// Pass this host variable into every sandbox (repeatable), besides `[env] pass` of the
    /// operator configuration. A name that changes how programs load code is refused.
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// In ASK (and in AUTO, for host-run configuration), how long a call whose client cannot ask
    /// the user (no elicitation) waits for `spear approve` in another terminal before it is
    /// cancelled and nothing runs.
    #[arg(long, value_name = "SECS", default_value_t = spear_mcp::DEFAULT_APPROVAL_WAIT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=86_400))]
    approval_wait: u64,
    /// Give every sandbox of the session these GPUs (`all`, or indices such as `0,1`), as
    /// `spear exec --gpu` does; without a GPU on the host, the server refuses to start.
    #[arg(long, value_name = "all|INDICES")]
    gpu: Option<String>,
    /// Serve over MCP's streamable HTTP transport on this loopback address (`127.0.0.1:8787`;
    /// port 0 picks one, printed at start) instead of stdio: each MCP session is a spear session
    /// of its own, and every request needs `Authorization: Bearer TOKEN` with a token from
    /// `spear token add`.
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,
}

/// Serves until the client closes stdin or a signal arrives. stdout carries only protocol
/// messages; this and every log line go to stderr.
pub fn run(args: &Args, host: &spear_runtime::HostSnapshot) -> Result<i32, String> {
    if let Some(addr) = args.listen {
        return listen(args, host, addr);
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
        approval_channel(host, router.session(), args.approval_wait)
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
    let router = crate::session::open(&crate::session::SessionArgs {
        gpu: args.gpu.as_deref(),
        host,
        workspace: &args.workspace,
        mode: &args.mode,
        limits: &args.limits,
        role: args.role,
        session: None,
        background_jobs: true,
        session_scratch: true,
        env: &args.env,
        whole_output: false,
        web: true,
        shelf: None,
    })?;
    let root = router
        .workspace()
        .roots()
        .first()
        .map(|r| r.host_path().display().to_string())
        .unwrap_or_default();
    Ok((router, root))
}

/// `spear mcp --listen ADDR`: binds, checks that a first session opens (so that a bad workspace,
/// configuration or GPU grant fails now, not at a client's first request), prints where it
/// listens, and serves until a signal.
fn listen(
    args: &Args,
    host: &spear_runtime::HostSnapshot,
    addr: std::net::SocketAddr,
) -> Result<i32, String> {
    let http = spear_mcp::Http::bind(addr).map_err(|e| e.to_string())?;
    let local = http.local_addr().map_err(|e| e.to_string())?;
    let state = crate::state_home::state_dir(host)?;
    let tokens = spear_runtime::TokenStore::at(&state);
    let opener = Arc::new(Opener {
        args: args.clone(),
        host: host.clone(),
    });
    // The first session, opened now and dropped: what would refuse every session refuses the
    // server instead, before it listens for anyone.
    let root = opener.open()?.root;
    eprintln!(
        "{}",
        banner(
            args.mode.mode(),
            args.mode.no_network,
            args.role,
            &root,
            "one per MCP session"
        )
    );
    let count = tokens.list().map_or(0, |t| t.len());
    eprintln!(
        "spear mcp: listening on http://{local}{} ({count} token(s); add one with `spear token add NAME`)",
        spear_mcp::MCP_PATH
    );
    let gate: Arc<dyn spear_mcp::Gatekeeper> = Arc::new(TokenGate {
        tokens,
        workspace: std::path::PathBuf::from(&root),
        mode: args.mode.mode(),
        network: !args.mode.no_network && args.mode.mode() != ExecutionMode::Safe,
    });
    http.run(move || opener.open().map(|s| s.server), gate)
        .map_err(|e| e.to_string())?;
    Ok(0)
}

/// What opens one spear session for an MCP session over HTTP: the server's own flags.
struct Opener {
    args: Args,
    host: spear_runtime::HostSnapshot,
}

/// A session opened for one MCP session.
struct Opened {
    server: spear_mcp::SpearServer,
    root: String,
}

impl Opener {
    fn open(&self) -> Result<Opened, String> {
        let args = &self.args;
        let (router, root) = open_session(args, &self.host)?;
        // Over HTTP, ASK asks through the client (elicitation, input-required results); a client
        // that cannot ask has its asking calls cancelled: no `spear approve` channel yet.
        let server = spear_mcp::SpearServer::with_approvals(
            router,
            std::time::Duration::from_secs(args.turn_gap),
            None,
        )
        .map_err(|e| e.to_string())?;
        Ok(Opened { server, root })
    }
}

/// The operator's tokens as the server's door: a request is admitted with a token the store
/// holds, unexpired (read at each request, so a revocation holds at the next one), and only when
/// what the token names fits this server as it is: a server does not yet narrow a session to
/// its token, so a token that asks for less (another workspace, a narrower mode, no network, a
/// template, a session limit) is refused rather than served with more than it grants.
struct TokenGate {
    tokens: spear_runtime::TokenStore,
    /// The server's workspace (its first root, canonical), mode and network.
    workspace: std::path::PathBuf,
    mode: ExecutionMode,
    network: bool,
}

impl spear_mcp::Gatekeeper for TokenGate {
    fn admit(&self, bearer: Option<&str>) -> Result<String, spear_mcp::Denied> {
        use spear_mcp::Denied;
        let Some(presented) = bearer else {
            return Err(Denied::Unauthorized(
                "no bearer token: send `Authorization: Bearer TOKEN` with a token from `spear \
                 token add NAME`"
                    .to_owned(),
            ));
        };
        let info = self
            .tokens
            .verify(presented, std::time::SystemTime::now())
            .map_err(|refusal| match refusal {
                spear_runtime::TokenRefusal::Store { .. } => {
                    Denied::Unavailable(refusal.to_string())
                }
                _ => Denied::Unauthorized(refusal.to_string()),
            })?;
        match unfit(&info, &self.workspace, self.mode, self.network) {
            None => Ok(info.name),
            Some(why) => Err(Denied::Unauthorized(format!(
                "token {} {why}; this server cannot yet narrow a session to its token: start a \
                 server that matches it, or issue a token without that limit",
                info.name
            ))),
        }
    }
}

/// What `token` names that a server on `workspace` in `mode` (with or without the `network`)
/// would not hold to, if anything. Pure.
fn unfit(
    token: &spear_runtime::TokenInfo,
    workspace: &std::path::Path,
    mode: ExecutionMode,
    network: bool,
) -> Option<String> {
    if !token.workspaces.is_empty() && !token.workspaces.iter().any(|w| w == workspace) {
        let named: Vec<String> = token
            .workspaces
            .iter()
            .map(|w| w.display().to_string())
            .collect();
        return Some(format!(
            "is for {}, and this server serves {}",
            named.join(", "),
            workspace.display()
        ));
    }
    if let Some(wanted) = token.mode.filter(|m| *m != mode) {
        return Some(format!(
            "is for {} mode, and this server runs in {}",
            wanted.as_str().to_uppercase(),
            mode.as_str().to_uppercase()
        ));
    }
    if token.no_network && network {
        return Some("is without network, and this server gives it".to_owned());
    }
    if !token.templates.is_empty() {
        return Some("names templates, which this server does not serve yet".to_owned());
    }
    if token.sessions.is_some() {
        return Some("limits its sessions, which this server does not count yet".to_owned());
    }
    None
}

/// The approval channel of an ASK or AUTO server, in spear's state directory: without one (no state
/// directory, one that is not private), what a client cannot ask about is cancelled, as before.
fn approval_channel(
    host: &spear_runtime::HostSnapshot,
    session: &str,
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
    let approvals = Approvals::new(session);
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
fn banner(mode: ExecutionMode, no_network: bool, role: Role, root: &str, session: &str) -> String {
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

    /// A token is admitted only where the server holds to everything it names.
    #[test]
    fn a_token_that_asks_for_less_than_the_server_gives_is_unfit() {
        use std::path::PathBuf;
        let ws = PathBuf::from("/w");
        let token = |edit: &dyn Fn(&mut spear_runtime::TokenInfo)| {
            let mut t = spear_runtime::TokenInfo {
                name: "t".into(),
                workspaces: vec![],
                templates: vec![],
                mode: None,
                no_network: false,
                sessions: None,
                created: std::time::SystemTime::UNIX_EPOCH,
                expires: None,
            };
            edit(&mut t);
            t
        };
        let auto = ExecutionMode::Auto;
        let cases: Vec<(spear_runtime::TokenInfo, ExecutionMode, bool, Option<&str>)> = vec![
            (token(&|_| {}), auto, true, None),
            (
                token(&|t| t.workspaces = vec![ws.clone()]),
                auto,
                true,
                None,
            ),
            (
                token(&|t| t.workspaces = vec![PathBuf::from("/other")]),
                auto,
                true,
                Some("is for /other, and this server serves /w"),
            ),
            (token(&|t| t.mode = Some(auto)), auto, true, None),
            (
                token(&|t| t.mode = Some(ExecutionMode::Safe)),
                auto,
                true,
                Some("is for SAFE mode, and this server runs in AUTO"),
            ),
            (
                token(&|t| t.no_network = true),
                auto,
                true,
                Some("is without network"),
            ),
            (token(&|t| t.no_network = true), auto, false, None),
            (
                token(&|t| t.templates = vec![ws.clone()]),
                auto,
                true,
                Some("names templates"),
            ),
            (
                token(&|t| t.sessions = Some(4)),
                auto,
                true,
                Some("limits its sessions"),
            ),
        ];
        for (t, mode, network, want) in cases {
            let got = unfit(&t, &ws, mode, network);
            match want {
                None => assert_eq!(got, None, "{t:?}"),
                Some(text) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(text)),
                    "{t:?}: {got:?}"
                ),
            }
        }
    }

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
