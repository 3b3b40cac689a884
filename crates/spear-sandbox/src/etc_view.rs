//! The sandbox's `/etc`: a private copy of the curated files, bound with one mount.
//!
//! Binding each curated entry separately costs bubblewrap two mount calls per entry (about half of
//! its start-up time with thirty entries). A copy of the curated files, made once and bound as a
//! whole, costs one; curated directories (`ssl/certs`, `alternatives`, ...) are still bound on top
//! of it one by one, since fingerprinting their contents would cost more than binding them. The
//! copy lives in a per-user private directory, is named by a fingerprint of everything it was made
//! from (paths, inodes, sizes, modification and change times, modes, link targets), and is rebuilt
//! under a new name whenever one of them changes, so a sandbox never sees a stale or half-written
//! view.
//!
//! Only what every user of the host may read is copied: an entry without the world-read bit
//! (`/etc/ssl/private`, `shadow`) is left out. Attack stopped: a sandbox of root reading the
//! host's TLS private keys through a curated directory.

use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Numbers the builds of this process, for their temporary names.
static BUILDS: AtomicU64 = AtomicU64::new(0);

/// The layout of a view; bumped whenever `build` changes what a view holds.
const VIEW_FORMAT: u32 = 3;

/// Entries (files, directories, links) a view may hold; more is refused.
const MAX_ENTRIES: usize = 20_000;
/// Bytes a view may hold; more is refused.
const MAX_BYTES: u64 = 64 << 20;

/// One thing to copy: its path under `/etc` and what it is.
#[derive(Debug)]
struct Item {
    rel: PathBuf,
    meta: fs::Metadata,
    link: Option<PathBuf>,
}

/// Prepares the view of the files and links among `entries` (absolute paths under `etc`, as
/// `/etc/name`; directories are skipped) in `base`, a directory private to the user, and returns
/// its path.
pub fn prepare(base: &Path, etc: &Path, entries: &[PathBuf]) -> io::Result<PathBuf> {
    let items = collect(etc, entries)?;
    let mut h = DefaultHasher::new();
    // How views are laid out: a view made by an older spear is never reused.
    (VIEW_FORMAT, env!("CARGO_PKG_VERSION")).hash(&mut h);
    for item in &items {
        let m = &item.meta;
        (
            &item.rel,
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
            m.mode(),
            &item.link,
        )
            .hash(&mut h);
    }
    let view = base.join(format!("etc-{:016x}", h.finish()));
    if view.is_dir() {
        return Ok(view);
    }
    // A name of its own for every build, also between threads of one process: builds of the same
    // view race, and the first rename wins.
    let n = BUILDS.fetch_add(1, Ordering::Relaxed);
    let tmp = base.join(format!(".etc-tmp-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::DirBuilder::new().mode(0o755).create(&tmp)?;
    let built = build(etc, &tmp, &items);
    if let Err(e) = built {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if fs::rename(&tmp, &view).is_err() {
        // Another spear made the same view first; use theirs.
        let _ = fs::remove_dir_all(&tmp);
        if !view.is_dir() {
            return Err(io::Error::other("the /etc view could not be put in place"));
        }
    }
    Ok(view)
}

/// The files and links among the entries, world-readable only, without following links.
fn collect(etc: &Path, entries: &[PathBuf]) -> io::Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut bytes = 0u64;
    let rels = entries
        .iter()
        .filter_map(|e| e.strip_prefix("/etc").ok().map(Path::to_path_buf));
    for rel in rels {
        let path = etc.join(&rel);
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let ft = meta.file_type();
        let world_readable = meta.permissions().mode() & 0o004 != 0;
        if !ft.is_symlink() && !world_readable {
            continue;
        }
        if !(ft.is_file() || ft.is_dir() || ft.is_symlink()) {
            continue;
        }
        let link = if ft.is_symlink() || ft.is_dir() {
            // A directory is bound on top of the copy; the copy holds its mount point only.
            ft.is_symlink().then(|| fs::read_link(&path)).transpose()?
        } else {
            bytes += meta.size();
            None
        };
        items.push(Item { rel, meta, link });
        if items.len() > MAX_ENTRIES || bytes > MAX_BYTES {
            return Err(io::Error::other("the curated /etc is too large to copy"));
        }
    }
    Ok(items)
}

fn build(etc: &Path, dest: &Path, items: &[Item]) -> io::Result<()> {
    for item in items {
        let to = dest.join(&item.rel);
        if let Some(parent) = to.parent() {
            fs::DirBuilder::new()
                .mode(0o755)
                .recursive(true)
                .create(parent)?;
        }
        let ft = item.meta.file_type();
        if let Some(target) = &item.link {
            std::os::unix::fs::symlink(target, &to)?;
        } else if ft.is_dir() {
            fs::DirBuilder::new().mode(0o755).create(&to)?;
        } else {
            fs::copy(etc.join(&item.rel), &to)?;
            fs::set_permissions(&to, fs::Permissions::from_mode(item.meta.mode() & 0o755))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_what_everyone_may_read_and_follows_changes() {
        let root = tempfile::tempdir().unwrap();
        let etc = root.path().join("etc");
        let base = root.path().join("views");
        fs::create_dir_all(etc.join("ssl/certs")).unwrap();
        fs::create_dir_all(etc.join("ssl/private")).unwrap();
        fs::create_dir_all(&base).unwrap();
        fs::write(etc.join("passwd"), "root:x:0:0::/root:/bin/sh\n").unwrap();
        fs::write(etc.join("ssl/private/key.pem"), "KEY").unwrap();
        fs::set_permissions(etc.join("ssl/private"), fs::Permissions::from_mode(0o710)).unwrap();
        fs::write(etc.join("secret"), "s").unwrap();
        fs::set_permissions(etc.join("secret"), fs::Permissions::from_mode(0o640)).unwrap();
        std::os::unix::fs::symlink("/usr/share/zoneinfo/UTC", etc.join("localtime")).unwrap();
        std::os::unix::fs::symlink("../x", etc.join("ssl/certs/a.pem")).unwrap();
        fs::write(etc.join("ssl/openssl.cnf"), "cnf").unwrap();
        let entries: Vec<PathBuf> = [
            "passwd",
            "ssl/certs",
            "ssl/private",
            "ssl/openssl.cnf",
            "secret",
            "localtime",
            "missing",
        ]
        .iter()
        .map(|n| Path::new("/etc").join(n))
        .collect();
        let view = prepare(&base, &etc, &entries).unwrap();
        assert_eq!(
            fs::read_to_string(view.join("passwd")).unwrap(),
            "root:x:0:0::/root:/bin/sh\n"
        );
        assert_eq!(
            fs::read_link(view.join("localtime")).unwrap(),
            Path::new("/usr/share/zoneinfo/UTC")
        );
        assert!(!view.join("ssl/private").exists(), "not world-readable");
        assert_eq!(
            fs::read_to_string(view.join("ssl/openssl.cnf")).unwrap(),
            "cnf"
        );
        assert!(
            view.join("ssl/certs").is_dir(),
            "a mount point for the directory"
        );
        assert_eq!(
            fs::read_dir(view.join("ssl/certs")).unwrap().count(),
            0,
            "bound, not copied"
        );
        assert!(!view.join("secret").exists());
        // The same inputs give the same view; a change gives a new one.
        assert_eq!(prepare(&base, &etc, &entries).unwrap(), view);
        fs::write(etc.join("passwd"), "root:x:0:0::/root:/bin/bash\n").unwrap();
        let changed = prepare(&base, &etc, &entries).unwrap();
        assert_ne!(changed, view);
        assert!(
            fs::read_to_string(changed.join("passwd"))
                .unwrap()
                .ends_with("bash\n")
        );
    }
}
