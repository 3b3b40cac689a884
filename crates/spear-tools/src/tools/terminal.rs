//! `terminal {command, timeout?, workdir?, background?}`: a bash script in the sandbox.
//!
//! The tool's arguments become a [`CommandCall`]; the router passes it through the command gates
//! (`crate::gates`: classified by `classify_script`, authorised against the mode, ASK asking
//! with exactly the script that will run, ...) and hands what they cleared to [`run`], which runs
//! it with the capabilities granted, in the foreground or as a background job. A script given
//! `workspace:write` writes into a staging layer of its own; after it, every change is judged by
//! the target policy and only the allowed ones are committed, so the result names every file it
//! changed, the checkpoint keeps what they held before, and a change to a path the target policy
//! refuses (a protected entry, one of git's indirections, a generated file, a snapshot copy, a
//! vendored tree) never reaches the workspace: a refusal attaches to the file, whichever tool
//! writes it.
//!
//! The timeout is 180 s unless asked; more than 600 s is refused (run long jobs in the
//! background instead).

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{Capability, ExecutionMode, ToolResult, ToolStatus};
use spear_policy::Confirmer;
use spear_runtime::PreparedProcess;

use crate::command::{CommandCall, CommandText, CommandTimeout, InSetting};
use crate::context::CallContext;
use crate::gates::Cleared;
use crate::spec::{ALL_MODES, Effect};
use crate::tool::{Call, JobState, Outcome, ToolArgs, Typed};

/// Arguments of `terminal`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminalArgs {
    /// The bash script to run (with `-o pipefail`; a stage cut off by a later one, as in
    /// `cmd | head`, is no failure).
    pub command: String,
    /// Wall-clock limit in seconds (default 180, at most 600).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// The working directory, inside the workspace (default: where spear was started).
    #[serde(default)]
    pub workdir: Option<String>,
    /// Run it in the background and return a job id at once; read its output with
    /// `terminal_output`, stop it with `terminal_kill`. A job has no timeout of its own and ends
    /// with the session.
    #[serde(default)]
    pub background: Option<bool>,
    /// The capabilities to run this one call with beyond what the session grants. Published in
    /// the schema only in a session that can be given something wider, with exactly those
    /// values (see `crate::escalation`); everywhere else a call that names it is invalid.
    #[serde(default)]
    #[schemars(skip)]
    pub sandbox_permissions: Option<Vec<Capability>>,
    /// Why the command needs `sandbox_permissions`, shown to the user who is asked; comes with
    /// it, and only with it.
    #[serde(default)]
    #[schemars(skip)]
    pub justification: Option<String>,
}

/// The terminal's description; every session's starts with it.
macro_rules! terminal_description {
    () => {
        "Run a bash script in spear's sandbox and return its output and exit code. What it \
        may do depends on the mode: SAFE runs read-only commands, ASK asks before \
        changes, AUTO runs them confined to the workspace. `timeout` is in seconds \
        (default 180, at most 600); `workdir` is a directory of the workspace."
    };
}

/// The terminal's description in a session whose schema has `sandbox_permissions`: the flow,
/// taught only where it exists (a run confined first; one retry of the same command after a real
/// denial; never asking in advance).
pub(crate) const ESCALATING_DESCRIPTION: &str = concat!(
    terminal_description!(),
    " Run every command as it is first. Only if it was refused, or failed, because this \
    session's sandbox lacks a capability (a write to the read-only workspace, the network), \
    you may retry that same command once with `sandbox_permissions` naming the capabilities it \
    lacks and a `justification` saying why the task needs them. The user is asked; if they \
    allow it, that one call runs with the wider sandbox and every later call is confined again. \
    Never ask in advance, never for a command that was not refused, and never again after the \
    user declined."
);

/// The `terminal` tool.
pub type Terminal = Typed<TerminalArgs>;

impl ToolArgs for TerminalArgs {
    const NAME: &'static str = "terminal";
    const DESCRIPTION: &'static str = terminal_description!();
    const EFFECT: Effect = Effect::Run;
    const MODES: &'static [ExecutionMode] = ALL_MODES;
    const OPEN_WORLD: bool = true;

    fn validate(self) -> Result<Call, String> {
        if self.command.trim().is_empty() {
            return Err("invalid arguments for terminal: `command` is empty".into());
        }
        let timeout = match self.timeout {
            Some(0) => {
                return Err(
                    "invalid arguments for terminal: `timeout` must be at least 1 second".into(),
                );
            }
            Some(secs) => CommandTimeout::Asked(secs),
            None => CommandTimeout::ToolDefault,
        };
        let escalation = crate::escalation::parse(self.sandbox_permissions, self.justification)?;
        Ok(Call::Command(CommandCall {
            text: CommandText::Script(self.command),
            workdir: self.workdir,
            timeout,
            background: self.background == Some(true),
            stdin: None,
            escalation,
        }))
    }
}

/// Runs `call`, which the command gates cleared ([`crate::gates::pass`]): as a background job of
/// the session, or in the foreground to its end, its staged writes judged and committed.
pub(crate) fn run(cx: &CallContext<'_>, call: &CommandCall, cleared: Cleared<'_>) -> Outcome {
    let Cleared {
        process,
        writing,
        command,
        summary,
        class,
        granted,
        approved_host_config,
        setting,
    } = cleared;
    if call.background {
        // A job holds no lock while it runs: its writes stay staged until its end is read
        // (`terminal_output`, `terminal_kill`), and the job-writing gate keeps every other writer
        // out meanwhile.
        drop(writing);
        return Outcome {
            target: Some(summary.clone()),
            ..start_job(cx, process, &summary, granted, approved_host_config)
        };
    }
    let report = process.start();
    let ran = Ran {
        command: &command,
        class,
        granted,
        approved: &approved_host_config,
        setting: &setting,
    };
    let outcome = finish(cx, report, &ran, summary);
    drop(writing);
    outcome
}

/// What a foreground command ran as, for the question about host-run configuration it wrote.
struct Ran<'r> {
    /// The command as one line of shell.
    command: &'r str,
    /// Its class.
    class: spear_core::CommandClass,
    /// The capabilities it ran with.
    granted: spear_core::CapabilitySet,
    /// Host-run configuration approved before it ran.
    approved: &'r [spear_core::HostConfigWrite],
    /// Where and how it ran, as a person asked about what it wrote sees it.
    setting: &'r str,
}

/// A foreground command's end: its staged writes judged and committed (host-run configuration it
/// wrote asked about, in the command's setting), and the outcome the router records.
fn finish(
    cx: &CallContext<'_>,
    report: spear_runtime::RunReport,
    ran: &Ran<'_>,
    summary: String,
) -> Outcome {
    let asker = cx.confirmer.map(|inner| InSetting {
        inner,
        setting: ran.setting.to_owned(),
        bound: None,
    });
    let asking = crate::Asking {
        confirmer: asker.as_ref().map(|a| a as &dyn Confirmer),
        approved: ran.approved,
        command: ran.command,
        class: ran.class,
        capabilities: ran.granted,
    };
    let mut result = report.result;
    let committed = cx.commit(report.staged.as_ref(), asking, &mut result);
    let granted = ran.granted;
    if let Some(note) = crate::read_only::read_only_note(cx.capabilities.mode(), granted, &result) {
        result.append_reason(&note);
    }
    Outcome {
        result,
        granted,
        captured: committed.captured,
        ran: Some(summary.clone()),
        target: Some(summary),
        sandbox_down: report.sandbox_down,
        changes_unknown: committed.unknown,
        job: None,
        ran_since: None,
        web: None,
        web_audit: None,
    }
}

/// Starts `request` as a background job; a writable job's writes stay staged until its end is
/// read, and are judged and committed then.
fn start_job(
    cx: &CallContext<'_>,
    prepared: PreparedProcess,
    executable: &str,
    granted: spear_core::CapabilitySet,
    approved_host_config: Vec<spear_core::HostConfigWrite>,
) -> Outcome {
    let class = prepared.request().class;
    match cx.jobs.start_prepared(prepared, executable, cx.call_seq) {
        Ok(job) => {
            job.set_approved_host_config(approved_host_config);
            let mut result = ToolResult::new(ToolStatus::Ok);
            result.class = class;
            result.stdout = format!(
                "started {id} in the background. Read what it prints with terminal_output {{\"job_id\": \"{id}\"}}; stop it with terminal_kill {{\"job_id\": \"{id}\"}}.\n",
                id = job.id()
            );
            Outcome {
                granted,
                job: Some(JobState::running(job.id())),
                ..Outcome::of(result)
            }
        }
        Err(e) => {
            let mut result = ToolResult::failed(e.to_string());
            result.class = class;
            Outcome::of(result)
        }
    }
}
