//! The empty file masked files are bound from.
//!
//! A masked file must read as empty: a program that reads its configuration (cargo its
//! `config.toml`, pip its `pip.conf`) then runs without the secret, where `/dev/null` bound in its
//! place fails with "Permission denied" (bwrap's binds are `nodev`) and breaks the program.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::preflight_store::user_private_dir;

/// An empty regular file of the user's, read-only, in spear's private directory
/// ([`user_private_dir`]), made when it is not there or not empty; `None` when none can be made.
pub fn prepare_empty_file() -> Option<PathBuf> {
    let dir = user_private_dir("masks")?;
    prepare_in(&dir)
}

/// [`prepare_empty_file`] in `dir`.
fn prepare_in(dir: &Path) -> Option<PathBuf> {
    let path = dir.join("empty");
    if is_empty_file(&path) {
        return Some(path);
    }
    let tmp = dir.join(format!("empty.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::fs::File::create_new(&tmp).ok()?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o444)).ok()?;
    std::fs::rename(&tmp, &path).ok()?;
    is_empty_file(&path).then_some(path)
}

/// Whether `path` is an empty regular file of this user (not a link).
fn is_empty_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        m.is_file() && m.len() == 0 && m.uid() == rustix::process::geteuid().as_raw()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made when missing, made again when someone wrote into it or put a link there.
    #[test]
    fn an_empty_file_is_made_and_kept_empty() {
        let dir = tempfile::tempdir().unwrap();
        let file = prepare_in(dir.path()).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&file, "x").unwrap();
        assert_eq!(prepare_in(dir.path()).unwrap(), file);
        assert_eq!(std::fs::read(&file).unwrap(), b"");
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &file).unwrap();
        assert_eq!(prepare_in(dir.path()).unwrap(), file);
        assert!(std::fs::symlink_metadata(&file).unwrap().is_file());
    }
}
