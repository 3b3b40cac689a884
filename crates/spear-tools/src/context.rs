//! What a call may use while it runs: the session's workspace, policy, runner, jobs, stores and
//! locks, the mode's grant, the caller's confirmer and cancellation, and the bounds the tools
//! keep to. The router makes one for each call; a tool, the command gates and the terminal read
//! it, and nothing in it outlives the call.

use spear_core::{CapabilityPolicy, ToolResult};
use spear_policy::{CommandPolicy, Confirmer};
use spear_runtime::CommandRunner;
use spear_sandbox::CancelToken;
use spear_workspace::{Workspace, WorkspaceFs};

/// Bounds the tools keep to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// Largest file `read_file` reads (bytes); larger files are read in windows.
    pub read_max_bytes: u64,
    /// Characters of a result's output kept in the preview; the rest goes to the result store.
    pub preview_chars: usize,
    /// Default `max_results` of `search_files`.
    pub search_results: usize,
    /// Default terminal timeout (seconds).
    pub terminal_timeout_secs: u64,
    /// Longest terminal timeout a call may ask for (seconds).
    pub terminal_max_timeout_secs: u64,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            read_max_bytes: 1 << 20,
            preview_chars: 50_000,
            search_results: 200,
            terminal_timeout_secs: 180,
            terminal_max_timeout_secs: 600,
        }
    }
}

/// What a prepared call may use while it runs.
pub struct CallContext<'a> {
    /// The workspace.
    pub workspace: &'a Workspace,
    /// The decision layer (classification, target policy).
    pub policy: &'a CommandPolicy,
    /// File operations beneath the roots.
    pub fs: &'a WorkspaceFs,
    /// The sandbox runner.
    pub runner: &'a std::sync::Arc<CommandRunner>,
    /// The session's background jobs.
    pub jobs: &'a spear_runtime::Jobs,
    /// What the mode (and the caller's role) grants.
    pub capabilities: CapabilityPolicy,
    /// Who is asked in ASK; `None` cancels what needs asking.
    pub confirmer: Option<&'a dyn Confirmer>,
    /// Cancellation from the client.
    pub cancel: Option<CancelToken>,
    /// Progress reports to the client, when it asked for them.
    pub progress: Option<crate::ProgressSink>,
    /// Bounds.
    pub limits: ToolLimits,
    /// The session's current turn; read whether the sandbox is down through
    /// [`CallContext::sandbox_down`] when deciding (a command running meanwhile may mark it).
    pub(crate) turn: &'a std::sync::Mutex<crate::turn::TurnState>,
    /// Which entries a command's commit names and checkpoints (not `.git`, not ignored).
    pub tracked: &'a spear_runtime::TrackedRules,
    /// Where prior contents are kept, when checkpoints are kept.
    pub checkpoints: Option<&'a spear_runtime::CheckpointStore>,
    /// Where long outputs are kept, when they are.
    pub results: Option<&'a spear_runtime::ResultStore>,
    /// Held by every call that writes. A command that runs writable takes it for its whole run
    /// (file tools already hold it).
    pub writing: &'a std::sync::Mutex<()>,
    /// Whether commands may run as background jobs in this session.
    pub background_jobs: bool,
    /// This call's number in the session (calls are numbered from 1, in the order they start).
    pub call_seq: u64,
    /// The execution id a grant minted for this call binds (the session and the call's number).
    pub execution: String,
    /// Mints and verifies the grants of this session's approvals (a key only this process has).
    pub grants: &'a spear_runtime::GrantAuthority,
    /// The operator's grant presented with the call, if any.
    pub presented: Option<&'a crate::PresentedGrant>,
    /// Set by `spear grant`: issue a grant for the command instead of running it.
    pub issue_grant: Option<&'a crate::IssueGrant>,
    /// The audit log, when there is one: an escalation records its request and its answer.
    pub(crate) audit: Option<&'a spear_runtime::AuditLogger>,
    /// The session's id, for those records.
    pub(crate) session: &'a str,
    /// The session's web pair (its fetcher and search backend, or why it has none).
    pub web: &'a crate::WebPair,
    /// Whether a person approved sending what this call sends ([`Prepared::outgoing`](crate::Prepared::outgoing)) although
    /// it carries a known secret (ASK): its first request goes out as approved.
    pub send_approved: bool,
}

impl CallContext<'_> {
    /// Why the sandbox is down now, if a command of this turn found it so.
    pub fn sandbox_down(&self) -> Option<String> {
        self.turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .sandbox_down()
            .map(str::to_owned)
    }

    /// The session's current turn, locked.
    pub(crate) fn lock_turn(&self) -> std::sync::MutexGuard<'_, crate::turn::TurnState> {
        self.turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Judges and commits what a command staged into this call's workspace, with its checkpoint
    /// store and tracked rules, asking about host-run configuration as `asking` says (see
    /// [`crate::commit_staged`]).
    pub fn commit(
        &self,
        staged: Option<&std::sync::Arc<spear_runtime::Staging>>,
        asking: crate::Asking<'_>,
        result: &mut ToolResult,
    ) -> crate::Committed {
        crate::commit_staged(
            staged,
            self.workspace,
            self.fs,
            self.policy,
            self.checkpoints,
            self.tracked,
            self.cancel.as_ref(),
            asking,
            result,
        )
    }
}
