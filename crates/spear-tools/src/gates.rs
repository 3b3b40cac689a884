//! The command gates: the ordered checks every command passes before it runs, in one place. The
//! router calls [`pass`] for every command, whichever front end asked for it (a `terminal` call, a
//! background job as it starts, `spear exec`, `spear grant`), after its own gates (the caller's
//! view, the tool's modes, request scope of the working directory); the terminal runs what passed
//! (`crate::tools::terminal::run`). Nothing else decides whether, and how, a command runs.
//!
//! In order; the first that refuses ends the call, before anything is spawned:
//! 1. **shape** ([`shape`]): a timeout in bounds, an escalation only of what this session can be
//!    given, a background job only without a timeout and only where jobs outlive the call;
//! 2. **classify** ([`classify`]): the decision layer reads the command as it would run in its
//!    working directory (its class, capabilities, write targets, host reads, executable);
//! 3. **authorize** ([`decide`]): the assessment against the mode's capability matrix, or an
//!    escalation by its own rules (a refusal of one is audited);
//! 4. **sandbox down**: a command that would write, after one of this turn found the sandbox
//!    down, is refused before anyone is asked;
//! 5. **approval** ([`approve`]): what the mode asks about is asked (the command shown in its
//!    setting), or an operator's grant presented with it stands for the answer; a person's
//!    approval becomes a grant bound to this one execution. `spear grant` stops here and issues
//!    its grant instead ([`issue_grant`]);
//! 6. **write lock** ([`write_lock`]): a command that runs writable holds the session's write
//!    lock from here to its end;
//! 7. **job writing**: no writable command while a writable background job is pending;
//! 8. **sandbox down, free space** ([`refuse_writing`]): checked again under the lock, and the
//!    state's free-space floor;
//! 9. **grant and mechanisms** ([`prepare`]): the runner prepares the process; a grant that does
//!    not bind exactly this command refuses it, a missing sandbox mechanism marks the sandbox down.
//!
//! Where the front ends differ, on purpose, the difference is in what they hand the gates, each
//! read by one gate: a script or an argv ([`CommandCall::text`], classified as bash or word by
//! word), an escalation ([`CommandCall::escalation`], decided and asked about by its own rules and
//! never covered by a presented grant), a background job ([`CommandCall::background`]: the same
//! gates; the terminal lets go of the write lock once the job has started, its writes stay staged
//! until its end is read, and gate 7 keeps every other writer out meanwhile), an operator's grant
//! (`spear exec --grant`, [`CallContext::presented`]) and the issuing of one (`spear grant`,
//! [`CallContext::issue_grant`]). A job's end (`terminal_output`, `terminal_kill`) decides nothing
//! new: it commits what the job staged under [`write_lock`].

use std::path::{Path, PathBuf};
use std::sync::{MutexGuard, PoisonError};
use std::time::Duration;

use spear_core::authority::AccessPolicy;
use spear_core::{
    Capability, CapabilitySet, CommandAssessment, CommandClass, ExecutionProfile, HostConfigWrite,
    Refusal, ToolResult, ToolStatus,
};
use spear_policy::{
    Authorization, CommandPolicy, Confirmer, Decision, access_for, authorize, escalation_access,
};
use spear_runtime::{
    CommandLine, CommandRequest, GrantCheck, PrepareError, PrepareOptions, PreparedProcess,
};
use spear_runtime::{GrantAuthority, SESSION_GRANT_TTL};

use crate::command::{CommandCall, CommandText, CommandTimeout, InSetting};
use crate::context::CallContext;
use crate::tool::{Outcome, Resolved};

/// A command the gates let through: its process prepared (checked, nothing spawned), the write
/// lock when it runs writable, and what its run and its record need.
pub(crate) struct Cleared<'c> {
    /// The process, prepared: its grant verified, every mechanism present; not started.
    pub(crate) process: PreparedProcess,
    /// The session's write lock, held when the command runs writable.
    pub(crate) writing: Option<MutexGuard<'c, ()>>,
    /// The command as one line of shell, as it was shown and approved.
    pub(crate) command: String,
    /// Its executable summary (the audit record's target).
    pub(crate) summary: String,
    /// Its class.
    pub(crate) class: CommandClass,
    /// The capabilities it runs with.
    pub(crate) granted: CapabilitySet,
    /// The host-run configuration a person approved it to write (its commit lets that through).
    pub(crate) approved_host_config: Vec<HostConfigWrite>,
    /// Where and how it runs, as a person asked about it sees it.
    pub(crate) setting: String,
}

/// Passes `call` (a command of the tool `tool`, its working directory resolved in `paths`)
/// through every gate in order. Returns what may run, or the outcome the call ends with (`Err`):
/// the refusal of the first gate that refuses, or for `spear grant` the grant issued instead of a
/// run.
pub(crate) fn pass<'c>(
    cx: &CallContext<'c>,
    tool: &str,
    call: &CommandCall,
    paths: &Resolved,
) -> Result<Cleared<'c>, Box<Outcome>> {
    let timeout =
        shape(call, cx).map_err(|message| Box::new(Outcome::of(ToolResult::failed(message))))?;
    let ws = cx.workspace;
    let workdir: Option<PathBuf> = paths.reads.first().map(|p| ws.host_path(&p.target));
    let cwd = workdir
        .clone()
        .unwrap_or_else(|| ws.launch_dir().to_path_buf());
    let command = call.text.as_shell();
    let (assessment, line) = classify(&call.text, cx.policy, &cwd);
    let summary = assessment.executable.clone();
    let class = Some(assessment.class);
    let refused = |mut r: ToolResult| {
        r.class = class;
        Box::new(Outcome {
            target: Some(assessment.executable.clone()),
            ..Outcome::of(r)
        })
    };

    let (decision, access) = decide(cx, tool, call, &assessment, &command);
    if let Some(result) = refused_before_asking(cx, &decision, &summary) {
        return Err(refused(result));
    }
    let targets = assessment.write_targets.clone();
    let request_for = |caps: CapabilitySet| {
        // What the operator (and the workspace's policy file) requires of every command: it
        // only narrows where the command may run, and grants nothing.
        let profile = ExecutionProfile::from_granted(caps, assessment.host_reads.clone())
            .with_required(cx.policy.config().required);
        let mut request = CommandRequest::new(line.clone(), profile);
        request.workdir.clone_from(&workdir);
        request.timeout = timeout;
        request.cancel.clone_from(&cx.cancel);
        request.class = class;
        request.stdin.clone_from(&call.stdin);
        if let Some(sink) = &cx.progress {
            let tee: std::sync::Arc<dyn spear_sandbox::OutputTee> =
                std::sync::Arc::new(crate::progress::ProgressTee::new(sink.clone()));
            request.tee = Some(tee);
        }
        request
    };
    if let Some(issue) = cx.issue_grant {
        return Err(refused(issue_grant(
            issue,
            &decision,
            cx,
            &request_for,
            &targets,
        )));
    }
    let setting = call.setting(
        cx.limits.terminal_timeout_secs,
        cx.runner.config().default_timeout,
    );
    let question = Question {
        tool,
        call,
        decision: &decision,
        assessment: &assessment,
        command: &command,
        setting: &setting,
    };
    let (granted, grant) = approve(cx, &question, &request_for, &targets).map_err(&refused)?;
    // What the person approved (the command named it): its commit lets it through.
    let approved_host_config = if matches!(decision, Decision::Confirm(_)) {
        assessment.host_config.clone()
    } else {
        Vec::new()
    };
    let request = request_for(granted);
    let watch = request.profile.workspace_write();
    // Changes found around this command must be this command's: no other writer runs meanwhile.
    let writing = watch.then(|| write_lock(cx));
    // Attack: two writers at once would charge each other's changes (and undo them).
    if let (true, Some(job)) = (watch, cx.jobs.writable_pending()) {
        return Err(refused(ToolResult::denied(&Refusal::job_writing(
            summary, job,
        ))));
    }
    if let Some(refusal) = watch.then(|| refuse_writing(cx, &summary)).flatten() {
        return Err(refused(refusal));
    }
    let process =
        prepare(cx, request, access, grant.as_ref(), targets, &summary).map_err(|boxed| {
            let (refusal, sandbox_down) = *boxed;
            let mut ended = refused(refusal);
            ended.sandbox_down = sandbox_down;
            ended
        })?;
    Ok(Cleared {
        process,
        writing,
        command,
        summary,
        class: assessment.class,
        granted,
        approved_host_config,
        setting,
    })
}

/// Gate 1: the checks of the call's shape that need the session. Returns the timeout the request
/// gets (`None`: the runner's default), or why the call is invalid. Mistakes stopped: a timeout
/// past the longest (a hung command holding the session), an escalation the session's schema
/// cannot express (a client that does not validate), a background job with a timeout it would
/// not keep, or one in a client that exits at once (its job would die with it).
fn shape(call: &CommandCall, cx: &CallContext<'_>) -> Result<Option<Duration>, String> {
    let timeout = timeout(call, cx)?;
    if let Some(ask) = &call.escalation {
        crate::escalation::check_in(ask, cx.capabilities)?;
    }
    if call.background && matches!(call.timeout, CommandTimeout::Asked(_)) {
        return Err(
            "invalid arguments for terminal: a background job has no timeout; omit `timeout`, and stop the job with terminal_kill".into(),
        );
    }
    if call.background && !cx.background_jobs {
        return Err(
            "background jobs live as long as a session, and this client makes one call and exits; run the command in the foreground, or through `spear mcp`".into(),
        );
    }
    Ok(timeout)
}

/// The timeout the request gets (`None`: the runner's default), or why the call is invalid.
fn timeout(call: &CommandCall, cx: &CallContext<'_>) -> Result<Option<Duration>, String> {
    let secs = match call.timeout {
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

/// Gate 2: the command as it will run in `cwd` (a script with its pipelines rewritten by
/// [`spear_policy::tolerate_sigpipe`]), built once by the policy, and its assessment of exactly
/// that. Attack: a command judged by another text than the one that runs, or in another
/// directory than the one it runs in.
fn classify(
    text: &CommandText,
    policy: &CommandPolicy,
    cwd: &Path,
) -> (CommandAssessment, CommandLine) {
    let prepared = match text {
        CommandText::Script(script) => policy.prepare_script(script, cwd),
        CommandText::Argv(argv) => policy.prepare_argv(argv, cwd),
    };
    (prepared.assessment, prepared.line)
}

/// Gate 3: what the mode decides for the call, and the access it is prepared with. An escalating
/// call is decided by its own rules (never allowed without asking; a refusal audited). Attack: a
/// command given a capability its mode does not grant (SAFE refuses, ASK asks, AUTO grants).
fn decide(
    cx: &CallContext<'_>,
    tool: &str,
    call: &CommandCall,
    assessment: &CommandAssessment,
    command: &str,
) -> (Decision, AccessPolicy) {
    if let Some(ask) = &call.escalation {
        let decision = crate::escalation::decide(cx, tool, ask, assessment, command);
        let access = escalation_access(&decision, cx.capabilities);
        return (decision, access);
    }
    let decision = spear_policy::decide(assessment, cx.capabilities, command);
    let access = access_for(&decision, cx.capabilities);
    (decision, access)
}

/// What a person is asked about a command: the call, what the mode decided, and how the command
/// is shown.
struct Question<'a> {
    /// The tool the command came through (its audit records name it).
    tool: &'a str,
    /// The call.
    call: &'a CommandCall,
    /// What the mode decided ([`decide`]).
    decision: &'a Decision,
    /// The command's assessment ([`classify`]).
    assessment: &'a CommandAssessment,
    /// The command as one line of shell.
    command: &'a str,
    /// Where and how it runs ([`CommandCall::setting`]).
    setting: &'a str,
}

/// The capabilities a call is given, and the grant (its token and who verifies it) that stands
/// for its approval when it needed one.
type Approved<'c> = (CapabilitySet, Option<(String, &'c GrantAuthority)>);

/// Gate 5: the capabilities the call is given and the grant that stands for its approval: an
/// operator's grant presented with it, or one minted for the person's answer (bound to what was
/// read before the question was asked); none when the mode allows it outright. Attack: a
/// directory or a target swapped while the person reads the question, so that what runs is not
/// what was approved.
fn approve<'c>(
    cx: &CallContext<'c>,
    question: &Question<'_>,
    request_for: &dyn Fn(CapabilitySet) -> CommandRequest,
    targets: &[PathBuf],
) -> Result<Approved<'c>, ToolResult> {
    match (question.decision, cx.presented) {
        // An operator's grant stands for the approval: nobody is asked, and the command runs
        // only if the grant binds exactly it (checked when it is prepared). Never for an
        // escalation, which only the person asked now can allow.
        (Decision::Confirm(caps), Some(presented)) if question.call.escalation.is_none() => Ok((
            *caps,
            Some((presented.token.clone(), &*presented.authority)),
        )),
        (Decision::Confirm(caps), None) => {
            // What an approval is given for, read before anyone is asked: a directory or
            // target swapped while the person reads the question is not what was approved.
            let bound = cx
                .runner
                .binding(
                    &request_for(*caps),
                    Some(cx.execution.clone()),
                    targets,
                    &judged_by(cx),
                )
                .map_err(|e| ToolResult::failed(e.to_string()))?;
            let granted = ask(cx, question, Some(bound.place()))?;
            let token = cx
                .grants
                .issue(&bound, SESSION_GRANT_TTL, std::time::SystemTime::now())
                .map_err(|e| ToolResult::failed(e.to_string()))?;
            Ok((granted, Some((token, cx.grants))))
        }
        _ => ask(cx, question, None).map(|caps| (caps, None)),
    }
}

/// Authorises the call against the mode, asking the confirmer (with the command's setting added
/// to the question) when the decision says to; the refusal's result otherwise. An escalation
/// (decided by `crate::escalation::decide`) is asked about as one.
fn ask(
    cx: &CallContext<'_>,
    question: &Question<'_>,
    bound: Option<String>,
) -> Result<CapabilitySet, ToolResult> {
    let asker = cx.confirmer.map(|inner| InSetting {
        inner,
        setting: question.setting.to_owned(),
        bound,
    });
    let asker = asker.as_ref().map(|a| a as &dyn Confirmer);
    let authorized = match (&question.call.escalation, question.decision) {
        (Some(_), Decision::Deny(r)) => Authorization::Denied(r.clone()),
        (Some(ask), Decision::Allow(caps) | Decision::Confirm(caps)) => crate::escalation::ask(
            cx,
            question.tool,
            ask,
            question.assessment,
            question.command,
            *caps,
            asker,
        ),
        (None, _) => authorize(
            question.assessment,
            cx.capabilities,
            question.command,
            asker,
        ),
    };
    match authorized {
        Authorization::Granted(caps) => Ok(caps),
        refused => Err(refused
            .refusal_result()
            .unwrap_or_else(|| ToolResult::new(ToolStatus::Denied))),
    }
}

/// Gate 6: the session's write lock, held by every call that writes. Taken by a command that runs
/// writable (for its whole run) and by a background job's end (for its commit). Mistake stopped:
/// two writers at once, each charged with (and undoing) the other's changes, and checkpoints
/// taken out of order.
pub(crate) fn write_lock<'c>(cx: &CallContext<'c>) -> MutexGuard<'c, ()> {
    let writing: &'c std::sync::Mutex<()> = cx.writing;
    writing.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Gate 8: why a command that may write must not run now, if it must not: a command of this turn
/// found the sandbox down (checked again under the lock: one running meanwhile may have found it
/// so), or the filesystem of spear's state is below its free-space floor (what the command wrote
/// could not be checkpointed, and the disk is the user's).
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

/// The rules a command is judged by in this session (the decision layer's whole configuration:
/// the target policy, the host paths named, what the sandbox shows, ...): what a grant binds of
/// them.
fn judged_by(cx: &CallContext<'_>) -> String {
    cx.policy.config().fingerprint()
}

/// Gate 9: prepares `request` for this call (see [`spear_runtime::PreparedProcess`]): nothing is
/// spawned when it fails, and a grant that does not hold is the refusal it is. A missing mechanism
/// is the sandbox being down (the second value), as when a run finds it. Attack: a grant replayed
/// for another command, directory or rule set, and a command run without a mechanism the sandbox
/// relies on.
fn prepare(
    cx: &CallContext<'_>,
    request: CommandRequest,
    access: AccessPolicy,
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

/// `spear grant` (gate 5's other end): the grant an operator issues for the command as it would
/// run now, bound to no execution (any later `spear exec --grant` of exactly it, in the same
/// place, uses it once). Nothing runs. A command that runs without an approval in this mode needs
/// no grant, and one the mode refuses gets none.
fn issue_grant(
    issue: &crate::IssueGrant,
    decision: &Decision,
    cx: &CallContext<'_>,
    request_for: &dyn Fn(CapabilitySet) -> CommandRequest,
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

/// What is refused before anyone is asked. Attack: a command that found the sandbox down is
/// followed by one that writes; nothing it wrote could be checked, so it does not run. And what
/// the landlock backend cannot hold ([`landlock_cannot_hold`]).
fn refused_before_asking(
    cx: &CallContext<'_>,
    decision: &Decision,
    summary: &str,
) -> Option<ToolResult> {
    if let (Some(why), Decision::Allow(caps) | Decision::Confirm(caps)) =
        (cx.sandbox_down(), decision)
        && caps.contains(Capability::WorkspaceWrite)
    {
        return Some(ToolResult::denied(&sandbox_down_refusal(summary, &why)));
    }
    landlock_cannot_hold(cx, decision).map(ToolResult::failed)
}

/// Why the landlock backend, when it is what confines this session's commands, cannot hold a
/// command granted `decision` (a write to the workspace, the network), if it cannot: decided
/// before anyone is asked, so that nobody approves what would be refused anyway.
fn landlock_cannot_hold(cx: &CallContext<'_>, decision: &Decision) -> Option<String> {
    let (Decision::Allow(caps) | Decision::Confirm(caps)) = decision else {
        return None;
    };
    if !matches!(
        cx.runner.sandbox().confinement(),
        Ok(spear_sandbox::Confinement::Landlock { .. })
    ) {
        return None;
    }
    if caps.contains(Capability::WorkspaceWrite) {
        Some(spear_sandbox::LandlockError::Writable.to_string())
    } else if caps.contains(Capability::Network) {
        Some(spear_sandbox::LandlockError::Networked.to_string())
    } else {
        None
    }
}

/// The refusal of a write after a command found the sandbox down (`why`): a command that would
/// write (gates 4 and 8), and a file tool's write (the router's target gate). Attack: writes
/// after the sandbox was found broken, which nothing could check.
pub fn sandbox_down_refusal(what: &str, why: &str) -> Refusal {
    Refusal::sandbox_down(what, why)
}
