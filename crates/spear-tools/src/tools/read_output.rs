//! `read_output {ref, offset?, limit?}`: the rest of an output the preview cut, from the result
//! store. Only the session that stored an output can read it; its content is hashed again on
//! every read and refused if it no longer matches the ref.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ToolResult, ToolStatus};

use crate::Effect;
use crate::context::CallContext;
use crate::spec::ALL_MODES;
use crate::tool::{Access, Call, Outcome, Prepared, Resolved, ToolArgs, Typed};
use spear_core::ExecutionMode;

/// Characters returned when the call names no limit.
const DEFAULT_LIMIT: u64 = 50_000;

/// Arguments of `read_output`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadOutputArgs {
    /// The ref a cut output named.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Where to start, in bytes of the stored output.
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many bytes to return (default, and at most, about 50000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The `read_output` tool.
pub type ReadOutput = Typed<ReadOutputArgs>;

impl ToolArgs for ReadOutputArgs {
    const NAME: &'static str = "read_output";
    const DESCRIPTION: &'static str = "Read more of an output that was cut: pass the `ref` the cut output named, and an \
        `offset` and `limit` in bytes.";
    const EFFECT: Effect = Effect::Read;
    const MODES: &'static [ExecutionMode] = ALL_MODES;
    const IDEMPOTENT: bool = true;
    const QUICK: bool = true;

    fn validate(self) -> Result<Call, String> {
        Ok(Call::Tool(Box::new(self)))
    }
}

impl Prepared for ReadOutputArgs {
    fn access(&self) -> Access {
        Access::default()
    }

    fn target(&self) -> String {
        format!("output {}", self.reference)
    }

    fn describe(&self) -> String {
        format!("read_output {}", self.reference)
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, _paths: &Resolved) -> Outcome {
        let Some(store) = cx.results else {
            return Outcome::of(ToolResult::failed(
                "this session keeps no outputs, so there is nothing to read",
            ));
        };
        let offset = self.offset.unwrap_or(0);
        // A chunk fits the preview with its trailing note, so the router never cuts it again.
        let most = u64::try_from(cx.limits.preview_chars.saturating_sub(200))
            .unwrap_or(1)
            .max(1);
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, most);
        match store.read(&self.reference, offset, limit) {
            Ok(chunk) => {
                let mut result = ToolResult::new(ToolStatus::Ok);
                result.exit_code = Some(0);
                result.stdout = chunk.text;
                if let Some(next) = chunk.next_offset {
                    result.truncated = true;
                    let _ = writeln!(
                        result.stdout,
                        "\n[bytes {}-{} of {}; read on with offset {next}]",
                        chunk.offset, next, chunk.total
                    );
                }
                Outcome::of(result)
            }
            Err(e) => Outcome::of(ToolResult {
                reason: Some(e.to_string()),
                ..ToolResult::new(ToolStatus::NotFound)
            }),
        }
    }
}
