//! The interface between the router and a tool: a tool parses its arguments into a prepared call
//! that declares what it will touch; the router gates that, then runs it.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use spear_core::{CapabilityPolicy, CapabilitySet, ExecutionMode, ToolResult};
use spear_policy::{CommandPolicy, Confirmer};
use spear_runtime::CommandRunner;
use spear_runtime::EntryState;
use spear_sandbox::CancelToken;
use spear_workspace::{Location, ResolvedPath, Workspace, WorkspaceFs};

use crate::{Effect, ToolSpec};

/// The paths a call names, as the caller wrote them. The router resolves every one (request
/// scope), applies the target policy to every write, and refuses the whole call if one fails.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// Paths read.
    pub reads: Vec<String>,
    /// Paths created, changed or deleted (both ends of a move); a link at the last component is
    /// followed.
    pub writes: Vec<String>,
    /// Entries removed as they are: a link at the last component is the entry, wherever it
    /// points (resolved with `Workspace::resolve_entry`).
    pub removes: Vec<String>,
}

/// [`Access`] after resolution, in the same order.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// Paths read.
    pub reads: Vec<ResolvedPath>,
    /// Paths written, then entries removed, in the order [`Access`] names them.
    pub writes: Vec<ResolvedPath>,
}

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
    /// Whether a person approved sending what this call sends ([`Prepared::outgoing`]) although
    /// it carries a known secret (ASK): its first request goes out as approved.
    pub send_approved: bool,
}

/// What a prepared call returns.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The result.
    pub result: ToolResult,
    /// Capabilities the call was granted (for the audit record).
    pub granted: CapabilitySet,
    /// Entries the call changed that it captured itself, with their state before (a command's
    /// changes, as its commit found them). File tools leave this empty: the router captures what
    /// they declared.
    pub captured: Vec<(Location, EntryState)>,
    /// The executable summary of the command it ran, when it ran one.
    pub ran: Option<String>,
    /// What the call acted on, when only running it could tell (a command's executable summary,
    /// which the classifier makes as it reads the command); replaces [`Prepared::target`].
    pub target: Option<String>,
    /// Why the sandbox is down, when this call found it so.
    pub sandbox_down: Option<String>,
    /// The call may have changed files, but what it changed could not be found.
    pub changes_unknown: bool,
    /// The background job the call started or reported on.
    pub job: Option<JobState>,
    /// For the end of a background job: the number of the call that started it. Its run verifies
    /// the turn only if nothing changed after that call.
    pub ran_since: Option<u64>,
    /// For a call of the web pair: what the client is given besides the text (the envelope's
    /// `web`).
    pub web: Option<crate::web::WebDetail>,
    /// For a call of the web pair: what the audit record says it fetched or was refused.
    pub web_audit: Option<spear_runtime::WebAudit>,
}

/// A background job as a result reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, JsonSchema)]
pub struct JobState {
    /// Its id.
    pub id: String,
    /// Whether it still runs.
    pub state: JobPhase,
}

/// Where a background job is in its life, as results spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobPhase {
    /// It runs; its output so far can be read.
    Running,
    /// It has ended, and its end was reported in this result.
    Exited,
}

impl JobPhase {
    /// The name results use.
    pub const fn as_str(self) -> &'static str {
        match self {
            JobPhase::Running => "running",
            JobPhase::Exited => "exited",
        }
    }
}

impl std::fmt::Display for JobPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl JobState {
    /// A job that is running.
    pub fn running(id: &str) -> Self {
        JobState {
            id: id.to_owned(),
            state: JobPhase::Running,
        }
    }

    /// A job that has ended.
    pub fn exited(id: &str) -> Self {
        JobState {
            id: id.to_owned(),
            state: JobPhase::Exited,
        }
    }
}

impl Outcome {
    /// An outcome with only a result.
    pub fn of(result: ToolResult) -> Self {
        Outcome {
            result,
            granted: CapabilitySet::default(),
            captured: Vec::new(),
            ran: None,
            target: None,
            sandbox_down: None,
            changes_unknown: false,
            job: None,
            ran_since: None,
            web: None,
            web_audit: None,
        }
    }
}

/// A tool: its declaration and how it turns arguments into a call.
pub trait Tool: Send + Sync {
    /// The declaration.
    fn spec(&self) -> &ToolSpec;

    /// Parses `args` (a schema error names the field) into a call that says what it touches.
    fn prepare(&self, args: serde_json::Value) -> Result<Box<dyn Prepared>, String>;
}

/// A call whose arguments are valid, waiting for the router's gates.
pub trait Prepared: Send {
    /// The paths it names.
    fn access(&self) -> Access;

    /// What it acts on, for the audit log and refusal counting: a path as written, or a command.
    fn target(&self) -> String;

    /// Exactly what it will do, for a confirmation in ASK.
    fn describe(&self) -> String;

    /// What it would send off the host in a request of spear's own (`fetch_url`'s URL,
    /// `search_internet`'s query): checked for the secrets spear holds before it runs (SAFE and
    /// AUTO refuse, ASK asks). Default: nothing.
    fn outgoing(&self) -> Vec<String> {
        Vec::new()
    }

    /// Slow work a write needs before it takes the session's write lock: run once the call is
    /// authorised (after ASK's answer), only for a call that writes, and kept for
    /// [`Prepared::run`]. `fetch_url`'s download for `save_as` happens here, so a slow server
    /// holds up no other write of the session. Default: nothing.
    fn before_writing(&mut self, _cx: &CallContext<'_>) {}

    /// Runs it. `paths` is [`Prepared::access`] resolved, in the same order.
    fn run(self: Box<Self>, cx: &CallContext<'_>, paths: &Resolved) -> Outcome;
}

/// A tool whose arguments are one Rust type: the type's JSON schema is the tool's, parsing into
/// it is the schema check, and [`ToolArgs::validate`] makes the call. [`Typed`] turns it into a
/// [`Tool`].
pub trait ToolArgs: DeserializeOwned + JsonSchema + 'static {
    /// The name clients call the tool by.
    const NAME: &'static str;
    /// What it does, for the model.
    const DESCRIPTION: &'static str;
    /// What it does to the workspace.
    const EFFECT: Effect;
    /// The modes it may run in.
    const MODES: &'static [ExecutionMode];
    /// The same call twice has no more effect than once.
    const IDEMPOTENT: bool = false;
    /// It may reach beyond the workspace (the network).
    const OPEN_WORLD: bool = false;
    /// A tool of [`Effect::Read`] whose calls may name a path to write ([`Access::writes`], as
    /// `fetch_url`'s `save_as` does): such a call is gated, checkpointed and run as a write (the
    /// target policy, the mode's authorisation, SAFE's refusal), and the tool is not published as
    /// read-only.
    const WRITES_WHEN_ASKED: bool = false;
    /// Which tool of the web pair it is, if it is one.
    const WEB: Option<crate::WebTool> = None;
    /// Whether its calls are quick ([`ToolSpec::quick`]).
    const QUICK: bool = false;

    /// Checks what the schema cannot (ranges, empty strings) and makes the call.
    fn validate(self) -> Result<Box<dyn Prepared>, String>;
}

/// The [`Tool`] of a [`ToolArgs`] type.
pub struct Typed<A> {
    spec: ToolSpec,
    args: PhantomData<fn() -> A>,
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

impl<A: ToolArgs> Typed<A> {
    /// The tool.
    pub fn new() -> Self {
        let mut spec = ToolSpec::new::<A>(
            A::NAME,
            A::DESCRIPTION,
            A::EFFECT,
            A::MODES,
            A::IDEMPOTENT,
            A::OPEN_WORLD,
        );
        if A::WRITES_WHEN_ASKED {
            // A client must not take it for read-only: a call may replace a file.
            spec.annotations.read_only = false;
            spec.annotations.destructive = true;
        }
        spec.web = A::WEB;
        spec.quick = A::QUICK;
        Typed {
            spec,
            args: PhantomData,
        }
    }
}

impl<A: ToolArgs> Default for Typed<A> {
    fn default() -> Self {
        Typed::new()
    }
}

impl<A: ToolArgs> Tool for Typed<A> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, args: serde_json::Value) -> Result<Box<dyn Prepared>, String> {
        parse_args::<A>(A::NAME, args)?.validate()
    }
}

/// Parses a tool's arguments. Errors say which field is wrong, as serde names it.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: serde_json::Value) -> Result<T, String> {
    let args = match args {
        serde_json::Value::Null => serde_json::Value::Object(serde_json::Map::new()),
        serde_json::Value::Object(_) => args,
        // serde would take an array as the fields in order; a call names its fields.
        other => {
            return Err(format!(
                "invalid arguments for {tool}: expected a JSON object of named fields, got {}",
                match other {
                    serde_json::Value::Array(_) => "an array",
                    serde_json::Value::String(_) => "a string",
                    serde_json::Value::Number(_) => "a number",
                    _ => "a boolean",
                }
            ));
        }
    };
    // serde names unknown and missing fields itself, but not the field a wrong type is in.
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            format!("invalid arguments for {tool}: {}", e.inner())
        } else {
            format!("invalid arguments for {tool}: `{path}`: {}", e.inner())
        }
    })
}
