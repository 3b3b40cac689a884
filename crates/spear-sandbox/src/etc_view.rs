//! The sandbox's `/etc`: a private copy of the curated entries, bound with one mount.
//!
//! Binding each curated entry separately costs bubblewrap two mount calls per entry: with thirty
//! entries, half of its start-up time. A copy made once and bound as a whole costs one. The copy
//! lives in a per-user private directory and is named by a fingerprint of everything it was made
//! from (paths, inodes, sizes, modification and change times, modes, link targets); when one of
//! them changes, the next check builds a new view under a new name, so a sandbox never sees a
//! half-written one.
//!
//! Fingerprinting walks every curated entry (about 700 on a Debian host, a few milliseconds), so a
//! verified view is trusted for [`RECHECK`] before the walk runs again: a change to `/etc` reaches
//! sandboxes started at most that long after it.
//!
//! Only what every user of the host may read is copied: an entry without the world-read bit (and,
//! for a directory, the world-search bit) is left out, with everything under it
//! (`/etc/ssl/private`, `shadow`). Attack stopped: a sandbox of root reading the host's TLS private
//! keys through a curated directory.

use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Numbers the builds and pointer updates of this process, for their temporary names.
static BUILDS: AtomicU64 = AtomicU64::new(0);

/// The layout of a view; bumped whenever `build` changes what a view holds.
const VIEW_FORMAT: u32 = 5;

/// How long a verified view is used before `/etc` is fingerprinted again.
pub const RECHECK: Duration = Duration::from_secs(10);

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

/// Prepares the view of `entries` (absolute paths under `etc`, as `/etc/name`; directories with
/// everything in them) in `base`, a directory private to the user, and returns its path.
pub fn prepare(base: &Path, etc: &Path, entries: &[PathBuf]) -> io::Result<PathBuf> {
    let mut key = DefaultHasher::new();
    (VIEW_FORMAT, env!("CARGO_PKG_VERSION"), etc, entries).hash(&mut key);
    let pointer = base.join(format!("current-{:016x}", key.finish()));
    if let Some(view) = recent(base, &pointer) {
        return Ok(view);
    }
    let view = verified(base, etc, entries)?;
    // Point at it (temporary file and rename, so a reader never sees half a name); the pointer's
    // modification time is the time of the check.
    let n = BUILDS.fetch_add(1, Ordering::Relaxed);
    let tmp = base.join(format!(".pointer-{}-{n}", std::process::id()));
    if let Some(name) = view.file_name().and_then(|n| n.to_str()) {
        if fs::write(&tmp, name).is_ok() && fs::rename(&tmp, &pointer).is_ok() {
            return Ok(view);
        }
        let _ = fs::remove_file(&tmp);
    }
    Ok(view)
}

/// The view named by `pointer`, if it was verified less than [`RECHECK`] ago and still exists.
fn recent(base: &Path, pointer: &Path) -> Option<PathBuf> {
    let age = fs::metadata(pointer)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())?;
    if age >= RECHECK {
        return None;
    }
    let name = fs::read_to_string(pointer).ok()?;
    let valid = name.starts_with("etc-") && name.len() == 20 && !name.contains('/');
    let view = base.join(name);
    (valid && view.is_dir()).then_some(view)
}

/// Fingerprints the entries and returns the view of exactly that state, building it if needed.
fn verified(base: &Path, etc: &Path, entries: &[PathBuf]) -> io::Result<PathBuf> {
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

/// Everything under the entries that every user may read, without following links.
fn collect(etc: &Path, entries: &[PathBuf]) -> io::Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut bytes = 0u64;
    let mut stack: Vec<PathBuf> = entries
        .iter()
        .filter_map(|e| e.strip_prefix("/etc").ok().map(Path::to_path_buf))
        .rev()
        .collect();
    while let Some(rel) = stack.pop() {
        let path = etc.join(&rel);
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let ft = meta.file_type();
        let mode = meta.permissions().mode();
        let public = if ft.is_dir() {
            mode & 0o005 == 0o005
        } else {
            mode & 0o004 != 0
        };
        if !(ft.is_symlink() || (public && (ft.is_file() || ft.is_dir()))) {
            continue;
        }
        let link = if ft.is_symlink() {
            Some(fs::read_link(&path)?)
        } else {
            None
        };
        if ft.is_dir() {
            let mut children: Vec<PathBuf> = fs::read_dir(&path)?
                .map(|e| e.map(|e| rel.join(e.file_name())))
                .collect::<io::Result<_>>()?;
            children.sort();
            stack.extend(children.into_iter().rev());
        } else if ft.is_file() {
            bytes += meta.size();
        }
        items.push(Item { rel, meta, link });
        if items.len() > MAX_ENTRIES || bytes > MAX_BYTES {
            return Err(io::Error::other("the curated /etc is too large to copy"));
        }
    }
    Ok(items)
}

/// Copies `items` from `etc` into `dest`: files with their permission bits, links as links,
/// directories with their permission bits set last.
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
    // A mount point for a networked sandbox's resolver file (the host's names host-local
    // resolvers a sandbox cannot reach, so it is never copied).
    fs::write(dest.join("resolv.conf"), b"")?;
    for item in items.iter().filter(|i| i.meta.is_dir()).rev() {
        let mode = item.meta.mode() & 0o755;
        fs::set_permissions(dest.join(&item.rel), fs::Permissions::from_mode(mode))?;
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
        assert_eq!(
            fs::read_link(view.join("ssl/certs/a.pem")).unwrap(),
            Path::new("../x"),
            "directories are copied whole, links as links"
        );
        assert!(!view.join("secret").exists());
        // The same inputs give the same view; a change gives a new one once it is rechecked.
        assert_eq!(prepare(&base, &etc, &entries).unwrap(), view);
        fs::write(etc.join("passwd"), "root:x:0:0::/root:/bin/bash\n").unwrap();
        assert_eq!(
            prepare(&base, &etc, &entries).unwrap(),
            view,
            "trusted until the recheck"
        );
        let old = SystemTime::now() - RECHECK - Duration::from_secs(1);
        for entry in fs::read_dir(&base).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with("current-") {
                fs::File::options()
                    .write(true)
                    .open(entry.path())
                    .unwrap()
                    .set_modified(old)
                    .unwrap();
            }
        }
        let changed = prepare(&base, &etc, &entries).unwrap();
        assert_ne!(changed, view);
        assert!(
            fs::read_to_string(changed.join("passwd"))
                .unwrap()
                .ends_with("bash\n")
        );
    }
}
