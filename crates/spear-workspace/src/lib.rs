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
//!   or symlink is never written through. Without `openat2` (Linux < 5.6) every operation fails;
//!   there is no fallback to a plain open.
//! - No root is `/` or lies in `/proc`, `/sys` or `/dev`, so the harness's own `/proc/self/...` and
//!   `/dev/fd/N` are outside every root.
//!
//! ```no_run
//! use spear_workspace::{Workspace, WorkspaceConfig};
//!
//! let ws = Workspace::open(&WorkspaceConfig::new("/home/me/project"))?;
//! let fs = ws.fs()?;
//! let path = ws.resolve("src/main.rs")?; // `../../etc/passwd` would be refused here
//! println!("{} bytes", fs.read(&path, 1 << 20)?.bytes.len());
//! fs.write(&ws.resolve("notes/todo.txt")?, b"remember")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod beneath;
mod config;
mod entry_identity;
mod error;
mod fs;
mod install;
mod label;
mod lexical;
mod merge;
mod mount;
mod naming;
mod realpath;
mod resolve;
mod roots;
#[cfg(test)]
mod tests;
mod tree;
mod view;

pub use config::{MountSchemeChoice, WorkspaceConfig};
pub use entry_identity::EntryIdentity;
pub use error::{FsError, ResolveError, WorkspaceError};
pub use fs::{DirEntry, EntryKind, ReadOutcome, WorkspaceFs, WriteOutcome};
pub use install::{INSTALL_MODE_BITS, Installed};
pub use mount::{FIXED_PRIMARY_MOUNT, FIXED_SECONDARY_MOUNTS, MountScheme, identity_mount_is_safe};
pub use resolve::ResolvedPath;
pub use roots::{Location, Root, Workspace};
pub use tree::{Budget, EntryMeta, MAX_TREE_DEPTH, Node, Walk};
pub use view::TreeView;
