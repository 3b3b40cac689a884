//! Where roots appear inside the sandbox.
//!
//! Host paths and mount paths are one addressing scheme: by default each root is mounted at its own
//! host path (identity), so a path means the same thing inside and outside the sandbox. Where that
//! is unsafe for some root, or the operator sets `SPEAR_SANDBOX_IDENTITY_MOUNT=0`, every root moves
//! to the fixed scheme: the primary at [`FIXED_PRIMARY_MOUNT`], the others under
//! [`FIXED_SECONDARY_MOUNTS`]`/<name>`. Both spellings are accepted everywhere and translated back
//! to host paths before containment is checked.

use std::path::Path;

/// Mount path of the primary root in the fixed scheme.
pub const FIXED_PRIMARY_MOUNT: &str = "/workspace";
/// Parent of the secondary roots' mount paths in the fixed scheme.
pub const FIXED_SECONDARY_MOUNTS: &str = "/workspaces";

/// The addressing scheme a workspace uses for all of its roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountScheme {
    /// Each root at its own host path.
    Identity,
    /// `/workspace` and `/workspaces/<name>`.
    Fixed,
}

/// Whether a root at canonical host path `root` can be mounted at its own path inside the sandbox.
///
/// Unsafe (so the fixed scheme is used) when the root is `/`, is or lies under a directory the
/// sandbox provides itself (`/usr`, `/bin`, `/sbin`, `/lib*`, `/etc`, `/proc`, `/dev`, `/sys`,
/// `/run`, `/boot`, `/workspace`, `/workspaces`), or is an ancestor of one of them: binding it
/// there would shadow or be shadowed by the sandbox's own mounts. Also unsafe when the path is not
/// valid UTF-8 or holds a control character, which bwrap argv and audit labels cannot carry
/// faithfully.
pub fn identity_mount_is_safe(root: &Path) -> bool {
    let _ = root;
    todo!("spear-workspace helper")
}
