//! The envelope every call returns, whichever client made it (the CLI prints it, the MCP server
//! returns it as structured content), and its JSON schema.

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

    /// Shows every control character of every text the envelope carries escaped, and counts them
    /// in the result's `escaped` by field: the result's own text fields, the tool name as the
    /// client gave it (`tool`), and the web pair's URL, content type, titles and snippets (`web`).
    /// Idempotent: an envelope already escaped holds no control character.
    ///
    /// Attack stopped: a fetched page, a file, a command's output or a file name carrying OSC 52
    /// (clipboard write), CSI or C1 sequences that a client shows on a terminal.
    pub fn escape_controls(&mut self) {
        use spear_core::visible::escape_controls_in as esc;
        self.result.escape_controls();
        let tool = esc(&mut self.tool);
        self.result.count_escaped("tool", tool);
        for r in [&mut self.output_ref, &mut self.stderr_ref]
            .into_iter()
            .flatten()
        {
            let n = esc(r);
            self.result.count_escaped("output_ref", n);
        }
        if let Some(job) = &mut self.job {
            let n = esc(&mut job.id);
            self.result.count_escaped("job", n);
        }
        if let Some(web) = &mut self.web {
            let n: usize = web.texts_mut().into_iter().map(esc).sum();
            self.result.count_escaped("web", n);
        }
    }

    /// Whether any text of the envelope holds a control character [`Self::escape_controls`]
    /// would escape (read only: nothing is copied).
    pub fn has_controls(&self) -> bool {
        use spear_core::visible::has_controls as has;
        let r = &self.result;
        has(&r.stdout)
            || has(&r.stderr)
            || r.reason.as_deref().is_some_and(has)
            || r.changed_paths.iter().any(|p| has(p))
            || has(&self.tool)
            || [&self.output_ref, &self.stderr_ref]
                .into_iter()
                .flatten()
                .any(|x| has(x))
            || self.job.as_ref().is_some_and(|j| has(&j.id))
            || self
                .web
                .as_ref()
                .is_some_and(crate::WebDetail::has_controls)
    }

    /// Whether the call ended ok.
    pub fn is_ok(&self) -> bool {
        self.result.status == spear_core::ToolStatus::Ok
    }
}

/// The JSON schema of what every tool returns (the envelope): published as the MCP tools' output
/// schema.
pub fn output_schema() -> serde_json::Value {
    // The schema of what is sent: a field only serialized (the refusal's `rule`) is in it.
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<ToolResultEnvelope>()
        .to_value()
}
