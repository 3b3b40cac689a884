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
mod model;
mod render;
mod rules;
mod sink;

use spear_workspace::{Workspace, WorkspaceFs};

pub use model::{
    MAX_FILE_BYTES, MAX_IGNORE_FILE_BYTES, MAX_SKIPPED, SearchError, SearchMatch, SearchOutput,
    SearchRequest,
};
pub use render::render;
pub use sink::MAX_LINE_CHARS;

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
