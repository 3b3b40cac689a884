//! spear's runtime: the boundary between decisions and the sandbox.
//!
//! What this crate guarantees:
//! - [`CommandRunner`] is the only way a command reaches a sandbox. It turns an
//!   [`spear_core::ExecutionProfile`] and a [`spear_workspace::Workspace`] into a
//!   [`spear_sandbox::BwrapSpec`], owns the resource contracts and the sandbox instance, and
//!   returns one honest [`spear_core::ToolResult`]. Nothing above it knows about memory limits,
//!   unit names or cgroup paths.
//! - A writable command writes into layers of its own ([`Staging`]); nothing it wrote reaches the
//!   workspace before the caller's judge has seen it, and what the judge refuses never does.
//! - A command's `/tmp`, `/var/tmp` and home are private: fresh for every command, or, for a
//!   runner in [`ScratchMode::Session`], one area of the session's own ([`SessionScratch`]) that no
//!   other session sees, measured against its cap after every command and removed with the
//!   runner. Commits carry the host's git identity and nothing else of its git configuration
//!   ([`GitIdentity`]).
//! - Operator tokens ([`TokenStore`]) are kept as SHA-256 hashes in spear's state directory
//!   (owner-only, changed atomically under a lock, never in a sandbox's view); a token is checked
//!   against the file as it is at each request, so a revocation holds from the next one. A
//!   server's own tokens, handed to it at start ([`TokenFile`]), are held as hashes too.
//! - A session on an operator's template gets its own writable copy-on-write view of it
//!   ([`RolloutWorkspace`]), ready at once; the template is only ever read. Its changes come back
//!   as a binary git patch, and its view is unmounted (checked) and removed when it closes, or by
//!   the next sweep when its process died.
//!
//! Its face is the list below: the modules are private, and what the crates above use is
//! exported here by name.

mod audit;
mod checkpoint;
mod evidence;
mod git_identity;
mod grant;
mod host;
mod host_dirs;
mod jobs;
mod owned_dir;
mod prepared;
mod refusals;
mod result_store;
mod rollout;
mod runner;
mod scratch;
mod staging;
mod token_file;
mod tokens;

pub use audit::{
    AuditError, AuditEvent, AuditLogger, AuditRecord, WebAudit, WebHop,
    default_path as default_audit_path, rfc3339_seconds,
};
pub use checkpoint::quota::{bytes_text, free_bytes};
pub use checkpoint::{
    CheckpointError, CheckpointStore, EntryState, StoreQuota, TurnCheckpoint, UndoError,
    UndoReport, list_stores as list_checkpoint_stores, store_usage as checkpoint_store_usage,
    stores_base as checkpoint_stores_base,
};
pub use evidence::{EVIDENCE_KEPT, Evidence, EvidenceLog, Verdict};
pub use git_identity::GitIdentity;
pub use grant::{
    Binding, GrantAuthority, GrantKey, Issuer, MemoryLedger, NetworkRoute, OPERATOR_GRANT_TTL,
    SESSION_GRANT_TTL, SandboxBinding, command_digest, nonce as grant_nonce, rotate_user_key,
};
pub use host::HostSnapshot;
pub use host_dirs::{HostDirError, host_home, host_xdg_config_home, host_xdg_state_home};
pub use jobs::{Job, Jobs};
pub use prepared::{GrantCheck, PrepareError, PrepareOptions, PreparedProcess};
pub use refusals::{REFUSAL_REPEATS_VAR, RefusalTracker, Repeat, repeats_from_env};
pub use result_store::{
    ResultStore, SESSION_IDLE, StoreError, default_base as results_base, sweep_idle_sessions,
    usage_of as results_usage,
};
pub use rollout::{
    KEPT_PREFIX as ROLLOUT_KEPT_PREFIX, RolloutError, RolloutWorkspace, sweep as sweep_rollouts,
};
pub use runner::{
    CommandRequest, CommandRunner, HostOffer, RunReport, RunnerConfig, ScratchMode, sandbox_view,
};
pub use scratch::{DEFAULT_SESSION_CAP, SessionScratch, default_base as scratch_base};
/// What a request runs: defined in spear-core, built by the decision layer, executed unchanged.
pub use spear_core::CommandLine;
pub use staging::{CommitReport, Judge, MAX_COMMITTED_CHANGES, Proposed, Staging, TrackedRules};
pub use token_file::{TOKEN_FILE_MAX, TOKEN_FILE_MIN, TokenFile, TokenFileError};
pub use tokens::{
    TOKEN_PREFIX, TOKENS_FILE, TokenError, TokenInfo, TokenRefusal, TokenSpec, TokenStore,
};
