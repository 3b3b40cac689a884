//! The coding tools and the web pair. Every path goes through `Workspace::resolve` (in the router) and then through
//! `WorkspaceFs`, which opens beneath a root's directory fd.

pub mod delete_file;
pub mod fetch_url;
pub mod patch;
pub mod read_file;
pub mod read_output;
pub mod search_files;
pub mod search_internet;
pub mod terminal;
pub mod terminal_job;
pub mod write_file;

use spear_core::{ToolResult, ToolStatus};
use spear_workspace::FsError;

/// The result of a file operation that failed: not found, a path that escaped since it was
/// resolved, or a failure, each with the error's message.
pub(crate) fn fs_failure(e: &FsError) -> ToolResult {
    let status = match e {
        FsError::NotFound { .. } => ToolStatus::NotFound,
        FsError::Escape { .. } => ToolStatus::InvalidPath,
        _ => ToolStatus::Failed,
    };
    let reason = match e {
        FsError::IsDirectory { label } => format!(
            "{label} is a directory; list it with the terminal (`ls {label}`) or search it with search_files"
        ),
        other => other.to_string(),
    };
    ToolResult {
        reason: Some(reason),
        ..ToolResult::new(status)
    }
}
