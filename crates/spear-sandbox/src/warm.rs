//! The warm path of a session: the next command's sandbox set up before the command is known.
//!
//! After a command of a session, its caller may ask for a sandbox of the same shape
//! ([`crate::Sandbox::prewarm`]). A thread of the sandbox's own starts it: a fresh bwrap with its
//! own namespaces (PID included), its own cgroup and its own private mounts, exactly as a cold
//! command's, but running [`WARM_HOLD`] instead of the command. The hold says when the sandbox is
//! set up, then waits for an argv on a pipe and `exec`s it. The next command whose spec is the
//! same but for its command ([`BwrapSpec::same_sandbox`]) writes its argv there and is supervised
//! from then on (its timeout counts from that write); any other command runs cold.
//!
//! What keeps it as strict as the cold path:
//! - Every warm sandbox serves one command and is never reused: the next command gets a fresh
//!   PID namespace and cgroup, so it cannot see or signal what an earlier one left running
//!   (killed with that one's cgroup anyway).
//! - Only closed, read-only sandboxes wait warm ([`eligibility`]): a writable one's overlay
//!   would have its lower layer changed under it by the writes judged in between, and a
//!   networked one gets its network per command.
//! - The command gets the environment a cold one gets: the hold's bash execs it with bwrap's
//!   environment unchanged (`PWD` is bwrap's; `SHLVL`, which bash's `exec` always exports, is
//!   the `0` every sandbox's environment holds, and bash gives back what it inherited). A
//!   program other than bash waits warm only when it is named by an absolute path in a
//!   directory the sandbox shows as the host has it, and is there now, a binary or a `#!`
//!   script ([`program_is_there`]): a program that is missing runs cold, so that it is reported
//!   not found as a cold command is, and a file the kernel cannot exec (which bash would run as
//!   a script of its own where bwrap's `execvp` gives it to `/bin/sh`) runs cold too.
//! - The view was made from the host as it was. Attack stopped: a bound directory or a masked
//!   credential file replaced between the set-up and the command (a masked `.env` renamed away
//!   and a new one written: the mask would follow the old file). Every bind source, mask and
//!   the working directory is identified (device and inode) before the spawn, and a command runs
//!   warm only if each is still the same ([`Fingerprint`]).
//! - A partial argv never runs: the hold checks the count spear writes first.
//! - A waiting sandbox is killed, reaped and its cgroup removed when it is passed over, when it
//!   failed to come up, and when the [`crate::Sandbox`] is dropped (the thread is joined).
//!   bwrap's `--die-with-parent` ties it to the thread that started it, which lives as long as
//!   the sandbox.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::process::{Signal, WaitId, WaitIdOptions, pidfd_send_signal, waitid};
use spear_core::Guarantees;

use crate::argv::build_argv;
use crate::cgroup::CommandCgroup;
use crate::sandbox::{Launcher, SandboxError};
use crate::spawn::Running;
use crate::spec::{ARGS_CHILD_FD, BwrapSpec, SystemDir};

/// The program a warm sandbox holds, and the one it execs directly: spear's shell commands
/// (`bash -o pipefail -c SCRIPT`).
pub(crate) const HOLD_PROGRAM: &str = "/bin/bash";

/// The fd the hold reads the argv from.
pub(crate) const WARM_ARGV_CHILD_FD: i32 = 5;
/// The fd the hold writes "r" to once bwrap has set the sandbox up.
pub(crate) const WARM_READY_CHILD_FD: i32 = 6;

// The hold below names its fds by these numbers.
const _: () = assert!(WARM_ARGV_CHILD_FD == 5 && WARM_READY_CHILD_FD == 6);
// A warm sandbox's hold gets its pipes in the same places as a networked command's hold, after
// the options fd.
const _: () =
    assert!(WARM_ARGV_CHILD_FD == ARGS_CHILD_FD + 1 && WARM_READY_CHILD_FD == ARGS_CHILD_FD + 2);

/// The hold, run by `bash --posix -c` (POSIX mode: `BASH_ENV` is not read, so it is read once, by
/// the command's own bash). It says the sandbox is set up, reads NUL-terminated words up to EOF
/// ([`hold_message`]), closes both fds and execs the words. A short or empty read (spear gave
/// up, or died while writing) exits 125 without running anything: `mapfile` also keeps an
/// unterminated last piece, so the message ends with an empty word, which only a read to the
/// very end yields, and its count must match. The environment the command
/// gets is the spec's, as bwrap would give it (tested against the cold path).
pub(crate) const WARM_HOLD: &str = "printf r >&6 && exec 6>&- && mapfile -d '' -t argv <&5 && exec 5<&- && [ \"${#argv[@]}\" -gt 2 ] && [ \"${#argv[@]}\" -eq $((argv[0] + 2)) ] && [ -z \"${argv[-1]}\" ] || exit 125; exec \"${argv[@]:1:argv[0]}\"";

/// How long a command waits for a warm sandbox that is being started for it.
const PENDING_WAIT: Duration = Duration::from_millis(250);
/// How long the next sandbox's set-up waits after it is asked for, unless a command already
/// waits for it: the caller is still answering for the command that just ran (writing its
/// audit record and result, its client reading them), and on a busy or single core a bwrap
/// being set up would delay that answer, which is what the user waits for.
const START_GRACE: Duration = Duration::from_millis(10);
/// How long a command waits for a warm sandbox to say it is set up.
const READY_WAIT: Duration = Duration::from_secs(1);
/// After this many warm sandboxes in a row fail to come up, the sandbox stops warming.
const FAILURES_BEFORE_GIVING_UP: u32 = 3;

/// Why a command runs cold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cold {
    /// It is networked: its network is attached per command.
    Networked,
    /// It writes: its overlays are made per command over the host as it is then.
    Writable,
    /// It reads a stdin of its caller's, given at spawn.
    Stdin,
    /// Its program is not named by an absolute path in a directory the sandbox shows as the
    /// host has it (the system directories and toolchains).
    ProgramElsewhere,
}

/// Whether a command of `spec` (fed a stdin of its caller's when `stdin`) can run in a warm
/// sandbox. Pure.
pub(crate) fn eligibility(spec: &BwrapSpec, stdin: bool) -> Result<(), Cold> {
    if spec.profile.network() {
        Err(Cold::Networked)
    } else if spec.profile.workspace_write() || !spec.staged.is_empty() {
        Err(Cold::Writable)
    } else if stdin {
        Err(Cold::Stdin)
    } else {
        match spec.command.first() {
            Some(p) if p == HOLD_PROGRAM => Ok(()),
            Some(p) if shown_as_on_host(spec, Path::new(p)) => Ok(()),
            _ => Err(Cold::ProgramElsewhere),
        }
    }
}

/// Whether `path` is absolute and lies in a directory `spec`'s sandbox binds at the host's own
/// path (a system directory, a link such as `/bin -> usr/bin`, a toolchain): what the host has
/// at `path` is what the sandbox would exec.
fn shown_as_on_host(spec: &BwrapSpec, path: &Path) -> bool {
    use std::path::Component;
    if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return false;
    }
    spec.system
        .iter()
        .map(|d| match d {
            SystemDir::Bind(p) | SystemDir::Symlink { path: p, .. } => p,
        })
        .chain(&spec.toolchains)
        .any(|dir| path.starts_with(dir) && path != dir)
}

/// Whether the program of `spec`'s command is, on the host now, an executable regular file
/// that the kernel execs itself: an ELF binary or a `#!` script ([`eligibility`] has checked
/// that the sandbox shows it as the host has it). Not: the command runs cold, so a missing
/// program is reported as a cold command's is, and a file without either header is given to
/// `/bin/sh` by bwrap's `execvp` as it would be cold.
fn program_is_there(spec: &BwrapSpec) -> bool {
    use std::io::Read;
    match spec.command.first() {
        Some(p) if p == HOLD_PROGRAM => true,
        Some(p) => {
            let path = Path::new(p);
            let regular = rustix::fs::stat(path).is_ok_and(|st| {
                rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
            });
            let mut head = [0u8; 4];
            regular
                && rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
                && std::fs::File::open(path)
                    .and_then(|mut f| f.read_exact(&mut head))
                    .is_ok()
                && (head == *b"\x7fELF" || head.starts_with(b"#!"))
        }
        None => false,
    }
}

/// The argv of a warm sandbox's hold.
pub(crate) fn hold_argv() -> Vec<OsString> {
    [HOLD_PROGRAM, "--posix", "-c", WARM_HOLD, "spear-warm-hold"]
        .iter()
        .map(OsString::from)
        .collect()
}

/// What the hold reads: the number of words, each word, and an empty word, each NUL-terminated.
pub(crate) fn hold_message(command: &[OsString]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut bytes = command.len().to_string().into_bytes();
    bytes.push(0);
    for word in command {
        bytes.extend_from_slice(word.as_bytes());
        bytes.push(0);
    }
    bytes.push(0);
    bytes
}

/// The identity (device, inode) of every host path a sandbox's mounts were made from, as they
/// were before it was set up: bind sources, masked paths and the working directory, each as the
/// host names it. A path that did not exist is recorded as absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fingerprint(Vec<(PathBuf, Option<(u64, u64)>)>);

impl Fingerprint {
    /// The paths of `spec` whose identity a warm sandbox depends on, identified now: the
    /// sources of `options`' binds, the masks and the working directory (those inside a root
    /// through the root's host path).
    pub(crate) fn of(spec: &BwrapSpec, options: &[OsString]) -> Self {
        let mut paths = Vec::new();
        let mut words = options.iter();
        while let Some(word) = words.next() {
            if matches!(
                word.to_str(),
                Some("--bind" | "--ro-bind" | "--ro-bind-try" | "--dev-bind")
            ) && let Some(source) = words.next()
            {
                if source != "/dev/null" {
                    paths.push(PathBuf::from(source));
                }
                words.next();
            }
        }
        let on_host = |p: &Path| -> Option<PathBuf> {
            spec.roots
                .iter()
                .find_map(|r| p.strip_prefix(&r.mount).ok().map(|rest| r.host.join(rest)))
        };
        for mask in &spec.masks {
            paths.push(on_host(mask.path()).unwrap_or_else(|| mask.path().to_path_buf()));
        }
        paths.extend(on_host(&spec.cwd));
        Fingerprint(
            paths
                .into_iter()
                .map(|p| {
                    let id = identity(&p);
                    (p, id)
                })
                .collect(),
        )
    }

    /// Whether every path is still what it was.
    pub(crate) fn holds(&self) -> bool {
        self.0.iter().all(|(p, id)| identity(p) == *id)
    }
}

/// A path's device and inode, following links as bwrap does; `None` when it cannot be stat'ed.
fn identity(path: &Path) -> Option<(u64, u64)> {
    rustix::fs::stat(path).ok().map(|st| (st.st_dev, st.st_ino))
}

/// One sandbox set up and waiting for its command.
#[derive(Debug)]
pub(crate) struct Warm {
    /// The spec it was made for; its command is not the one it will run.
    shape: BwrapSpec,
    fingerprint: Fingerprint,
    guarantees: Guarantees,
    /// Where the argv goes; `None` once written.
    argv: Option<OwnedFd>,
    /// Where the hold says "r".
    ready: OwnedFd,
    /// `None` once released.
    running: Option<Running>,
    cgroup: Option<CommandCgroup>,
}

/// A released warm sandbox: its process tree, its cgroup, and what its options give.
pub(crate) struct Released {
    pub(crate) running: Running,
    pub(crate) cgroup: Option<CommandCgroup>,
    pub(crate) guarantees: Guarantees,
}

impl Warm {
    /// Starts a sandbox shaped like `spec` that holds instead of running the command.
    fn start(launcher: &Launcher, spec: &BwrapSpec) -> Result<Warm, SandboxError> {
        // Held until the hold says it is set up (`setup_gate`); the ready byte is left for
        // `wait_ready`.
        let place = crate::setup_gate::process_gate().enter();
        let mut hold = spec.clone();
        hold.command = hold_argv();
        let options = build_argv(&hold)?.options;
        let fingerprint = Fingerprint::of(spec, &options);
        let inputs = launcher.prepare(&hold)?;
        let guarantees = inputs.guarantees;
        let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
        let (argv_read, argv) = pipe().map_err(|e| SandboxError::Spawn(e.into()))?;
        let (ready, ready_write) = pipe().map_err(|e| SandboxError::Spawn(e.into()))?;
        let cgroup = launcher.create_cgroup("spear-warm")?;
        let (running, _) = launcher.spawn(
            inputs,
            cgroup.as_ref(),
            None,
            &[argv_read.as_fd(), ready_write.as_fd()],
        )?;
        // Closed here, so that a hold that dies before it is ready ends the wait at once.
        drop(ready_write);
        readable_within(&ready, READY_WAIT);
        drop(place);
        Ok(Warm {
            shape: spec.clone(),
            fingerprint,
            guarantees,
            argv: Some(argv),
            ready,
            running: Some(running),
            cgroup,
        })
    }

    /// Whether the hold said it is set up within `limit` and its sandbox is still alive.
    fn wait_ready(&self, limit: Duration) -> bool {
        if !readable_within(&self.ready, limit) {
            return false;
        }
        let mut byte = [0u8; 1];
        if !matches!(rustix::io::read(&self.ready, &mut byte), Ok(1)) || byte[0] != b'r' {
            return false;
        }
        self.running.as_ref().is_some_and(|r| {
            let mut pid = [PollFd::new(&r.pidfd, PollFlags::IN)];
            matches!(
                poll(&mut pid, Some(&rustix::event::Timespec::default())),
                Ok(0)
            )
        })
    }

    /// Hands `command` to the hold, and closes the pipe so that it runs it. On failure (the hold
    /// is gone) it is given back, to be killed: a short argv never runs.
    pub(crate) fn release(
        mut self: Box<Self>,
        command: &[OsString],
    ) -> Result<Released, Box<Warm>> {
        let Some(argv) = self.argv.take() else {
            return Err(self);
        };
        let mut pipe = std::fs::File::from(argv);
        let written = pipe.write_all(&hold_message(command));
        drop(pipe);
        if written.is_err() {
            return Err(self);
        }
        let Some(running) = self.running.take() else {
            return Err(self);
        };
        Ok(Released {
            running,
            cgroup: self.cgroup.take(),
            guarantees: self.guarantees,
        })
    }
}

impl Drop for Warm {
    /// Kills and reaps a sandbox that never got its command; its cgroup is removed after.
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            if let Some(cg) = &self.cgroup {
                let _ = cg.kill_all();
            }
            let _ = pidfd_send_signal(&running.pidfd, Signal::KILL);
            let _ = waitid(WaitId::PidFd(running.pidfd.as_fd()), WaitIdOptions::EXITED);
        }
    }
}

/// Whether `fd` has something to read, or no writer left, within `limit`. Never waits without a
/// bound: a limit that does not convert waits not at all.
fn readable_within(fd: &OwnedFd, limit: Duration) -> bool {
    let timeout = rustix::event::Timespec::try_from(limit).unwrap_or_default();
    matches!(
        poll(&mut [PollFd::new(fd, PollFlags::IN)], Some(&timeout)),
        Ok(1)
    )
}

/// What the thread is asked to do.
enum Job {
    Start(Box<BwrapSpec>),
    Dispose(Box<Warm>),
}

/// The waiting sandbox, or the one being started, or none.
#[derive(Debug)]
enum Slot {
    Empty,
    Pending(Box<BwrapSpec>),
    Ready(Box<Warm>),
}

#[derive(Debug)]
struct Shared {
    slot: Mutex<Slot>,
    changed: Condvar,
    /// Whether a command waits for the sandbox being started ([`START_GRACE`]).
    awaited: AtomicBool,
    failures: AtomicU32,
    given_up: AtomicBool,
}

/// A sandbox's warm path: at most one sandbox waiting, and the thread that starts and kills them.
#[derive(Debug)]
pub(crate) struct WarmPool {
    launcher: Arc<Launcher>,
    shared: Arc<Shared>,
    jobs: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Job::Start(_) => "Start",
            Job::Dispose(_) => "Dispose",
        })
    }
}

impl WarmPool {
    /// A pool that starts nothing until the first [`WarmPool::prewarm`].
    pub(crate) fn new(launcher: &Arc<Launcher>) -> Self {
        WarmPool {
            launcher: Arc::clone(launcher),
            shared: Arc::new(Shared {
                slot: Mutex::new(Slot::Empty),
                changed: Condvar::new(),
                awaited: AtomicBool::new(false),
                failures: AtomicU32::new(0),
                given_up: AtomicBool::new(false),
            }),
            jobs: Mutex::new(None),
            thread: Mutex::new(None),
        }
    }

    /// Asks for a sandbox shaped like `spec` to wait for the next command, unless one does or is
    /// being started, or `spec` cannot run warm.
    pub(crate) fn prewarm(&self, spec: &BwrapSpec) {
        if !self.would_warm(spec) {
            return;
        }
        let mut jobs = VecDeque::new();
        {
            let mut slot = lock(&self.shared.slot);
            match &*slot {
                Slot::Pending(_) => return,
                Slot::Ready(w) if w.shape.same_sandbox(spec) => return,
                Slot::Ready(_) | Slot::Empty => {}
            }
            if let Slot::Ready(old) =
                std::mem::replace(&mut *slot, Slot::Pending(Box::new(spec.clone())))
            {
                jobs.push_back(Job::Dispose(old));
            }
            jobs.push_back(Job::Start(Box::new(spec.clone())));
        }
        for job in jobs {
            if let Err(job) = self.send(job) {
                // No thread: nothing is started, and the slot goes back to empty.
                *lock(&self.shared.slot) = Slot::Empty;
                drop(job);
            }
        }
    }

    /// Whether [`WarmPool::prewarm`] would start a sandbox shaped like `spec` (it can wait warm,
    /// and the pool has not given up).
    pub(crate) fn would_warm(&self, spec: &BwrapSpec) -> bool {
        self.shared.would_warm(spec)
    }

    /// The waiting sandbox, if it is shaped like `spec`, still made from the host as it is, and
    /// set up; a command that gets none runs cold.
    pub(crate) fn checkout(&self, spec: &BwrapSpec, stdin: bool) -> Option<Box<Warm>> {
        eligibility(spec, stdin).ok()?;
        if !program_is_there(spec) {
            return None;
        }
        let warm = {
            let mut slot = lock(&self.shared.slot);
            let deadline = Instant::now() + PENDING_WAIT;
            while let Slot::Pending(s) = &*slot
                && s.same_sandbox(spec)
            {
                // The set-up this command waits for starts now, its grace cut short.
                self.shared.awaited.store(true, Ordering::SeqCst);
                self.shared.changed.notify_all();
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return None;
                }
                slot = self
                    .shared
                    .changed
                    .wait_timeout(slot, left)
                    .map_or_else(|e| e.into_inner().0, |(g, _)| g);
            }
            match &*slot {
                Slot::Ready(w) if w.shape.same_sandbox(spec) => {}
                _ => return None,
            }
            let Slot::Ready(w) = std::mem::replace(&mut *slot, Slot::Empty) else {
                return None;
            };
            w
        };
        if !warm.fingerprint.holds() {
            tracing::debug!("a warm sandbox was made from a host that has changed since");
            self.dispose(warm);
            return None;
        }
        if !warm.wait_ready(READY_WAIT) {
            self.shared.failed();
            self.dispose(warm);
            return None;
        }
        self.shared.failures.store(0, Ordering::Relaxed);
        Some(warm)
    }

    /// Kills `warm` on the pool's thread (inline when there is none).
    pub(crate) fn dispose(&self, warm: Box<Warm>) {
        if let Err(job) = self.send(Job::Dispose(warm)) {
            drop(job);
        }
    }

    /// Sends `job` to the thread, starting it first if needed.
    fn send(&self, job: Job) -> Result<(), Box<Job>> {
        let mut jobs = lock(&self.jobs);
        if jobs.is_none() {
            let (tx, rx) = channel::<Job>();
            let launcher = Arc::clone(&self.launcher);
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new()
                .name("spear-warm".into())
                .spawn(move || {
                    for job in rx {
                        match job {
                            Job::Start(spec) => {
                                shared.grace();
                                let made = Warm::start(&launcher, &spec);
                                shared.fill(&spec, made);
                            }
                            Job::Dispose(warm) => drop(warm),
                        }
                    }
                    shared.clear();
                });
            match spawned {
                Ok(handle) => {
                    *lock(&self.thread) = Some(handle);
                    *jobs = Some(tx);
                }
                Err(e) => {
                    tracing::warn!("no thread for warm sandboxes ({e}); commands start cold");
                    self.shared.given_up.store(true, Ordering::Relaxed);
                    return Err(Box::new(job));
                }
            }
        }
        match jobs.as_ref() {
            Some(tx) => tx.send(job).map_err(|e| Box::new(e.0)),
            None => Err(Box::new(job)),
        }
    }
}

impl Shared {
    /// Waits [`START_GRACE`], or less when a command waits for the sandbox about to be started
    /// or the pool is going away.
    fn grace(&self) {
        let slot = lock(&self.slot);
        let _ = self.changed.wait_timeout_while(slot, START_GRACE, |s| {
            matches!(s, Slot::Pending(_)) && !self.awaited.load(Ordering::SeqCst)
        });
        self.awaited.store(false, Ordering::SeqCst);
    }

    /// One warm sandbox did not come up; after a few in a row the pool gives up.
    fn failed(&self) {
        let n = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= FAILURES_BEFORE_GIVING_UP && !self.given_up.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{n} warm sandboxes in a row did not come up; this session's commands start cold"
            );
        }
    }

    /// Whether a sandbox shaped like `spec` would be started by [`WarmPool::prewarm`].
    fn would_warm(&self, spec: &BwrapSpec) -> bool {
        eligibility(spec, false).is_ok() && !self.given_up.load(Ordering::Relaxed)
    }

    /// Puts a started sandbox in the slot, if it is still wanted there.
    fn fill(&self, spec: &BwrapSpec, made: Result<Warm, SandboxError>) {
        let mut unwanted = None;
        {
            let mut slot = lock(&self.slot);
            let wanted = matches!(&*slot, Slot::Pending(s) if s.same_sandbox(spec));
            match made {
                Ok(warm) if wanted => *slot = Slot::Ready(Box::new(warm)),
                Ok(warm) => unwanted = Some(warm),
                Err(e) => {
                    tracing::debug!("a warm sandbox could not be started: {e}");
                    if wanted {
                        *slot = Slot::Empty;
                    }
                    self.failed();
                }
            }
        }
        self.changed.notify_all();
        drop(unwanted);
    }

    /// Kills what waits (the pool is going away).
    fn clear(&self) {
        let old = std::mem::replace(&mut *lock(&self.slot), Slot::Empty);
        self.changed.notify_all();
        drop(old);
    }
}

impl Drop for WarmPool {
    /// Nothing of the warm path outlives the sandbox: the waiting sandbox is killed, reaped and
    /// its cgroup removed, and the thread is joined.
    fn drop(&mut self) {
        drop(lock(&self.jobs).take());
        self.shared.clear();
        if let Some(handle) = lock(&self.thread).take() {
            let _ = handle.join();
        }
        self.shared.clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::spec::{Bind, Etc, Mask, NetworkSpec, Overlay, ScratchDirs, SystemDir, TmpfsSizes};
    use spear_core::{Capability, CapabilitySet, ExecutionProfile};
    use std::path::PathBuf;
    use std::process::{Command, Stdio};

    /// Runs the hold outside any sandbox, fed `message` on fd 5, and returns its exit code and
    /// stdout.
    fn hold_with(message: &[u8]) -> (i32, String) {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("argv");
        std::fs::write(&input, message).unwrap();
        let out = Command::new("/bin/bash")
            .arg("-c")
            .arg(r#"exec 5<"$1" 6>/dev/null; shift; exec "$@""#)
            .arg("feed")
            .arg(&input)
            .args(hold_argv())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn the_hold_runs_exactly_the_words_it_was_given() {
        let words: Vec<OsString> = [
            "/bin/bash",
            "-c",
            "printf '[%s]' \"$@\"",
            "x",
            "a b",
            "",
            "c\nd",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let (code, out) = hold_with(&hold_message(&words));
        assert_eq!((code, out.as_str()), (0, "[a b][][c\nd]"));
    }

    #[test]
    fn a_short_or_empty_argv_runs_nothing() {
        let words: Vec<OsString> = ["/bin/echo", "RAN", "more", ""]
            .iter()
            .map(OsString::from)
            .collect();
        let full = hold_message(&words);
        // Positive control: the whole message runs.
        assert_eq!(hold_with(&full), (0, "RAN more \n".to_owned()));
        for cut in 0..full.len() {
            assert_eq!(
                hold_with(&full[..cut]),
                (125, String::new()),
                "cut at {cut}"
            );
        }
    }

    /// A change made to a spec by a table case.
    type Change = fn(&mut BwrapSpec);

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn profile(caps: &[Capability]) -> ExecutionProfile {
        ExecutionProfile::from_granted(CapabilitySet::of(caps), Vec::new())
    }

    /// A closed, read-only session sandbox running a bash command line: one that can wait warm.
    fn base() -> BwrapSpec {
        BwrapSpec {
            profile: profile(&[Capability::FilesystemRead, Capability::ShellComplex]),
            command: vec![HOLD_PROGRAM.into(), "-c".into(), "true".into()],
            cwd: p("/work/proj"),
            home: p("/home/u"),
            system: vec![SystemDir::Bind(p("/usr"))],
            etc: Etc::View {
                files: p("/run/spear/etc"),
                dirs: vec![p("/etc/ssl/certs")],
            },
            toolchains: vec![p("/home/u/.cargo")],
            roots: vec![Bind {
                host: p("/work/proj"),
                mount: p("/work/proj"),
            }],
            staged: vec![],
            masks: vec![Mask::File(p("/home/u/.cargo/credentials.toml"))],
            env: vec![("PATH".into(), "/usr/bin".into())],
            tmpfs: TmpfsSizes {
                tmp: 100,
                home: 200,
                shm: 50,
            },
            scratch: Some(ScratchDirs {
                tmp: p("/state/s/tmp"),
                var_tmp: p("/state/s/var-tmp"),
                home: p("/state/s/home"),
            }),
            git_config: None,
            empty_file: None,
            env_named: vec![],
            seccomp_fd: 3,
            network: None,
            gpu: None,
        }
    }

    fn overlay() -> Overlay {
        Overlay {
            lower: p("/work/proj"),
            upper: p("/state/staging/0.upper"),
            work: p("/state/staging/0.work"),
        }
    }

    #[test]
    fn only_a_closed_read_only_command_of_a_program_shown_as_on_the_host_waits_warm() {
        let cases: [(&str, Change, bool, Result<(), Cold>); 13] = [
            ("as it is", |_| {}, false, Ok(())),
            (
                "networked",
                |s| s.profile = profile(&[Capability::FilesystemRead, Capability::Network]),
                false,
                Err(Cold::Networked),
            ),
            (
                "writable",
                |s| {
                    s.profile = profile(&[Capability::FilesystemRead, Capability::WorkspaceWrite]);
                },
                false,
                Err(Cold::Writable),
            ),
            (
                "staged without write",
                |s| s.staged = vec![overlay()],
                false,
                Err(Cold::Writable),
            ),
            ("with stdin", |_| {}, true, Err(Cold::Stdin)),
            (
                "a program of a system directory",
                |s| s.command = vec!["/usr/bin/true".into()],
                false,
                Ok(()),
            ),
            (
                "bash by another path",
                |s| s.command = vec!["/usr/bin/bash".into(), "-c".into(), "true".into()],
                false,
                Ok(()),
            ),
            (
                "a program of a toolchain",
                |s| s.command = vec!["/home/u/.cargo/bin/cargo".into()],
                false,
                Ok(()),
            ),
            (
                "a program named by PATH",
                |s| s.command = vec!["true".into()],
                false,
                Err(Cold::ProgramElsewhere),
            ),
            (
                "a program of the workspace",
                |s| s.command = vec!["/work/proj/run".into()],
                false,
                Err(Cold::ProgramElsewhere),
            ),
            (
                "a program out of a system directory by ..",
                |s| s.command = vec!["/usr/../work/proj/run".into()],
                false,
                Err(Cold::ProgramElsewhere),
            ),
            (
                "a system directory itself",
                |s| s.command = vec!["/usr".into()],
                false,
                Err(Cold::ProgramElsewhere),
            ),
            (
                "no command",
                |s| s.command.clear(),
                false,
                Err(Cold::ProgramElsewhere),
            ),
        ];
        for (name, change, stdin, expected) in cases {
            let mut spec = base();
            change(&mut spec);
            assert_eq!(eligibility(&spec, stdin), expected, "{name}");
        }
        // The network wins over the rest: a networked writable command is cold for its network.
        let mut both = base();
        both.profile = profile(&[Capability::Network, Capability::WorkspaceWrite]);
        assert_eq!(eligibility(&both, true), Err(Cold::Networked));
    }

    #[test]
    fn a_program_that_is_not_there_now_runs_cold() {
        let mut spec = base();
        spec.command = vec!["/usr/bin/true".into()];
        assert!(program_is_there(&spec), "positive control");
        spec.command = vec!["/usr/bin/no-such-program-of-spear".into()];
        assert_eq!(eligibility(&spec, false), Ok(()));
        assert!(!program_is_there(&spec));
        // A directory is no program.
        spec.command = vec!["/usr/bin".into()];
        assert!(!program_is_there(&spec));
        // A script: with `#!` the kernel execs it; without, bwrap's execvp would give it to
        // /bin/sh and bash's exec to bash, so it runs cold.
        let dir = tempfile::tempdir().unwrap();
        for (name, text, there) in [
            ("with", "#!/bin/sh\ntrue\n", true),
            ("without", "true\n", false),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let exec =
                <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
            std::fs::set_permissions(&path, exec).unwrap();
            spec.command = vec![path.into_os_string()];
            assert_eq!(program_is_there(&spec), there, "{name}");
        }
    }

    #[test]
    fn a_warm_sandbox_serves_only_a_spec_that_differs_in_its_command() {
        // Positive control: another command line in the same sandbox is served.
        let mut other_command = base();
        other_command.command = vec![HOLD_PROGRAM.into(), "-c".into(), "ls -la".into()];
        assert!(base().same_sandbox(&other_command));
        assert!(base().same_sandbox(&base()));
        let changes: [(&str, Change); 17] = [
            ("profile", |s| {
                s.profile = profile(&[Capability::FilesystemRead]);
            }),
            ("cwd", |s| s.cwd = p("/work/proj/src")),
            ("home", |s| s.home = p("/home/v")),
            ("system", |s| {
                s.system.push(SystemDir::Symlink {
                    path: p("/bin"),
                    target: p("usr/bin"),
                });
            }),
            ("etc", |s| s.etc = Etc::Entries(vec![p("/etc/passwd")])),
            ("toolchains", |s| s.toolchains.push(p("/opt/go"))),
            ("roots", |s| {
                s.roots.push(Bind {
                    host: p("/work/lib"),
                    mount: p("/work/lib"),
                });
            }),
            ("staged", |s| s.staged = vec![overlay()]),
            ("masks", |s| s.masks.push(Mask::Dir(p("/work/proj/.ssh")))),
            ("env", |s| s.env.push(("LANG".into(), "C".into()))),
            ("tmpfs", |s| s.tmpfs.tmp += 1),
            ("scratch", |s| s.scratch = None),
            ("git_config", |s| s.git_config = Some(p("/state/gitconfig"))),
            ("empty_file", |s| s.empty_file = Some(p("/state/empty"))),
            ("env_named", |s| s.env_named.push("LANG".into())),
            ("seccomp_fd", |s| s.seccomp_fd = 4),
            ("network", |s| {
                s.network = Some(NetworkSpec {
                    resolv_conf: p("/state/resolv.conf"),
                });
            }),
        ];
        for (field, change) in changes {
            let mut spec = base();
            change(&mut spec);
            assert!(!base().same_sandbox(&spec), "{field} changed");
            assert!(
                !spec.same_sandbox(&base()),
                "{field} changed, the other way"
            );
        }
    }

    #[test]
    fn the_message_counts_its_words_first() {
        let words: Vec<OsString> = vec!["a".into(), "bc".into()];
        assert_eq!(hold_message(&words), b"2\0a\0bc\0\0");
    }
}
