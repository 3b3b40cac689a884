//! The workspace boundary: which paths exist for a session and where they may resolve.
//!
//! What this crate guarantees:
//! - A [`Workspace`] is a set of canonical, deduplicated, non-nested roots. Relative paths resolve
//!   in the launch directory and nowhere else.
//! - [`Workspace::resolve`] follows every symlink of a path (including the parent of a file that
//!   does not exist yet) and refuses any path that ends outside every root.
//! - [`WorkspaceFs`] opens, writes, deletes and lists relative to a root directory fd with
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: a link swapped in after resolution cannot
//!   lead outside the root. Writes replace the entry (temporary file, then rename), so a hard link
//!   or symlink is never written through.

mod config;
mod error;
mod fs;
mod mount;
mod resolve;
mod roots;

pub use config::{MountSchemeChoice, WorkspaceConfig};
pub use error::{FsError, ResolveError, WorkspaceError};
pub use fs::{DirEntry, EntryKind, ReadOutcome, WorkspaceFs, WriteOutcome};
pub use mount::{FIXED_PRIMARY_MOUNT, FIXED_SECONDARY_MOUNTS, MountScheme, identity_mount_is_safe};
pub use resolve::ResolvedPath;
pub use roots::{Location, Root, Workspace};
