//! A tree's scan between processes: one file per tree in the user's private directory, written
//! whole and renamed into place, read back only when it was written by the same rules.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use spear_core::credentials::{
    CREDENTIAL_CONFIGS, CREDENTIAL_DIRS, CREDENTIAL_FILES, CREDENTIAL_SEQUENCES,
};

use super::record::{DirScan, Found, MAX_CONFIG_BYTES, Stamp, TreeScan};

/// What the rules of this build are: a scan judged by other rules is not taken from disk.
fn rules_key() -> u64 {
    let mut h = DefaultHasher::new();
    (
        FORMAT,
        env!("CARGO_PKG_VERSION"),
        CREDENTIAL_DIRS,
        CREDENTIAL_FILES,
        CREDENTIAL_CONFIGS,
        CREDENTIAL_SEQUENCES,
        MAX_CONFIG_BYTES,
    )
        .hash(&mut h);
    h.finish()
}

/// The first bytes of a scan's file.
pub(super) const FORMAT: &[u8] = b"spear-secret-scan 2\n";

/// The file that holds the scan of `tree` under `disk`.
fn file_of(disk: &Path, tree: &Path) -> PathBuf {
    let mut h = DefaultHasher::new();
    tree.hash(&mut h);
    disk.join(format!("{:016x}", h.finish()))
}

/// A scan's file not written or used for this long belongs to a tree no longer bound (a test's,
/// a toolchain removed) and is removed when another is written.
const UNUSED: Duration = Duration::from_secs(14 * 24 * 3600);

/// Writes `scan` where [`load`] finds it (a new file renamed over the old one; best effort), and
/// removes the files of trees unused for [`UNUSED`].
pub(super) fn store(disk: &Path, scan: &TreeScan) {
    let bytes = encode(scan);
    let file = file_of(disk, &scan.root);
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, &file).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    sweep(disk, SystemTime::now());
}

/// Removes the files under `disk` unused for [`UNUSED`] at `now`.
fn sweep(disk: &Path, now: SystemTime) {
    for entry in std::fs::read_dir(disk).into_iter().flatten().flatten() {
        let old = entry
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > UNUSED);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The scan of `tree` an earlier process wrote under `disk`, when it was judged by these rules.
/// A file used is marked as such (its modification time) once a day, so that [`store`] keeps it.
pub(super) fn load(disk: &Path, tree: &Path) -> Option<TreeScan> {
    let path = file_of(disk, tree);
    let file = std::fs::File::open(&path).ok()?;
    let stale = file
        .metadata()
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > Duration::from_secs(24 * 3600));
    if stale {
        let _ = std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(SystemTime::now()));
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut bytes).ok()?;
    decode(&bytes).filter(|s| s.root == tree)
}

pub(super) fn encode(scan: &TreeScan) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * scan.dirs.len());
    out.extend_from_slice(FORMAT);
    out.extend_from_slice(&rules_key().to_le_bytes());
    put_bytes(&mut out, scan.root.as_os_str().as_bytes());
    put_u64(&mut out, scan.skipped.len() as u64);
    for s in &scan.skipped {
        put_bytes(&mut out, s.as_os_str().as_bytes());
    }
    put_u64(&mut out, scan.dirs.len() as u64);
    let mut index: HashMap<&Path, u64> = HashMap::with_capacity(scan.dirs.len());
    for (i, dir) in scan.dirs.iter().enumerate() {
        // A directory is written as its parent's index and its name when the parent came before.
        let parent = dir
            .path
            .parent()
            .and_then(|p| index.get(p))
            .zip(dir.path.file_name());
        if let Some((&parent, name)) = parent {
            put_u64(&mut out, parent);
            put_bytes(&mut out, name.as_bytes());
        } else {
            put_u64(&mut out, u64::MAX);
            put_bytes(&mut out, dir.path.as_os_str().as_bytes());
        }
        index.insert(&dir.path, i as u64);
        put_stamp(&mut out, &dir.stamp);
        put_u64(&mut out, dir.found.len() as u64);
        for found in &dir.found {
            match found {
                Found::Store { name, dir } => {
                    out.push(u8::from(*dir));
                    put_bytes(&mut out, name.as_bytes());
                }
                Found::Config {
                    name,
                    stamp,
                    secret,
                } => {
                    out.push(2 + u8::from(*secret));
                    put_bytes(&mut out, name.as_bytes());
                    put_stamp(&mut out, stamp);
                }
                Found::Link { name } => {
                    out.push(4);
                    put_bytes(&mut out, name.as_bytes());
                }
            }
        }
    }
    out
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_stamp(out: &mut Vec<u8>, s: &Stamp) {
    put_u64(out, s.dev);
    put_u64(out, s.ino);
    out.extend_from_slice(&s.ctime.to_le_bytes());
    out.extend_from_slice(&s.ctime_ns.to_le_bytes());
    put_u64(out, s.size);
    out.push(u8::from(s.racy));
}

/// Reads what [`encode`] wrote; `None` for anything else (another format or rules, a cut file).
pub(super) fn decode(bytes: &[u8]) -> Option<TreeScan> {
    let mut r = Reader(bytes);
    if r.take(FORMAT.len())? != FORMAT || r.u64()? != rules_key() {
        return None;
    }
    let root = PathBuf::from(OsStr::from_bytes(r.bytes()?));
    let skips = usize::try_from(r.u64()?).ok()?;
    let mut skipped = Vec::with_capacity(skips.min(64));
    for _ in 0..skips {
        skipped.push(PathBuf::from(OsStr::from_bytes(r.bytes()?)));
    }
    let count = usize::try_from(r.u64()?).ok()?;
    let mut dirs: Vec<DirScan> = Vec::with_capacity(count.min(1 << 20));
    for _ in 0..count {
        let parent = r.u64()?;
        let name = OsStr::from_bytes(r.bytes()?);
        let path = if parent == u64::MAX {
            PathBuf::from(name)
        } else {
            dirs.get(usize::try_from(parent).ok()?)?.path.join(name)
        };
        let stamp = r.stamp()?;
        let n = usize::try_from(r.u64()?).ok()?;
        let mut found = Vec::with_capacity(n.min(1 << 10));
        for _ in 0..n {
            let kind = r.take(1)?[0];
            let name = OsStr::from_bytes(r.bytes()?).to_os_string();
            found.push(match kind {
                0 | 1 => Found::Store {
                    name,
                    dir: kind == 1,
                },
                2 | 3 => Found::Config {
                    name,
                    stamp: r.stamp()?,
                    secret: kind == 3,
                },
                4 => Found::Link { name },
                _ => return None,
            });
        }
        dirs.push(DirScan { path, stamp, found });
    }
    r.0.is_empty().then_some(TreeScan {
        root,
        skipped,
        dirs,
    })
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }

    fn stamp(&mut self) -> Option<Stamp> {
        Some(Stamp {
            dev: self.u64()?,
            ino: self.u64()?,
            ctime: self.i64()?,
            ctime_ns: self.i64()?,
            size: self.u64()?,
            racy: self.take(1)?[0] != 0,
        })
    }
}
