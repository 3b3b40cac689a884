//! `terminal {command, timeout?, workdir?}`: a bash script in the sandbox.
//!
//! The script is classified (`classify_script`), authorised against the mode (ASK asks, showing
//! exactly the script that will run), and run by the `CommandRunner` with the capabilities
//! granted. A script given `workspace:write` writes into a staging layer of its own; after it,
//! every change is judged by the target policy and only the allowed ones are committed, so the
//! result names every file it changed, the checkpoint keeps what they held before, and a change
//! to a path the target policy refuses (a protected entry, one of git's indirections, a generated
//! file, a snapshot copy, a vendored tree) never reaches the workspace: a refusal attaches to the
//! file, whichever tool writes it.
//!
//! The timeout is 180 s unless asked; more than 600 s is refused (run long jobs in the
//! background instead).

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{Capability, ExecutionProfile, Refusal, ToolResult, ToolStatus};
use spear_policy::{
    Authorization, ConfirmRequest, Confirmation, Confirmer, Decision, authorize, decide,
};
use spear_runtime::audit::executable_summary;
use spear_runtime::{CommandLine, CommandRequest};

use crate::Effect;
use crate::router::{failed, sandbox_down_refusal};
use crate::spec::ALL_MODES;
use crate::tool::{Access, CallContext, JobState, Outcome, Prepared, Resolved, ToolArgs, Typed};
use spear_core::ExecutionMode;

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
}

/// The `terminal` tool.
pub type Terminal = Typed<TerminalArgs>;

impl ToolArgs for TerminalArgs {
    const NAME: &'static str = "terminal";
    const DESCRIPTION: &'static str = "Run a bash script in spear's sandbox and return its output and exit code. What it \
        may do depends on the mode: SAFE runs read-only commands, ASK asks before \
        changes, AUTO runs them confined to the workspace. `timeout` is in seconds \
        (default 180, at most 600); `workdir` is a directory of the workspace.";
    const EFFECT: Effect = Effect::Run;
    const MODES: &'static [ExecutionMode] = ALL_MODES;
    const OPEN_WORLD: bool = true;

    fn validate(self) -> Result<Box<dyn Prepared>, String> {
        if self.command.trim().is_empty() {
            return Err("invalid arguments for terminal: `command` is empty".into());
        }
        if self.timeout == Some(0) {
            return Err(
                "invalid arguments for terminal: `timeout` must be at least 1 second".into(),
            );
        }
        Ok(Box::new(self))
    }
}

impl TerminalArgs {
    /// Where and how the command runs, as the person asked sees it: the working directory, and
    /// the background or the timeout. Attack: approving `./run.sh` shown bare, when it runs in
    /// another directory (another `run.sh`) or as a job that never times out.
    fn setting(&self, cx: &CallContext<'_>) -> String {
        let dir = self.workdir.as_deref().unwrap_or(".");
        if self.background == Some(true) {
            format!("in {dir}, as a background job with no timeout (stop it with terminal_kill)")
        } else {
            let secs = self.timeout.unwrap_or(cx.limits.terminal_timeout_secs);
            format!("in {dir}, in the foreground, with a timeout of {secs} s")
        }
    }
}

/// Asks `inner` with the command's setting added to the question.
struct InSetting<'a> {
    inner: &'a dyn Confirmer,
    setting: String,
}

impl Confirmer for InSetting<'_> {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        let mut request = request.clone();
        request.setting = Some(self.setting.clone());
        self.inner.confirm(&request)
    }
}

impl Prepared for TerminalArgs {
    fn access(&self) -> Access {
        Access {
            reads: self.workdir.iter().cloned().collect(),
            writes: Vec::new(),
            removes: Vec::new(),
        }
    }

    fn target(&self) -> String {
        executable_summary(&self.command)
    }

    fn describe(&self) -> String {
        self.command.clone()
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, paths: &Resolved) -> Outcome {
        let secs = self.timeout.unwrap_or(cx.limits.terminal_timeout_secs);
        if secs > cx.limits.terminal_max_timeout_secs {
            return Outcome::of(failed(format!(
                "invalid arguments for terminal: `timeout` must be 1 to {} seconds (got {secs}); run longer work in smaller steps",
                cx.limits.terminal_max_timeout_secs
            )));
        }
        if self.background == Some(true) && self.timeout.is_some() {
            return Outcome::of(failed(
                "invalid arguments for terminal: a background job has no timeout; omit `timeout`, and stop the job with terminal_kill".into(),
            ));
        }
        if self.background == Some(true) && !cx.background_jobs {
            return Outcome::of(failed(
                "background jobs live as long as a session, and this client makes one call and exits; run the command in the foreground, or through `spear mcp`".into(),
            ));
        }
        let ws = cx.workspace;
        let workdir: Option<PathBuf> = paths.reads.first().map(|p| ws.host_path(&p.target));
        let cwd = workdir
            .clone()
            .unwrap_or_else(|| ws.launch_dir().to_path_buf());
        let command = &self.command;
        let assessment = cx.policy.classify_script(command, &cwd);
        let class = Some(assessment.class);
        let with_class = |mut r: ToolResult| {
            r.class = class;
            Outcome::of(r)
        };

        // Attack: a command that found the sandbox down is followed by one that writes; nothing it
        // wrote could be checked, so it does not run. Decided before anyone is asked.
        if let (Some(why), Decision::Allow(caps) | Decision::Confirm(caps)) = (
            cx.sandbox_down(),
            decide(&assessment, cx.capabilities, command),
        ) && caps.contains(Capability::WorkspaceWrite)
        {
            return with_class(ToolResult::denied(&sandbox_down_refusal(
                &executable_summary(command),
                &why,
            )));
        }
        let asker = cx.confirmer.map(|inner| InSetting {
            inner,
            setting: self.setting(cx),
        });
        let granted = match authorize(
            &assessment,
            cx.capabilities,
            command,
            asker.as_ref().map(|a| a as &dyn Confirmer),
        ) {
            Authorization::Granted(caps) => caps,
            refused => {
                return with_class(
                    refused
                        .refusal_result()
                        .unwrap_or_else(|| ToolResult::new(ToolStatus::Denied)),
                );
            }
        };
        let profile = ExecutionProfile::from_granted(granted, assessment.host_reads.clone());
        let watch = profile.workspace_write();
        // Changes found around this command must be this command's: no other writer runs meanwhile.
        let writing = watch.then(|| {
            cx.writing
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        // Attack: two writers at once would charge each other's changes (and undo them).
        if let (true, Some(job)) = (watch, cx.jobs.writable_pending()) {
            return with_class(ToolResult::denied(&Refusal::job_writing(
                executable_summary(command),
                job,
            )));
        }
        if let (true, Some(why)) = (watch, cx.sandbox_down()) {
            return with_class(ToolResult::denied(&sandbox_down_refusal(
                &executable_summary(command),
                &why,
            )));
        }
        let mut request = CommandRequest::new(
            CommandLine::Script(spear_policy::script_to_run(command)),
            profile,
        );
        request.workdir = workdir;
        request.timeout = Some(Duration::from_secs(secs));
        request.cancel.clone_from(&cx.cancel);
        request.class = class;
        if let Some(sink) = &cx.progress {
            let tee: std::sync::Arc<dyn spear_runtime::OutputTee> =
                std::sync::Arc::new(crate::progress::ProgressTee::new(sink.clone()));
            request.tee = Some(tee);
        }

        if self.background == Some(true) {
            drop(writing);
            return start_job(cx, request, command, granted);
        }

        let report = cx.runner.run_report(&request);
        let mut result = report.result;
        let committed = cx.commit(report.staged.as_ref(), &mut result);
        drop(writing);
        let (captured, changes_unknown) = (committed.captured, committed.unknown);
        Outcome {
            result,
            granted,
            captured,
            ran: Some(executable_summary(command)),
            sandbox_down: report.sandbox_down,
            changes_unknown,
            job: None,
            ran_since: None,
        }
    }
}

/// Starts `request` as a background job; a writable job's writes stay staged until its end is
/// read, and are judged and committed then.
fn start_job(
    cx: &CallContext<'_>,
    request: CommandRequest,
    command: &str,
    granted: spear_core::CapabilitySet,
) -> Outcome {
    let class = request.class;
    match cx.jobs.start(
        std::sync::Arc::clone(cx.runner),
        request,
        command,
        cx.call_seq,
    ) {
        Ok(job) => {
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
            let mut result = failed(e.to_string());
            result.class = class;
            Outcome::of(result)
        }
    }
}
