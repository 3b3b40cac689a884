//! The checkpoint store: the prior contents of what a turn changed, kept outside the workspace,
//! so that `spear undo` can put them back.
//!
//! What it guarantees:
//! - One store per workspace, under `$XDG_STATE_HOME/spear/checkpoints/<hash of the primary
//!   root's host path>/` ([`CheckpointStore::default_dir`]); every directory 0700 and owned by
//!   this user (a link or someone else's directory is refused), every file 0600 and written whole.
//! - File contents are blobs named by their SHA-256 (`blobs/<sha256>`), written once per content
//!   and verified against their name whenever they are read: a changed blob is never restored.
//! - The workspace is only ever read and written through [`WorkspaceFs`], and states are taken
//!   without following any link: a link swapped in (as the entry, or for a directory on the way
//!   to it) is recorded as a link or as nothing, never as the content of what it points at.
//!   Attack: a link to `~/.ssh/id_rsa` swapped into the workspace would otherwise be read into a
//!   checkpoint and later written into the workspace by `undo`.
//! - [`CheckpointStore::undo_last`] checks every entry of the last turn is as the turn left it
//!   and changes nothing otherwise; it then restores everything or, when a step fails, puts back
//!   what it had already restored.
//!
//! ```no_run
//! use spear_runtime::CheckpointStore;
//! use spear_workspace::{Workspace, WorkspaceConfig};
//!
//! let ws = Workspace::open(&WorkspaceConfig::new("/home/me/project"))?;
//! let fs = ws.fs()?;
//! let dir = CheckpointStore::default_dir(None, Some("/home/me".as_ref()), &ws).unwrap();
//! let store = CheckpointStore::open(&dir)?;
//! let mut turn = store.turn("turn-1")?;
//! let loc = ws.resolve("notes.txt")?.entry;
//! store.capture_before(&mut turn, &ws, &fs, &loc)?;
//! fs.write(&ws.resolve("notes.txt")?, b"new")?;
//! store.capture_after(&mut turn, &ws, &fs, &loc)?;
//! turn.save()?;
//! store.undo_last(&ws, &fs)?; // notes.txt is back as it was
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod entry_state;
mod error;
mod evict;
mod manifest;
pub(crate) mod names;
pub(crate) mod private_dir;
pub mod quota;
mod store;
mod stores;
mod undo;

pub use entry_state::EntryState;
pub use error::{CheckpointError, Conflict, UndoError};
pub use manifest::TurnCheckpoint;
pub use quota::StoreQuota;
pub use store::CheckpointStore;
pub(crate) use stores::state_base;
pub use stores::{list_stores, store_usage, stores_base};
pub use undo::UndoReport;
