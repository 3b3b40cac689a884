//! The tool layer: what a coding agent may call, and the one router every call passes through.
//!
//! What this crate guarantees:
//! - Every call, whichever client sent it (the MCP server, the CLI, a Rust program), goes through
//!   [`ToolRouter`]: the caller's role view, schema validation (unknown fields are an error), the
//!   hard gates (request scope, target policy, the tool's modes, a sandbox found down), the
//!   mode's authorisation, checkpoints before every mutation, evidence, audit, the output preview,
//!   and repeated-refusal stopping.
//! - Every command (a `terminal` call, a background job as it starts, [`CommandCall`]s from
//!   `spear exec` and `spear grant`) is decided in one place, the command gates the router calls
//!   for each: classification, authorization, escalation, approval and grants, the sandbox found
//!   down, the write lock; the terminal runs only what passed.
//! - Every path a tool touches is resolved by `Workspace::resolve` and opened by `WorkspaceFs`
//!   beneath a root's directory fd; nothing is opened by name from `/`.
//! - A refusal attaches to the file, not the tool: a path `write_file` may not write, `patch`,
//!   `delete_file` and every command in the terminal may not either.
//! - The web pair (`fetch_url`, `search_internet`) is listed only where the session has the web
//!   (`[web] enabled`, not `--no-network`; a search backend for the search), never by a request's
//!   wording; every fetch goes through the session's one `spear_web::Fetcher` and its checks, and a
//!   call that names a path to write (`save_as`) passes every gate of a file write before
//!   anything is fetched.

mod command;
mod confirm;
mod context;
mod envelope;
mod escalation;
mod exposure;
mod gates;
mod judge;
pub mod patch;
mod preview;
mod progress;
mod read_only;
mod registry;
mod router;
pub mod search;
mod spec;
mod tool;
mod tools;
mod turn;
mod web;

pub use command::{CommandCall, CommandText, CommandTimeout, shell_words};
pub use confirm::{confirmation_text, hidden_characters_warning, host_config_lines};
pub use context::{CallContext, ToolLimits};
pub use envelope::{ToolResultEnvelope, output_schema};
pub use escalation::{
    EscalationAsk, JUSTIFICATION_FIELD, JUSTIFICATION_MAX_CHARS, JUSTIFICATION_MIN_CHARS,
    PERMISSIONS_FIELD,
};
pub use exposure::{PairState, Role, ToolExposurePolicy, UnknownRole, WebExposure, Withdrawn};
pub use gates::sandbox_down_refusal;
pub use judge::{Asking, Committed, TargetJudge, commit_staged};
pub use progress::{
    CallOptions, IssueGrant, PROGRESS_INTERVAL, PresentedGrant, Progress, ProgressSink,
};
pub use registry::ToolRegistry;
pub use router::{RouterConfig, RouterError, RouterStores, ToolObserver, ToolRouter, random_id};
pub use spec::{ALL_MODES, Annotations, Effect, ToolSpec, WRITING_MODES, WebTool};
pub use tool::{Access, Call, JobPhase, JobState, Outcome, Prepared, Resolved, Tool, parse_args};

pub use web::{
    ADD_SEARCH, NextSlice, SearchHit, SearchReport, WebDetail, WebPair, WebReport, redact_url,
};
