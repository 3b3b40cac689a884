//! The target policy as the judge of a command's staged writes: what a file tool may not write,
//! a command may not either, and git's indirections on top ([`spear_policy::GitIndirections`]).

use std::sync::Arc;

use spear_core::{Refusal, ToolResult};
use spear_policy::{CommandPolicy, GitIndirections};
use spear_runtime::checkpoint::{CheckpointStore, EntryState};
use spear_runtime::staging::{Judge, Proposed, Staging, TrackedRules};
use spear_workspace::{Location, Workspace, WorkspaceFs};

/// Judges staged changes with one policy; make one per commit (it caches what the host's
/// repositories name).
pub struct TargetJudge<'a> {
    policy: &'a CommandPolicy,
    git: GitIndirections,
}

impl<'a> TargetJudge<'a> {
    /// A judge with `policy`'s target rules.
    pub fn new(policy: &'a CommandPolicy) -> Self {
        TargetJudge {
            policy,
            git: policy.git_indirections(),
        }
    }
}

impl Judge for TargetJudge<'_> {
    fn judge(&self, change: &Proposed<'_>) -> Result<(), Refusal> {
        self.policy.judge_change(
            &self.git,
            change.loc,
            change.kind,
            change.tracked,
            change.staged,
            change.host,
        )
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
/// changes, conflicts). Nothing staged, nothing to do.
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
    result: &mut ToolResult,
) -> Committed {
    let Some(staging) = staged else {
        mark_target_policy(result, false);
        return Committed {
            captured: Vec::new(),
            unknown: false,
        };
    };
    let judge = TargetJudge::new(policy);
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
