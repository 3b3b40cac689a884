//! What a tool declares about itself: its name, its argument schema, what it does to the
//! workspace, and the execution modes it may run in.

use schemars::JsonSchema;
use serde::Serialize;
use spear_core::ExecutionMode;

/// What a tool does to the workspace, which decides which roles see it and what a mode asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads only.
    Read,
    /// Creates, changes or deletes files.
    Write,
    /// Runs a command; what it may do is decided per call by the classifier and the mode.
    Run,
}

/// A tool's declaration. The schema is generated from the Rust type its arguments are parsed
/// into, so the published schema and the validation cannot disagree; unknown fields are an error.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    /// The name clients call it by.
    pub name: &'static str,
    /// What it does, for the model.
    pub description: &'static str,
    /// The JSON schema of its arguments.
    pub input_schema: serde_json::Value,
    /// What it does to the workspace.
    pub effect: Effect,
    /// The modes it may run in; in any other the call is refused before anything is read.
    pub modes: &'static [ExecutionMode],
    /// Hints for clients (MCP tool annotations).
    pub annotations: Annotations,
    /// Which tool of the web pair it is, if it is one: offered only where the session has the
    /// web (see [`crate::ToolExposurePolicy::withdrawn`]).
    pub web: Option<WebTool>,
    /// Its calls run no command, reach no network, ask nobody and wait for no lock that a
    /// command holds: their time is spear's own reading, bounded by the tool's caps. A server may
    /// run such a call on its event loop instead of handing it to a thread of its own.
    pub quick: bool,
}

/// The tools of the web pair, which run in spear's own process and reach the internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WebTool {
    /// `fetch_url`: needs the web pair.
    Fetch,
    /// `search_internet`: needs the web pair and a search backend.
    Search,
}

/// What a client may assume about a tool, as MCP's tool annotations say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[allow(clippy::struct_excessive_bools)]
pub struct Annotations {
    /// It changes nothing (MCP `readOnlyHint`).
    pub read_only: bool,
    /// It may overwrite or remove what was there (MCP `destructiveHint`).
    pub destructive: bool,
    /// The same call twice has no more effect than once (MCP `idempotentHint`).
    pub idempotent: bool,
    /// It may reach beyond the workspace, such as the network (MCP `openWorldHint`).
    pub open_world: bool,
}

impl ToolSpec {
    /// A spec whose schema is generated from `A`.
    pub fn new<A: JsonSchema>(
        name: &'static str,
        description: &'static str,
        effect: Effect,
        modes: &'static [ExecutionMode],
        idempotent: bool,
        open_world: bool,
    ) -> Self {
        let schema = schemars::schema_for!(A);
        ToolSpec {
            name,
            description,
            input_schema: schema.to_value(),
            effect,
            modes,
            annotations: Annotations {
                read_only: effect == Effect::Read,
                destructive: effect != Effect::Read,
                idempotent,
                open_world,
            },
            web: None,
            quick: false,
        }
    }
}

/// Every mode.
pub const ALL_MODES: &[ExecutionMode] =
    &[ExecutionMode::Safe, ExecutionMode::Ask, ExecutionMode::Auto];

/// The modes that may change the workspace.
pub const WRITING_MODES: &[ExecutionMode] = &[ExecutionMode::Ask, ExecutionMode::Auto];
