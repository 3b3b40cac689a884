//! The pure half of the `patch` tool: parse the patch a model sends, then compute from the
//! current file contents the exact new contents of every file it touches, all or nothing.
//!
//! Nothing here touches the filesystem. [`parse`] turns text into a [`Patch`]; [`plan`] reads the
//! current contents through a callback and returns the complete list of [`FileChange`]s, or an
//! error and no change at all. The caller writes the changes (with rollback) and resolves the
//! paths, which are passed through exactly as the patch spells them.
//!
//! Two formats are accepted, told apart by their first line:
//! - the `*** Begin Patch` envelope of `OpenAI` Codex's `apply_patch` (`*** Add File:`,
//!   `*** Delete File:`, `*** Update File:` with an optional `*** Move to:`, `@@` hunks with an
//!   optional context header, `*** End of File`, `*** End Patch`);
//! - unified diffs (`git diff`, `diff -u`): `---`/`+++` headers (with `a/`/`b/` stripped and
//!   `/dev/null` for added and deleted files), `diff --git` sections with `new file mode`,
//!   `deleted file mode`, `rename from`/`rename to`, `@@ -l,c +l,c @@` hunks and
//!   `\ No newline at end of file`.
//!
//! Hunks are found by their content, never by line number alone: exactly first, then ignoring
//! trailing whitespace, then ignoring surrounding whitespace, then also treating typographic
//! quotes, dashes and spaces as their ASCII forms, and never fuzzier than that. Context lines keep
//! the file's own text; added lines take the file's dominant line ending (CRLF stays CRLF); a file
//! without a final newline keeps that unless a unified diff's `\ No newline` marker says otherwise.
//!
//! ```
//! use spear_tools::patch::{parse, plan, FileChange};
//!
//! let patch = parse("*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+uno\n*** End Patch\n")?;
//! let changes = plan(&patch, &mut |_path: &str| Ok(Some(b"one\ntwo\n".to_vec())))?;
//! assert_eq!(changes, vec![FileChange::Write { path: "a.txt".into(), content: b"uno\ntwo\n".to_vec() }]);
//! # Ok::<(), spear_tools::patch::PatchError>(())
//! ```

mod apply;
mod envelope;
mod error;
mod model;
mod parse;
mod seek;
mod syntax;
mod text;
mod unified;

#[cfg(test)]
mod tests;

pub use apply::{ReadFile, plan, plan_noting};
pub use error::PatchError;
pub use model::{FileChange, FilePatch, Hunk, HunkLine, Patch};
pub use parse::{MAX_PATCH_BYTES, parse};
