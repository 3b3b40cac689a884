//! What one change to a workspace entry does: the words the runtime's commit and the decision
//! layer's judge share.

use std::ffi::OsStr;

/// What a change does to its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind<'a> {
    /// A regular file is created or replaced.
    File,
    /// A symbolic link is created or replaced, pointing at `target`.
    Symlink {
        /// The link's target as written.
        target: &'a OsStr,
    },
    /// A directory is created.
    Dir,
    /// The permission bits of an existing entry change.
    Mode,
    /// The entry and everything below it is removed.
    Remove,
}
