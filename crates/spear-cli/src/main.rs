//! The `spear` command line. It holds no policy: every decision is a call into the library crates.

mod approve;
mod audit;
mod classify;
mod context;
mod doctor;
mod exec;
mod gc;
mod gpu_grant;
mod grant;
mod limit_args;
mod mcp;
mod mode_args;
mod node;
mod out;
mod served;
mod session;
mod state_home;
mod token;
mod tool;
mod undo;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// spear: a tool-execution harness for LLM coding agents.
#[derive(Debug, Parser)]
#[command(name = "spear", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a command in the sandbox, as the mode allows.
    Exec(exec::Args),
    /// Say what a shell script would do and whether each mode allows it. Runs nothing.
    Classify(classify::Args),
    /// Report every mechanism the sandbox relies on, and how to fix what is missing.
    Doctor(doctor::Args),
    /// Call one tool through the router and print the result envelope (as the MCP server returns it).
    Tool(tool::Args),
    /// Serve the tools over MCP on stdin and stdout, for an agent that starts spear itself.
    Mcp(mcp::Args),
    /// List the ASK confirmations running `spear mcp` servers wait on, and allow or refuse one
    /// (for clients that cannot ask the user). Run it in another terminal.
    Approve(approve::Args),
    /// Print the audit log.
    Audit(audit::Args),
    /// Restore the files the last turn changed, all or nothing.
    Undo(undo::Args),
    /// Report what spear's own stores hold (checkpoints, stored outputs, audit log) against their
    /// quotas, and clear what may go.
    Gc(gc::Args),
    /// Issue a grant for one exact command in one directory, for `spear exec --grant`.
    Grant(grant::Args),
    /// Issue, list and revoke the tokens a listening spear accepts (a token's value is printed
    /// once, and only its hash kept).
    Token(token::Args),
    /// Run this user's `spear exec` calls from one long-lived process, each decided afresh and
    /// in a sandbox of its own, with the next one's sandbox set up before it is asked for.
    Serve(served::server::Args),
}

fn main() -> ExitCode {
    init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                spear_core::exit_code::USAGE
            } else {
                0
            };
            let _ = e.print();
            return exit(code);
        }
    };
    // The one reading of this process's environment and current directory: everything below
    // takes the host from here.
    let host = spear_runtime::HostSnapshot::of_process();
    let result = match cli.command {
        Command::Exec(args) => Ok(exec::run(&args, &host)),
        Command::Classify(args) => classify::run(&args, &host).map_err(|e| e.to_string()),
        Command::Doctor(args) => Ok(doctor::run(&args, &host)),
        Command::Tool(args) => tool::run(&args, &host),
        Command::Mcp(args) => mcp::run(&args, &host),
        Command::Approve(args) => approve::run(&args, &host),
        Command::Audit(args) => audit::run(&args, &host),
        Command::Undo(args) => undo::run(&args, &host),
        Command::Gc(args) => gc::run(&args, &host),
        Command::Grant(args) => grant::run(&args),
        Command::Token(args) => token::run(&args, &host),
        Command::Serve(args) => served::server::run(&args, &host),
    };
    match result {
        Ok(code) => exit(code),
        Err(e) => {
            eprintln!("spear: {e}");
            exit(spear_core::exit_code::USAGE)
        }
    }
}

fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Logs go to stderr only, filtered by `SPEAR_LOG` (default: warnings).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SPEAR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
