//! cgroupfs operations shared by the v1 and v2 backends: writing values, creating and removing
//! directories, and the freeze, pidfd-kill, thaw loop.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use super::error::CgroupError;
use super::parse::{self, Hierarchy};
use crate::dir_lock::Held;

/// One directory of a cgroupfs per-command cgroup.
#[derive(Debug)]
pub(crate) struct CgroupDir {
    /// The hierarchy it belongs to (for matching `/proc/<pid>/cgroup`).
    pub hierarchy: parse::Hierarchy,
    /// Its path inside the hierarchy, as `/proc/<pid>/cgroup` writes it.
    pub rel: String,
    /// Its directory.
    pub path: PathBuf,
    /// Its `cgroup.procs`, open for writing (dropped before the directory is removed).
    pub procs: Option<OwnedFd>,
    /// The directory itself, open and locked while spear holds the cgroup (made by
    /// [`ops::create_dir`]): another spear's sweep leaves it alone (`None` for directories
    /// found rather than made).
    pub lock: Option<OwnedFd>,
}

/// How long [`super::CommandCgroup::kill_all`] may take, freezing and waiting included.
pub(crate) const KILL_DEADLINE: Duration = Duration::from_secs(10);
/// How long removing a directory may be retried while the kernel still reports it busy.
const REMOVE_DEADLINE: Duration = Duration::from_secs(2);
/// The longest pause between two looks at a cgroup that is settling. Pauses start at
/// [`FIRST_POLL`] and double: a cgroup usually settles within a millisecond of its last exit, and
/// every command's end waits for that.
const POLL: Duration = Duration::from_millis(5);
/// The first pause.
const FIRST_POLL: Duration = Duration::from_micros(100);

/// Sleeps for `*pause` and doubles it, up to [`POLL`].
fn back_off(pause: &mut Duration) {
    std::thread::sleep(*pause);
    *pause = (*pause * 2).min(POLL);
}
/// How long one round of the kill loop waits for the cgroup to empty before freezing again.
const ROUND: Duration = Duration::from_millis(200);
/// How long a cgroup is given to empty by itself before it is frozen. After a command's end the
/// sandbox's init is still exiting (bwrap's monitor reports the exit code before its init is
/// gone) and takes what is left of its PID namespace with it, usually within a few hundred
/// microseconds; freezing a cgroup that is emptying anyway costs every command a millisecond or
/// two. What is still there after the grace is killed as before.
const SETTLE: Duration = Duration::from_millis(3);

pub(crate) fn io_error(op: &'static str, path: &Path, source: std::io::Error) -> CgroupError {
    CgroupError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

/// Writes `value` to the cgroup file `path` in one write(2), without creating or truncating it.
pub(crate) fn write_value(path: &Path, value: &str) -> Result<(), CgroupError> {
    let mut file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| io_error("open", path, e))?;
    file.write_all(value.as_bytes())
        .map_err(|e| io_error("write", path, e))
}

pub(crate) fn read_text(path: &Path) -> Result<String, CgroupError> {
    std::fs::read_to_string(path).map_err(|e| io_error("read", path, e))
}

/// The pids in the `cgroup.procs` of `dir`.
pub(crate) fn read_procs(dir: &Path) -> Result<Vec<i32>, CgroupError> {
    let path = dir.join("cgroup.procs");
    parse::parse_procs(&read_text(&path)?)
        .map_err(|e| io_error("parse", &path, std::io::Error::other(e)))
}

/// Opens `dir/cgroup.procs` write-only (and close-on-exec) for a child to join through.
pub(crate) fn open_procs(dir: &Path) -> Result<OwnedFd, CgroupError> {
    open_join_file(dir, "cgroup.procs")
}

/// Opens `dir/name` (`cgroup.procs`, or v1's `tasks`) write-only and close-on-exec, for a child
/// to join through.
pub(crate) fn open_join_file(dir: &Path, name: &str) -> Result<OwnedFd, CgroupError> {
    let path = dir.join(name);
    let file = OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| io_error("open", &path, e))?;
    Ok(file.into())
}

/// Creates the per-command (or per-session) cgroup `path` and returns it open and locked
/// ([`crate::dir_lock`]): the lock is what tells another spear's sweep that its owner lives, in
/// whatever PID namespace either runs. One that exists already is an error, never reused: it
/// may belong to a live command (names are unique per command) or be left from a spear that
/// died, and removing or sharing it could end or loosen someone else's limits. One a sweep
/// removed between its making and its locking is made again; a cgroupfs that refuses the lock
/// is an error (an unlocked cgroup could be swept from under its command).
pub(crate) fn create_dir(path: &Path) -> Result<OwnedFd, CgroupError> {
    for _ in 0..8 {
        match std::fs::create_dir(path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                return Err(CgroupError::AlreadyExists(path.to_owned()));
            }
            Err(e) => return Err(io_error("create", path, e)),
        }
        match crate::dir_lock::hold_made(path) {
            Ok(Held::Locked(dir)) => return Ok(dir),
            Ok(Held::Gone) => {}
            Ok(Held::NoLock(_, e)) => return Err(io_error("lock", path, e)),
            Err(e) => return Err(io_error("open", path, e)),
        }
    }
    Err(io_error(
        "create",
        path,
        std::io::Error::other("another spear's sweep removed it as it was made, 8 times"),
    ))
}

/// Under `dir`: every directory spear named (`spear-<pid>-<n>`, the warm, session and beside
/// ones) that no spear holds, removed deepest first while empty; returns how many. One still
/// holding a process is left as it is.
///
/// Whether its spear lives is its lock ([`crate::dir_lock`]), not its pid: a spear in another PID
/// namespace sharing this cgroup is alive though its pid is not in our `/proc`, and an empty
/// session cgroup of its, between two commands, must not be removed from under it.
pub(crate) fn sweep_children(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let ours = entry.file_type().is_ok_and(|t| t.is_dir())
            && entry
                .file_name()
                .to_str()
                .and_then(parse::spear_owner)
                .is_some();
        // Held while it is removed: its owner is gone, and no sweep races this one.
        let free = if ours {
            crate::dir_lock::take_free(&entry.path())
        } else {
            None
        };
        if free.is_some() && remove_empty_tree(&entry.path()) {
            tracing::info!(cgroup = %entry.path().display(), "a dead spear's cgroup removed");
            removed += 1;
        }
    }
    removed
}

/// Removes `dir` and the directories under it, deepest first; whether `dir` is gone.
fn remove_empty_tree(dir: &Path) -> bool {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.filter_map(Result::ok) {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_empty_tree(&entry.path());
            }
        }
    }
    std::fs::remove_dir(dir).is_ok()
}

/// Removes the directories of `dirs` (last first), closing their `cgroup.procs` fds first. A
/// directory already gone is fine; one the kernel still reports busy (its last processes are
/// exiting) is retried for a short while. Every directory is tried; the first error is returned.
pub(crate) fn remove_dirs(dirs: &mut [CgroupDir]) -> Result<(), CgroupError> {
    let mut first_error = None;
    for dir in dirs.iter_mut().rev() {
        dir.procs = None;
        if let Err(e) = remove_dir(&dir.path) {
            first_error.get_or_insert(e);
        }
        // Unlocked only once it is gone (or could not be removed: a later sweep may then).
        dir.lock = None;
    }
    first_error.map_or(Ok(()), Err)
}

fn remove_dir(path: &Path) -> Result<(), CgroupError> {
    let deadline = Instant::now() + REMOVE_DEADLINE;
    let mut pause = FIRST_POLL;
    loop {
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e)
                if e.raw_os_error() == Some(Errno::BUSY.raw_os_error())
                    && Instant::now() < deadline =>
            {
                tracing::trace!(path = %path.display(), ?pause, "cgroup busy, removed again after a pause");
                back_off(&mut pause);
            }
            Err(e) => return Err(io_error("remove", path, e)),
        }
    }
}

/// Polls `done` until it is true or `deadline` passes; returns whether it became true.
pub(crate) fn wait_until(
    deadline: Instant,
    mut done: impl FnMut() -> Result<bool, CgroupError>,
) -> Result<bool, CgroupError> {
    let mut pause = FIRST_POLL;
    loop {
        if done()? {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        back_off(&mut pause);
    }
}

/// Waits until every directory of `dirs` holds no process.
pub(crate) fn wait_empty(dirs: &[CgroupDir], deadline: Instant) -> Result<(), CgroupError> {
    for dir in dirs {
        if !wait_until(deadline, || Ok(read_procs(&dir.path)?.is_empty()))? {
            return Err(timeout(&dir.path, "waiting for its processes to exit"));
        }
    }
    Ok(())
}

pub(crate) fn timeout(path: &Path, what: &str) -> CgroupError {
    CgroupError::Timeout {
        path: path.to_owned(),
        what: what.to_owned(),
        secs: KILL_DEADLINE.as_secs(),
    }
}

/// The freezer of a cgroup: v1's `freezer.state` or v2's `cgroup.freeze`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Freezer {
    /// `freezer.state`: write `FROZEN` / `THAWED`, reads `FROZEN` once frozen.
    V1,
    /// `cgroup.freeze`: write `1` / `0`; `cgroup.events` reads `frozen 1` once frozen.
    V2,
}

impl Freezer {
    fn freeze(self, dir: &Path) -> Result<(), CgroupError> {
        match self {
            Self::V1 => write_value(&dir.join("freezer.state"), "FROZEN"),
            Self::V2 => write_value(&dir.join("cgroup.freeze"), "1"),
        }
    }

    fn thaw(self, dir: &Path) -> Result<(), CgroupError> {
        match self {
            Self::V1 => write_value(&dir.join("freezer.state"), "THAWED"),
            Self::V2 => write_value(&dir.join("cgroup.freeze"), "0"),
        }
    }

    fn is_frozen(self, dir: &Path) -> Result<bool, CgroupError> {
        Ok(match self {
            Self::V1 => read_text(&dir.join("freezer.state"))?.trim() == "FROZEN",
            Self::V2 => {
                parse::flat_keyed(&read_text(&dir.join("cgroup.events"))?, "frozen") == Some(1)
            }
        })
    }
}

/// Kills every process of `dir` by freezing it, signalling each process through a pidfd, and
/// thawing it, until it is empty or `deadline` passes; a cgroup that empties by itself within
/// [`SETTLE`] is not frozen. See
/// [`super::CommandCgroup::kill_all`] for why the freeze makes the pids safe to open.
pub(crate) fn freeze_kill_thaw(
    dir: &CgroupDir,
    freezer: Freezer,
    deadline: Instant,
) -> Result<(), CgroupError> {
    let settled = deadline.min(Instant::now() + SETTLE);
    if settle(&dir.path, settled)? {
        return Ok(());
    }
    loop {
        if read_procs(&dir.path)?.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(timeout(&dir.path, "killing its processes"));
        }
        freezer.freeze(&dir.path)?;
        let signalled = match wait_until(deadline, || freezer.is_frozen(&dir.path)) {
            Ok(true) => read_procs(&dir.path).and_then(|pids| signal_all(&pids, dir)),
            Ok(false) => Err(timeout(&dir.path, "freezing")),
            Err(e) => Err(e),
        };
        // Thaw whatever happened: a frozen cgroup would hold its processes (and their SIGKILL)
        // forever.
        let thawed = freezer.thaw(&dir.path);
        signalled?;
        thawed?;
        let round_end = deadline.min(Instant::now() + ROUND);
        wait_until(round_end, || Ok(read_procs(&dir.path)?.is_empty()))?;
    }
}

/// Waits until `dir` holds no process or `until` passes; whether it emptied. What is left after a
/// command's main process exits is usually exiting already (the init of its PID namespace,
/// tearing the namespaces down): each exit is waited for on a pidfd, so the wait ends when the
/// process does, not at the next tick of a poll. When every pid left was seen exiting already (a
/// zombie the cgroup still lists), or none can be opened, the cgroup is polled instead.
fn settle(dir: &Path, until: Instant) -> Result<bool, CgroupError> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut exited: Vec<i32> = Vec::new();
    let mut pause = FIRST_POLL;
    loop {
        let pids = read_procs(dir)?;
        if pids.is_empty() {
            return Ok(true);
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        let next = pids.iter().copied().find(|p| !exited.contains(p));
        let pidfd = next.and_then(|raw| {
            let fd = pidfd_open(Pid::from_raw(raw)?, PidfdFlags::empty()).ok()?;
            Some((raw, fd))
        });
        match pidfd {
            Some((raw, fd)) => {
                // Never without a timeout: a wait must end by `until`.
                let timeout = Timespec::try_from(left).unwrap_or_default();
                let mut fds = [PollFd::new(&fd, PollFlags::IN)];
                if matches!(poll(&mut fds, Some(&timeout)), Ok(1)) {
                    exited.push(raw);
                }
            }
            None => back_off(&mut pause),
        }
    }
}

/// Opens a pidfd for each pid, checks that its process is in `dir`, and sends it SIGKILL through
/// the pidfd. A process that is gone, or is no longer in `dir`, is skipped.
fn signal_all(pids: &[i32], dir: &CgroupDir) -> Result<(), CgroupError> {
    let pidfds: Vec<(i32, OwnedFd)> = pids
        .iter()
        .filter_map(|&raw| {
            let pid = Pid::from_raw(raw)?;
            match pidfd_open(pid, PidfdFlags::empty()) {
                Ok(fd) => Some(Ok((raw, fd))),
                Err(Errno::SRCH) => None,
                Err(e) => Some(Err(io_error(
                    "open a pidfd for a process of",
                    &dir.path,
                    e.into(),
                ))),
            }
        })
        .collect::<Result<_, _>>()?;
    for (raw, pidfd) in pidfds {
        if !in_cgroup(raw, dir.hierarchy, &dir.rel)? {
            continue;
        }
        match pidfd_send_signal(&pidfd, Signal::KILL) {
            Ok(()) | Err(Errno::SRCH) => {}
            Err(e) => return Err(io_error("signal a process of", &dir.path, e.into())),
        }
    }
    Ok(())
}

/// Whether `/proc/<pid>/cgroup` puts the process in cgroup `rel` of `hierarchy`. A process that is
/// gone is not.
fn in_cgroup(pid: i32, hierarchy: Hierarchy, rel: &str) -> Result<bool, CgroupError> {
    let path = PathBuf::from(format!("/proc/{pid}/cgroup"));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            Ok(parse::cgroup_path(&parse::parse_proc_cgroup(&text), hierarchy) == Some(rel))
        }
        Err(e)
            if e.kind() == ErrorKind::NotFound
                || e.raw_os_error() == Some(Errno::SRCH.raw_os_error()) =>
        {
            Ok(false)
        }
        Err(e) => Err(io_error("read", &path, e)),
    }
}

/// The value of `key` in the flat-keyed file `path`, or `None` (logged) when it cannot be read.
pub(crate) fn counter(path: &Path, key: &str) -> Option<u64> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse::flat_keyed(&text, key),
        Err(error) => {
            tracing::warn!(file = %path.display(), %error, "cannot read a cgroup counter");
            None
        }
    }
}

/// The number in the single-value file `path`, or `None` (logged) when it cannot be read.
pub(crate) fn number(path: &Path) -> Option<u64> {
    match std::fs::read_to_string(path) {
        Ok(text) => text.trim().parse().ok(),
        Err(error) => {
            tracing::warn!(file = %path.display(), %error, "cannot read a cgroup counter");
            None
        }
    }
}

/// Every cgroup directory under `top` and `top` itself, deepest first (so each comes before its
/// parent), as [`CgroupDir`]s of `top`'s hierarchy. A directory that vanishes while it is read is
/// skipped.
fn subtree(top: &CgroupDir) -> Result<Vec<CgroupDir>, CgroupError> {
    fn walk(
        hierarchy: Hierarchy,
        rel: &str,
        path: &Path,
        out: &mut Vec<CgroupDir>,
    ) -> Result<(), CgroupError> {
        let entries = match std::fs::read_dir(path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error("list", path, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| io_error("list", path, e))?;
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                walk(hierarchy, &parse::child_rel(rel, &name), &entry.path(), out)?;
            }
        }
        out.push(CgroupDir {
            hierarchy,
            rel: rel.to_owned(),
            path: path.to_owned(),
            procs: None,
            lock: None,
        });
        Ok(())
    }
    let mut out = Vec::new();
    walk(top.hierarchy, &top.rel, &top.path, &mut out)?;
    Ok(out)
}

/// Removes the session directories `tops` and everything under them: every process in the
/// subtree killed through `freezer` (the v1 freezer hierarchy's directory, or v2's only one),
/// then each directory removed, deepest first. Every directory is tried; the first error is
/// returned.
pub(crate) fn remove_trees(
    tops: &[CgroupDir],
    freezer: Option<Freezer>,
) -> Result<(), CgroupError> {
    let deadline = Instant::now() + KILL_DEADLINE;
    let mut first_error = None;
    let kill_through = tops.iter().find(|d| match d.hierarchy {
        Hierarchy::V1(c) => c == "freezer",
        Hierarchy::V2 => true,
    });
    if let (Some(top), Some(freezer)) = (kill_through, freezer) {
        match subtree(top) {
            Ok(dirs) => {
                for dir in &dirs {
                    if let Err(e) = freeze_kill_thaw(dir, freezer, deadline) {
                        first_error.get_or_insert(e);
                    }
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    for top in tops.iter().rev() {
        let dirs = match subtree(top) {
            Ok(dirs) => dirs,
            Err(e) => {
                first_error.get_or_insert(e);
                continue;
            }
        };
        for dir in &dirs {
            let removed = wait_empty(std::slice::from_ref(dir), deadline)
                .and_then(|()| remove_dir(&dir.path));
            if let Err(e) = removed {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}
