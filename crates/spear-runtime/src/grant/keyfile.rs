//! The operator's per-user grant key: a 0600 file in spear's state directory.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use super::ledger::LEDGER_FILE;
use super::seal::GrantKey;

/// The key's file name in the state directory.
pub const KEY_FILE: &str = "grant.key";

/// Why the key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// Reading, creating or replacing it failed.
    #[error("the grant key {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// It is not this user's, or others may read it: a key others could read seals nothing.
    #[error(
        "the grant key {} is {why}; remove it and run `spear grant --rotate` to make a new one",
        path.display()
    )]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The kernel gave no randomness.
    #[error("no randomness for a grant key: {0}")]
    Random(spear_core::authority::GrantError),
}

/// The per-user key in `state_dir`, created (0600, in a 0700 directory) on first use.
pub fn user_key(state_dir: &Path) -> Result<GrantKey, KeyFileError> {
    let path = state_dir.join(KEY_FILE);
    let io = |source| KeyFileError::Io {
        path: path.clone(),
        source,
    };
    make_dir(state_dir).map_err(io)?;
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(super::nofollow::nofollow())
        .open(&path)
    {
        Ok(mut file) => {
            let meta = file.metadata().map_err(io)?;
            check_owner_only(&path, meta.uid(), meta.mode())?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(io)?;
            let key: [u8; 32] = bytes.try_into().map_err(|_| KeyFileError::Unsafe {
                path: path.clone(),
                why: "not 32 bytes long".into(),
            })?;
            Ok(GrantKey::from_bytes(key))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => write_new(&path, false),
        Err(e) => Err(io(e)),
    }
}

/// Replaces the per-user key in `state_dir` with a fresh one, which voids every grant sealed
/// with the old one, and forgets the used grants (none of them can verify again).
pub fn rotate_user_key(state_dir: &Path) -> Result<GrantKey, KeyFileError> {
    make_dir(state_dir).map_err(|source| KeyFileError::Io {
        path: state_dir.to_path_buf(),
        source,
    })?;
    let key = write_new(&state_dir.join(KEY_FILE), true)?;
    match std::fs::remove_file(state_dir.join(LEDGER_FILE)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(KeyFileError::Io {
                path: state_dir.join(LEDGER_FILE),
                source,
            });
        }
    }
    Ok(key)
}

/// Refuses a key file that is not this user's or that others may read.
fn check_owner_only(path: &Path, uid: u32, mode: u32) -> Result<(), KeyFileError> {
    let me = rustix::process::geteuid().as_raw();
    let why = if uid != me {
        Some(format!("owned by uid {uid}, not {me}"))
    } else if mode & 0o077 != 0 {
        Some(format!("readable by others (mode {:o})", mode & 0o777))
    } else {
        None
    };
    why.map_or(Ok(()), |why| {
        Err(KeyFileError::Unsafe {
            path: path.to_path_buf(),
            why,
        })
    })
}

/// Writes a fresh key to `path`: beside it first (0600, `O_EXCL`), then renamed over it, so a
/// reader sees the old key or the new one, never half of one. Without `replace`, a key that
/// appeared meanwhile (another process made one) is used instead.
fn write_new(path: &Path, replace: bool) -> Result<GrantKey, KeyFileError> {
    let key = GrantKey::random().map_err(KeyFileError::Random)?;
    let tmp = path.with_extension(format!("new.{}", std::process::id()));
    let io = |source| KeyFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    file.write_all(key.bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    if replace {
        std::fs::rename(&tmp, path).map_err(io)?;
        return Ok(key);
    }
    // Another process may have made the key meanwhile: link(2) never replaces, and the loser
    // reads the winner's key.
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            user_key(path.parent().unwrap_or(Path::new("/")))
        }
        Err(e) => Err(io(e)),
    }
}

/// Makes `dir` (0700) if it is missing, and takes group and other access away from one of this
/// user's that has it.
pub(crate) fn make_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }?;
    let meta = std::fs::metadata(dir)?;
    if meta.permissions().mode() & 0o077 != 0 && meta.uid() == rustix::process::geteuid().as_raw() {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}
