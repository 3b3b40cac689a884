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
pub fn commit_staged(
    staged: Option<&Arc<Staging>>,
    ws: &Workspace,
    fs: &WorkspaceFs,
    policy: &CommandPolicy,
    store: Option<&CheckpointStore>,
    tracked: &TrackedRules,
    result: &mut ToolResult,
) -> Committed {
    let Some(staging) = staged else {
        return Committed {
            captured: Vec::new(),
            unknown: false,
        };
    };
    let judge = TargetJudge::new(policy);
    let report = staging.commit(ws, fs, &judge, store, tracked);
    report.apply_to(result);
    Committed {
        unknown: report.unreadable.is_some(),
        captured: report.captured,
    }
}
