//! The patch as parsed and the changes planned from it: the data every step of the patch tool
//! passes on (parsed by `parse`, `envelope` and `unified`, applied by `apply`).

/// A parsed patch: its file operations in the order the patch gives them (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The file operations, in patch order.
    pub files: Vec<FilePatch>,
}

/// One file operation of a [`Patch`]. Paths are as written in the patch (trimmed; git's `a/` and
/// `b/` prefixes removed), never empty and never containing a NUL or a line break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilePatch {
    /// Create a file that must not exist yet.
    Add {
        /// The file to create.
        path: String,
        /// Its whole content.
        content: String,
    },
    /// Delete a file that must exist.
    Delete {
        /// The file to delete.
        path: String,
    },
    /// Change a file that must exist, and optionally rename it.
    Update {
        /// The file to change.
        path: String,
        /// The new name, when the file is also moved (the destination must not exist).
        move_to: Option<String>,
        /// The changes, in file order. Empty only for a pure move.
        hunks: Vec<Hunk>,
    },
}

/// One hunk of an update: lines to find in the file and what replaces them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Envelope `@@ header` lines: each is located (after the previous one) before the body is
    /// searched, and the body is searched after the last of them.
    pub context: Vec<String>,
    /// Where a unified diff says the old side starts, as a 0-based line index of the original file.
    /// Only a hint: among matches, the one nearest to it (shifted by the previous hunks' offset)
    /// wins.
    pub line_hint: Option<usize>,
    /// The body, in order. Context and removed lines are the old side; context and added lines
    /// are the new side.
    pub lines: Vec<HunkLine>,
    /// The old side must be the last lines of the file (`*** End of File`, or a unified diff's
    /// `\ No newline at end of file`).
    pub end_of_file: bool,
    /// Whether the file ends with a newline after this hunk, when the patch says so (a unified
    /// diff's `\ No newline at end of file` marker); `None` keeps the file's own state.
    pub final_newline: Option<bool>,
}

/// One body line of a [`Hunk`], without its prefix character and line ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// A line that stays (` `): it must be found, and the file's own text of it is kept.
    Context(String),
    /// A line to remove (`-`): it must be found.
    Remove(String),
    /// A line to insert (`+`).
    Add(String),
}

/// One change [`plan`](super::plan) computed: the caller performs all of them or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// Create or replace the file with exactly these bytes.
    Write {
        /// The path as written in the patch.
        path: String,
        /// The new content.
        content: Vec<u8>,
    },
    /// Remove the file.
    Delete {
        /// The path as written in the patch.
        path: String,
    },
}

impl FileChange {
    /// The path this change touches, as written in the patch.
    pub fn path(&self) -> &str {
        match self {
            Self::Write { path, .. } | Self::Delete { path } => path,
        }
    }
}

impl Patch {
    /// Every path the patch reads or writes (sources and move destinations), as written, each
    /// spelling once, in order of first appearance.
    pub fn paths(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for file in &self.files {
            let (first, second) = match file {
                FilePatch::Add { path, .. } | FilePatch::Delete { path } => (path, None),
                FilePatch::Update { path, move_to, .. } => (path, move_to.as_ref()),
            };
            for p in std::iter::once(first).chain(second) {
                if !out.contains(&p.as_str()) {
                    out.push(p);
                }
            }
        }
        out
    }
}
