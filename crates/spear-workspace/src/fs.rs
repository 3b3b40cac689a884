//! File operations that cannot leave a root.

use std::os::fd::OwnedFd;

use crate::{FsError, Location, ResolvedPath};

/// The kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// Anything else (fifo, socket, device).
    Other,
}

/// One entry of [`WorkspaceFs::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name.
    pub name: String,
    /// Its kind, without following links.
    pub kind: EntryKind,
}

/// What [`WorkspaceFs::read`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutcome {
    /// At most `limit` bytes from the start of the file.
    pub bytes: Vec<u8>,
    /// The file's size when it was opened.
    pub size: u64,
    /// Whether `bytes` is shorter than the file.
    pub truncated: bool,
}

/// What [`WorkspaceFs::write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The entry did not exist before.
    pub created: bool,
}

/// File operations relative to a directory fd per root, through
/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`. Nothing here opens a path by name from `/`.
#[derive(Debug)]
pub struct WorkspaceFs {
    pub(crate) root_fds: Vec<OwnedFd>,
    pub(crate) labels: Vec<String>,
}

impl WorkspaceFs {
    /// Reads at most `limit` bytes of the file at `path.target`. A directory is
    /// [`FsError::IsDirectory`]; a link swapped in since resolution is [`FsError::Escape`].
    pub fn read(&self, path: &ResolvedPath, limit: u64) -> Result<ReadOutcome, FsError> {
        let _ = (path, limit);
        todo!("spear-workspace helper")
    }

    /// Reads at most `limit` bytes from the start of the regular file at `loc` (for header checks
    /// such as "DO NOT EDIT"). Not found is [`FsError::NotFound`].
    pub fn read_head(&self, loc: &Location, limit: usize) -> Result<Vec<u8>, FsError> {
        let _ = (loc, limit);
        todo!("spear-workspace helper")
    }

    /// Writes `contents` to `path.entry`: missing parent directories are created (0755 less the
    /// umask), the data goes to a new temporary file in the same directory (`O_EXCL`, mode of the
    /// replaced file or 0644), is synced, and is renamed over the entry. A hard link or symlink at
    /// the entry is replaced, never written through.
    pub fn write(&self, path: &ResolvedPath, contents: &[u8]) -> Result<WriteOutcome, FsError> {
        let _ = (path, contents);
        todo!("spear-workspace helper")
    }

    /// Removes the entry at `path.entry` (a link is removed, not what it points at). A directory is
    /// [`FsError::IsDirectory`].
    pub fn delete(&self, path: &ResolvedPath) -> Result<(), FsError> {
        let _ = path;
        todo!("spear-workspace helper")
    }

    /// Lists the directory at `path.target`, sorted by name, without following entries' links.
    pub fn list(&self, path: &ResolvedPath) -> Result<Vec<DirEntry>, FsError> {
        let _ = path;
        todo!("spear-workspace helper")
    }
}
