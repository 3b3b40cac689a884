//! The engine of the `search_files` tool: a regex search over a directory tree of the workspace,
//! like `rg -n --no-heading`, that never reads outside the roots.
//!
//! What it guarantees:
//! - The starting path goes through [`Workspace::resolve`]; a path outside the roots is
//!   [`SearchError::InvalidPath`] and nothing is read.
//! - No symlink met in the walk is followed or searched, not even one that stays inside; fifos,
//!   sockets and devices are skipped. Every file is opened through [`WorkspaceFs::open_file`]
//!   (`openat2` beneath the root fd), never by host path: a directory swapped for a link to
//!   `~/.ssh` between the walk and the open is refused by the kernel.
//! - Ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`) are honoured as ripgrep honours
//!   them, but read through the same layer, bounded, and only inside the roots: a fifo or a link
//!   planted as `.gitignore` is noted in [`SearchOutput::skipped`] and cannot hang or widen the
//!   search. Hidden entries are skipped unless an ignore file whitelists them; `.git` never is
//!   searched.
//! - Work is bounded: at most `max_results` matches are kept (the search stops soon after one
//!   more is found), a file larger than [`MAX_FILE_BYTES`] is skipped, each line is cut to
//!   [`MAX_LINE_CHARS`] characters, and at most [`MAX_SKIPPED`] skipped files are named.
//! - The output is sorted by path, then line. When it is truncated, which matches were kept
//!   depends on the order the parallel walk found them in.

mod engine;
mod filter;
mod render;
mod rules;
mod sink;

use spear_workspace::{FsError, Workspace, WorkspaceFs};

pub use render::render;
pub use sink::MAX_LINE_CHARS;

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
    /// (see [`Workspace::label`]).
    pub path: String,
    /// The line number, from 1.
    pub line: u64,
    /// The line without its terminator, cut to [`MAX_LINE_CHARS`] characters (`…` marks a cut);
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
    /// The path was refused by [`Workspace::resolve`]; the message is the resolver's.
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

/// Searches the file or directory `req.path` (the launch directory by default) for lines matching
/// `req.pattern`; see the module documentation for what is and is not searched.
pub fn search(
    ws: &Workspace,
    fs: &WorkspaceFs,
    req: &SearchRequest,
) -> Result<SearchOutput, SearchError> {
    if req.max_results == 0 {
        return Err(SearchError::ZeroMaxResults);
    }
    let matcher = engine::build_matcher(&req.pattern, req.case_insensitive)?;
    let glob = req
        .glob
        .as_deref()
        .map(filter::GlobFilter::new)
        .transpose()?;
    let written = req.path.as_deref().unwrap_or(".");
    let resolved = ws.resolve(written).map_err(|e| SearchError::InvalidPath {
        message: e.to_string(),
    })?;
    if !resolved.exists {
        return Err(SearchError::NotFound {
            path: written.to_owned(),
        });
    }
    engine::run(ws, fs, &resolved.target, &matcher, glob, req.max_results)
}
