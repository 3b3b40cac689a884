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
//! Cost: a tree is walked once. A later look with [`Depth::Full`] stats each directory it
//! recorded and lists again only those whose change stamp (device, inode, ctime, size) moved: a
//! new, removed or renamed entry changes its directory's ctime. A stamp within [`RACY`] of the
//! moment it was taken is not trusted (the kernel's clock for ctime is coarse: a change in the
//! same tick would keep it) and is looked at again next time. A look with [`Depth::Found`] stats
//! only the files found: each configuration file is judged again when its own stamp moved (a
//! token appended in place changes no directory), a store that is gone is forgotten. A
//! long-lived process (a session) asks for `watch`: every directory of the tree is then watched
//! with inotify, and each look lists again exactly the directories that had events, so that a
//! credential file created anywhere in a tree during a session is masked from the next command
//! on, at the cost of reading the events. The scans are kept in this process and, between
//! processes, in a file per tree ([`disk`]).

mod disk;
mod record;
mod watch;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::fs::Metadata;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use spear_core::credentials::{SecretCandidate, config_holds_secret, secret_candidate};

pub use record::{MAX_CONFIG_BYTES, RACY};

use crate::spec::Mask;
use record::{DirScan, Found, Stamp, TreeScan};
use watch::Watcher;

/// How much of a remembered tree a look checks when its directories are not watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Every directory's stamp (and every file found): what a new runner does.
    Full,
    /// Only the files found (configuration files judged again when they changed, stores still
    /// there): what every command does. A tree never looked at is looked at fully.
    Found,
}

/// What looking at the trees cost, for benchmarks and tests.
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
    /// Trees whose directories are watched, and so were not stamped.
    pub watched: usize,
}

/// What one look at a tree may use: the time, the roots left out, the watcher that takes each
/// directory it lists (before listing it, so that no change after the listing is missed).
struct Look<'a> {
    now: SystemTime,
    skip: &'a [PathBuf],
    watcher: Option<&'a mut Watcher>,
    stats: &'a mut ScanStats,
}

impl Look<'_> {
    fn skipped(&self, path: &Path) -> bool {
        self.skip.iter().any(|s| path.starts_with(s))
    }

    /// Watches `dir` of the tree `root` when there is a watcher (one that fails is broken from
    /// then on).
    fn watch(&mut self, root: &Path, dir: &Path) {
        if let Some(w) = self.watcher.as_deref_mut() {
            w.add(dir, dir == root);
        }
    }

    /// Records `start` and every directory under it (not following links, leaving out the roots
    /// and store directories) into `out`, each with what it holds.
    fn walk(&mut self, root: &Path, start: &Path, out: &mut Vec<DirScan>) {
        let mut stack = vec![start.to_path_buf()];
        while let Some(dir) = stack.pop() {
            self.watch(root, &dir);
            let Some(stamp) = dir_stamp(root, &dir, self.now) else {
                continue;
            };
            let (found, subdirs) = self.list(root, &dir);
            stack.extend(subdirs.into_iter().filter(|s| !self.skipped(s)));
            out.push(DirScan {
                path: dir,
                stamp,
                found,
            });
        }
    }

    /// Lists `dir`: what it holds that the sandbox masks (configuration files judged now), and
    /// its subdirectories to look into.
    fn list(&mut self, root: &Path, dir: &Path) -> (Vec<Found>, Vec<PathBuf>) {
        self.stats.listed += 1;
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
                        if let Some((stamp, secret)) = judge(&path, self.now, self.stats) {
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
}

impl TreeScan {
    /// Walks `root` (a directory) whole, leaving out the roots of `look`.
    fn scan(root: &Path, look: &mut Look<'_>) -> Self {
        let mut dirs = Vec::new();
        look.walk(root, root, &mut dirs);
        TreeScan {
            root: root.to_path_buf(),
            skipped: skipped_in(root, look.skip),
            dirs,
        }
    }

    /// Brings the scan up to date by the stamps: each directory whose stamp moved is listed
    /// again and what appeared under it walked; what is gone is forgotten; then each file found
    /// is checked ([`recheck`]). Returns whether anything changed.
    fn refresh(&mut self, look: &mut Look<'_>) -> bool {
        let mut changed = false;
        let mut kept = Vec::with_capacity(self.dirs.len());
        let mut appeared: Vec<PathBuf> = Vec::new();
        let stamps = stamps(&self.root, &self.dirs, look.now);
        for (mut dir, stamp) in std::mem::take(&mut self.dirs).into_iter().zip(stamps) {
            look.stats.stamped += 1;
            let Some(stamp) = stamp else {
                changed = true;
                continue;
            };
            if !dir.stamp.holds(&stamp) {
                look.watch(&self.root, &dir.path);
                let (found, subdirs) = look.list(&self.root, &dir.path);
                changed |= found != dir.found || stamp != dir.stamp;
                dir.found = found;
                dir.stamp = stamp;
                appeared.extend(subdirs.into_iter().filter(|s| !look.skipped(s)));
            }
            changed |= recheck(&mut dir, look);
            kept.push(dir);
        }
        changed |= self.walk_new(kept, appeared, look);
        changed
    }

    /// Brings the scan up to date by the directories that had events (`changed`): each is listed
    /// again; a subdirectory that is gone, or was replaced, is forgotten with everything under
    /// it, and one that is new (or the replacement) is walked. Then each file found is checked.
    /// Returns whether anything changed.
    fn relist(&mut self, changed: &HashSet<PathBuf>, look: &mut Look<'_>) -> bool {
        let mut any = false;
        let mut appeared: Vec<PathBuf> = Vec::new();
        let mut gone: Vec<PathBuf> = Vec::new();
        let mut children: HashMap<&Path, Vec<usize>> = HashMap::new();
        for (i, d) in self.dirs.iter().enumerate() {
            if let Some(parent) = d.path.parent() {
                children.entry(parent).or_default().push(i);
            }
        }
        let mut relisted: Vec<(usize, Stamp, Vec<Found>)> = Vec::new();
        for (i, dir) in self.dirs.iter().enumerate() {
            if !changed.contains(&dir.path) {
                continue;
            }
            any = true;
            let Some(stamp) = dir_stamp(&self.root, &dir.path, look.now) else {
                gone.push(dir.path.clone());
                continue;
            };
            let (found, subdirs) = look.list(&self.root, &dir.path);
            let subdirs: Vec<PathBuf> = subdirs.into_iter().filter(|s| !look.skipped(s)).collect();
            for &c in children.get(dir.path.as_path()).into_iter().flatten() {
                let child = &self.dirs[c];
                let replaced = dir_stamp(&self.root, &child.path, look.now)
                    .is_none_or(|s| !child.stamp.same_inode(&s));
                if !subdirs.contains(&child.path) || replaced {
                    gone.push(child.path.clone());
                }
            }
            let known: HashSet<&Path> = children
                .get(dir.path.as_path())
                .into_iter()
                .flatten()
                .map(|&c| self.dirs[c].path.as_path())
                .collect();
            appeared.extend(
                subdirs
                    .into_iter()
                    .filter(|s| !known.contains(s.as_path()) || gone.contains(s)),
            );
            relisted.push((i, stamp, found));
        }
        for (i, stamp, found) in relisted {
            self.dirs[i].stamp = stamp;
            self.dirs[i].found = found;
        }
        let mut kept = Vec::with_capacity(self.dirs.len());
        for mut dir in std::mem::take(&mut self.dirs) {
            if gone.iter().any(|g| dir.path.starts_with(g)) {
                if let Some(w) = look.watcher.as_deref_mut() {
                    w.forget(&dir.path);
                }
                continue;
            }
            any |= recheck(&mut dir, look);
            kept.push(dir);
        }
        any |= self.walk_new(kept, appeared, look);
        any
    }

    /// Sets `kept` as the scan's directories, then walks each of `appeared` that it does not
    /// hold. Returns whether one was walked.
    fn walk_new(
        &mut self,
        mut kept: Vec<DirScan>,
        appeared: Vec<PathBuf>,
        look: &mut Look<'_>,
    ) -> bool {
        let mut walked = false;
        if !appeared.is_empty() {
            let known: HashSet<PathBuf> = kept.iter().map(|d| d.path.clone()).collect();
            for sub in appeared.into_iter().filter(|p| !known.contains(p)) {
                walked = true;
                look.walk(&self.root, &sub, &mut kept);
            }
        }
        self.dirs = kept;
        walked
    }

    /// The directories that hold something found, by index: what a quiet look checks and what
    /// the masks are made of. A tree has tens of thousands of directories and a few hold
    /// something: a command of a quiet session costs what was found, not the tree's size.
    fn holding(&self) -> Vec<usize> {
        self.dirs
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.found.is_empty())
            .map(|(i, _)| i)
            .collect()
    }

    /// A look when nothing was listed again: each file found in the directories of `holding` (a
    /// superset of those that hold something) is checked, the directories stay where they are.
    /// Returns whether anything changed.
    fn recheck_holding(&mut self, holding: &[usize], look: &mut Look<'_>) -> bool {
        let mut any = false;
        for &i in holding {
            if let Some(dir) = self.dirs.get_mut(i) {
                any |= recheck(dir, look);
            }
        }
        any
    }

    /// The masks of this tree, made from the directories of `holding` (a superset of those that
    /// hold something, [`TreeScan::holding`]). `bound` pairs each bound tree's host path, links
    /// resolved, with where the sandbox shows it: a credential link is masked at its target when
    /// the sandbox shows that, and needs no mask when it does not.
    fn masks<'b>(
        &self,
        holding: &[usize],
        bound: impl Fn() -> &'b [(PathBuf, PathBuf)],
        out: &mut Vec<Mask>,
    ) {
        for dir in holding.iter().filter_map(|&i| self.dirs.get(i)) {
            for found in &dir.found {
                let path = dir.path.join(found.name());
                match found {
                    Found::Store { dir: true, .. } => out.push(Mask::Dir(path)),
                    Found::Store { dir: false, .. } | Found::Config { secret: true, .. } => {
                        out.push(Mask::File(path));
                    }
                    Found::Config { secret: false, .. } => {}
                    Found::Link { .. } => out.extend(link_mask(&self.root, &path, bound())),
                }
            }
        }
    }
}

/// Directories a thread stamps at least: fewer are stamped by the caller alone.
const STAMPS_PER_THREAD: usize = 2048;

/// The stamp of each of `dirs` now, in order, taken by up to eight threads at once (a stat costs
/// a system call, and a large tree has tens of thousands of directories).
fn stamps(root: &Path, dirs: &[DirScan], now: SystemTime) -> Vec<Option<Stamp>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(8)
        .min(dirs.len().div_ceil(STAMPS_PER_THREAD))
        .max(1);
    let take = |part: &[DirScan]| -> Vec<Option<Stamp>> {
        part.iter().map(|d| dir_stamp(root, &d.path, now)).collect()
    };
    if threads == 1 {
        return take(dirs);
    }
    let chunk = dirs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = dirs
            .chunks(chunk)
            .map(|part| (part, scope.spawn(move || take(part))))
            .collect();
        parts
            .into_iter()
            // A thread that panicked is done again here: every directory has its stamp.
            .flat_map(|(part, h)| h.join().unwrap_or_else(|_| take(part)))
            .collect()
    })
}

/// The roots of `skip` that lie inside `tree`, in order.
fn skipped_in(tree: &Path, skip: &[PathBuf]) -> Vec<PathBuf> {
    let mut inside: Vec<PathBuf> = skip
        .iter()
        .filter(|s| s.starts_with(tree))
        .cloned()
        .collect();
    inside.sort();
    inside.dedup();
    inside
}

/// The stamp of the directory at `path` in the tree `root`, `None` when it is not one. A link is
/// not followed, but for the root itself, which the sandbox binds as bwrap finds it (a
/// `~/.pyenv` that links to `/data/pyenv`).
fn dir_stamp(root: &Path, path: &Path, now: SystemTime) -> Option<Stamp> {
    let meta = if path == root {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    meta.ok()
        .filter(Metadata::is_dir)
        .map(|m| Stamp::of(&m, now))
}

/// Judges the configuration file at `path` (not following a link): its stamp, and whether it holds
/// a secret. One that is not a regular file, or larger than [`MAX_CONFIG_BYTES`], counts as
/// holding one. `None` when nothing is there.
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
/// judged again, a store, file or link that is gone is forgotten. Returns whether anything
/// changed.
fn recheck(dir: &mut DirScan, look: &mut Look<'_>) -> bool {
    let mut changed = false;
    let (now, stats) = (look.now, &mut *look.stats);
    dir.found.retain_mut(|found| {
        let path = dir.path.join(found.name());
        let meta = std::fs::symlink_metadata(&path).ok();
        let keep = match (found, meta) {
            (Found::Store { dir: is_dir, .. }, Some(m)) => m.is_dir() == *is_dir && !m.is_symlink(),
            (Found::Link { .. }, Some(m)) => m.is_symlink(),
            (Found::Config { stamp, secret, .. }, Some(m)) => {
                if !stamp.holds(&Stamp::of(&m, now))
                    && let Some((s, verdict)) = judge(&path, now, stats)
                {
                    changed |= verdict != *secret || s != *stamp;
                    *stamp = s;
                    *secret = verdict;
                }
                true
            }
            (_, None) => false,
        };
        changed |= !keep;
        keep
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
        return store.then_some(Mask::Dir(inside));
    }
    let secret = store || holds_secret(&target);
    secret.then_some(Mask::File(inside))
}

/// The mask a bound file (not a directory: a host-read path) needs: itself, when its name makes it
/// a store, or when it is a configuration file that holds a secret (a link is judged by its name
/// and by what it points at).
fn file_mask(path: &Path) -> Option<Mask> {
    let parent = path.parent().unwrap_or(path);
    match secret_candidate(parent, path, false) {
        SecretCandidate::Store => Some(Mask::File(path.to_path_buf())),
        SecretCandidate::Config => holds_secret(path).then(|| Mask::File(path.to_path_buf())),
        SecretCandidate::Other => None,
    }
}

/// A tree's scan as this process holds it.
struct Held {
    scan: TreeScan,
    /// The inotify watch of every directory of the scan, in a process that asked for one.
    watcher: Option<Watcher>,
    /// Watching failed once (the user's limit of watches): not tried again in this process.
    unwatchable: bool,
    /// [`TreeScan::holding`] as of the last look that listed or stamped anything: a superset of
    /// the directories that hold something (a quiet look only ever forgets what it found).
    holding: Vec<usize>,
}

impl Held {
    fn new(scan: TreeScan) -> Self {
        Held {
            holding: scan.holding(),
            scan,
            watcher: None,
            unwatchable: false,
        }
    }
}

/// Every scan this process holds, by tree.
type Slots = HashMap<PathBuf, Arc<Mutex<Option<Held>>>>;

fn slots() -> std::sync::MutexGuard<'static, Slots> {
    static SCANS: OnceLock<Mutex<Slots>> = OnceLock::new();
    SCANS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// This process's scan of `tree`, shared by every runner (one look at a time per tree).
fn memory_slot(tree: &Path) -> Arc<Mutex<Option<Held>>> {
    Arc::clone(slots().entry(tree.to_path_buf()).or_default())
}

/// Forgets this process's scan of `tree` (and stops watching it), as a new process would not have
/// it: the next look takes the file of an earlier process, or walks.
pub fn forget_scan(tree: &Path) {
    let slot = slots().get(tree).cloned();
    if let Some(slot) = slot {
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// The masks of every tree in `trees` (host paths the sandbox binds read-only at the same path),
/// leaving out what lies in `skip` (the workspace roots: the project is not a bound tree), each
/// tree's scan taken from this process's memory or `disk` (a private directory, see
/// [`crate::user_private_dir`]) and brought up to date: by its watch where this process watches
/// it, else at `depth`. With `watch`, a tree not yet watched is watched from now on (a session:
/// the cost of one watch per directory, once). Sorted, without repeats.
pub fn secret_masks(
    trees: &[PathBuf],
    skip: &[PathBuf],
    disk: Option<&Path>,
    depth: Depth,
    watch: bool,
) -> (Vec<Mask>, ScanStats) {
    masks_at(trees, skip, disk, depth, watch, SystemTime::now())
}

/// [`secret_masks`] as if it were `now` (tests: stamps taken just now are not racy an hour on).
fn masks_at(
    trees: &[PathBuf],
    skip: &[PathBuf],
    disk: Option<&Path>,
    depth: Depth,
    watch: bool,
    now: SystemTime,
) -> (Vec<Mask>, ScanStats) {
    // Where the sandbox shows each tree's host path, links resolved: needed for a credential
    // link only, so resolved only then.
    let bound: std::cell::OnceCell<Vec<(PathBuf, PathBuf)>> = std::cell::OnceCell::new();
    let bound = || -> &[(PathBuf, PathBuf)] {
        bound.get_or_init(|| {
            trees
                .iter()
                .filter_map(|t| std::fs::canonicalize(t).ok().map(|c| (c, t.clone())))
                .collect()
        })
    };
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
        let save = look_at(tree, &mut held, skip, disk, depth, watch, now, &mut stats);
        if let Some(h) = held.as_ref() {
            if save && let Some(d) = disk {
                disk::store(d, &h.scan);
            }
            h.scan.masks(&h.holding, bound, &mut masks);
        }
    }
    masks.sort_by(|a, b| a.path().cmp(b.path()));
    masks.dedup();
    (masks, stats)
}

/// A scan of `tree` for a process that holds none: the file of an earlier process (as old as
/// that process: every stamp is to be checked, [`Depth::Full`]) when it left out the same roots
/// (`inside`), else a walk of the tree now (only the files found to check, [`Depth::Found`]).
fn load_or_walk(
    tree: &Path,
    inside: &[PathBuf],
    skip: &[PathBuf],
    disk: Option<&Path>,
    now: SystemTime,
    stats: &mut ScanStats,
) -> (TreeScan, Depth) {
    let loaded = disk
        .and_then(|d| disk::load(d, tree))
        .filter(|s| s.skipped == inside);
    if let Some(scan) = loaded {
        stats.from_disk += 1;
        return (scan, Depth::Full);
    }
    let mut look = Look {
        now,
        skip,
        watcher: None,
        stats,
    };
    (TreeScan::scan(tree, &mut look), Depth::Found)
}

/// Brings `held`, this process's scan of `tree`, up to date (taking it from `disk` or walking the
/// tree when there is none, or when it left out other roots). Returns whether it changed.
#[allow(
    clippy::too_many_arguments,
    reason = "one look's inputs, passed through from secret_masks"
)]
fn look_at(
    tree: &Path,
    held: &mut Option<Held>,
    skip: &[PathBuf],
    disk: Option<&Path>,
    depth: Depth,
    watch: bool,
    now: SystemTime,
    stats: &mut ScanStats,
) -> bool {
    let inside = skipped_in(tree, skip);
    if held.as_ref().is_some_and(|h| h.scan.skipped != inside) {
        *held = None;
    }
    let mut changed = false;
    let mut depth = depth;
    if held.is_none() {
        let (scan, new_depth) = load_or_walk(tree, &inside, skip, disk, now, stats);
        // A walk is new (to be stored); a scan from the file is what was stored.
        changed = new_depth == Depth::Found;
        depth = new_depth;
        *held = Some(Held::new(scan));
    }
    let Some(h) = held.as_mut() else {
        return changed;
    };
    let events = h.watcher.as_mut().map(|w| w.drain(&h.scan.root));
    // Whether the directories were listed or stamped again, and so which hold something may have
    // changed.
    let mut relooked = true;
    match events {
        // A quiet look: no event, or unwatched at `Depth::Found`: only the files found.
        Some(Some(dirs)) if dirs.is_empty() => {
            stats.watched += 1;
            relooked = false;
            let mut look = Look {
                now,
                skip,
                watcher: h.watcher.as_mut(),
                stats,
            };
            changed |= h.scan.recheck_holding(&h.holding, &mut look);
        }
        Some(Some(dirs)) => {
            stats.watched += 1;
            let mut look = Look {
                now,
                skip,
                watcher: h.watcher.as_mut(),
                stats,
            };
            changed |= h.scan.relist(&dirs, &mut look);
        }
        // Events were lost, or the tree's root went: every stamp is checked.
        Some(None) | None if depth == Depth::Full || events.is_some() => {
            let mut look = Look {
                now,
                skip,
                watcher: h.watcher.as_mut(),
                stats,
            };
            changed |= h.scan.refresh(&mut look);
        }
        _ => {
            relooked = false;
            let mut look = Look {
                now,
                skip,
                watcher: None,
                stats,
            };
            changed |= h.scan.recheck_holding(&h.holding, &mut look);
        }
    }
    if h.watcher.as_ref().is_some_and(Watcher::broken) {
        h.watcher = None;
        h.unwatchable = true;
    }
    if watch && h.watcher.is_none() && !h.unwatchable {
        // Each directory is watched first, then every stamp checked: a change before its watch
        // shows in its stamp, one after in its events.
        if let Some(mut w) = Watcher::new() {
            for dir in &h.scan.dirs {
                w.add(&dir.path, dir.path == h.scan.root);
            }
            let mut look = Look {
                now,
                skip,
                watcher: Some(&mut w),
                stats,
            };
            changed |= h.scan.refresh(&mut look);
            relooked = true;
            if w.broken() {
                h.unwatchable = true;
            } else {
                h.watcher = Some(w);
            }
        }
    }
    if relooked {
        h.holding = h.scan.holding();
    }
    changed
}
