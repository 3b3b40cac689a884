//! Credential files at any depth of the trees a sandbox binds from the host, found once and
//! remembered by the directories' change stamps.
//!
//! Attack stopped: a registry token or password read from a tree the sandbox binds read-only so
//! that ordinary work runs (`~/.cargo`, `~/.pyenv`, nvm's, conda's and uv's trees, `/usr`, `/opt`,
//! a path the operator named): cargo's `config.toml` with a `[registry]` token, a
//! pyenv-virtualenv's `pip.conf` under `versions/*/envs/*`, npm's own `npmrc` in nvm's tree, a
//! conda environment's `.condarc`, `.git-credentials` or `.netrc` at any depth. Every entry of a
//! bound tree is judged by [`secret_candidate`]: a credential store is masked whatever it holds, a
//! configuration file of a known format is masked when [`config_holds_secret`] finds a secret in
//! it (a `pip.conf` that names only an index stays readable, so builds that need it still run).
//! A link with such a name is followed on the host: what it points at is masked where the sandbox
//! shows it (the link itself is never a mount point: bwrap would follow it).
//!
//! Cost: a tree is walked once ([`scan`]); afterwards a look stats each directory it recorded and
//! lists again only those whose change stamp (device, inode, ctime) moved, since a new, removed
//! or renamed entry changes its directory's ctime; each configuration file found is stat'ed and
//! judged again when its own stamp moved (a token appended in place changes no directory). A
//! stamp within [`RACY`] of the moment it was taken is not trusted (the kernel's clock for ctime is
//! coarse: a change in the same tick would keep it), and is looked at again next time. What was
//! found is kept in this process and, between processes, in a file per tree under the user's
//! private directory ([`crate::user_private_dir`]), keyed by the tree's path and the rules that
//! judged it.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spear_core::credentials::{
    CREDENTIAL_CONFIGS, CREDENTIAL_DIRS, CREDENTIAL_FILES, CREDENTIAL_SEQUENCES, SecretCandidate,
    config_holds_secret, secret_candidate,
};

use crate::spec::Mask;

/// Bytes of a configuration file that are judged; a larger file is masked unread.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A change stamp this close to the moment it was taken is looked at again next time.
pub const RACY: Duration = Duration::from_secs(2);

/// How much of a remembered tree a look checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Every directory's stamp (and every file found): what a new runner does.
    Full,
    /// Only the files found (configuration files judged again when they changed, stores still
    /// there): what every command does between full looks. A tree never looked at is looked at
    /// fully.
    Found,
}

/// What identifies a directory's or a file's state: a change of content, entries, owner or mode
/// moves its ctime, a replacement its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    ctime: i64,
    ctime_ns: i64,
    size: u64,
    /// Taken within [`RACY`] of its ctime: not trusted.
    racy: bool,
}

impl Stamp {
    fn of(meta: &Metadata, now: SystemTime) -> Self {
        let changed = UNIX_EPOCH
            + Duration::new(
                u64::try_from(meta.ctime()).unwrap_or(0),
                u32::try_from(meta.ctime_nsec()).unwrap_or(0),
            );
        let racy = now.duration_since(changed).map_or(true, |age| age < RACY);
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: meta.ctime(),
            ctime_ns: meta.ctime_nsec(),
            size: meta.size(),
            racy,
        }
    }

    /// Whether `now` (a fresh stamp) says nothing changed since `self` was taken.
    fn holds(&self, now: &Stamp) -> bool {
        !self.racy
            && (self.dev, self.ino, self.ctime, self.ctime_ns, self.size)
                == (now.dev, now.ino, now.ctime, now.ctime_ns, now.size)
    }
}

/// An entry of a directory that the sandbox masks, or may mask.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Found {
    /// A credential store: a file, or a directory (not looked into).
    Store { name: OsString, dir: bool },
    /// A configuration file, with the stamp it was judged at and the verdict.
    Config {
        name: OsString,
        stamp: Stamp,
        secret: bool,
    },
    /// A link with a credential name, followed whenever masks are made.
    Link { name: OsString },
}

impl Found {
    fn name(&self) -> &OsStr {
        match self {
            Found::Store { name, .. } | Found::Config { name, .. } | Found::Link { name } => name,
        }
    }
}

/// One directory of a tree as it was looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DirScan {
    path: PathBuf,
    stamp: Stamp,
    found: Vec<Found>,
}

/// Every directory of one bound tree, with what each holds that the sandbox masks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeScan {
    root: PathBuf,
    dirs: Vec<DirScan>,
}

/// What looking at the trees cost and found, for benchmarks and `spear doctor`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Directories listed (a first look lists every one; a later one only those that changed).
    pub listed: usize,
    /// Directories whose stamp was checked without listing them.
    pub stamped: usize,
    /// Configuration files read and judged.
    pub judged: usize,
    /// Trees taken from the file of an earlier process.
    pub from_disk: usize,
}

impl std::ops::AddAssign for ScanStats {
    fn add_assign(&mut self, o: Self) {
        self.listed += o.listed;
        self.stamped += o.stamped;
        self.judged += o.judged;
        self.from_disk += o.from_disk;
    }
}

impl TreeScan {
    /// Walks `root` (a directory) whole, leaving out what lies in `skip`.
    fn scan(root: &Path, skip: &[PathBuf], now: SystemTime, stats: &mut ScanStats) -> Self {
        let mut dirs = Vec::new();
        walk(root, root, skip, now, &mut dirs, stats);
        TreeScan {
            root: root.to_path_buf(),
            dirs,
        }
    }

    /// Brings the scan up to date with the host: with [`Depth::Full`], each directory whose stamp
    /// moved is listed again and what appeared under it walked; then each configuration file found
    /// whose stamp moved is judged again, and each store found that is gone is forgotten. Returns
    /// whether anything changed.
    fn refresh(
        &mut self,
        skip: &[PathBuf],
        depth: Depth,
        now: SystemTime,
        stats: &mut ScanStats,
    ) -> bool {
        let mut changed = false;
        let mut kept = Vec::with_capacity(self.dirs.len());
        let mut appeared: Vec<PathBuf> = Vec::new();
        for mut dir in std::mem::take(&mut self.dirs) {
            if depth == Depth::Full {
                stats.stamped += 1;
                if dir.path != self.root && skip.iter().any(|s| dir.path.starts_with(s)) {
                    changed = true;
                    continue;
                }
                let Some(stamp) = dir_stamp(&dir.path, now) else {
                    changed = true;
                    continue;
                };
                if !dir.stamp.holds(&stamp) {
                    let (found, subdirs) = look(&self.root, &dir.path, now, stats);
                    changed |= found != dir.found || stamp != dir.stamp;
                    dir.found = found;
                    dir.stamp = stamp;
                    appeared.extend(subdirs.into_iter().filter(|s| !skipped(s, skip)));
                    kept.push(dir);
                    continue;
                }
            }
            changed |= recheck(&mut dir, now, stats);
            kept.push(dir);
        }
        if !appeared.is_empty() {
            let known: HashSet<&Path> = kept.iter().map(|d| d.path.as_path()).collect();
            let new: Vec<PathBuf> = appeared
                .into_iter()
                .filter(|p| !known.contains(p.as_path()))
                .collect();
            for sub in new {
                changed = true;
                walk(&self.root, &sub, skip, now, &mut kept, stats);
            }
        }
        self.dirs = kept;
        changed
    }

    /// The masks of this tree. `bound` pairs each bound tree's host path, links resolved, with
    /// where the sandbox shows it: a credential link is masked at its target when the sandbox
    /// shows that, and needs no mask when it does not.
    fn masks(&self, bound: &[(PathBuf, PathBuf)], out: &mut Vec<Mask>) {
        for dir in &self.dirs {
            for found in &dir.found {
                let path = dir.path.join(found.name());
                match found {
                    Found::Store { dir: true, .. } => out.push(Mask::Dir(path)),
                    Found::Store { dir: false, .. } | Found::Config { secret: true, .. } => {
                        out.push(Mask::File(path))
                    }
                    Found::Config { secret: false, .. } => {}
                    Found::Link { .. } => out.extend(link_mask(&self.root, &path, bound)),
                }
            }
        }
    }
}

/// Whether `path` lies in one of `skip`.
fn skipped(path: &Path, skip: &[PathBuf]) -> bool {
    skip.iter().any(|s| path.starts_with(s))
}

/// The stamp of the directory at `path` (not following a link), `None` when it is not one.
fn dir_stamp(path: &Path, now: SystemTime) -> Option<Stamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(Metadata::is_dir)
        .map(|m| Stamp::of(&m, now))
}

/// Records `start` and every directory under it (not following links, leaving out `skip` and
/// store directories) into `out`, each with what it holds.
fn walk(
    root: &Path,
    start: &Path,
    skip: &[PathBuf],
    now: SystemTime,
    out: &mut Vec<DirScan>,
    stats: &mut ScanStats,
) {
    let mut stack = vec![start.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Some(stamp) = dir_stamp(&dir, now) else {
            continue;
        };
        let (found, subdirs) = look(root, &dir, now, stats);
        stack.extend(subdirs.into_iter().filter(|s| !skipped(s, skip)));
        out.push(DirScan {
            path: dir,
            stamp,
            found,
        });
    }
}

/// Lists `dir`: what it holds that the sandbox masks (configuration files judged now), and its
/// subdirectories to look into.
fn look(
    root: &Path,
    dir: &Path,
    now: SystemTime,
    stats: &mut ScanStats,
) -> (Vec<Found>, Vec<PathBuf>) {
    stats.listed += 1;
    let mut found = Vec::new();
    let mut subdirs = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (found, subdirs);
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let path = dir.join(&name);
        if kind.is_symlink() {
            let named = [false, true]
                .iter()
                .any(|&d| secret_candidate(root, &path, d) != SecretCandidate::Other);
            if named {
                found.push(Found::Link { name });
            }
        } else if kind.is_dir() {
            match secret_candidate(root, &path, true) {
                SecretCandidate::Store => found.push(Found::Store { name, dir: true }),
                _ => subdirs.push(path),
            }
        } else {
            match secret_candidate(root, &path, false) {
                SecretCandidate::Store => found.push(Found::Store { name, dir: false }),
                SecretCandidate::Config => {
                    if let Some((stamp, secret)) = judge(&path, now, stats) {
                        found.push(Found::Config {
                            name,
                            stamp,
                            secret,
                        });
                    }
                }
                SecretCandidate::Other => {}
            }
        }
    }
    found.sort_by(|a, b| a.name().cmp(b.name()));
    (found, subdirs)
}

/// Judges the configuration file at `path` (not following a link): its stamp, and whether it holds
/// a secret. One that is not a regular file, or larger than [`MAX_CONFIG_BYTES`], or cannot be
/// read whole, counts as holding one. `None` when nothing is there.
fn judge(path: &Path, now: SystemTime, stats: &mut ScanStats) -> Option<(Stamp, bool)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let stamp = Stamp::of(&meta, now);
    if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES {
        return Some((stamp, true));
    }
    stats.judged += 1;
    Some((stamp, holds_secret(path)))
}

/// Whether the file at `path` holds a secret by [`config_holds_secret`]; one that cannot be read
/// (or is larger than [`MAX_CONFIG_BYTES`]) counts as holding one.
fn holds_secret(path: &Path) -> bool {
    let mut text = Vec::new();
    let read =
        std::fs::File::open(path).and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut text));
    match read {
        Ok(n) if n as u64 <= MAX_CONFIG_BYTES => {
            config_holds_secret(&String::from_utf8_lossy(&text))
        }
        _ => true,
    }
}

/// Checks what `dir` holds without listing it again: each configuration file whose stamp moved is
/// judged again, a store or file that is gone is forgotten. Returns whether anything changed.
fn recheck(dir: &mut DirScan, now: SystemTime, stats: &mut ScanStats) -> bool {
    let mut changed = false;
    dir.found.retain_mut(|found| {
        let path = dir.path.join(found.name());
        match found {
            Found::Store { dir: is_dir, .. } => {
                let here = std::fs::symlink_metadata(&path)
                    .ok()
                    .is_some_and(|m| m.is_dir() == *is_dir && !m.is_symlink());
                changed |= !here;
                here
            }
            Found::Config { stamp, secret, .. } => {
                let Some(meta) = std::fs::symlink_metadata(&path).ok() else {
                    changed = true;
                    return false;
                };
                let fresh = Stamp::of(&meta, now);
                if !stamp.holds(&fresh) {
                    match judge(&path, now, stats) {
                        Some((s, verdict)) => {
                            changed |= verdict != *secret || s != *stamp;
                            *stamp = s;
                            *secret = verdict;
                        }
                        None => {
                            changed = true;
                            return false;
                        }
                    }
                }
                true
            }
            Found::Link { .. } => {
                let here = std::fs::symlink_metadata(&path)
                    .ok()
                    .is_some_and(|m| m.is_symlink());
                changed |= !here;
                here
            }
        }
    });
    changed
}

/// The mask a credential link at `link` (inside the tree `root`) needs: its target's, where the
/// sandbox shows the target (a bound tree); none when the target is not shown or not there. A
/// configuration file's target is judged as the file would be.
fn link_mask(root: &Path, link: &Path, bound: &[(PathBuf, PathBuf)]) -> Option<Mask> {
    let target = std::fs::canonicalize(link).ok()?;
    let meta = std::fs::metadata(&target).ok()?;
    let (host, shown) = bound.iter().find(|(host, _)| target.starts_with(host))?;
    let inside = shown.join(target.strip_prefix(host).ok()?);
    let store = [false, true]
        .iter()
        .any(|&d| secret_candidate(root, link, d) == SecretCandidate::Store);
    if meta.is_dir() {
        return (store || secret_candidate(root, link, true) == SecretCandidate::Store)
            .then_some(Mask::Dir(inside));
    }
    let mut stats = ScanStats::default();
    let secret =
        store || judge(&target, SystemTime::now(), &mut stats).is_some_and(|(_, secret)| secret);
    secret.then_some(Mask::File(inside))
}

/// The mask a bound file (not a directory: a host-read path) needs: itself, when its name makes it
/// a store, or when it is a configuration file that holds a secret. A link is judged by its name
/// and by what it points at.
fn file_mask(path: &Path) -> Option<Mask> {
    let parent = path.parent().unwrap_or(path);
    match secret_candidate(parent, path, false) {
        SecretCandidate::Store => Some(Mask::File(path.to_path_buf())),
        SecretCandidate::Config => holds_secret(path).then(|| Mask::File(path.to_path_buf())),
        SecretCandidate::Other => None,
    }
}

/// The masks of every tree in `trees` (host paths the sandbox binds read-only at the same path),
/// leaving out what lies in `skip` (the workspace roots: the project is not a bound tree), each
/// tree's scan taken from this process's memory or `disk` (a private directory, see
/// [`crate::user_private_dir`]) and brought up to date at `depth`. Sorted, without repeats.
pub fn secret_masks(
    trees: &[PathBuf],
    skip: &[PathBuf],
    disk: Option<&Path>,
    depth: Depth,
) -> (Vec<Mask>, ScanStats) {
    masks_at(trees, skip, disk, depth, SystemTime::now())
}

/// [`secret_masks`] as if it were `now` (tests: stamps taken just now are not racy an hour on).
fn masks_at(
    trees: &[PathBuf],
    skip: &[PathBuf],
    disk: Option<&Path>,
    depth: Depth,
    now: SystemTime,
) -> (Vec<Mask>, ScanStats) {
    let bound: Vec<(PathBuf, PathBuf)> = trees
        .iter()
        .filter_map(|t| std::fs::canonicalize(t).ok().map(|c| (c, t.clone())))
        .collect();
    let mut masks = Vec::new();
    let mut stats = ScanStats::default();
    for tree in trees {
        let Ok(meta) = std::fs::metadata(tree) else {
            continue;
        };
        if !meta.is_dir() {
            masks.extend(file_mask(tree));
            continue;
        }
        let slot = memory_slot(tree);
        let mut held = slot.lock().unwrap_or_else(PoisonError::into_inner);
        let mut depth = depth;
        if held.is_none() {
            *held = disk.and_then(|d| load(d, tree));
            if held.is_some() {
                stats.from_disk += 1;
                depth = Depth::Full;
            }
        }
        let save = match held.as_mut() {
            Some(scan) => scan.refresh(skip, depth, now, &mut stats),
            None => {
                *held = Some(TreeScan::scan(tree, skip, now, &mut stats));
                true
            }
        };
        if let Some(scan) = held.as_ref() {
            if save && let Some(d) = disk {
                store(d, scan);
            }
            scan.masks(&bound, &mut masks);
        }
    }
    masks.sort_by(|a, b| a.path().cmp(b.path()));
    masks.dedup();
    (masks, stats)
}

/// Every scan this process holds, by tree.
type Slots = HashMap<PathBuf, Arc<Mutex<Option<TreeScan>>>>;

fn slots() -> std::sync::MutexGuard<'static, Slots> {
    static SCANS: OnceLock<Mutex<Slots>> = OnceLock::new();
    SCANS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// This process's scan of `tree`, shared by every runner (one look at a time per tree).
fn memory_slot(tree: &Path) -> Arc<Mutex<Option<TreeScan>>> {
    Arc::clone(slots().entry(tree.to_path_buf()).or_default())
}

/// Forgets this process's scan of `tree`, as a new process would not have it: the next look takes
/// the file of an earlier process, or walks.
pub fn forget_scan(tree: &Path) {
    let slot = slots().get(tree).cloned();
    if let Some(slot) = slot {
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

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
const FORMAT: &[u8] = b"spear-secret-scan 1\n";

/// The file that holds the scan of `tree` under `disk`.
fn file_of(disk: &Path, tree: &Path) -> PathBuf {
    let mut h = DefaultHasher::new();
    tree.hash(&mut h);
    disk.join(format!("{:016x}", h.finish()))
}

/// Writes `scan` where [`load`] finds it (a new file renamed over the old one; best effort).
fn store(disk: &Path, scan: &TreeScan) {
    let bytes = encode(scan);
    let file = file_of(disk, &scan.root);
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, &file).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The scan of `tree` an earlier process wrote under `disk`, when it was judged by these rules.
fn load(disk: &Path, tree: &Path) -> Option<TreeScan> {
    let bytes = std::fs::read(file_of(disk, tree)).ok()?;
    decode(&bytes).filter(|s| s.root == tree)
}

fn encode(scan: &TreeScan) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * scan.dirs.len());
    out.extend_from_slice(FORMAT);
    out.extend_from_slice(&rules_key().to_le_bytes());
    put_bytes(&mut out, scan.root.as_os_str().as_bytes());
    put_u64(&mut out, scan.dirs.len() as u64);
    let mut index: HashMap<&Path, u64> = HashMap::with_capacity(scan.dirs.len());
    for (i, dir) in scan.dirs.iter().enumerate() {
        // A directory is written as its parent's index and its name when the parent came before.
        match dir
            .path
            .parent()
            .and_then(|p| index.get(p))
            .zip(dir.path.file_name())
        {
            Some((&parent, name)) => {
                put_u64(&mut out, parent);
                put_bytes(&mut out, name.as_bytes());
            }
            None => {
                put_u64(&mut out, u64::MAX);
                put_bytes(&mut out, dir.path.as_os_str().as_bytes());
            }
        }
        index.insert(&dir.path, i as u64);
        put_stamp(&mut out, &dir.stamp);
        put_u64(&mut out, dir.found.len() as u64);
        for found in &dir.found {
            match found {
                Found::Store { name, dir } => {
                    out.push(if *dir { 1 } else { 0 });
                    put_bytes(&mut out, name.as_bytes());
                }
                Found::Config {
                    name,
                    stamp,
                    secret,
                } => {
                    out.push(if *secret { 3 } else { 2 });
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
fn decode(bytes: &[u8]) -> Option<TreeScan> {
    let mut r = Reader(bytes);
    if r.take(FORMAT.len())? != FORMAT || r.u64()? != rules_key() {
        return None;
    }
    let root = PathBuf::from(OsStr::from_bytes(r.bytes()?));
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
    r.0.is_empty().then_some(TreeScan { root, dirs })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A home with the trees of issue 31's cases, each beside a twin that holds no secret.
    struct Host {
        _dir: tempfile::TempDir,
        base: PathBuf,
    }

    const TOKEN: &str = "s3cr3t-token-value";

    impl Host {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let base = dir.path().canonicalize().unwrap();
            Host { _dir: dir, base }
        }

        fn put(&self, rel: &str, text: &str) -> PathBuf {
            let path = self.base.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
            path
        }

        fn p(&self, rel: &str) -> PathBuf {
            self.base.join(rel)
        }

        /// Every case of the issue and its clean twin.
        fn cases(&self) {
            let t = TOKEN;
            self.put(
                ".cargo/config.toml",
                &format!("[registry]\ntoken = \"{t}\"\n"),
            );
            self.put(
                ".cargo/config",
                &format!("[registries.corp]\ntoken = \"{t}\"\n"),
            );
            self.put(
                ".cargo/registry/src/i/a-1.0/.cargo/config.toml",
                "[build]\njobs = 2\n",
            );
            self.put(".cargo/registry/src/i/a-1.0/src/lib.rs", "pub fn a() {}\n");
            self.put(
                ".pyenv/versions/3.12.1/envs/venv/pip.conf",
                &format!("[global]\nindex-url = https://u:{t}@pypi.corp/simple\n"),
            );
            self.put(
                ".pyenv/versions/3.11.0/envs/clean/pip.conf",
                "[global]\nindex-url = https://pypi.org/simple\n",
            );
            self.put(
                ".nvm/versions/node/v20.1.0/lib/node_modules/npm/npmrc",
                &format!("//registry.npmjs.org/:_authToken={t}\n"),
            );
            self.put(
                ".nvm/versions/node/v18.0.0/lib/node_modules/npm/npmrc",
                "globalconfig=/x/etc/npmrc\n",
            );
            self.put(
                "miniconda3/envs/e/.condarc",
                &format!("channels:\n  - https://conda.anaconda.org/t/{t}/corp\n"),
            );
            self.put(
                "miniconda3/envs/e/pip.conf",
                &format!("[global]\nextra-index-url = https://{t}:x@corp/simple\n"),
            );
            self.put("miniconda3/envs/f/.condarc", "channels:\n  - conda-forge\n");
            self.put(
                ".pyenv/plugins/.git-credentials",
                &format!("https://u:{t}@github.com\n"),
            );
            self.put(
                ".cargo/git/.netrc",
                &format!("machine h login u password {t}\n"),
            );
            self.put(
                ".local/share/uv/uv.toml",
                &format!("[[index]]\nurl = \"https://u:{t}@corp/simple\"\n"),
            );
            self.put(
                ".local/share/uv/tools/ruff/pip.conf",
                &format!("[global]\nindex-url = https://u:{t}@corp/simple\n"),
            );
            self.put(
                ".local/share/uv/tools/black/pip.conf",
                "[global]\ntimeout = 30\n",
            );
            self.put(".local/share/uv/python/cpython/lib/x.py", "import os\n");
        }

        fn trees(&self) -> Vec<PathBuf> {
            [".cargo", ".pyenv", ".nvm", "miniconda3", ".local/share/uv"]
                .iter()
                .map(|t| self.p(t))
                .collect()
        }
    }

    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(3600)
    }

    fn paths(masks: &[Mask]) -> Vec<PathBuf> {
        masks.iter().map(|m| m.path().to_path_buf()).collect()
    }

    /// Each case of the issue is masked, at whatever depth; each clean twin is not (the positive
    /// control: the same kind of file, in the same kind of place, without the secret).
    #[test]
    fn every_case_is_masked_and_no_twin() {
        let host = Host::new();
        host.cases();
        let (masks, stats) = masks_at(&host.trees(), &[], None, Depth::Full, later());
        let got = paths(&masks);
        for secret in [
            ".cargo/config.toml",
            ".cargo/config",
            ".cargo/git/.netrc",
            ".pyenv/versions/3.12.1/envs/venv/pip.conf",
            ".pyenv/plugins/.git-credentials",
            ".nvm/versions/node/v20.1.0/lib/node_modules/npm/npmrc",
            "miniconda3/envs/e/.condarc",
            "miniconda3/envs/e/pip.conf",
            ".local/share/uv/uv.toml",
            ".local/share/uv/tools/ruff/pip.conf",
        ] {
            assert!(
                got.contains(&host.p(secret)),
                "{secret} not masked: {got:?}"
            );
        }
        assert_eq!(got.len(), 10, "{got:?}");
        assert!(masks.iter().all(|m| matches!(m, Mask::File(_))));
        assert!(stats.listed > 20 && stats.judged >= 13, "{stats:?}");
    }

    /// A second look at an unchanged tree lists nothing; a file that appears deep inside is
    /// found by listing its directory alone; a token written into a known file in place (no
    /// directory changes) is found by the look every command makes.
    #[test]
    fn a_look_lists_only_what_changed() {
        let host = Host::new();
        host.cases();
        let tree = host.p(".pyenv");
        let mut stats = ScanStats::default();
        let mut scan = TreeScan::scan(&tree, &[], later(), &mut stats);
        let mut again = ScanStats::default();
        assert!(!scan.refresh(&[], Depth::Full, later(), &mut again));
        assert_eq!((again.listed, again.judged), (0, 0), "{again:?}");
        assert_eq!(again.stamped, scan.dirs.len());

        // Deep, new: its directory's stamp moved, that directory alone is listed.
        host.put(
            ".pyenv/versions/3.11.0/lib/python3.11/site-packages/x/.netrc",
            "machine h\n",
        );
        let mut masks = Vec::new();
        let mut seen = ScanStats::default();
        // Positive control: a look at the files found only does not see it.
        assert!(!scan.clone().refresh(&[], Depth::Found, later(), &mut seen));
        assert!(scan.refresh(&[], Depth::Full, later(), &mut seen));
        scan.masks(&[], &mut masks);
        assert!(
            paths(&masks)
                .contains(&host.p(".pyenv/versions/3.11.0/lib/python3.11/site-packages/x/.netrc")),
            "{masks:?}"
        );
        assert!(seen.listed <= 6, "{seen:?}");

        // In place: the clean pip.conf gets a token appended.
        let clean = host.p(".pyenv/versions/3.11.0/envs/clean/pip.conf");
        let mut before = Vec::new();
        scan.masks(&[], &mut before);
        assert!(!paths(&before).contains(&clean));
        let mut text = fs::read_to_string(&clean).unwrap();
        text.push_str(&format!("extra-index-url = https://u:{TOKEN}@h/simple\n"));
        fs::write(&clean, text).unwrap();
        let mut fresh = ScanStats::default();
        assert!(scan.refresh(&[], Depth::Found, later(), &mut fresh));
        assert_eq!(fresh.listed, 0);
        let mut after = Vec::new();
        scan.masks(&[], &mut after);
        assert!(paths(&after).contains(&clean), "{after:?}");

        // A store that is removed is no mask any more (bwrap would fail to mount over nothing).
        fs::remove_file(host.p(".pyenv/plugins/.git-credentials")).unwrap();
        assert!(scan.refresh(&[], Depth::Found, later(), &mut fresh));
        let mut gone = Vec::new();
        scan.masks(&[], &mut gone);
        assert!(!paths(&gone).contains(&host.p(".pyenv/plugins/.git-credentials")));
    }

    /// A stamp taken within [`RACY`] of its change is looked at again, whatever it says.
    #[test]
    fn a_racy_stamp_is_not_trusted() {
        let host = Host::new();
        host.cases();
        let tree = host.p(".cargo");
        let mut stats = ScanStats::default();
        let now = SystemTime::now();
        let mut scan = TreeScan::scan(&tree, &[], now, &mut stats);
        let mut again = ScanStats::default();
        scan.refresh(&[], Depth::Full, now, &mut again);
        assert_eq!(
            again.listed,
            scan.dirs.len(),
            "every directory is new: {again:?}"
        );
        // Positive control: taken an hour on, the stamps hold.
        let mut settled = TreeScan::scan(&tree, &[], later(), &mut stats);
        let mut quiet = ScanStats::default();
        settled.refresh(&[], Depth::Full, later(), &mut quiet);
        assert_eq!(quiet.listed, 0);
    }

    /// What lies in a workspace root inside a tree is the project's, not the tree's: not scanned.
    #[test]
    fn a_root_inside_a_tree_is_left_out() {
        let host = Host::new();
        host.put("opt/proj/.netrc", "machine h password p\n");
        host.put("opt/tool/.netrc", "machine h password p\n");
        let skip = [host.p("opt/proj")];
        let (masks, _) = masks_at(&[host.p("opt")], &skip, None, Depth::Full, later());
        assert_eq!(paths(&masks), vec![host.p("opt/tool/.netrc")]);
        // Positive control: without the root, both.
        forget_scan(&host.p("opt"));
        let (masks, _) = masks_at(&[host.p("opt")], &[], None, Depth::Full, later());
        assert_eq!(masks.len(), 2);
    }

    /// A link with a credential name is masked at its target where the sandbox shows it (a
    /// bound tree); one that points outside every bound tree needs no mask, and the link itself
    /// is never a mask (bwrap would follow it).
    #[test]
    fn credential_links_mask_their_targets() {
        let host = Host::new();
        let kept = host.put(".cargo/store/tokens.txt", "x\n");
        host.put(".cargo/clean.toml", "[build]\njobs = 1\n");
        let secret = host.put(
            ".cargo/secret.toml",
            &format!("[registry]\ntoken = \"{TOKEN}\"\n"),
        );
        std::os::unix::fs::symlink(&kept, host.p(".cargo/credentials.toml")).unwrap();
        std::os::unix::fs::symlink(&secret, host.p(".cargo/config.toml")).unwrap();
        fs::create_dir_all(host.p(".pyenv")).unwrap();
        std::os::unix::fs::symlink(host.p("elsewhere/.netrc"), host.p(".pyenv/.netrc")).unwrap();
        host.put("elsewhere/.netrc", "machine h password p\n");
        let (masks, _) = masks_at(
            &[host.p(".cargo"), host.p(".pyenv")],
            &[],
            None,
            Depth::Full,
            later(),
        );
        assert_eq!(masks, vec![Mask::File(secret), Mask::File(kept)]);
        // Positive control: a config link to a clean file is no mask.
        fs::remove_file(host.p(".cargo/config.toml")).unwrap();
        std::os::unix::fs::symlink(host.p(".cargo/clean.toml"), host.p(".cargo/config.toml"))
            .unwrap();
        forget_scan(&host.p(".cargo"));
        let (masks, _) = masks_at(&[host.p(".cargo")], &[], None, Depth::Full, later());
        assert_eq!(masks.len(), 1, "{masks:?}");
    }

    /// A scan written by one process is read by the next, which then lists nothing of an unchanged
    /// tree; a file of another format, of other rules or cut short is never taken.
    #[test]
    fn scans_survive_the_process() {
        let host = Host::new();
        host.cases();
        let disk = tempfile::tempdir().unwrap();
        let trees = host.trees();
        let (first, cold) = masks_at(&trees, &[], Some(disk.path()), Depth::Full, later());
        assert_eq!(cold.from_disk, 0);
        for tree in &trees {
            forget_scan(tree);
        }
        let (second, warm) = masks_at(&trees, &[], Some(disk.path()), Depth::Found, later());
        assert_eq!(first, second);
        assert_eq!(warm.from_disk, trees.len());
        assert_eq!(warm.listed, 0, "{warm:?}");
        assert!(
            warm.stamped > 0,
            "a scan from disk is checked whole: {warm:?}"
        );

        let tree = host.p(".pyenv");
        let mut stats = ScanStats::default();
        let scan = TreeScan::scan(&tree, &[], later(), &mut stats);
        let bytes = encode(&scan);
        assert_eq!(decode(&bytes), Some(scan));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        let mut other = bytes.clone();
        other[FORMAT.len()] ^= 1;
        assert_eq!(decode(&other), None, "other rules");
        assert_eq!(decode(b"junk"), None);
    }

    /// A bound file (a host-read path) is judged by its name and what it holds.
    #[test]
    fn bound_files_are_judged() {
        let host = Host::new();
        let secret = host.put(
            "srv/pip.conf",
            "[global]\nindex-url = https://u:p@h/simple\n",
        );
        let clean = host.put(
            "srv2/pip.conf",
            "[global]\nindex-url = https://pypi.org/simple\n",
        );
        let store = host.put("srv/.netrc", "machine h\n");
        let plain = host.put("srv/data.csv", "a,b\n");
        let (masks, _) = masks_at(
            &[secret.clone(), clean, store.clone(), plain],
            &[],
            None,
            Depth::Full,
            later(),
        );
        assert_eq!(masks, vec![Mask::File(store), Mask::File(secret)]);
    }
}
