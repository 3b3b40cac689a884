//! Errors of the checkpoint store and of `undo`. Messages say what to do instead.

use std::path::PathBuf;

use spear_workspace::FsError;

/// The checkpoint store could not record or read something.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A store directory is not safe to use.
    #[error("the checkpoint directory {path} cannot be used: {why}; remove it or choose another")]
    UnsafeDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// A turn id is not usable as a file name.
    #[error("turn id {id:?} cannot be used: use 1 to 64 letters, digits, '-' or '_'")]
    InvalidTurnId {
        /// The id as given.
        id: String,
    },
    /// A file is larger than the store keeps: it was not checkpointed.
    #[error(
        "{label} is larger than {max} bytes and was not checkpointed; `spear undo` cannot restore it"
    )]
    TooLarge {
        /// The entry's path relative to its root.
        label: String,
        /// The largest file kept.
        max: u64,
    },
    /// A fifo, socket or device: only files, directories and links are checkpointed.
    #[error("{label} is not a file, directory or symbolic link and was not checkpointed")]
    Unsupported {
        /// The entry's path relative to its root.
        label: String,
    },
    /// The workspace refused or failed an operation.
    #[error(transparent)]
    Fs(#[from] FsError),
    /// A blob named by a manifest is not in the store.
    #[error(
        "the checkpoint store has no content {hash}; it was removed, so this turn cannot be undone"
    )]
    BlobMissing {
        /// The blob's hash.
        hash: String,
    },
    /// A blob's content no longer matches its hash.
    #[error(
        "the checkpoint content {hash} was changed on disk ({why}); nothing is restored from a \
         tampered store"
    )]
    BlobTampered {
        /// The blob's hash.
        hash: String,
        /// What was found.
        why: String,
    },
    /// A manifest cannot be read or makes no sense.
    #[error("the checkpoint manifest {path} cannot be used: {why}; remove it to go on")]
    BadManifest {
        /// The manifest file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// Keeping what this turn's undo needs would take the store past its quota, even with every
    /// older turn evicted: nothing was written.
    #[error(
        "spear keeps what undoes this turn, and keeping this too would take {which} past its quota \
         of {quota} (this turn's checkpoints alone hold {held}); nothing was written. Change fewer \
         or smaller files in this turn, or the operator can raise `[state] {key}` in spear's \
         config.toml; `spear gc` shows what the stores hold"
    )]
    QuotaFull {
        /// Which stores: "this workspace's checkpoint store" or "the checkpoint stores of every workspace".
        which: &'static str,
        /// The configuration key of the quota.
        key: &'static str,
        /// The quota, for people.
        quota: String,
        /// What the kept turns hold, for people.
        held: String,
    },
    /// The filesystem of spear's state has less free space than the floor kept free.
    #[error(
        "the filesystem holding spear's state ({path}) has {free} free, and spear keeps {floor} of \
         it free, so nothing was written; free space there, or run `spear gc` to see and clear \
         what spear's stores hold"
    )]
    FloorReached {
        /// The state directory.
        path: PathBuf,
        /// Free space, for people.
        free: String,
        /// The floor, for people.
        floor: String,
    },
    /// Any other I/O error on the store.
    #[error("the checkpoint store at {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// One entry whose current state is not the one the turn left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The entry's audit label.
    pub label: String,
    /// What the turn left there.
    pub expected: String,
    /// What is there now.
    pub found: String,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the turn left {}, now it is {}",
            self.label, self.expected, self.found
        )
    }
}

/// `undo` did not undo the turn. Except for [`UndoError::Failed`] with entries it could not put
/// back, and [`UndoError::NotMarked`], nothing in the workspace was changed.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    /// No turn left to undo.
    #[error("there is nothing to undo: no recorded turn changed a file that is not undone yet")]
    NothingToUndo,
    /// Entries changed since the turn: undoing it would throw those changes away.
    #[error(
        "the last turn cannot be undone because files changed after it (nothing was changed): \
         {}; put them back as the turn left them, or restore them by hand",
        list(.0)
    )]
    Conflict(Vec<Conflict>),
    /// The turn changed files under a root this workspace no longer has.
    #[error(
        "turn {turn} changed {label} under {}, which is not a root of this workspace; start spear \
         with that directory in the workspace to undo it",
        root.display()
    )]
    RootGone {
        /// The turn.
        turn: String,
        /// The entry's label when it was recorded.
        label: String,
        /// The root's host path.
        root: PathBuf,
    },
    /// The store could not give what the undo needs (a tampered or missing blob, a bad manifest).
    #[error(transparent)]
    Store(#[from] CheckpointError),
    /// A restore step failed: everything already restored was put back (see `not_put_back`).
    #[error(
        "undoing turn {turn} failed at {label}: {source}; {}",
        if not_put_back.is_empty() {
            "everything restored before it was put back as the turn left it".to_owned()
        } else {
            format!("these could not be put back as the turn left them: {}", not_put_back.join(", "))
        }
    )]
    Failed {
        /// The turn.
        turn: String,
        /// The entry where it failed.
        label: String,
        /// Why.
        source: FsError,
        /// Entries already restored that could not be put back (empty when all were).
        not_put_back: Vec<String>,
    },
    /// The files were restored but the turn could not be marked undone.
    #[error(
        "turn {turn} was undone but could not be marked so ({source}); do not undo again before \
         fixing the checkpoint store"
    )]
    NotMarked {
        /// The turn.
        turn: String,
        /// Why.
        source: CheckpointError,
    },
}

fn list(conflicts: &[Conflict]) -> String {
    conflicts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
