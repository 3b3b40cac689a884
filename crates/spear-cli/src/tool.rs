//! `spear tool NAME --args JSON`: one call through the router, printed as the envelope the MCP
//! server returns.

use crate::out::outln;
use spear_tools::Role;

use crate::context::WorkspaceArgs;
use crate::mode_args::ModeArgs;

/// `spear tool NAME [--args JSON] [--safe|--ask|--auto] [--no-network] [--workspace DIR]`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The tool: `read_file`, `search_files`, `write_file`, `patch`, `delete_file`, `terminal`,
    /// `read_output`, and the web pair's `fetch_url` and `search_internet` (as `[web]` of the
    /// operator configuration offers them; `--no-network` withdraws them).
    #[arg(value_name = "NAME")]
    name: String,
    /// Its arguments, as one JSON object.
    #[arg(long = "args", value_name = "JSON", default_value = "{}")]
    json: String,
    #[command(flatten)]
    mode: ModeArgs,
    #[command(flatten)]
    workspace: WorkspaceArgs,
    #[command(flatten)]
    limits: crate::limit_args::LimitArgs,
    /// The caller's role: implementation (default), planning, explorer or reviewer.
    #[arg(long, value_name = "ROLE", default_value = "implementation")]
    role: Role,
    /// The session this call belongs to (stored outputs are readable only by their session).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The turn this call belongs to (`spear undo` undoes the last turn); a new one by default.
    #[arg(long, value_name = "ID")]
    turn: Option<String>,
    /// Print the envelope indented.
    #[arg(long)]
    pretty: bool,
}

/// Runs `spear tool`; returns the exit status (as `spear exec`'s).
pub fn run(args: &Args, host: &spear_runtime::HostSnapshot) -> Result<i32, String> {
    let call_args: serde_json::Value =
        serde_json::from_str(&args.json).map_err(|e| format!("--args is not valid JSON: {e}"))?;
    if args.mode.no_network {
        eprintln!(
            "spear: --no-network: commands get no network (at most a loopback of their own), in every mode"
        );
    }
    // One call, then the process exits: a job would die with it.
    let mut router = crate::session::open(&crate::session::SessionArgs {
        gpu: None,
        host,
        workspace: &args.workspace,
        mode: &args.mode,
        limits: &args.limits,
        role: args.role,
        session: args.session.as_deref(),
        background_jobs: false,
        session_scratch: false,
        env: &[],
        whole_output: false,
        web: true,
        shelf: None,
        principal: None,
    })?;
    router.set_confirmer(Box::new(crate::exec::TerminalConfirmer));
    if let Some(turn) = &args.turn {
        router.begin_turn(Some(turn)).map_err(|e| e.to_string())?;
    }
    let envelope = router.call(&args.name, call_args);
    if let Some(reference) = envelope
        .output_ref
        .as_ref()
        .or(envelope.stderr_ref.as_ref())
    {
        // Stored outputs belong to their session; a later `spear tool` call must name it.
        eprintln!(
            "spear: the output was cut; read the rest with: spear tool read_output --session {} --args '{{\"ref\": \"{reference}\"}}'",
            router.session()
        );
    }
    let text = if args.pretty {
        serde_json::to_string_pretty(&envelope)
    } else {
        serde_json::to_string(&envelope)
    }
    .map_err(|e| format!("cannot encode the result: {e}"))?;
    outln!("{text}");
    Ok(envelope.result.process_exit_code())
}
