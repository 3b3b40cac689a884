//! Where the checkpoint stores live, and what one holds, read without opening it as a store.

use std::path::{Path, PathBuf};

use super::error::CheckpointError;
use super::names::is_store_key;
use super::quota::{self, StoreUsage};

/// `$XDG_STATE_HOME` when absolute, else `$HOME/.local/state` when `$HOME` is absolute. Pure.
pub(crate) fn state_base(xdg_state_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    match (xdg_state_home, home) {
        (Some(x), _) if x.is_absolute() => Some(x.to_path_buf()),
        (_, Some(h)) if h.is_absolute() => Some(h.join(".local").join("state")),
        _ => None,
    }
}

/// Where every workspace's store lives: `$XDG_STATE_HOME/spear/checkpoints` (else
/// `$HOME/.local/state/spear/checkpoints`). Pure.
pub fn stores_base(xdg_state_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    state_base(xdg_state_home, home).map(|b| b.join("spear").join("checkpoints"))
}

/// The stores under `base` (directories, not links, named by a workspace key), sorted. None when
/// `base` does not exist.
pub fn list_stores(base: &Path) -> std::io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(base) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() && entry.file_name().to_str().is_some_and(is_store_key) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// What the store at `dir` holds, read without opening it as a store (nothing is created or
/// changed), for reports.
pub fn store_usage(dir: &Path) -> Result<StoreUsage, CheckpointError> {
    quota::scan(dir)
        .map(|s| s.usage())
        .map_err(|source| CheckpointError::Io {
            path: dir.to_path_buf(),
            source,
        })
}
