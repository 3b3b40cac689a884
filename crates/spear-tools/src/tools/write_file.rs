//! `write_file {path, content}`: creates or replaces a file.
//!
//! Missing parent directories are created; the content goes to a new temporary file beside the
//! entry and is renamed over it, so a reader never sees half a file and a link at the entry is
//! replaced, never written through (Attack: a symlink or hard link planted to make the harness
//! write outside). The router has already checked the path against the target policy.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ToolResult, ToolStatus};

use crate::Effect;
use crate::context::CallContext;
use crate::spec::WRITING_MODES;
use crate::tool::{Access, Call, Outcome, Prepared, Resolved, ToolArgs, Typed};
use spear_core::ExecutionMode;

/// Lines of the new content a confirmation shows.
const SHOWN_LINES: usize = 40;

/// Arguments of `write_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file, relative to the workspace or absolute under it.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// The `write_file` tool.
pub type WriteFile = Typed<WriteFileArgs>;

impl ToolArgs for WriteFileArgs {
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Create or replace a file of the workspace with `content` (parent directories are \
        created). Prefer `patch` for changing part of an existing file.";
    const EFFECT: Effect = Effect::Write;
    const MODES: &'static [ExecutionMode] = WRITING_MODES;
    const IDEMPOTENT: bool = true;

    fn validate(self) -> Result<Call, String> {
        Ok(Call::Tool(Box::new(self)))
    }
}

impl Prepared for WriteFileArgs {
    fn access(&self) -> Access {
        Access {
            reads: Vec::new(),
            writes: vec![self.path.clone()],
            removes: Vec::new(),
        }
    }

    fn target(&self) -> String {
        self.path.clone()
    }

    fn describe(&self) -> String {
        let lines = self.content.lines().count();
        let mut text = format!(
            "write_file {} ({} bytes, {lines} lines):\n",
            self.path,
            self.content.len()
        );
        for line in self.content.lines().take(SHOWN_LINES) {
            text.push_str("  | ");
            text.push_str(line);
            text.push('\n');
        }
        if lines > SHOWN_LINES {
            let _ = writeln!(text, "  | ... {} more lines", lines - SHOWN_LINES);
        }
        text
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, paths: &Resolved) -> Outcome {
        let Some(path) = paths.writes.first() else {
            return Outcome::of(ToolResult::failed("write_file got no path"));
        };
        let label = cx.workspace.label(&path.entry);
        match cx.fs.write(path, self.content.as_bytes()) {
            Ok(done) => {
                let mut result = ToolResult::new(ToolStatus::Ok);
                result.exit_code = Some(0);
                result.stdout = format!(
                    "{} {label} ({} bytes)\n",
                    if done.created { "created" } else { "wrote" },
                    self.content.len()
                );
                result.changed_paths = vec![label];
                Outcome::of(result)
            }
            Err(e) => Outcome::of(super::fs_failure(&e)),
        }
    }
}
