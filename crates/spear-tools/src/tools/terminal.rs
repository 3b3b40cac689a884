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
    Authorization, ConfirmRequest, Confirmation, Confirmer, Decision, access_for, authorize,
    decide, escalation_access,
};
use spear_runtime::{
    CommandLine, CommandRequest, GrantCheck, PrepareError, PrepareOptions, PreparedProcess,
};
use spear_runtime::{GrantAuthority, SESSION_GRANT_TTL};

use crate::Effect;
use crate::escalation::EscalationAsk;
use crate::router::sandbox_down_refusal;
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

    fn validate(self) -> Result<Box<dyn Prepared>, String> {
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
        Ok(Box::new(CommandCall {
            text: CommandText::Script(self.command),
            workdir: self.workdir,
            timeout,
            background: self.background == Some(true),
            stdin: None,
            escalation,
        }))
    }
}

/// A command as its caller wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandText {
    /// A bash script (the terminal tool, `spear exec -c`).
    Script(String),
    /// A program and its arguments, run without a shell (`spear exec -- ARGV`).
    Argv(Vec<String>),
}

impl CommandText {
    /// The command as one line of shell: the script itself, or the argv shell-quoted. This is
    /// what a confirmation shows and what the audit summary is made from.
    pub fn as_shell(&self) -> String {
        match self {
            CommandText::Script(s) => s.clone(),
            CommandText::Argv(argv) => shell_words(argv),
        }
    }

    /// The command classified by the policy as it would run in `cwd`, and the command line the
    /// runner is given (a script with its pipelines rewritten by
    /// [`spear_policy::tolerate_sigpipe`]).
    fn assess(
        &self,
        cx: &CallContext<'_>,
        cwd: &std::path::Path,
    ) -> (spear_core::CommandAssessment, CommandLine) {
        match self {
            CommandText::Script(script) => (
                cx.policy.classify_script(script, cwd),
                CommandLine::Script(spear_policy::script_to_run(script)),
            ),
            CommandText::Argv(argv) => (
                cx.policy.classify(argv, cwd),
                CommandLine::Argv(argv.iter().map(std::ffi::OsString::from).collect()),
            ),
        }
    }
}

/// The wall-clock limit a command call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandTimeout {
    /// This many seconds, at most the tools' longest ([`crate::ToolLimits`]).
    Asked(u64),
    /// The terminal tool's default ([`crate::ToolLimits::terminal_timeout_secs`]).
    ToolDefault,
    /// The runner's default (`spear exec`: `--timeout` or `[limits] timeout`, already bounded).
    RunnerDefault,
}

/// One command, whichever front end asked for it: the terminal tool's arguments and `spear
/// exec`'s both become this, and the router runs it through the same gates (classification, the
/// target policy, authorization, the sandbox-down and job-writing gates, checkpoints, the change
/// tracker, audit, evidence) in [`ToolRouter::run_command`](crate::ToolRouter::run_command).
#[derive(Debug, Clone)]
pub struct CommandCall {
    /// The command.
    pub text: CommandText,
    /// Its working directory, inside the workspace (default: where spear was started).
    pub workdir: Option<String>,
    /// Its wall-clock limit (ignored for a background job, which has none).
    pub timeout: CommandTimeout,
    /// Run it as a background job of the session.
    pub background: bool,
    /// The read end of a pipe the caller feeds, as the command's stdin (`/dev/null` when
    /// `None`). Never a terminal or a file: see `CommandRequest::stdin`.
    pub stdin: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    /// The wider sandbox this one call asks for, and why: the user is asked, and only their
    /// approval gives it (see `crate::escalation`).
    pub escalation: Option<EscalationAsk>,
}

impl CommandCall {
    /// A foreground call of `text` from where spear was started, with the runner's timeout and
    /// no stdin.
    pub fn new(text: CommandText) -> Self {
        CommandCall {
            text,
            workdir: None,
            timeout: CommandTimeout::RunnerDefault,
            background: false,
            stdin: None,
            escalation: None,
        }
    }

    /// The call as the terminal tool's JSON arguments would name it, for observers.
    pub(crate) fn as_args(&self) -> serde_json::Value {
        let mut fields = serde_json::Map::new();
        match &self.text {
            CommandText::Script(s) => fields.insert("command".into(), s.clone().into()),
            CommandText::Argv(words) => fields.insert("argv".into(), words.clone().into()),
        };
        if let Some(w) = &self.workdir {
            fields.insert("workdir".into(), w.clone().into());
        }
        serde_json::Value::Object(fields)
    }

    /// Where and how the command runs, as the person asked sees it: the working directory, and
    /// the background or the timeout. Attack: approving `./run.sh` shown bare, when it runs in
    /// another directory (another `run.sh`) or as a job that never times out.
    fn setting(&self, cx: &CallContext<'_>) -> String {
        let dir = self.workdir.as_deref().unwrap_or(".");
        if self.background {
            return format!(
                "in {dir}, as a background job with no timeout (stop it with terminal_kill)"
            );
        }
        match self.timeout {
            CommandTimeout::Asked(secs) => {
                format!("in {dir}, in the foreground, with a timeout of {secs} s")
            }
            CommandTimeout::ToolDefault => format!(
                "in {dir}, in the foreground, with a timeout of {} s",
                cx.limits.terminal_timeout_secs
            ),
            CommandTimeout::RunnerDefault => format!(
                "in {dir}, in the foreground, with a timeout of {} s",
                cx.runner.config().default_timeout.as_secs_f64()
            ),
        }
    }

    /// The timeout the request gets (`None`: the runner's default), or why the call is invalid.
    fn timeout(&self, cx: &CallContext<'_>) -> Result<Option<Duration>, String> {
        let secs = match self.timeout {
            CommandTimeout::RunnerDefault => return Ok(None),
            CommandTimeout::Asked(secs) => secs,
            CommandTimeout::ToolDefault => cx.limits.terminal_timeout_secs,
        };
        if secs > cx.limits.terminal_max_timeout_secs {
            return Err(format!(
                "invalid arguments for terminal: `timeout` must be 1 to {} seconds (got {secs}); run longer work in smaller steps",
                cx.limits.terminal_max_timeout_secs
            ));
        }
        Ok(Some(Duration::from_secs(secs)))
    }

    /// The checks of the call's shape that need the session: a timeout in bounds, a background
    /// job only without a timeout and only where jobs outlive the call.
    fn check(&self, cx: &CallContext<'_>) -> Result<Option<Duration>, String> {
        let timeout = self.timeout(cx)?;
        if let Some(ask) = &self.escalation {
            crate::escalation::check_in(ask, cx.capabilities)?;
        }
        if self.background && matches!(self.timeout, CommandTimeout::Asked(_)) {
            return Err(
                "invalid arguments for terminal: a background job has no timeout; omit `timeout`, and stop the job with terminal_kill".into(),
            );
        }
        if self.background && !cx.background_jobs {
            return Err(
                "background jobs live as long as a session, and this client makes one call and exits; run the command in the foreground, or through `spear mcp`".into(),
            );
        }
        Ok(timeout)
    }
}

/// Asks `inner` with the command's setting added to the question.
struct InSetting<'a> {
    inner: &'a dyn Confirmer,
    setting: String,
    bound: Option<String>,
}

impl Confirmer for InSetting<'_> {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        let mut request = request.clone();
        request.setting = Some(self.setting.clone());
        request.bound.clone_from(&self.bound);
        self.inner.confirm(&request)
    }

    fn unanswered(&self, what: String) -> spear_core::Refusal {
        self.inner.unanswered(what)
    }
}

/// The capabilities a call is given, and the grant (its token and who verifies it) that stands
/// for its approval when it needed one.
type Approved<'c> = (
    spear_core::CapabilitySet,
    Option<(String, &'c GrantAuthority)>,
);

impl CommandCall {
    /// The capabilities the call is given and the grant that stands for its approval: an
    /// operator's grant presented with it, or one minted for the person's answer (bound to what
    /// was read before the question was asked); none when the mode allows it outright.
    fn approve<'c>(
        &self,
        cx: &CallContext<'c>,
        decision: &Decision,
        assessment: &spear_core::CommandAssessment,
        command: &str,
        request_for: &dyn Fn(spear_core::CapabilitySet) -> CommandRequest,
        targets: &[PathBuf],
    ) -> Result<Approved<'c>, ToolResult> {
        match (decision, cx.presented) {
            // An operator's grant stands for the approval: nobody is asked, and the command runs
            // only if the grant binds exactly it (checked when it is prepared). Never for an
            // escalation, which only the person asked now can allow.
            (Decision::Confirm(caps), Some(presented)) if self.escalation.is_none() => Ok((
                *caps,
                Some((presented.token.clone(), &*presented.authority)),
            )),
            (Decision::Confirm(caps), None) => {
                // What an approval is given for, read before anyone is asked: a directory or
                // target swapped while the person reads the question is not what was approved.
                let asked = cx
                    .runner
                    .binding(
                        &request_for(*caps),
                        Some(cx.execution.clone()),
                        targets,
                        &judged_by(cx),
                    )
                    .map_err(|e| ToolResult::failed(e.to_string()))?;
                let granted = self.ask(cx, decision, assessment, command, Some(asked.place()))?;
                let token = cx
                    .grants
                    .issue(&asked, SESSION_GRANT_TTL, std::time::SystemTime::now())
                    .map_err(|e| ToolResult::failed(e.to_string()))?;
                Ok((granted, Some((token, cx.grants))))
            }
            _ => self
                .ask(cx, decision, assessment, command, None)
                .map(|caps| (caps, None)),
        }
    }

    /// What the mode decides for the call, and the access it is prepared with. An escalating
    /// call is decided by its own rules (never allowed without asking).
    fn decide(
        &self,
        cx: &CallContext<'_>,
        assessment: &spear_core::CommandAssessment,
        command: &str,
    ) -> (Decision, spear_core::authority::AccessPolicy) {
        if let Some(ask) = &self.escalation {
            let decision = crate::escalation::decide(cx, ask, assessment, command);
            let access = escalation_access(&decision, cx.capabilities);
            return (decision, access);
        }
        let decision = decide(assessment, cx.capabilities, command);
        let access = access_for(&decision, cx.capabilities);
        (decision, access)
    }

    /// Authorises the call against the mode, asking the confirmer (with the command's setting
    /// added to the question) when the decision says to; the refusal's result otherwise. An
    /// escalation (`decision` made by `crate::escalation::decide`) is asked about as one.
    fn ask(
        &self,
        cx: &CallContext<'_>,
        decision: &Decision,
        assessment: &spear_core::CommandAssessment,
        command: &str,
        bound: Option<String>,
    ) -> Result<spear_core::CapabilitySet, ToolResult> {
        let asker = cx.confirmer.map(|inner| InSetting {
            inner,
            setting: self.setting(cx),
            bound,
        });
        let asker = asker.as_ref().map(|a| a as &dyn Confirmer);
        let authorized = match (&self.escalation, decision) {
            (Some(_), Decision::Deny(r)) => Authorization::Denied(r.clone()),
            (Some(ask), Decision::Allow(caps) | Decision::Confirm(caps)) => {
                crate::escalation::ask(cx, ask, assessment, command, *caps, asker)
            }
            (None, _) => authorize(assessment, cx.capabilities, command, asker),
        };
        match authorized {
            Authorization::Granted(caps) => Ok(caps),
            refused => Err(refused
                .refusal_result()
                .unwrap_or_else(|| ToolResult::new(ToolStatus::Denied))),
        }
    }
}

impl Prepared for CommandCall {
    fn access(&self) -> Access {
        Access {
            reads: self.workdir.iter().cloned().collect(),
            writes: Vec::new(),
            removes: Vec::new(),
        }
    }

    /// A command's summary comes from its classification, in [`Outcome::target`]; until then
    /// (a call refused before it is read: a bad working directory) it is only a command.
    fn target(&self) -> String {
        "(a command)".to_owned()
    }

    fn describe(&self) -> String {
        self.text.as_shell()
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, paths: &Resolved) -> Outcome {
        let timeout = match self.check(cx) {
            Ok(t) => t,
            Err(message) => return Outcome::of(ToolResult::failed(message)),
        };
        let ws = cx.workspace;
        let workdir: Option<PathBuf> = paths.reads.first().map(|p| ws.host_path(&p.target));
        let cwd = workdir
            .clone()
            .unwrap_or_else(|| ws.launch_dir().to_path_buf());
        let command = self.text.as_shell();
        let (assessment, line) = self.text.assess(cx, &cwd);
        let summary = assessment.executable.clone();
        let class = Some(assessment.class);
        let with_class = |mut r: ToolResult| {
            r.class = class;
            Outcome {
                target: Some(assessment.executable.clone()),
                ..Outcome::of(r)
            }
        };

        let (decision, access) = self.decide(cx, &assessment, &command);
        // Attack: a command that found the sandbox down is followed by one that writes; nothing it
        // wrote could be checked, so it does not run. Decided before anyone is asked.
        if let (Some(why), Decision::Allow(caps) | Decision::Confirm(caps)) =
            (cx.sandbox_down(), &decision)
            && caps.contains(Capability::WorkspaceWrite)
        {
            return with_class(ToolResult::denied(&sandbox_down_refusal(&summary, &why)));
        }
        let targets = assessment.write_targets.clone();
        let request_for = |caps: spear_core::CapabilitySet| {
            // What the operator (and the workspace's policy file) requires of every command: it
            // only narrows where the command may run, and grants nothing.
            let profile = ExecutionProfile::from_granted(caps, assessment.host_reads.clone())
                .with_required(cx.policy.config().required);
            let mut request = CommandRequest::new(line.clone(), profile);
            request.workdir.clone_from(&workdir);
            request.timeout = timeout;
            request.cancel.clone_from(&cx.cancel);
            request.class = class;
            request.stdin.clone_from(&self.stdin);
            if let Some(sink) = &cx.progress {
                let tee: std::sync::Arc<dyn spear_sandbox::OutputTee> =
                    std::sync::Arc::new(crate::progress::ProgressTee::new(sink.clone()));
                request.tee = Some(tee);
            }
            request
        };
        if let Some(issue) = cx.issue_grant {
            return with_class(issue_grant(issue, &decision, cx, &request_for, &targets));
        }
        let (granted, grant) =
            match self.approve(cx, &decision, &assessment, &command, &request_for, &targets) {
                Ok(approved) => approved,
                Err(refused) => return with_class(refused),
            };
        // What the person approved (the command named it): its commit lets it through.
        let approved_host_config = if matches!(decision, Decision::Confirm(_)) {
            assessment.host_config.clone()
        } else {
            Vec::new()
        };
        let request = request_for(granted);
        let watch = request.profile.workspace_write();
        // Changes found around this command must be this command's: no other writer runs meanwhile.
        let writing = watch.then(|| {
            cx.writing
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        // Attack: two writers at once would charge each other's changes (and undo them).
        if let (true, Some(job)) = (watch, cx.jobs.writable_pending()) {
            return with_class(ToolResult::denied(&Refusal::job_writing(summary, job)));
        }
        if let Some(refused) = watch.then(|| refuse_writing(cx, &summary)).flatten() {
            return with_class(refused);
        }
        let prepared = match prepare(cx, request, access, grant.as_ref(), targets, &summary) {
            Ok(p) => p,
            Err(boxed) => {
                let (refused, sandbox_down) = *boxed;
                return Outcome {
                    sandbox_down,
                    ..with_class(refused)
                };
            }
        };

        if self.background {
            drop(writing);
            return Outcome {
                target: Some(summary.clone()),
                ..start_job(cx, prepared, &summary, granted, approved_host_config)
            };
        }

        let report = prepared.start();
        let ran = Ran {
            command: &command,
            class: assessment.class,
            granted,
            approved: &approved_host_config,
        };
        let outcome = self.finish(cx, report, &ran, summary);
        drop(writing);
        outcome
    }
}

/// What a foreground command ran as, for the question about host-run configuration it wrote.
struct Ran<'r> {
    command: &'r str,
    class: spear_core::CommandClass,
    granted: spear_core::CapabilitySet,
    /// Host-run configuration approved before it ran.
    approved: &'r [spear_core::HostConfigWrite],
}

impl CommandCall {
    /// A foreground command's end: its staged writes judged and committed (host-run
    /// configuration it wrote asked about, in the command's setting), and the outcome the
    /// router records.
    fn finish(
        &self,
        cx: &CallContext<'_>,
        report: spear_runtime::RunReport,
        ran: &Ran<'_>,
        summary: String,
    ) -> Outcome {
        let asker = cx.confirmer.map(|inner| InSetting {
            inner,
            setting: self.setting(cx),
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
        if let Some(note) =
            crate::read_only::read_only_note(cx.capabilities.mode(), granted, &result)
        {
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
}

/// The rules a command is judged by in this session (the decision layer's whole configuration:
/// the target policy, the host paths named, what the sandbox shows, ...): what a grant binds of
/// them.
fn judged_by(cx: &CallContext<'_>) -> String {
    cx.policy.config().fingerprint()
}

/// Prepares `request` for this call (see [`spear_runtime::PreparedProcess`]): nothing is spawned
/// when it fails, and a grant that does not hold is the refusal it is. A missing mechanism is the
/// sandbox being down (the second value), as when a run finds it.
fn prepare(
    cx: &CallContext<'_>,
    request: CommandRequest,
    access: spear_core::authority::AccessPolicy,
    grant: Option<&(String, &GrantAuthority)>,
    targets: Vec<PathBuf>,
    summary: &str,
) -> Result<PreparedProcess, Box<(ToolResult, Option<String>)>> {
    let options = PrepareOptions {
        request,
        execution: Some(cx.execution.clone()),
        access,
        grant: grant.map(|(token, authority)| GrantCheck { token, authority }),
        targets,
        rules: judged_by(cx),
    };
    cx.runner
        .prepare(options, std::time::SystemTime::now())
        .map_err(|e| {
            Box::new(match e {
                PrepareError::Grant(e) => (
                    ToolResult::denied(&Refusal::grant_refused(summary, e)),
                    None,
                ),
                PrepareError::Sandbox(e) if e.means_sandbox_down() => {
                    let why = e.to_string();
                    (ToolResult::failed(why.clone()), Some(why))
                }
                e => (ToolResult::failed(e.to_string()), None),
            })
        })
}

/// `spear grant`: the grant an operator issues for the command as it would run now, bound to no
/// execution (any later `spear exec --grant` of exactly it, in the same place, uses it once).
/// Nothing runs. A command that runs without an approval in this mode needs no grant, and one
/// the mode refuses gets none.
fn issue_grant(
    issue: &crate::IssueGrant,
    decision: &Decision,
    cx: &CallContext<'_>,
    request_for: &dyn Fn(spear_core::CapabilitySet) -> CommandRequest,
    targets: &[PathBuf],
) -> ToolResult {
    match decision {
        Decision::Deny(refusal) => ToolResult::denied(refusal),
        Decision::Allow(_) => ToolResult::failed(format!(
            "this command runs without an approval in {} mode, so it needs no grant; run it with `spear exec`",
            cx.capabilities.mode().as_str().to_uppercase()
        )),
        Decision::Confirm(caps) => {
            let binding =
                match cx
                    .runner
                    .binding(&request_for(*caps), None, targets, &judged_by(cx))
                {
                    Ok(b) => b,
                    Err(e) => return ToolResult::failed(e.to_string()),
                };
            match issue
                .authority
                .issue(&binding, issue.ttl, std::time::SystemTime::now())
            {
                Ok(token) => ToolResult {
                    stdout: format!("{token}\n"),
                    ..ToolResult::new(ToolStatus::Ok)
                },
                Err(e) => ToolResult::failed(e.to_string()),
            }
        }
    }
}

/// The argv as one shell-quoted line: what a confirmation shows for an argv command.
pub fn shell_words(argv: &[String]) -> String {
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

/// Why a command that may write must not run now, if it must not: a command of this turn found
/// the sandbox down, or the filesystem of spear's state is below its free-space floor (what the
/// command wrote could not be checkpointed, and the disk is the user's).
fn refuse_writing(cx: &CallContext<'_>, summary: &str) -> Option<ToolResult> {
    if let Some(why) = cx.sandbox_down() {
        return Some(ToolResult::denied(&sandbox_down_refusal(summary, &why)));
    }
    match cx
        .checkpoints
        .map(spear_runtime::CheckpointStore::check_floor)
    {
        Some(Err(e)) => Some(ToolResult::failed(e.to_string())),
        _ => None,
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
    fn a_script_is_shown_as_written_and_an_argv_quoted() {
        assert_eq!(CommandText::Script("a | b".into()).as_shell(), "a | b");
        assert_eq!(
            CommandText::Argv(vec!["echo".into(), "a b".into()]).as_shell(),
            "echo 'a b'"
        );
    }
}
