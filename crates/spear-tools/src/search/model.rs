//! What a search is asked, what it finds and why it fails, and the bounds it keeps to: the data
//! the engine, the filters and the renderer pass on.

use spear_workspace::FsError;

/// Files larger than this (64 MiB) are not searched; they are listed in [`SearchOutput::skipped`].
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Ignore files larger than this (1 MiB) are not read; their rules are not applied.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// How many skipped files [`SearchOutput::skipped`] names; the rest are counted in a last entry.
pub const MAX_SKIPPED: usize = 100;

/// One `search_files` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// A Rust regular expression (the syntax of the `regex` crate), matched line by line.
    pub pattern: String,
    /// The file or directory to search; the launch directory when `None`.
    pub path: Option<String>,
    /// Only files whose name (a glob without `/`, such as `*.rs`) or path (a glob with `/`, such
    /// as `src/**/*.ts`, relative to `path` or to the file's root, as in its label) matches. A
    /// file named by `path` itself is searched whatever the glob says.
    pub glob: Option<String>,
    /// Match letters regardless of case.
    pub case_insensitive: bool,
    /// How many matches to return at most (at least 1).
    pub max_results: usize,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchMatch {
    /// The file as spear names it: relative to the primary root, `name:rel` in another root
    /// (see [`Workspace::label`](spear_workspace::Workspace::label)).
    pub path: String,
    /// The line number, from 1.
    pub line: u64,
    /// The line without its terminator, cut to [`MAX_LINE_CHARS`](super::MAX_LINE_CHARS) characters (`…` marks a cut);
    /// invalid UTF-8 is replaced.
    pub text: String,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchOutput {
    /// The matches, sorted by path, then line; at most `max_results`.
    pub matches: Vec<SearchMatch>,
    /// More than `max_results` lines matched; the search stopped early.
    pub truncated: bool,
    /// How many files were opened and searched.
    pub files_searched: usize,
    /// Files (and ignore files) that could not be searched or read, each as `label: why`, sorted.
    pub skipped: Vec<String>,
}

/// Why a search could not run. Every message says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The path was refused by [`Workspace::resolve`](spear_workspace::Workspace::resolve); the message is the resolver's.
    #[error("{message}")]
    InvalidPath {
        /// The resolver's message (it names the path as written and what to do instead).
        message: String,
    },
    /// The path resolves inside the workspace but nothing is there.
    #[error("{path} does not exist; name an existing file or directory")]
    NotFound {
        /// The path as written.
        path: String,
    },
    /// The pattern is not a regular expression this search accepts.
    #[error(
        "the pattern {pattern:?} is not a valid regular expression ({reason}); escape special \
         characters such as \\( \\[ \\. to match them literally"
    )]
    BadPattern {
        /// The pattern as given.
        pattern: String,
        /// The regex parser's explanation.
        reason: String,
    },
    /// The glob does not parse.
    #[error(
        "the glob {glob:?} is not valid ({reason}); write for example \"*.rs\" or \"src/**/*.ts\""
    )]
    BadGlob {
        /// The glob as given.
        glob: String,
        /// The glob parser's explanation.
        reason: String,
    },
    /// `max_results` was 0.
    #[error("max_results must be at least 1")]
    ZeroMaxResults,
    /// The file layer itself cannot work (for example, no `openat2`): fail closed.
    #[error(transparent)]
    Fs(#[from] FsError),
}
