//! The envelope every call returns, whichever client made it: the CLI prints it, the MCP server
//! returns it as structured content.

use serde::Serialize;
use spear_core::ToolResult;

/// One call's answer: the [`ToolResult`] fields, flattened, and what the router adds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ToolResultEnvelope {
    /// The tool called.
    pub tool: String,
    /// The result (`status`, `exit_code`, `stdout`, `stderr`, `changed_paths`, `reason`, `class`,
    /// `duration_ms`, `truncated`).
    #[serde(flatten)]
    pub result: ToolResult,
    /// The stored whole stdout when the preview cut it: read the rest with `read_output`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_ref: Option<String>,
    /// The stored whole stderr when the preview cut it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_ref: Option<String>,
    /// True when this call stopped the turn (the same refusal asked for too many times).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub turn_stopped: bool,
    /// The background job this call started or reported on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<crate::JobState>,
    /// For `fetch_url` and `search_internet`: the answer's URL, status, type and what to pass to
    /// read on, or the search results, as data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web: Option<crate::WebDetail>,
}

impl ToolResultEnvelope {
    /// An envelope around `result` with nothing added.
    pub fn new(tool: &str, result: ToolResult) -> Self {
        ToolResultEnvelope {
            tool: tool.to_owned(),
            result,
            output_ref: None,
            stderr_ref: None,
            turn_stopped: false,
            job: None,
            web: None,
        }
    }

    /// Whether the call ended ok.
    pub fn is_ok(&self) -> bool {
        self.result.status == spear_core::ToolStatus::Ok
    }
}
