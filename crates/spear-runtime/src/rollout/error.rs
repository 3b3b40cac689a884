//! Why a rollout workspace could not be opened, read or closed.

use std::io;
use std::path::PathBuf;

use spear_sandbox::CowMountError;

/// Why a [`super::RolloutWorkspace`] operation failed; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    /// The template is not a directory that can be read, or it would be written.
    #[error("the template `{}` cannot be rolled out: {reason}", path.display())]
    Template {
        /// The template as given.
        path: PathBuf,
        /// Why, and what to do.
        reason: String,
    },
    /// The session's directories could not be made or are not private to this user.
    #[error(
        "the rollout directory `{}` could not be made ({source}); name an absolute directory of \
         this user's, mode 0700, on a filesystem with room (ext4, xfs, btrfs or tmpfs)",
        path.display()
    )]
    Area {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The copy-on-write view could not be mounted or unmounted (what to install is in it).
    #[error(transparent)]
    Mount(#[from] CowMountError),
    /// The session's changes could not be read.
    #[error("the session's changes at `{}` could not be read ({source})", path.display())]
    Changes {
        /// What was being read.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// git could not make the patch.
    #[error(
        "git could not make the session's patch ({step}: {detail}); spear runs the system's git \
         (Debian package `git`) with no configuration of the user's"
    )]
    Git {
        /// The git step.
        step: &'static str,
        /// What git said.
        detail: String,
    },
    /// The session's tree could not be copied out to be kept; its changes were kept as the
    /// overlay's upper layer instead (or, if even that failed, left where the next sweep finds
    /// them).
    #[error(
        "the session's tree could not be copied to `{}` ({source}); its changes over the template \
         are kept instead as an overlay upper layer (whiteouts for deletions) in `{}`",
        path.display(),
        layers.display()
    )]
    Keep {
        /// Where the tree was being copied.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
        /// Where the session's upper layer is.
        layers: PathBuf,
    },
}
