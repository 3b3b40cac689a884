//! The interface between the router and a tool: a tool parses its arguments into a prepared call
//! that declares what it will touch; the router gates that, then runs it.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use spear_core::known_secrets::KnownSecrets;
use spear_core::{CapabilitySet, ExecutionMode, ToolResult};
use spear_runtime::EntryState;
use spear_workspace::{Location, ResolvedPath};

use crate::command::CommandCall;
use crate::context::CallContext;
use crate::spec::{Effect, ToolSpec};
use crate::web::WebDetail;

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
    pub web: Option<WebDetail>,
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

    /// The outcome as the client and the audit log get it: every secret of `known` in its text,
    /// its `web` and its audit record redacted (a URL a person approved, a page that echoes one).
    pub(crate) fn redact(&mut self, known: &KnownSecrets) {
        if known.is_empty() {
            return;
        }
        let scrub = |s: &mut String| {
            if let std::borrow::Cow::Owned(clean) = known.redact(s) {
                *s = clean;
            }
        };
        let result = &mut self.result;
        scrub(&mut result.stdout);
        scrub(&mut result.stderr);
        if let Some(reason) = result.reason.as_mut() {
            scrub(reason);
        }
        if let Some(target) = self.target.as_mut() {
            scrub(target);
        }
        match self.web.as_mut() {
            Some(WebDetail::Fetch { url, .. }) => scrub(url),
            Some(WebDetail::Search { hits, .. }) => {
                for hit in hits {
                    scrub(&mut hit.title);
                    scrub(&mut hit.url);
                    scrub(&mut hit.snippet);
                }
            }
            None => {}
        }
        if let Some(audit) = self.web_audit.as_mut() {
            scrub(&mut audit.url);
            if let Some(url) = audit.final_url.as_mut() {
                scrub(url);
            }
            for hop in &mut audit.hops {
                scrub(&mut hop.url);
            }
        }
    }
}

/// A tool: its declaration and how it turns arguments into a call.
pub trait Tool: Send + Sync {
    /// The declaration.
    fn spec(&self) -> &ToolSpec;

    /// Parses `args` (a schema error names the field) into a call that says what it touches.
    fn prepare(&self, args: serde_json::Value) -> Result<Call, String>;
}

/// A call whose arguments are valid, waiting for the router's gates: a command, or another
/// tool's call.
pub enum Call {
    /// A command (the terminal's calls; `spear exec` and `spear grant` hand the router one
    /// directly): after the router's own gates, the command gates decide it (`crate::gates`) and
    /// the terminal runs what they cleared.
    Command(CommandCall),
    /// Any other tool's call: it runs itself ([`Prepared::run`]) once the router's gates let it.
    Tool(Box<dyn Prepared>),
}

impl Call {
    /// The paths it names. A command names one, its working directory, which it reads.
    pub fn access(&self) -> Access {
        match self {
            Call::Command(command) => Access {
                reads: command.workdir.iter().cloned().collect(),
                writes: Vec::new(),
                removes: Vec::new(),
            },
            Call::Tool(prepared) => prepared.access(),
        }
    }

    /// What it acts on, for the audit log and refusal counting. A command's summary comes from
    /// its classification, in [`Outcome::target`]; until then (a call refused before it is read:
    /// a bad working directory) it is only a command.
    pub fn target(&self) -> String {
        match self {
            Call::Command(_) => "(a command)".to_owned(),
            Call::Tool(prepared) => prepared.target(),
        }
    }

    /// Exactly what it will do, for a confirmation in ASK: a command as one line of shell.
    pub fn describe(&self) -> String {
        match self {
            Call::Command(command) => command.text.as_shell(),
            Call::Tool(prepared) => prepared.describe(),
        }
    }
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
    fn validate(self) -> Result<Call, String>;
}

/// The [`Tool`] of a [`ToolArgs`] type.
pub struct Typed<A> {
    spec: ToolSpec,
    args: PhantomData<fn() -> A>,
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

    fn prepare(&self, args: serde_json::Value) -> Result<Call, String> {
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
