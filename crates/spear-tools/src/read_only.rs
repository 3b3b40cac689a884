//! What a result says when a command that ran with the workspace read-only tried to write.
//!
//! A command granted no `workspace:write` runs with every root bound read-only: SAFE runs inline
//! programs and other `SHELL_COMPLEX` work that way, and any mode runs so what spear judged to only
//! read. A write there meets `EROFS`, which the command reports in its own words ("Read-only file
//! system"); the result then also says why the file system was read-only and who can change that,
//! so the agent is not left to guess (and does not retry the same write).

use spear_core::{Capability, CapabilitySet, ExecutionMode, ToolResult};

/// How `strerror(EROFS)` reads in the C locale the sandbox runs with, as Python, Node
/// (`EROFS: read-only file system`), Perl, Ruby, coreutils and git print it.
const EROFS_TEXT: &str = "read-only file system";

/// The note for `result` of a command that ran with `granted` in `mode`: `Some` when the workspace
/// was read-only for it and its output reports a read-only file system.
pub(crate) fn read_only_note(
    mode: ExecutionMode,
    granted: CapabilitySet,
    result: &ToolResult,
) -> Option<String> {
    if granted.contains(Capability::WorkspaceWrite) || !mentions_erofs(result) {
        return None;
    }
    Some(match mode {
        ExecutionMode::Safe => {
            "the command tried to write where the sandbox is read-only: in SAFE \
             mode the workspace is read-only (only the sandbox's private /tmp and home directory \
             are writable), so nothing in the workspace changed. Only the user can change the \
             mode: if this step must write the workspace, ask the user to run spear in ASK or AUTO \
             mode (--ask or --auto)"
                .to_owned()
        }
        ExecutionMode::Ask | ExecutionMode::Auto => format!(
            "the command tried to write where the sandbox is read-only: spear judged it to only \
             read, so it ran with the workspace read-only (only the sandbox's private /tmp and home \
             directory are writable), and nothing in the workspace changed. In {mode} mode a \
             command that names the files it writes (a redirection, `cp`, `tee`, `python -c` \
             with `open(path, 'w')`) runs with the workspace writable"
        ),
    })
}

/// Whether the command's output reports `EROFS`.
fn mentions_erofs(result: &ToolResult) -> bool {
    // Compared in place, without a lowered copy of output that may be megabytes long.
    [&result.stderr, &result.stdout].into_iter().any(|text| {
        text.as_bytes()
            .windows(EROFS_TEXT.len())
            .any(|w| w.eq_ignore_ascii_case(EROFS_TEXT.as_bytes()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use spear_core::ToolStatus;

    fn ran(stderr: &str) -> ToolResult {
        let mut r = ToolResult::new(ToolStatus::Failed);
        r.exit_code = Some(1);
        r.stderr = stderr.to_owned();
        r
    }

    #[test]
    fn only_a_read_only_workspace_that_was_written() {
        let read = CapabilitySet::of(&[Capability::FilesystemRead, Capability::ShellComplex]);
        let write = read.union(CapabilitySet::of(&[Capability::WorkspaceWrite]));
        let python = ran("OSError: [Errno 30] Read-only file system: 'x'\n");
        let node = ran("Error: EROFS: read-only file system, open 'x'\n");
        let safe = read_only_note(ExecutionMode::Safe, read, &python);
        assert!(
            safe.as_deref()
                .is_some_and(|n| n.contains("--ask or --auto")),
            "{safe:?}"
        );
        assert!(read_only_note(ExecutionMode::Safe, read, &node).is_some());
        let auto = read_only_note(ExecutionMode::Auto, read, &python);
        assert!(
            auto.as_deref()
                .is_some_and(|n| n.contains("judged it to only read"))
        );
        // Writable, or no such error: nothing to say.
        assert_eq!(read_only_note(ExecutionMode::Auto, write, &python), None);
        assert_eq!(
            read_only_note(ExecutionMode::Safe, read, &ran("No such file")),
            None
        );
    }
}
