//! The state of a session's current turn, in one place: what the router counts and remembers
//! from one call of the turn to the next, and forgets when a new turn begins.

use spear_runtime::RefusalTracker;

/// Whether the sandbox can be trusted for the rest of the turn.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum SandboxMark {
    /// No command of this turn found it broken.
    #[default]
    Up,
    /// A command found it missing or broken (why): nothing written since could be checked, so
    /// every write is refused until a new turn.
    Down(String),
}

/// The state of the session's current turn.
#[derive(Debug)]
pub(crate) struct TurnState {
    /// Its id (the checkpoint `spear undo` undoes).
    pub(crate) id: String,
    /// The refusals counted in it.
    pub(crate) refusals: RefusalTracker,
    /// What its calls ran and changed, for the verdict.
    pub(crate) evidence: spear_runtime::EvidenceLog,
    /// The number of this turn's last call that changed something.
    pub(crate) last_change_call: Option<u64>,
    /// How many of this turn's calls have changed something, in the order they ended.
    pub(crate) changes_done: u64,
    /// Why the turn was stopped (the same refusal asked for again and again), when it was.
    pub(crate) stopped: Option<String>,
    /// Whether a command of the turn found the sandbox down.
    pub(crate) sandbox: SandboxMark,
    /// The commands (`crate::escalation::command_key`) whose escalation the user declined in
    /// this turn: each is refused again without asking.
    pub(crate) rejected_escalations: std::collections::HashSet<String>,
}

impl TurnState {
    /// A new turn `id`, stopping at `repeats` identical refusals.
    pub(crate) fn new(id: String, repeats: u32) -> Self {
        TurnState {
            id,
            refusals: RefusalTracker::new(repeats),
            evidence: spear_runtime::EvidenceLog::default(),
            last_change_call: None,
            changes_done: 0,
            stopped: None,
            sandbox: SandboxMark::Up,
            rejected_escalations: std::collections::HashSet::new(),
        }
    }

    /// Why the sandbox is down, if a command of this turn found it so.
    pub(crate) fn sandbox_down(&self) -> Option<&str> {
        match &self.sandbox {
            SandboxMark::Up => None,
            SandboxMark::Down(why) => Some(why),
        }
    }
}
