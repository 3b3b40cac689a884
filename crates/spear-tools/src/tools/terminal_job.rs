//! `terminal_output {job_id}` and `terminal_kill {job_id}`: the background jobs `terminal`
//! started.
//!
//! `terminal_output` returns what the job printed since the last read (never the same byte
//! twice) and whether it still runs. When it has ended, the result is the job's own (status, exit
//! code), and a writable job's staged writes are judged against the target policy, committed
//! and checkpointed, as a foreground command's are at its end. `terminal_kill` kills the job's whole
//! tree and reports the same way. A job belongs to the session that started it: another
//! session's ids do not exist here.

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ExecutionMode, ToolResult, ToolStatus};
use spear_runtime::Job;

use crate::Effect;
use crate::context::CallContext;
use crate::spec::ALL_MODES;
use crate::tool::{Access, Call, JobState, Outcome, Prepared, Resolved, ToolArgs, Typed};

/// Arguments of `terminal_output`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminalOutputArgs {
    /// The id `terminal` returned (`job-1`).
    pub job_id: String,
}

/// Arguments of `terminal_kill`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminalKillArgs {
    /// The id `terminal` returned (`job-1`).
    pub job_id: String,
}

/// The `terminal_output` tool.
pub type TerminalOutput = Typed<TerminalOutputArgs>;

/// The `terminal_kill` tool.
pub type TerminalKill = Typed<TerminalKillArgs>;

impl ToolArgs for TerminalOutputArgs {
    const NAME: &'static str = "terminal_output";
    const DESCRIPTION: &'static str = "What a background job (started with terminal \
        {\"background\": true}) printed since the last read, and whether it still runs; once it \
        has ended, its exit status and the files it changed.";
    const EFFECT: Effect = Effect::Read;
    const MODES: &'static [ExecutionMode] = ALL_MODES;

    fn validate(self) -> Result<Call, String> {
        Ok(Call::Tool(Box::new(JobCall {
            id: self.job_id,
            kill: false,
        })))
    }
}

impl ToolArgs for TerminalKillArgs {
    const NAME: &'static str = "terminal_kill";
    const DESCRIPTION: &'static str = "Stop a background job: every process it started is \
        killed. Returns what it printed since the last read and how it ended.";
    const EFFECT: Effect = Effect::Run;
    const MODES: &'static [ExecutionMode] = ALL_MODES;
    const IDEMPOTENT: bool = true;

    fn validate(self) -> Result<Call, String> {
        Ok(Call::Tool(Box::new(JobCall {
            id: self.job_id,
            kill: true,
        })))
    }
}

/// A read of, or a kill of, one job.
struct JobCall {
    id: String,
    kill: bool,
}

impl Prepared for JobCall {
    fn access(&self) -> Access {
        Access::default()
    }

    fn target(&self) -> String {
        self.id.clone()
    }

    fn describe(&self) -> String {
        format!(
            "{} {}",
            if self.kill {
                TerminalKillArgs::NAME
            } else {
                TerminalOutputArgs::NAME
            },
            self.id
        )
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, _paths: &Resolved) -> Outcome {
        let job = match cx.jobs.get(&self.id) {
            Ok(j) => j,
            Err(e) => {
                return Outcome::of(ToolResult {
                    reason: Some(e.to_string()),
                    ..ToolResult::new(ToolStatus::NotFound)
                });
            }
        };
        if self.kill {
            job.kill();
        }
        report(cx, &job)
    }
}

/// What a job printed since the last read, and its end once it has ended.
fn report(cx: &CallContext<'_>, job: &Job) -> Outcome {
    // Once: a read and a kill racing on one job must not both report its end.
    let _finishing = job.finishing();
    if cx.jobs.get(job.id()).is_err() {
        return Outcome::of(ToolResult {
            reason: Some(format!(
                "{} has ended and its end was already reported",
                job.id()
            )),
            ..ToolResult::new(ToolStatus::NotFound)
        });
    }
    let read = job.read();
    let output = read.output;
    let mut notes = Vec::new();
    for (what, n) in [
        ("stdout", output.dropped_stdout),
        ("stderr", output.dropped_stderr),
    ] {
        if n > 0 {
            notes.push(format!(
                "{n} bytes of {what} were dropped unread (the job printed faster than it was read)"
            ));
        }
    }
    let Some(report) = read.finished else {
        let mut result = ToolResult::new(ToolStatus::Ok);
        result.stdout = output.stdout;
        result.stderr = output.stderr;
        if !notes.is_empty() {
            result.reason = Some(notes.join("; "));
        }
        return Outcome {
            job: Some(JobState::running(job.id())),
            ..Outcome::of(result)
        };
    };
    // The job has ended: its result, with only the output not read before.
    let mut result = report.result.clone();
    result.stdout = output.stdout;
    result.stderr = output.stderr;
    result.truncated = false;
    for note in notes {
        result.append_reason(&note);
    }
    let mut captured = Vec::new();
    let mut changes_unknown = false;
    if report.staged.is_none() {
        // It ran with the workspace read-only (no staged writes): a write it tried met EROFS.
        let read_only = spear_core::CapabilitySet::of(&[spear_core::Capability::FilesystemRead]);
        if let Some(note) =
            crate::read_only::read_only_note(cx.capabilities.mode(), read_only, &result)
        {
            result.append_reason(&note);
        }
    }
    if report.staged.is_some() {
        // Its command passed the command gates as it started; its commit takes the write lock.
        let _writing = crate::gates::write_lock(cx);
        let approved = job.approved_host_config();
        let command = format!("{} (background job {})", job.executable(), job.id());
        let asking = crate::Asking {
            confirmer: cx.confirmer,
            approved: &approved,
            command: &command,
            class: result
                .class
                .unwrap_or(spear_core::CommandClass::ShellComplex),
            // Its writes were staged: it ran with workspace:write.
            capabilities: spear_core::CapabilitySet::of(&[
                spear_core::Capability::FilesystemRead,
                spear_core::Capability::WorkspaceWrite,
            ]),
        };
        let committed = cx.commit(report.staged.as_ref(), asking, &mut result);
        (captured, changes_unknown) = (committed.captured, committed.unknown);
    }
    cx.jobs.remove(job.id());
    // A job stopped by terminal_kill verified nothing.
    let ran = (result.status != ToolStatus::Cancelled).then(|| job.executable().to_owned());
    Outcome {
        ran_since: ran.as_ref().map(|_| job.mark()),
        result,
        captured,
        ran,
        sandbox_down: report.sandbox_down,
        changes_unknown,
        job: Some(JobState::exited(job.id())),
        ..Outcome::of(ToolResult::new(ToolStatus::Ok))
    }
}
