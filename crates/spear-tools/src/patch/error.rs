//! Why a patch was refused: one message per rule, each naming the file (or patch line) and what
//! to do instead.

/// A patch that cannot be parsed or applied. Nothing is changed when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch text is over [`super::MAX_PATCH_BYTES`].
    #[error(
        "the patch is {size} bytes, over the limit of {limit}: split it into several smaller patches"
    )]
    TooLarge {
        /// The size of the patch text.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The patch names no file to change.
    #[error(
        "the patch changes no file: send a '*** Begin Patch' envelope with at least one \
         '*** Add File:', '*** Update File:' or '*** Delete File:' section, or a unified diff"
    )]
    Empty,
    /// The patch text does not follow its format.
    #[error("patch line {line}: {message}")]
    Syntax {
        /// The 1-based line of the patch text.
        line: usize,
        /// What was found and what was expected instead.
        message: String,
    },
    /// An update, move or delete names a file that does not exist.
    #[error(
        "{path}: file not found{note}; to create it use '*** Add File: {path}' (or write_file)"
    )]
    NotFound {
        /// The path as written.
        path: String,
        /// Empty, or why (" (deleted earlier in this patch)").
        note: &'static str,
    },
    /// An add names a file that already exists.
    #[error(
        "{path}: already exists; to change it use '*** Update File: {path}', or write_file to \
         replace it whole"
    )]
    AlreadyExists {
        /// The path as written.
        path: String,
    },
    /// A move's destination already exists.
    #[error(
        "{path}: cannot move to {to}: it already exists; delete it earlier in the same patch or \
         choose another name"
    )]
    MoveTargetExists {
        /// The source, as written.
        path: String,
        /// The destination, as written.
        to: String,
    },
    /// The file to update is not UTF-8 text (or holds NUL bytes).
    #[error(
        "{path}: not a text file ({why}); a patch only updates UTF-8 text: use write_file to \
         replace it whole"
    )]
    NotText {
        /// The path as written.
        path: String,
        /// "not valid UTF-8" or "contains NUL bytes".
        why: &'static str,
    },
    /// A hunk's old lines were not found where they may be.
    #[error(
        "{path}: hunk {hunk} does not apply: {reason}:\n{excerpt}\nRe-read the file and send the \
         patch again with the context and removed lines copied exactly from it."
    )]
    HunkMismatch {
        /// The path as written.
        path: String,
        /// The 1-based hunk number within the file's section.
        hunk: usize,
        /// Where the lines were looked for, and why they did not fit.
        reason: String,
        /// The first lines that were looked for, trimmed, one per line.
        excerpt: String,
    },
    /// A hunk's `@@ header` line was not found.
    #[error(
        "{path}: hunk {hunk} does not apply: its context line '@@ {header}' was not found {}. \
         Re-read the file and send the patch again with the header copied exactly from a line of \
         it (or a bare '@@').",
        searched_from(*after)
    )]
    ContextNotFound {
        /// The path as written.
        path: String,
        /// The 1-based hunk number within the file's section.
        hunk: usize,
        /// The header line, trimmed.
        header: String,
        /// The 1-based line after which it was looked for (0: the start of the file).
        after: usize,
    },
    /// The search for a hunk went over its work budget.
    #[error(
        "{path}: hunk {hunk}: gave up searching for the hunk's lines (the file is too large or too \
         repetitive to patch by context); use write_file to replace it whole"
    )]
    TooMuchWork {
        /// The path as written.
        path: String,
        /// The 1-based hunk number within the file's section.
        hunk: usize,
    },
    /// A hunk matched only once whitespace was ignored, its indentation differs from the file's in
    /// its characters (tabs against spaces), and spear cannot tell which indentation the added
    /// lines should have.
    #[error(
        "{path}: hunk {hunk} does not apply: {reason}. Resend the hunk with the file's own indentation \
         (read_file shows it; a tab is `\\t` in JSON)"
    )]
    Indentation {
        /// The path as written.
        path: String,
        /// The 1-based hunk number within the file's section.
        hunk: usize,
        /// What differs and why it cannot be carried over.
        reason: String,
    },
    /// The caller's `read` failed.
    #[error("{path}: could not be read: {message}")]
    Read {
        /// The path as written.
        path: String,
        /// The caller's message.
        message: String,
    },
}

/// Where a search began, for a message.
fn searched_from(after: usize) -> String {
    if after == 0 {
        "in the file".to_owned()
    } else {
        format!("after line {after}")
    }
}

impl PatchError {
    /// A syntax error at a 1-based patch line.
    pub(super) fn syntax(line: usize, message: impl Into<String>) -> Self {
        Self::Syntax {
            line,
            message: message.into(),
        }
    }
}
