//! `delete_file {path}`: removes a file or a link. A link is removed, not what it points at
//! (Attack: a link to a file outside the workspace, planted so that the harness deletes it); a
//! directory is refused, and so is a git repository's `HEAD` ([`spear_policy::git_core`]).

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ToolResult, ToolStatus};

use crate::Effect;
use crate::context::CallContext;
use crate::spec::WRITING_MODES;
use crate::tool::{Access, Call, Outcome, Prepared, Resolved, ToolArgs, Typed};
use spear_core::ExecutionMode;

/// Arguments of `delete_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteFileArgs {
    /// The file or link, relative to the workspace or absolute under it.
    pub path: String,
}

/// The `delete_file` tool.
pub type DeleteFile = Typed<DeleteFileArgs>;

impl ToolArgs for DeleteFileArgs {
    const NAME: &'static str = "delete_file";
    const DESCRIPTION: &'static str = "Delete a file of the workspace. A symbolic link is removed, not its target; \
        directories are refused.";
    const EFFECT: Effect = Effect::Write;
    const MODES: &'static [ExecutionMode] = WRITING_MODES;
    const IDEMPOTENT: bool = true;

    fn validate(self) -> Result<Call, String> {
        Ok(Call::Tool(Box::new(self)))
    }
}

impl Prepared for DeleteFileArgs {
    fn access(&self) -> Access {
        Access {
            reads: Vec::new(),
            writes: Vec::new(),
            removes: vec![self.path.clone()],
        }
    }

    fn target(&self) -> String {
        self.path.clone()
    }

    fn describe(&self) -> String {
        format!("delete_file {}", self.path)
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, paths: &Resolved) -> Outcome {
        let Some(path) = paths.writes.first() else {
            return Outcome::of(ToolResult::failed("delete_file got no path"));
        };
        let label = cx.workspace.label(&path.entry);
        // A repository's `HEAD` is a file too (its `objects` and `refs` are directories, which
        // this tool does not remove).
        if let Err(r) = cx.policy.check_removal(cx.fs, &path.entry) {
            return Outcome::of(ToolResult::denied(&r));
        }
        match cx.fs.delete(path) {
            Ok(()) => {
                let mut result = ToolResult::new(ToolStatus::Ok);
                result.exit_code = Some(0);
                result.stdout = format!("deleted {label}\n");
                result.changed_paths = vec![label];
                Outcome::of(result)
            }
            Err(spear_workspace::FsError::IsDirectory { label }) => Outcome::of(ToolResult {
                reason: Some(format!(
                    "{label} is a directory; delete_file removes files and links only. Remove a directory with the terminal (`rm -r {label}`)"
                )),
                ..ToolResult::new(ToolStatus::Failed)
            }),
            Err(e) => Outcome::of(super::fs_failure(&e)),
        }
    }
}
