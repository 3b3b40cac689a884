//! The target policy as the judge of a command's staged writes: what a file tool may not write,
//! a command may not either, and git's indirections on top ([`spear_policy::GitIndirections`]).
//! Host-run configuration a command wrote is let through only when a person approved it: before
//! the command ran (the command named it), or in one question once its writes are judged.

use std::sync::Arc;

use spear_core::{CapabilitySet, CommandClass, HostConfigWrite, Refusal, ToolResult};
use spear_policy::{CommandPolicy, ConfirmRequest, Confirmation, Confirmer, GitIndirections};
use spear_runtime::{CheckpointStore, EntryState};
use spear_runtime::{Judge, Proposed, Staging, TrackedRules};
use spear_workspace::{Location, Workspace, WorkspaceFs};

/// Who approves host-run configuration a command wrote, and what they are shown.
#[derive(Clone, Copy)]
pub struct Asking<'a> {
    /// Who is asked; `None`: nobody can be (the writes are kept out).
    pub confirmer: Option<&'a dyn Confirmer>,
    /// Host-run configuration a person already approved for this command (it named it before
    /// it ran): let through without asking again.
    pub approved: &'a [HostConfigWrite],
    /// The command as the person is shown it.
    pub command: &'a str,
    /// Its class.
    pub class: CommandClass,
    /// The capabilities it ran with.
    pub capabilities: CapabilitySet,
}

impl Asking<'_> {
    /// Nobody to ask and nothing approved: host-run configuration is kept out.
    pub const NOBODY: Asking<'static> = Asking {
        confirmer: None,
        approved: &[],
        command: "",
        class: CommandClass::ShellComplex,
        capabilities: CapabilitySet::EMPTY,
    };
}

/// Judges staged changes with one policy; make one per commit (it caches what the host's
/// repositories name).
pub struct TargetJudge<'a> {
    policy: &'a CommandPolicy,
    git: GitIndirections,
    asking: Asking<'a>,
}

impl<'a> TargetJudge<'a> {
    /// A judge with `policy`'s target rules, asking as `asking` says about host-run
    /// configuration.
    pub fn new(policy: &'a CommandPolicy, asking: Asking<'a>) -> Self {
        TargetJudge {
            policy,
            git: policy.git_indirections(),
            asking,
        }
    }
}

impl Judge for TargetJudge<'_> {
    fn judge(&self, change: &Proposed<'_>) -> Result<(), Refusal> {
        let verdict = self.policy.judge_change(
            &self.git,
            change.loc,
            change.kind,
            change.tracked,
            change.staged,
            change.host,
        );
        match &verdict {
            // Approved before the command ran: the person was shown this path.
            Err(r @ Refusal::HostRunConfig { .. })
                if self.asking.approved.iter().any(|w| w.path == r.subject()) =>
            {
                Ok(())
            }
            _ => verdict,
        }
    }

    /// One question for every host-run write the command left: approved, they reach the
    /// workspace; declined, dismissed, unanswerable, or answerable only in a later call (the
    /// staged writes cannot wait for it), none of them does.
    fn approve(&self, asked: &[&Refusal]) -> Result<(), Refusal> {
        let mut writes: Vec<HostConfigWrite> = Vec::new();
        for r in asked {
            if let Some(w) = HostConfigWrite::of_refusal(r)
                && !writes.contains(&w)
            {
                writes.push(w);
            }
        }
        // A directory made for what it holds is said by what it holds.
        let holds = |dir: &HostConfigWrite| {
            writes
                .iter()
                .any(|w| w.path.starts_with(&format!("{}/", dir.path)))
        };
        let shown: Vec<HostConfigWrite> = writes.iter().filter(|w| !holds(w)).cloned().collect();
        let writes = shown;
        let what = summary(self.asking.command);
        let Some(confirmer) = self.asking.confirmer else {
            return Err(Refusal::no_confirmer(what));
        };
        let request = ConfirmRequest {
            command: self.asking.command.to_owned(),
            class: self.asking.class,
            capabilities: self.asking.capabilities,
            reason: "the command ran in the sandbox and wrote host-run configuration there; none \
                     of it has reached the workspace"
                .to_owned(),
            setting: None,
            escalation: None,
            bound: None,
            host_config: writes,
            after_run: true,
        };
        match confirmer.confirm(&request) {
            Confirmation::Approved => Ok(()),
            Confirmation::Declined | Confirmation::Dismissed => Err(Refusal::declined(what)),
            Confirmation::Unavailable | Confirmation::Deferred => Err(confirmer.unanswered(what)),
        }
    }
}

/// The first line of a command, as a refusal names it.
fn summary(command: &str) -> String {
    let line = command.lines().next().unwrap_or("");
    if command.lines().nth(1).is_some() {
        format!("{line} ...")
    } else {
        line.to_owned()
    }
}

/// What a commit leaves for the caller: the state before of what changed (for the turn's
/// checkpoint), and whether the changes could not be read at all.
pub struct Committed {
    /// Tracked entries that changed, with their state before.
    pub captured: Vec<(Location, EntryState)>,
    /// The staged changes could not be read; nothing was committed.
    pub unknown: bool,
}

/// Judges and commits what a command staged, and says so in `result` (changed paths, refused
/// changes, conflicts); host-run configuration goes through `asking`. Nothing staged, nothing
/// to do.
// Each argument is a separate store or rule of the call's context.
#[allow(clippy::too_many_arguments)]
pub fn commit_staged(
    staged: Option<&Arc<Staging>>,
    ws: &Workspace,
    fs: &WorkspaceFs,
    policy: &CommandPolicy,
    store: Option<&CheckpointStore>,
    tracked: &TrackedRules,
    cancel: Option<&spear_sandbox::CancelToken>,
    asking: Asking<'_>,
    result: &mut ToolResult,
) -> Committed {
    let Some(staging) = staged else {
        mark_target_policy(result, false);
        return Committed {
            captured: Vec::new(),
            unknown: false,
        };
    };
    let judge = TargetJudge::new(policy, asking);
    let stop = || cancel.is_some_and(spear_sandbox::CancelToken::is_cancelled);
    let report = staging.commit(ws, fs, &judge, store, tracked, &stop);
    report.apply_to(result);
    mark_target_policy(result, report.unreadable.is_none());
    Committed {
        unknown: report.unreadable.is_some(),
        captured: report.captured,
    }
}

/// Adds `target_policy` to the guarantees of a command the sandbox ran, when it holds: every
/// staged change was read and judged (`judged`), or nothing was staged and the sandbox's write
/// boundary held, so no write of it could reach the workspace (its roots were read-only, or what
/// it staged was discarded unjudged). A result of nothing run has no guarantees to add to.
fn mark_target_policy(result: &mut ToolResult, judged: bool) {
    use spear_core::Guarantee;
    if let Some(g) = result.guarantees.as_mut()
        && (judged || g.enforced.contains(Guarantee::WriteBoundary))
    {
        g.enforced.insert(Guarantee::TargetPolicy);
    }
}
