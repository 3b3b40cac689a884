//! Errors of the workspace layer.

use std::io;
use std::path::PathBuf;

/// The workspace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The launch directory does not exist or is not a directory.
    #[error("the workspace directory {path} cannot be used: {source}")]
    LaunchDir {
        /// The launch directory as configured.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// A path given by a caller was refused by [`crate::Workspace::resolve`]. Every variant maps to
/// the `invalid_path` status; the message names the path as written and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// Empty, or contains a NUL byte.
    #[error("{path:?} is not a usable path")]
    Malformed {
        /// The path as written.
        path: String,
    },
    /// `..` climbs out of every root.
    #[error("{path} climbs out of the workspace with `..`; name a path inside the workspace")]
    ParentEscape {
        /// The path as written.
        path: String,
    },
    /// An absolute path under no root (in host and mount spelling alike).
    #[error("{path} is outside the workspace; name a path inside it (relative to {launch_dir})")]
    OutsideRoots {
        /// The path as written.
        path: String,
        /// Where relative paths resolve, in mount spelling.
        launch_dir: String,
    },
    /// A host absolute path that is not also a mount path, without `--allow-absolute-paths`.
    #[error(
        "{path} is a host path; inside spear the workspace is at {mount}. Use a relative path or \
         {mount}/..., or start spear with --allow-absolute-paths"
    )]
    HostAbsolute {
        /// The path as written.
        path: String,
        /// The mount path of the root it names.
        mount: String,
    },
    /// A symlink on the way leads outside every root.
    #[error("{path} leads through the symbolic link {link} to {target}, outside the workspace")]
    SymlinkEscape {
        /// The path as written.
        path: String,
        /// The link, as a host path.
        link: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
    /// Too many symlinks (a loop).
    #[error("{path} has too many levels of symbolic links")]
    SymlinkLoop {
        /// The path as written.
        path: String,
    },
    /// A component could not be inspected (for example, permission denied on its directory), so
    /// whether it is a symlink leading outside cannot be known: refused, never assumed safe.
    #[error("{path}: {component} cannot be inspected ({reason}); name a path you can read")]
    Unreadable {
        /// The path as written.
        path: String,
        /// The component that could not be inspected, as a host path.
        component: PathBuf,
        /// The operating system's error.
        reason: String,
    },
    /// A component that must be a directory is not one.
    #[error("{path}: {component} is not a directory")]
    NotADirectory {
        /// The path as written.
        path: String,
        /// The offending component, as a host path.
        component: PathBuf,
    },
}

/// A file operation failed. [`FsError::NotFound`] maps to `not_found`, [`FsError::Escape`] to
/// `invalid_path`, the rest to `failed`.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The entry does not exist.
    #[error("{label} does not exist")]
    NotFound {
        /// The audit label of the path.
        label: String,
    },
    /// The kernel refused to resolve beneath the root: the path changed after it was resolved
    /// (a link swapped in) or leads through a magic link.
    #[error("{label} changed while it was being opened and now leads outside the workspace")]
    Escape {
        /// The audit label of the path.
        label: String,
    },
    /// A directory where a file was expected.
    #[error("{label} is a directory")]
    IsDirectory {
        /// The audit label of the path.
        label: String,
    },
    /// A file where a directory was expected.
    #[error("{label} is not a directory")]
    NotDirectory {
        /// The audit label of the path.
        label: String,
    },
    /// A bound on the work of one operation was reached (entries walked, bytes or entries kept,
    /// depth); callers fail closed.
    #[error("{label}: {what}")]
    LimitExceeded {
        /// The audit label of the path where the bound was reached.
        label: String,
        /// Which bound, with its value.
        what: String,
    },
    /// The kernel does not have openat2 (Linux older than 5.6): fail closed.
    #[error("this kernel has no openat2(2); spear needs Linux 5.6 or newer")]
    Openat2Unavailable,
    /// Any other I/O error.
    #[error("{label}: {source}")]
    Io {
        /// The audit label of the path.
        label: String,
        /// The error.
        source: std::io::Error,
    },
}
