//! `spear grant`: an operator approves one exact command in one directory ahead of time, for
//! pipelines that approve out of band; `spear exec --grant TOKEN` runs it, once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spear_runtime::GrantAuthority;
use spear_tools::{CommandCall, CommandText, IssueGrant};

use crate::context::WorkspaceArgs;
use crate::limit_args::LimitArgs;
use crate::mode_args::ModeArgs;
use crate::out::outln;

/// `spear grant [--no-network] [--workspace DIR] [--config FILE] [--env NAME]... [limit flags]
/// [--cwd DIR] [--expires SECS] (-c SCRIPT | -- ARGV...)`, or `spear grant --rotate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    workspace: WorkspaceArgs,
    #[command(flatten)]
    limits: LimitArgs,
    /// The grant is for a run that passes this host variable into the sandbox (as `spear exec
    /// --env NAME` does; repeatable). A run that passes others, or other values, is refused.
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// The grant is for a session without the network (as `spear exec --no-network` runs).
    #[arg(long)]
    no_network: bool,
    /// The directory the command will run in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// How long the grant stays valid, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 86_400)]
    expires: u64,
    /// Replace the per-user grant key with a new one: every grant issued so far stops verifying.
    #[arg(long, conflicts_with_all = ["script", "argv", "cwd"])]
    rotate: bool,
    /// The bash script the grant is for, exactly.
    #[arg(short = 'c', value_name = "SCRIPT", conflicts_with = "argv")]
    script: Option<String>,
    /// The program and arguments the grant is for, exactly.
    #[arg(last = true, value_name = "ARGV")]
    argv: Vec<String>,
}

/// Runs `spear grant`: prints the token (or, with `--rotate`, says the key was replaced).
///
/// The command is prepared as `spear exec --ask` would prepare it in that directory, with the same
/// configuration, `--env` names and limit flags (the same classification, profile, working
/// directory and its identity, write targets and theirs, environment, roots, limits, egress and
/// rules), and the grant binds all of that: it runs that command there, in that sandbox, once,
/// and nothing else anywhere or in a wider sandbox.
pub fn run(args: &Args) -> Result<i32, String> {
    let host = spear_runtime::HostSnapshot::of_process();
    let state = crate::state_home::state_dir(&host)?;
    if args.rotate {
        let key = spear_runtime::rotate_user_key(&state).map_err(|e| e.to_string())?;
        eprintln!(
            "spear: the grant key was replaced (now {}); every grant issued before no longer verifies",
            key.id()
        );
        return Ok(0);
    }
    let text = match (&args.script, args.argv.is_empty()) {
        (Some(script), _) => CommandText::Script(script.clone()),
        (None, false) => CommandText::Argv(args.argv.clone()),
        (None, true) => {
            return Err(
                "name the command: `spear grant -- ARGV...` or `spear grant -c SCRIPT`".into(),
            );
        }
    };
    if args.expires == 0 {
        return Err("--expires must be at least 1 second".into());
    }
    if let Some(dir) = &args.cwd {
        std::env::set_current_dir(dir).map_err(|e| format!("--cwd {}: {e}", dir.display()))?;
    }
    // The host as the command would see it: from the directory `--cwd` named.
    let host = spear_runtime::HostSnapshot::of_process();
    let authority = GrantAuthority::for_operator(&state).map_err(|e| e.to_string())?;
    let router = crate::session::open(&crate::session::SessionArgs {
        gpu: None,
        host: &host,
        workspace: &args.workspace,
        mode: &ModeArgs::ask(args.no_network),
        limits: &args.limits,
        role: spear_tools::Role::Implementation,
        session: None,
        background_jobs: false,
        session_scratch: false,
        env: &args.env,
        whole_output: true,
        web: false,
        shelf: None,
        principal: None,
    })?;
    let options = spear_tools::CallOptions {
        issue_grant: Some(IssueGrant {
            authority: Arc::new(authority),
            ttl: Duration::from_secs(args.expires),
        }),
        ..spear_tools::CallOptions::default()
    };
    let envelope = router.run_command(CommandCall::new(text), options);
    let result = &envelope.result;
    if result.status == spear_core::ToolStatus::Ok {
        outln!("{}", result.stdout.trim_end());
        return Ok(0);
    }
    eprintln!(
        "spear: no grant: {}",
        result
            .reason
            .as_deref()
            .unwrap_or("the command was refused")
    );
    Ok(result.process_exit_code())
}
