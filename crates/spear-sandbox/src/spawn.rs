//! Spawning and supervising one sandboxed process tree.
//!
//! - The child is held through a pidfd from the moment `spawn` returns (opened on our own unreaped
//!   child, so the pid cannot have been reused), waited on through it, and signalled only through
//!   `pidfd_send_signal`. Never a numeric pid: attack stopped, killing an unrelated process that
//!   inherited a recycled pid.
//! - The child is started with `clone(CLONE_VM | CLONE_VFORK)` (`vfork`): it shares spear's
//!   memory until its exec, so nothing of spear is copied. Between clone and exec it joins its
//!   cgroup, takes its rlimits, stages its writable roots in a mount namespace of its own
//!   ([`crate::stage`]), marks every inherited fd but stdio and the seccomp program close-on-exec
//!   (attack stopped: a sandboxed command reaching an fd the harness opened), and sets
//!   no-new-privs. stdin is `/dev/null`, or the read end of a pipe the caller feeds
//!   ([`Watch::stdin`]): never the caller's own fd 0, which could be a terminal (ioctls on it act
//!   on the operator's terminal) or a file opened read-write (`spear exec <> file`), reopenable
//!   through `/proc/self/fd/0`.
//! - stdout and stderr are drained concurrently in one poll loop, capped (head and tail kept), and
//!   a flood past `flood_bytes` kills the tree. The loop ends when the sandbox's main process has
//!   exited and the pipes are drained, or shortly after: a process holding stdout open cannot hang
//!   the call (and none can survive it: the PID namespace dies with its init, and the caller kills
//!   the cgroup).

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::Errno;
use rustix::process::{
    PidfdFlags, Signal, WaitId, WaitIdOptions, pidfd_open, pidfd_send_signal, waitid,
};

use crate::output::{CappedOutput, Captured};
use crate::rlimits::ResourceLimits;
use crate::setup_gate::{Place, SETUP_SHARE};
use crate::stage::StagePlan;

pub(crate) mod vfork;

/// The fd number at which the child receives the seccomp program.
pub const SECCOMP_CHILD_FD: i32 = 3;

/// How long to wait for a killed tree to be confirmed dead before calling containment failed.
const KILL_CONFIRM: Duration = Duration::from_secs(5);

/// How long to keep draining pipes after the main process exited.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);

/// One process to start: the program, its arguments, and what the child does before exec.
#[derive(Debug)]
pub struct Launch<'a> {
    /// The program (bwrap, or a cgroup backend's wrapper in front of it).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The seccomp program, handed to the child as fd [`SECCOMP_CHILD_FD`].
    pub seccomp: BorrowedFd<'a>,
    /// More fds for the child, at `SECCOMP_CHILD_FD + 1`, `+ 2`, ... in order (the network path's
    /// info and block pipes).
    pub inherit: Vec<BorrowedFd<'a>>,
    /// cgroup.procs files the child writes `0` to (joins) before exec.
    pub join: Vec<BorrowedFd<'a>>,
    /// The child's rlimits.
    pub rlimits: ResourceLimits,
    /// The overlays of the writable roots, mounted in the child's own mount namespace before
    /// exec; `None` for a read-only sandbox.
    pub stage: Option<Arc<StagePlan>>,
    /// The child's stdin: the read end of a pipe, or `/dev/null` when `None`.
    pub stdin: Option<BorrowedFd<'a>>,
    /// The landlock backend's confinement (`landlock` module of this crate): when set, the program is the
    /// command itself, run in `cwd` with `env`, and the child confines itself before exec
    /// instead of handing fds to bwrap (the seccomp fd is not passed on: the child loads the
    /// program itself). `None` for bwrap.
    pub landlock: Option<Arc<crate::landlock::ChildConfinement>>,
    /// The whole environment (the landlock backend's; bwrap gets its own through its options).
    pub env: Vec<(OsString, OsString)>,
    /// The working directory (the landlock backend's; bwrap changes to its own).
    pub cwd: Option<PathBuf>,
}

/// A started process: its pidfd and the read ends of its stdout and stderr.
#[derive(Debug)]
pub struct Running {
    /// The process, pinned.
    pub pidfd: OwnedFd,
    /// Its stdout.
    pub stdout: OwnedFd,
    /// Its stderr.
    pub stderr: OwnedFd,
}

/// Starts processes. The real one is [`ProcessSpawner`]; tests substitute a recording one to prove
/// that a refused command never reached it.
pub trait Spawner: std::fmt::Debug + Send + Sync {
    /// Starts `launch`.
    fn spawn(&self, launch: &Launch<'_>) -> io::Result<Running>;
}

/// Spawns real processes.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessSpawner;

impl Spawner for ProcessSpawner {
    fn spawn(&self, launch: &Launch<'_>) -> io::Result<Running> {
        let join: Vec<RawFd> = launch.join.iter().map(AsRawFd::as_raw_fd).collect();
        let fds: Vec<RawFd> = std::iter::once(launch.seccomp.as_raw_fd())
            .chain(launch.inherit.iter().map(AsRawFd::as_raw_fd))
            .collect();
        // Lowered to the hard limits spear inherited: setting one above them fails (EPERM).
        let limits = launch.rlimits.effective_pairs();
        let stage = launch.stage.as_deref();
        let landlock = launch.landlock.as_deref();
        let command = vfork::Command {
            program: &launch.program,
            args: &launch.args,
            env: &launch.env,
            cwd: launch.cwd.as_deref(),
            stdin: launch.stdin,
            stdout: vfork::Output::Pipe,
            stderr: vfork::Output::Pipe,
        };
        let setup = || match landlock {
            None => child_setup(&join, &fds, &limits, stage),
            Some(confine) => landlock_child_setup(&join, &limits, confine),
        };
        // SAFETY: `setup` is what vfork::spawn requires: it only makes raw system calls (write,
        // setrlimit, unshare, mount, open and write of /proc/self maps, dup2, fcntl,
        // close_range, prctl, capset, landlock_restrict_self, seccomp) on data prepared above, and
        // its errors are all OS errors: it allocates nothing, takes no lock, and cannot panic.
        #[allow(unsafe_code)]
        let child = unsafe { vfork::spawn(&command, &setup) }?;
        // Our own unreaped child: its pid cannot have been recycled yet.
        let pidfd = pidfd_open(child.pid, PidfdFlags::empty())?;
        // The child is reaped through the pidfd.
        let pipe = |fd: Option<OwnedFd>| fd.ok_or_else(|| io::Error::other("no output pipe"));
        Ok(Running {
            pidfd,
            stdout: pipe(child.stdout)?,
            stderr: pipe(child.stderr)?,
        })
    }
}

/// What the child does between clone and exec. Async-signal-safe: raw system calls only.
fn child_setup(
    join: &[RawFd],
    fds: &[RawFd],
    limits: &[(rustix::process::Resource, u64)],
    stage: Option<&StagePlan>,
) -> io::Result<()> {
    join_and_limit(join, limits)?;
    // Before the fds move: the plan names its layers by their numbers in this process.
    if let Some(plan) = stage {
        plan.apply(plan.report_fd())?;
    }
    place_fds(fds)?;
    rustix::thread::set_no_new_privs(true)?;
    Ok(())
}

/// In the child before exec, first of all: joins its cgroups (writes `0` to each `cgroup.procs`
/// fd) and sets its rlimits, shared by both backends. Async-signal-safe: raw system calls only.
fn join_and_limit(join: &[RawFd], limits: &[(rustix::process::Resource, u64)]) -> io::Result<()> {
    for fd in join {
        // SAFETY: `fd` is a cgroup.procs file kept open by the parent for the child's lifetime.
        #[allow(unsafe_code)]
        let n = unsafe { libc::write(*fd, b"0".as_ptr().cast(), 1) };
        if n != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    for (resource, value) in limits {
        let limit = rustix::process::Rlimit {
            current: Some(*value),
            maximum: Some(*value),
        };
        rustix::process::setrlimit(*resource, limit)?;
    }
    Ok(())
}

/// What the child does between clone and exec under the landlock backend: it joins its cgroup,
/// takes its rlimits, keeps only stdio (every other fd close-on-exec), then confines itself
/// ([`crate::landlock::ChildConfinement::apply`]). Async-signal-safe: raw system calls only.
fn landlock_child_setup(
    join: &[RawFd],
    limits: &[(rustix::process::Resource, u64)],
    confine: &crate::landlock::ChildConfinement,
) -> io::Result<()> {
    join_and_limit(join, limits)?;
    place_fds(&[])?;
    confine.apply()
}

/// In the child before exec: puts `fds[i]` at fd `3 + i`, inheritable, and marks every other fd
/// above stdio close-on-exec. Async-signal-safe: raw system calls only, no allocation.
///
/// Attack stopped: a sandboxed program reaching an fd the harness opened (a secret file, a socket,
/// another sandbox's pipe).
pub(crate) fn place_fds(fds: &[RawFd]) -> io::Result<()> {
    let mut parked = [0 as RawFd; 8];
    if fds.len() > parked.len() {
        return Err(io::Error::from_raw_os_error(libc::EMFILE));
    }
    // Where sources are parked first: at the lowest free numbers above every target, so that no
    // dup2 clobbers a source. Not at a fixed high number: F_DUPFD fails with EINVAL at or above
    // RLIMIT_NOFILE, which the operator's shell may have lowered (`ulimit -n 256`).
    let park: RawFd = SECCOMP_CHILD_FD + i32::try_from(fds.len()).unwrap_or(0);
    // SAFETY: plain fd system calls on numbers this child owns; nothing is dereferenced.
    #[allow(unsafe_code)]
    unsafe {
        for (slot, fd) in parked.iter_mut().zip(fds) {
            *slot = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, park);
            if *slot < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        for (i, src) in parked.iter().take(fds.len()).enumerate() {
            let target = SECCOMP_CHILD_FD + i32::try_from(i).unwrap_or(0);
            // dup2 onto a different number clears close-on-exec on the copy.
            if libc::dup2(*src, target) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        let first_free =
            u32::try_from(SECCOMP_CHILD_FD).unwrap_or(3) + u32::try_from(fds.len()).unwrap_or(0);
        if libc::syscall(
            libc::SYS_close_range,
            first_free,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) < 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A cancellation that can be triggered from another thread and wakes the supervising poll.
#[derive(Debug, Clone)]
pub struct CancelToken(Arc<CancelInner>);

#[derive(Debug)]
struct CancelInner {
    cancelled: AtomicBool,
    read: OwnedFd,
    write: OwnedFd,
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> io::Result<Self> {
        let (read, write) = rustix::pipe::pipe_with(
            rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
        )?;
        Ok(CancelToken(Arc::new(CancelInner {
            cancelled: AtomicBool::new(false),
            read,
            write,
        })))
    }

    /// Cancels: the supervised tree is killed and the call ends as cancelled.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        // A full pipe already wakes the poll; the error is irrelevant.
        let _ = rustix::io::write(&self.0.write, b"x");
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }
}

/// Receives every chunk of a tree's output as it is read, beside the capped capture (a background
/// job's reader). Called from the supervising thread; must not block.
pub trait OutputTee: Send + Sync + std::fmt::Debug {
    /// Bytes read from the tree's stdout.
    fn stdout(&self, bytes: &[u8]);
    /// Bytes read from the tree's stderr.
    fn stderr(&self, bytes: &[u8]);
    /// Called at least every half second while the tree runs, with the time since it started
    /// (for progress reports).
    fn tick(&self, _elapsed: Duration) {}
}

/// How to watch a running tree.
#[derive(Debug, Clone)]
pub struct Watch {
    /// Wall-clock limit.
    pub timeout: Duration,
    /// Bytes kept per stream (head and tail).
    pub output_cap: usize,
    /// Bytes per stream after which the tree is killed as a flood.
    pub flood_bytes: u64,
    /// Cancellation from outside.
    pub cancel: Option<CancelToken>,
    /// Where output goes as it is read, as well as into the capture.
    pub tee: Option<Arc<dyn OutputTee>>,
    /// What the tree reads on stdin: the read end of a pipe the caller writes (never a terminal
    /// or a file of the caller's; see the module doc). `/dev/null` when `None`.
    pub stdin: Option<Arc<OwnedFd>>,
}

/// Why the supervisor stopped the tree, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It was not stopped: the main process exited by itself.
    None,
    /// The timeout passed.
    Timeout,
    /// It was cancelled.
    Cancelled,
    /// A stream passed the flood limit.
    Flood,
}

/// How the main process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
    /// Its end could not be confirmed (containment failed).
    Unknown,
}

/// The end of one supervised run.
#[derive(Debug, Clone)]
pub struct Finished {
    /// How the main process ended.
    pub exit: Exit,
    /// Whether and why the supervisor stopped it.
    pub stop: Stop,
    /// What it printed on stdout.
    pub stdout: Captured,
    /// What it printed on stderr.
    pub stderr: Captured,
    /// Wall-clock time.
    pub duration: Duration,
}

/// Supervises `running` until it ends or is stopped. `kill_tree` kills every process of the tree
/// (the cgroup); it is called on a stop, and the main process is killed through its pidfd too.
pub fn supervise(running: Running, watch: &Watch, kill_tree: &dyn Fn()) -> Finished {
    supervise_admitted(running, watch, kill_tree, None)
}

/// [`supervise`], holding `place` (the set-up's place in the [`crate::setup_gate`]) until the
/// main process exits or [`SETUP_SHARE`] has passed, whichever comes first.
pub(crate) fn supervise_admitted(
    running: Running,
    watch: &Watch,
    kill_tree: &dyn Fn(),
    place: Option<Place<'_>>,
) -> Finished {
    let started = Instant::now();
    let mut place = place;
    let place_until = started + SETUP_SHARE;
    let mut out = Stream::new(running.stdout, watch.output_cap);
    let mut err = Stream::new(running.stderr, watch.output_cap);
    let mut exit: Option<Exit> = None;
    let mut stop = Stop::None;
    let mut exited_at: Option<Instant> = None;
    let mut kill_sent: Option<Instant> = None;

    loop {
        if exit.is_some()
            && ((out.eof && err.eof) || exited_at.is_some_and(|t| t.elapsed() >= DRAIN_AFTER_EXIT))
        {
            tracing::debug!(out = out.eof, err = err.eof, "output drained");
            break;
        }
        if exit.is_none() && kill_sent.is_some_and(|t| t.elapsed() >= KILL_CONFIRM) {
            exit = Some(Exit::Unknown);
            break;
        }
        if stop == Stop::None
            && exit.is_none()
            && let Some(reason) = stop_reason(watch, started, &out, &err)
        {
            stop = reason;
            kill_tree();
            let _ = pidfd_send_signal(&running.pidfd, Signal::KILL);
            kill_sent = Some(Instant::now());
        }

        let wait = if exit.is_some() {
            DRAIN_AFTER_EXIT.saturating_sub(exited_at.map_or(Duration::ZERO, |t| t.elapsed()))
        } else if let Some(t) = kill_sent {
            KILL_CONFIRM.saturating_sub(t.elapsed())
        } else {
            watch.timeout.saturating_sub(started.elapsed())
        };
        let wait = if place.is_some() {
            wait.min(place_until.saturating_duration_since(Instant::now()))
        } else {
            wait
        };
        let (ready, failed) = poll_once(&running.pidfd, &out, &err, watch, wait);
        if let Some(e) = failed {
            tracing::error!("poll failed while supervising a sandbox: {e}");
            if stop == Stop::None {
                stop = Stop::Cancelled;
                kill_tree();
                let _ = pidfd_send_signal(&running.pidfd, Signal::KILL);
                kill_sent = Some(Instant::now());
            }
        }
        if let Some(tee) = &watch.tee {
            tee.tick(started.elapsed());
        }
        let (pid_ready, out_ready, err_ready, cancel_ready) = ready;
        if cancel_ready && let Some(c) = &watch.cancel {
            let mut buf = [0u8; 16];
            let _ = rustix::io::read(&c.0.read, &mut buf);
        }
        if out_ready {
            out.read_available(watch.tee.as_deref(), Which::Stdout);
        }
        if err_ready {
            err.read_available(watch.tee.as_deref(), Which::Stderr);
        }
        if pid_ready
            && exit.is_none()
            && let Some(e) = reap(&running.pidfd)
        {
            exit = Some(e);
            exited_at = Some(Instant::now());
            tracing::debug!(?e, "sandbox main process reaped");
            // The sandbox's init is gone, so its PID namespace is too; make sure of the rest.
            kill_tree();
            tracing::debug!("tree killed after exit");
        }
        if place.is_some() && (exit.is_some() || Instant::now() >= place_until) {
            place = None;
        }
    }
    // Whatever is still buffered in the pipes.
    out.read_available(watch.tee.as_deref(), Which::Stdout);
    err.read_available(watch.tee.as_deref(), Which::Stderr);
    Finished {
        exit: exit.unwrap_or(Exit::Unknown),
        stop,
        stdout: out.out.finish(),
        stderr: err.out.finish(),
        duration: started.elapsed(),
    }
}

/// Why the supervisor must stop the sandbox now, if it must: cancelled, out of time, or flooding
/// its output (more than `flood_bytes` on a stream).
fn stop_reason(watch: &Watch, started: Instant, out: &Stream, err: &Stream) -> Option<Stop> {
    if watch.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
        Some(Stop::Cancelled)
    } else if started.elapsed() >= watch.timeout {
        Some(Stop::Timeout)
    } else if out.out.total() > watch.flood_bytes || err.out.total() > watch.flood_bytes {
        Some(Stop::Flood)
    } else {
        None
    }
}

/// Polls the pidfd, the pipes not yet at end of file and the cancel token, for at most `wait`
/// (and at most half a second, so the deadlines are checked often). Which have something to say,
/// in that order (pidfd: the process exited; a pipe: data or closed; the token: written to), and
/// the error, when the poll fails for another reason than a signal, for the caller to act on.
fn poll_once(
    pidfd: &OwnedFd,
    out: &Stream,
    err: &Stream,
    watch: &Watch,
    wait: Duration,
) -> ((bool, bool, bool, bool), Option<Errno>) {
    let wait = wait.min(Duration::from_millis(500));
    let timespec = rustix::event::Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    let mut fds = Vec::with_capacity(4);
    fds.push(PollFd::new(pidfd, PollFlags::IN));
    let out_i = (!out.eof).then(|| {
        fds.push(PollFd::new(&out.fd, PollFlags::IN));
        fds.len() - 1
    });
    let err_i = (!err.eof).then(|| {
        fds.push(PollFd::new(&err.fd, PollFlags::IN));
        fds.len() - 1
    });
    let cancel_i = watch.cancel.as_ref().map(|c| {
        fds.push(PollFd::new(&c.0.read, PollFlags::IN));
        fds.len() - 1
    });
    let failed = match poll(&mut fds, Some(&timespec)) {
        Ok(_) | Err(Errno::INTR) => None,
        Err(e) => Some(e),
    };
    let ready = |i: Option<usize>| i.is_some_and(|i| !fds[i].revents().is_empty());
    let ready = (
        !fds[0].revents().is_empty(),
        ready(out_i),
        ready(err_i),
        ready(cancel_i),
    );
    (ready, failed)
}

/// Reaps the process behind `pidfd` if it has exited.
fn reap(pidfd: &OwnedFd) -> Option<Exit> {
    match waitid(
        WaitId::PidFd(pidfd.as_fd()),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
    ) {
        Ok(Some(status)) => {
            if let Some(code) = status.exit_status() {
                Some(Exit::Code(code))
            } else {
                status.terminating_signal().map(Exit::Signal)
            }
        }
        Ok(None) | Err(Errno::INTR | Errno::AGAIN) => None,
        Err(e) => {
            tracing::error!("waitid on a sandbox pidfd failed: {e}");
            Some(Exit::Unknown)
        }
    }
}

/// Which stream a chunk came from.
#[derive(Debug, Clone, Copy)]
enum Which {
    Stdout,
    Stderr,
}

/// One output pipe being drained.
struct Stream {
    fd: OwnedFd,
    out: CappedOutput,
    eof: bool,
}

impl Stream {
    fn new(fd: OwnedFd, cap: usize) -> Self {
        let _ = rustix::io::ioctl_fionbio(&fd, true);
        Stream {
            fd,
            out: CappedOutput::new(cap),
            eof: false,
        }
    }

    /// Reads what is there now, without blocking, in bounded rounds; `tee` sees every chunk.
    fn read_available(&mut self, tee: Option<&dyn OutputTee>, which: Which) {
        let mut buf = [0u8; 16 * 1024];
        for _ in 0..64 {
            if self.eof {
                return;
            }
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.out.push(&buf[..n]);
                    match (tee, which) {
                        (Some(t), Which::Stdout) => t.stdout(&buf[..n]),
                        (Some(t), Which::Stderr) => t.stderr(&buf[..n]),
                        (None, _) => {}
                    }
                }
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => return,
                Err(_) => self.eof = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The spawner's contract, on real processes: what a failed exec or setup step answers (and
    //! that nothing is left unreaped), what the child starts with (signals, stdio, environment,
    //! working directory), and how the program is found.

    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;

    fn launch<'a>(
        seccomp: BorrowedFd<'a>,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Launch<'a> {
        Launch {
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
            seccomp,
            inherit: Vec::new(),
            join: Vec::new(),
            rlimits: ResourceLimits::default(),
            stage: None,
            stdin: None,
            landlock: None,
            env: env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
            cwd: None,
        }
    }

    /// A watch with room to spare: 30 s, 64 KiB kept, 1 MiB before a flood.
    fn roomy_watch() -> Watch {
        Watch {
            timeout: Duration::from_secs(30),
            output_cap: 1 << 16,
            flood_bytes: 1 << 20,
            cancel: None,
            tee: None,
            stdin: None,
        }
    }

    /// Spawns `launch`, again while its program is busy. A program a test has just written may
    /// still be open for writing in a child that another test's thread is spawning (its copy of
    /// the fd table lives until its exec): the exec fails with ETXTBSY for that moment.
    fn spawn_when_not_busy(launch: &Launch<'_>) -> io::Result<Running> {
        let mut tries = 0;
        loop {
            match ProcessSpawner.spawn(launch) {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                spawned => return spawned,
            }
        }
    }

    fn run(launch: &Launch<'_>) -> Finished {
        let running = spawn_when_not_busy(launch).expect("spawned");
        supervise(running, &roomy_watch(), &|| {})
    }

    fn dev_null() -> std::fs::File {
        std::fs::File::open("/dev/null").unwrap()
    }

    /// The pids of this process's zombie children named `comm`.
    fn zombies_named(comm: &str) -> Vec<String> {
        let me = std::process::id().to_string();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ppid ...
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            if &stat[open + 1..close] == comm
                && rest.first() == Some(&"Z")
                && rest.get(1) == Some(&me.as_str())
            {
                found.push(stat[..open].trim().to_owned());
            }
        }
        found
    }

    /// Runs `f` on a thread named `name` (a child that fails before its exec has its parent
    /// thread's name).
    fn on_thread<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    /// Positive control of the zombie probe: a child named `name` that has exited, unreaped, is
    /// seen, and then reaped.
    fn zombie_probe_sees(name: &str) {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join(name);
        std::fs::copy("/bin/true", &program).unwrap();
        let null = dev_null();
        let running =
            spawn_when_not_busy(&launch(null.as_fd(), program.to_str().unwrap(), &[], &[]))
                .unwrap();
        assert!(spear_testkit::wait::wait_for(
            Duration::from_secs(10),
            || { !zombies_named(name).is_empty() }
        ));
        assert!(reap(&running.pidfd).is_some());
        assert!(zombies_named(name).is_empty());
    }

    #[test]
    fn a_program_that_is_not_there_is_enoent_and_no_zombie() {
        const NAME: &str = "vfk-enoent";
        on_thread(NAME, || {
            let null = dev_null();
            for (program, env) in [
                ("/nonexistent/spear-test-program", vec![]),
                (
                    "spear-test-no-such-program",
                    vec![("PATH", "/usr/bin:/bin")],
                ),
                ("spear-test-no-such-program", vec![]),
                ("", vec![]),
            ] {
                let e = ProcessSpawner
                    .spawn(&launch(null.as_fd(), program, &[], &env))
                    .expect_err(program);
                assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{program}: {e}");
                assert_eq!(e.kind(), io::ErrorKind::NotFound);
            }
            assert_eq!(zombies_named(NAME), Vec::<String>::new());
        });
        zombie_probe_sees(NAME);
    }

    #[test]
    fn a_set_up_s_place_is_given_back_after_its_share_while_the_command_runs_on() {
        let gate = crate::setup_gate::SetupGate::new(1);
        let null = dev_null();
        let watch = roomy_watch();
        std::thread::scope(|scope| {
            let started = Instant::now();
            let place = gate.enter();
            let running = ProcessSpawner
                .spawn(&launch(null.as_fd(), "/bin/sleep", &["2"], &[]))
                .expect("spawned");
            let supervised =
                scope.spawn(|| supervise_admitted(running, &watch, &|| {}, Some(place)));
            let next = gate.enter();
            let waited = started.elapsed();
            // Held for its share: not given back at the spawn.
            assert!(waited >= SETUP_SHARE, "entered after {waited:?}");
            // Given back while the command still runs.
            assert!(
                !supervised.is_finished(),
                "entered only after the command ended"
            );
            drop(next);
            let finished = supervised.join().unwrap();
            assert_eq!(finished.exit, Exit::Code(0));
        });
    }

    #[test]
    fn a_program_that_cannot_be_executed_is_eacces() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("not-executable");
        std::fs::write(&program, "echo no\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o644)).unwrap();
        let null = dev_null();
        let e = ProcessSpawner
            .spawn(&launch(null.as_fd(), program.to_str().unwrap(), &[], &[]))
            .expect_err("not executable");
        // As root the mode is no obstacle to the exec's permission check only with an x bit.
        assert_eq!(e.raw_os_error(), Some(libc::EACCES), "{e}");
    }

    #[test]
    fn a_failed_setup_step_is_its_errno_and_no_zombie() {
        const NAME: &str = "vfk-setup";
        on_thread(NAME, || {
            let null = dev_null();
            // A cgroup.procs "fd" open for reading only: the child's write answers EBADF.
            let bad_join = dev_null();
            let mut l = launch(null.as_fd(), "/bin/true", &[], &[]);
            l.join = vec![bad_join.as_fd()];
            let e = ProcessSpawner.spawn(&l).expect_err("bad join fd");
            assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
            // And a cwd that is not there: ENOENT before the exec.
            let mut l = launch(null.as_fd(), "/bin/true", &[], &[]);
            l.cwd = Some("/nonexistent/spear-test-dir".into());
            let e = ProcessSpawner.spawn(&l).expect_err("bad cwd");
            assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
            assert_eq!(zombies_named(NAME), Vec::<String>::new());
        });
        zombie_probe_sees(NAME);
    }

    /// The `Sig...:` line of a status file, as a number.
    fn sig_line(status: &str, key: &str) -> u64 {
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in {status}"));
        u64::from_str_radix(line.trim(), 16).unwrap()
    }

    #[test]
    fn the_child_starts_with_no_blocked_signal_and_sigpipe_default() {
        let (status, parent_ignored) = on_thread("vfk-signals", || {
            // SIGUSR1 blocked in the spawning thread, which the child must not inherit.
            let mut set = unsafe_sigset(libc::SIGUSR1);
            #[allow(unsafe_code)]
            // SAFETY: changes this test thread's own mask.
            let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &raw mut set, ptr_null()) };
            assert_eq!(r, 0);
            let me = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            // Positive controls: the parent blocks SIGUSR1 and ignores SIGPIPE (Rust's runtime).
            assert_ne!(sig_line(&me, "SigBlk:") & (1 << (libc::SIGUSR1 - 1)), 0);
            let ignored = sig_line(&me, "SigIgn:");
            assert_ne!(ignored & (1 << (libc::SIGPIPE - 1)), 0);
            let null = dev_null();
            let done = run(&launch(
                null.as_fd(),
                "grep",
                &["-E", "^Sig(Blk|Ign):", "/proc/self/status"],
                &[("PATH", "/usr/bin:/bin")],
            ));
            assert_eq!(done.exit, Exit::Code(0), "{:?}", done.stderr.text);
            (done.stdout.text, ignored)
        });
        assert_eq!(sig_line(&status, "SigBlk:"), 0, "{status}");
        assert_eq!(
            sig_line(&status, "SigIgn:"),
            parent_ignored & !(1 << (libc::SIGPIPE - 1)),
            "{status}"
        );
    }

    fn unsafe_sigset(sig: i32) -> libc::sigset_t {
        #[allow(unsafe_code)]
        // SAFETY: initialises a local set.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut set);
            libc::sigaddset(&raw mut set, sig);
            set
        }
    }

    fn ptr_null() -> *mut libc::sigset_t {
        std::ptr::null_mut()
    }

    #[test]
    fn stdio_environment_and_working_directory_reach_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        std::fs::File::from(write).write_all(b"hello\n").unwrap();
        let null = dev_null();
        let mut l = launch(
            null.as_fd(),
            "sh",
            &[
                "-c",
                "read l; printf '%s %s %s\\n' \"$l\" \"$FOO\" \"${HOME-unset}\"; \
                 pwd -P; echo oops >&2; exit 3",
            ],
            &[("FOO", "bar"), ("PATH", "/usr/bin:/bin"), ("FOO", "baz")],
        );
        l.stdin = Some(read.as_fd());
        l.cwd = Some(dir.path().into());
        let done = run(&l);
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(done.exit, Exit::Code(3));
        assert_eq!(
            done.stdout.text,
            format!("hello baz unset\n{}\n", cwd.display())
        );
        assert_eq!(done.stderr.text, "oops\n");
        // Without a stdin, /dev/null: read answers end of file at once.
        let done = run(&launch(
            null.as_fd(),
            "/bin/sh",
            &["-c", "if read l; then echo got; else echo eof; fi"],
            &[],
        ));
        assert_eq!(done.stdout.text, "eof\n");
    }

    #[test]
    fn a_staging_child_makes_its_namespaces_in_the_shared_address_space() {
        // The stage's unshare runs in a CLONE_VM child: as a user that is CLONE_NEWUSER (which
        // the kernel takes as CLONE_THREAD | CLONE_FS too), as root CLONE_NEWNS alone.
        let plan = Arc::new(StagePlan::prepare(&[]).unwrap());
        let null = dev_null();
        let mut l = launch(
            null.as_fd(),
            "/bin/sh",
            &[
                "-c",
                "readlink /proc/self/ns/mnt /proc/self/ns/user; cat /proc/self/uid_map",
            ],
            &[],
        );
        l.stage = Some(Arc::clone(&plan));
        let done = run(&l);
        assert_eq!(done.exit, Exit::Code(0), "{:?}", done.stderr.text);
        assert_eq!(plan.reported(), None);
        let ns = |kind: &str| std::fs::read_link(format!("/proc/self/ns/{kind}")).unwrap();
        let lines: Vec<&str> = done.stdout.text.lines().collect();
        assert_ne!(lines[0], ns("mnt").to_str().unwrap(), "{lines:?}");
        let uid = rustix::process::geteuid().as_raw();
        if uid == 0 {
            assert_eq!(lines[1], ns("user").to_str().unwrap(), "{lines:?}");
        } else {
            assert_ne!(lines[1], ns("user").to_str().unwrap(), "{lines:?}");
            let map: Vec<&str> = lines[2].split_whitespace().collect();
            assert_eq!(
                map,
                [uid.to_string(), uid.to_string(), "1".into()],
                "{lines:?}"
            );
        }
    }

    #[test]
    fn an_output_goes_to_a_given_fd_or_to_dev_null() {
        // The network helpers' shape: stdout to /dev/null, stderr to a file of the caller's.
        let log: std::fs::File =
            rustix::fs::memfd_create("spawn-test-log", rustix::fs::MemfdFlags::CLOEXEC)
                .unwrap()
                .into();
        let args = [
            OsString::from("-c"),
            // `-ef` in the shell itself (dash redirects a command's fds in the shell around it).
            OsString::from(
                "echo out; if [ /proc/$$/fd/1 -ef /dev/null ]; then echo null >&2; fi; \
                 echo err >&2",
            ),
        ];
        let command = vfork::Command {
            program: std::path::Path::new("/bin/sh"),
            args: &args,
            env: &[],
            cwd: None,
            stdin: None,
            stdout: vfork::Output::Null,
            stderr: vfork::Output::To(log.as_fd()),
        };
        #[allow(unsafe_code)]
        // SAFETY: the setup does nothing.
        let child = unsafe { vfork::spawn(&command, &|| Ok(())) }.unwrap();
        assert!(child.stdout.is_none() && child.stderr.is_none());
        let status =
            rustix::process::waitpid(Some(child.pid), rustix::process::WaitOptions::empty())
                .unwrap()
                .unwrap()
                .1;
        assert_eq!(status.exit_status(), Some(0));
        let mut text = String::new();
        let mut log = log;
        std::io::Seek::seek(&mut log, std::io::SeekFrom::Start(0)).unwrap();
        std::io::Read::read_to_string(&mut log, &mut text).unwrap();
        assert_eq!(text, "null\nerr\n");
    }

    #[test]
    fn a_file_the_kernel_cannot_execute_runs_under_sh_as_with_execvp() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("spear-script");
        std::fs::write(&script, "echo from-script \"$@\"\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let null = dev_null();
        let done = run(&launch(null.as_fd(), script.to_str().unwrap(), &["a"], &[]));
        assert_eq!(done.stdout.text, "from-script a\n");
        // Found through PATH, after an entry that does not have it.
        let path = format!("/nonexistent:{}", dir.path().display());
        let done = run(&launch(
            null.as_fd(),
            "spear-script",
            &["b"],
            &[("PATH", &path)],
        ));
        assert_eq!(done.stdout.text, "from-script b\n");
    }
}
