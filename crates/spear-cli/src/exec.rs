//! `spear exec`: classify, authorize (asking on the terminal in ASK), run in the sandbox, print.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::fd::OwnedFd;
use std::sync::Arc;

use spear_core::ToolResult;
use spear_policy::{ConfirmRequest, Confirmation, Confirmer, make_visible};
use spear_tools::{CommandCall, CommandText};

use crate::context::WorkspaceArgs;
use crate::limit_args::LimitArgs;
use crate::mode_args::ModeArgs;

/// `spear exec [--safe|--ask|--auto] [--no-network] [--workspace DIR] [--timeout S] [--json]
/// (-c SCRIPT | -- ARGV...)`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    mode: ModeArgs,
    #[command(flatten)]
    workspace: WorkspaceArgs,
    #[command(flatten)]
    limits: LimitArgs,
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
    /// Run with a grant from `spear grant` (in ASK mode): it stands for the approval of exactly
    /// the command it was issued for, in the directory it was issued for, once.
    #[arg(long, value_name = "TOKEN", conflicts_with_all = ["safe", "auto"])]
    grant: Option<String>,
    /// Give the sandbox these GPUs (`all`, or indices such as `0,1`): their device nodes and the
    /// driver's libraries and tools, nothing else of /dev. The operator's grant alone: no mode
    /// gives a GPU. Without a GPU on the host, spear refuses at start, saying what is missing.
    #[arg(long, value_name = "all|INDICES")]
    gpu: Option<String>,
    /// Run this program with these arguments, directly, without a shell.
    #[arg(last = true, value_name = "ARGV")]
    argv: Vec<String>,
}

impl Args {
    /// Whether the call may run in a `spear serve` of the user's: not when it may ask on this
    /// process's terminal (ASK, a grant).
    pub fn may_be_served(&self) -> bool {
        // A server's sandboxes have no GPU: a GPU grant runs here.
        self.grant.is_none()
            && self.gpu.is_none()
            && self.mode.mode() != spear_core::ExecutionMode::Ask
    }
}

/// Runs `spear exec`; returns the exit status.
///
/// The call runs in the user's `spear serve` when one answers and accepts it
/// ([`crate::served`]), else here; either way it is the same call ([`call`]) and prints the
/// same.
pub fn run(args: &Args, host: &spear_runtime::HostSnapshot) -> i32 {
    // One relay of spear's stdin, whichever process runs the command.
    let stdin = stdin_relay();
    if args.may_be_served()
        && let Ok(fd) = &stdin
        && let Some(code) = crate::served::client::call(host, fd.as_deref())
    {
        return code;
    }
    let done = call(args, host, stdin, None, None);
    let _ = std::io::stdout().lock().write_all(&done.stdout);
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().lock().write_all(&done.stderr);
    done.code
}

/// One `spear exec` call, to what it prints and its exit status.
///
/// The command goes through the router like a `terminal` call ([`spear_tools::ToolRouter::run_command`]): the
/// same gates, the same audit record, changed paths and checkpoint (`spear undo` undoes it), in a
/// turn of its own. Only the front is the CLI's: the argv or script, the caller's stdin
/// (`stdin`, from [`stdin_relay`]), the terminal confirmer, the output whole. A server passes
/// the cancellation of its client's hangup and its kept sandboxes.
pub fn call(
    args: &Args,
    host: &spear_runtime::HostSnapshot,
    stdin: std::io::Result<Option<Arc<OwnedFd>>>,
    cancel: Option<spear_sandbox::CancelToken>,
    shelf: Option<&crate::served::shelf::Shelf>,
) -> crate::served::wire::Done {
    let mut done = crate::served::wire::Done {
        code: 0,
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    match call_into(args, host, stdin, cancel, shelf, &mut done) {
        Ok(code) => done.code = code,
        Err(e) => {
            let _ = writeln!(done.stderr, "spear: {e}");
            done.code = spear_core::exit_code::USAGE;
        }
    }
    done
}

fn call_into(
    args: &Args,
    host: &spear_runtime::HostSnapshot,
    stdin: std::io::Result<Option<Arc<OwnedFd>>>,
    cancel: Option<spear_sandbox::CancelToken>,
    shelf: Option<&crate::served::shelf::Shelf>,
    done: &mut crate::served::wire::Done,
) -> Result<i32, String> {
    if args.mode.no_network {
        let _ = writeln!(
            done.stderr,
            "spear: --no-network: commands get no network (at most a loopback of their own), in every mode"
        );
    }
    let ask = args
        .grant
        .as_ref()
        .map(|_| ModeArgs::ask(args.mode.no_network));
    let presented = match &args.grant {
        Some(token) => Some(spear_tools::PresentedGrant {
            token: token.clone(),
            authority: std::sync::Arc::new(
                spear_runtime::GrantAuthority::for_operator(&crate::state_home::state_dir(host)?)
                    .map_err(|e| e.to_string())?,
            ),
        }),
        None => None,
    };
    let mut router = crate::session::open(&crate::session::SessionArgs {
        gpu: args.gpu.as_deref(),
        host,
        workspace: &args.workspace,
        mode: ask.as_ref().unwrap_or(&args.mode),
        limits: &args.limits,
        role: spear_tools::Role::Implementation,
        session: None,
        background_jobs: false,
        session_scratch: false,
        env: &args.env,
        whole_output: true,
        web: false,
        shelf,
        principal: None,
    })?;
    router.set_confirmer(Box::new(TerminalConfirmer));
    let output_cap = router.runner_config().output_cap;
    let text = match &args.script {
        Some(script) => CommandText::Script(script.clone()),
        None => CommandText::Argv(args.argv.clone()),
    };
    let mut call = CommandCall::new(text);
    call.stdin = match stdin {
        Ok(fd) => fd,
        Err(e) => {
            let mut r = ToolResult::new(spear_core::ToolStatus::Failed);
            r.reason = Some(format!(
                "spear's stdin cannot be passed to the command ({e}), so it did not run; run it with `</dev/null`"
            ));
            render(&r, args.json, output_cap, done);
            return Ok(r.process_exit_code());
        }
    };
    let options = spear_tools::CallOptions {
        grant: presented,
        cancel,
        ..spear_tools::CallOptions::default()
    };
    let envelope = router.run_command(call, options);
    render(&envelope.result, args.json, output_cap, done);
    Ok(envelope.result.process_exit_code())
}

/// spear's stdin as the command gets it: data that comes through a pipe, a file or a socket is
/// relayed by a thread into a new pipe whose read end becomes the command's stdin; a terminal, a
/// character device (`/dev/null`) or a closed stdin (which the Rust runtime reopens as
/// `/dev/null`) gives the command `/dev/null` (`None`).
///
/// Never spear's own fd. Attacks stopped: a terminal fd in the sandbox would let the command act
/// on the operator's terminal (TIOCSTI is already refused by the new session and seccomp, but
/// `stty` settings, TIOCLINUX and the like are not); a file fd, even one opened read-only, can be
/// reopened for writing through `/proc/self/fd/0` when the file is writable, and
/// `spear exec <> file` hands a read-write one. A pipe carries bytes and nothing else.
///
/// Why a terminal gives `/dev/null` and not a relay: programs decide what to read by what stdin
/// is. `rg PATTERN` and `grep -r` search the directory when stdin is a terminal or `/dev/null`,
/// but read stdin when it is a pipe, so a relayed terminal would make `spear exec -c 'rg TODO'`
/// wait for the operator's typing where bash searches the tree. The input is streamed: memory
/// stays bounded whatever its size. When the command exits without reading it all, the relay
/// ends with the process.
pub fn stdin_relay() -> std::io::Result<Option<Arc<OwnedFd>>> {
    use std::io::IsTerminal;
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let kind = std::fs::File::from(stdin.as_fd().try_clone_to_owned()?)
        .metadata()?
        .file_type();
    if kind.is_char_device() {
        return Ok(None);
    }
    let (reader, mut writer) = std::io::pipe()?;
    std::thread::Builder::new()
        .name("spear-stdin".into())
        .spawn(move || {
            // EPIPE once the command stopped reading (Rust ignores SIGPIPE): nothing to report.
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut writer);
        })?;
    Ok(Some(Arc::new(reader.into())))
}

/// The one line `spear exec` prints on stderr when a stream was cut at the output cap.
fn cut_notice(cap: usize) -> String {
    format!(
        "spear: the output was cut at the output cap of {} per stream (its first and last half were kept, the middle was not kept anywhere); raise it with --output-cap or [limits] output_cap, or redirect the output to a file in the workspace",
        spear_policy::limits::show_bytes(cap as u64)
    )
}

/// The one line `spear exec` prints on stderr when control characters were shown escaped.
///
/// Plain mode prints what the router returned, escaped as every client gets it: whoever runs
/// `spear exec` (an agent's shell tool, a person) is the client, and a command's output, a file or
/// a page can carry OSC 52 or CSI sequences aimed at the terminal showing it. The output is text
/// already (decoded as UTF-8, lossily), never a byte pipe; redirect to a file in the workspace for
/// the exact bytes.
fn escaped_notice(escaped: &spear_core::EscapedControls) -> String {
    let fields: Vec<String> = escaped.iter().map(|(f, n)| format!("{n} in {f}")).collect();
    format!(
        "spear: control characters were shown escaped as \\u{{..}} ({}); terminal control sequences are data; redirect the output to a file in the workspace for the exact bytes",
        fields.join(", ")
    )
}

/// What `spear exec` prints of `result`, into `done`'s streams.
fn render(
    result: &ToolResult,
    json: bool,
    output_cap: usize,
    done: &mut crate::served::wire::Done,
) {
    let err = &mut done.stderr;
    if result.truncated {
        let _ = writeln!(err, "{}", cut_notice(output_cap));
    }
    if json {
        match serde_json::to_string(result) {
            Ok(text) => {
                let _ = writeln!(done.stdout, "{text}");
            }
            Err(e) => {
                let _ = writeln!(err, "spear: cannot encode the result: {e}");
            }
        }
        return;
    }
    done.stdout.extend_from_slice(result.stdout.as_bytes());
    let _ = err.write_all(result.stderr.as_bytes());
    if let Some(escaped) = &result.escaped {
        let _ = writeln!(err, "{}", escaped_notice(escaped));
    }
    if let Some(reason) = &result.reason {
        let _ = writeln!(err, "spear: {}: {reason}", result.status);
    } else if result.status != spear_core::ToolStatus::Ok && result.exit_code.is_none() {
        let _ = writeln!(err, "spear: {}", result.status);
    }
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
        let mut host_config = String::new();
        for line in spear_tools::host_config_lines(&request.host_config).lines() {
            host_config.push_str("  ");
            host_config.push_str(line);
            host_config.push('\n');
        }
        let (head, prompt) = if request.after_run {
            (
                "spear: this command ran in the sandbox and wrote host-run configuration there; nothing of it has reached the workspace".to_owned(),
                "Let these writes reach the workspace? [y/N] ",
            )
        } else {
            (
                format!(
                    "spear: this command needs confirmation ({}; {})",
                    request.class,
                    make_visible(&request.reason)
                ),
                "Run it? [y/N] ",
            )
        };
        let _ = write!(
            writer,
            "{head}.\n  capabilities: {}\n{}{host_config}  command:\n    {}\n{}{prompt}",
            caps.join(", "),
            request
                .setting
                .as_deref()
                .map(|s| format!("  runs: {}\n", make_visible(s)))
                .unwrap_or_default(),
            spear_tools::confirmation_text(&request.command).replace('\n', "\n    "),
            spear_tools::hidden_characters_warning(&request.command)
                .map(|w| format!("  {w}\n"))
                .unwrap_or_default(),
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
    fn the_cut_notice_is_one_line_naming_the_cap() {
        let line = cut_notice(1 << 20);
        assert!(line.contains("output cap of 1 MiB"), "{line}");
        assert!(line.contains("--output-cap"), "{line}");
        assert!(!line.contains('\n'));
    }
}
