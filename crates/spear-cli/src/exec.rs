//! `spear exec`: classify, authorize (asking on the terminal in ASK), run in the sandbox, print.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::time::Duration;

use spear_core::{ExecutionProfile, ToolResult};
use spear_policy::{
    Authorization, ConfirmRequest, Confirmation, Confirmer, authorize, make_visible,
};
use spear_runtime::{CommandLine, CommandRequest, CommandRunner};

use crate::context::{Context, ContextError, WorkspaceArgs};
use crate::mode_args::ModeArgs;

/// `spear exec [--safe|--ask|--auto] [--no-network] [--workspace DIR] [--timeout S] [--json]
/// (-c SCRIPT | -- ARGV...)`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    mode: ModeArgs,
    #[command(flatten)]
    workspace: WorkspaceArgs,
    /// Wall-clock limit in seconds (default 45).
    #[arg(long, value_name = "S", value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// Print the result as one JSON object instead of the command's output.
    #[arg(long)]
    json: bool,
    /// Run this bash script (with pipefail; `cmd | head` is no failure).
    #[arg(
        short = 'c',
        value_name = "SCRIPT",
        conflicts_with = "argv",
        required_unless_present = "argv"
    )]
    script: Option<String>,
    /// Pass this host variable into the sandbox (repeatable), besides `[env] pass` of the
    /// operator configuration. A name that changes how programs load code is refused.
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// Run this program with these arguments, directly, without a shell.
    #[arg(last = true, value_name = "ARGV")]
    argv: Vec<String>,
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err("the timeout must be more than 0 and at most 86400 seconds".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Runs `spear exec`; returns the exit status.
pub fn run(args: &Args) -> Result<i32, ContextError> {
    let ctx = Context::open_with_env(&args.workspace, &args.env)?;
    let runner_config = ctx.runner_config();
    if args.mode.no_network {
        eprintln!("spear: --no-network: commands get loopback only, in every mode");
    }
    let policy = &ctx.policy;
    let cwd = policy.workspace().launch_dir().to_path_buf();
    let (assessment, command_text, line) = match &args.script {
        Some(script) => (
            policy.classify_script(script, &cwd),
            script.clone(),
            CommandLine::Script(spear_policy::script_to_run(script)),
        ),
        None => (
            policy.classify(&args.argv, &cwd),
            shell_words(&args.argv),
            CommandLine::Argv(args.argv.iter().map(OsString::from).collect()),
        ),
    };
    let mode = args.mode.mode();
    let terminal = TerminalConfirmer;
    let confirmer: Option<&dyn Confirmer> = Some(&terminal);
    let auth = authorize(
        &assessment,
        args.mode.policy_for(mode),
        &command_text,
        confirmer,
    );
    let result = match auth {
        Authorization::Granted(caps) => {
            let profile = ExecutionProfile::from_granted(caps, assessment.host_reads.clone());
            let runner = CommandRunner::new(policy.shared_workspace(), runner_config);
            let mut request = CommandRequest::new(line, profile);
            request.timeout = args.timeout;
            request.class = Some(assessment.class);
            let report = runner.run_report(&request);
            let mut result = report.result;
            if report.staged.is_some() {
                match policy.workspace().fs() {
                    Ok(fs) => {
                        spear_tools::commit_staged(
                            report.staged.as_ref(),
                            policy.workspace(),
                            &fs,
                            policy,
                            None,
                            &spear_runtime::staging::TrackedRules::new(),
                            &mut result,
                        );
                    }
                    Err(e) => {
                        result.status = spear_core::ToolStatus::Failed;
                        result.reason = Some(format!(
                            "the workspace cannot be opened, so nothing the command wrote was kept: {e}"
                        ));
                    }
                }
            }
            result
        }
        refused => {
            let mut r = refused
                .refusal_result()
                .unwrap_or_else(|| ToolResult::new(spear_core::ToolStatus::Denied));
            r.class = Some(assessment.class);
            r
        }
    };
    print(&result, args.json);
    Ok(result.process_exit_code())
}

fn print(result: &ToolResult, json: bool) {
    if json {
        match serde_json::to_string(result) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("spear: cannot encode the result: {e}"),
        }
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(result.stdout.as_bytes());
    let _ = out.flush();
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(result.stderr.as_bytes());
    if let Some(reason) = &result.reason {
        let _ = writeln!(err, "spear: {}: {reason}", result.status);
    } else if result.status != spear_core::ToolStatus::Ok && result.exit_code.is_none() {
        let _ = writeln!(err, "spear: {}", result.status);
    }
}

/// The argv as one shell-quoted line: what a confirmation shows for an argv command.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Asks on the controlling terminal. Without one (a pipe, CI), nobody can be asked and the call
/// is cancelled.
pub(crate) struct TerminalConfirmer;

impl Confirmer for TerminalConfirmer {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        if !std::io::stdin().is_terminal() {
            return Confirmation::Unavailable;
        }
        let Ok(tty) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
        else {
            return Confirmation::Unavailable;
        };
        let mut writer = &tty;
        let caps: Vec<&str> = request
            .capabilities
            .iter()
            .map(spear_core::Capability::as_str)
            .collect();
        let _ = write!(
            writer,
            "spear: this command needs confirmation ({}; {}).\n  capabilities: {}\n{}  command:\n    {}\nRun it? [y/N] ",
            request.class,
            make_visible(&request.reason),
            caps.join(", "),
            request
                .setting
                .as_deref()
                .map(|s| format!("  runs: {}\n", make_visible(s)))
                .unwrap_or_default(),
            spear_tools::confirmation_text(&request.command).replace('\n', "\n    "),
        );
        let _ = writer.flush();
        let mut answer = String::new();
        if BufReader::new(&tty).read_line(&mut answer).is_err() {
            return Confirmation::Unavailable;
        }
        if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            Confirmation::Approved
        } else {
            Confirmation::Declined
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(
            shell_words(&[
                "ls".into(),
                "-la".into(),
                "a b".into(),
                "it's".into(),
                String::new()
            ]),
            r"ls -la 'a b' 'it'\''s' ''"
        );
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("-1").is_err());
        assert!(parse_timeout("nan").is_err());
        assert!(parse_timeout("x").is_err());
    }
}
