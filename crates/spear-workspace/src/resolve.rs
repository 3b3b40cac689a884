//! Physical path resolution inside the roots.

use crate::Location;

/// A caller's path after [`crate::Workspace::resolve`].
///
/// `entry` is where the named entry itself lives (every parent symlink followed, the leaf name kept
/// as written): writes and deletes act here, so they replace or remove a leaf link rather than act
/// through it. `target` is where reads land (the leaf link followed too); it equals `entry` unless
/// the leaf is a symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The path as the caller wrote it.
    pub as_written: String,
    /// Where the entry lives.
    pub entry: Location,
    /// Where reads land.
    pub target: Location,
    /// Whether `target` existed when it was resolved.
    pub exists: bool,
}
