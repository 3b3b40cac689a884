//! Starting a process without copying spear: `clone(CLONE_VM | CLONE_VFORK)`, as glibc's
//! `posix_spawn` does, instead of the `fork` that `std::process::Command` makes for `pre_exec`.
//!
//! Why: spear is a server of many sessions (a multi-threaded process of hundreds of megabytes).
//! A fork copies its page tables, and afterwards every thread that writes a page takes a
//! copy-on-write fault with a TLB shootdown across the CPUs; measured, a third of the server's CPU.
//! A `CLONE_VM` child shares the parent's memory: nothing is copied, and the parent (the spawning
//! thread only) is suspended by the kernel until the child has exec'd or exited.
//!
//! The child runs in the parent's memory, on a stack of its own, so everything it touches is
//! prepared before the clone ([`Prepared`]: argv, envp, the candidate paths of the program, cwd,
//! the stdio fds) and the child:
//! - allocates nothing, takes no lock, touches no thread-local (it has the spawning thread's
//!   thread pointer), never unwinds (its entry point is `extern "C"`, and no step can panic), and
//!   ends in `execve` or `_exit`;
//! - first resets to `SIG_DFL` every signal that has a handler (the handler table is its own
//!   without `CLONE_SIGHAND`, but a handler's code and data are the parent's memory), and `SIGPIPE`
//!   (which Rust's runtime ignores), then clears its signal mask: the parent blocks every signal
//!   around the clone, so that no handler runs in the child before that;
//! - reports a failed step by storing its errno in memory the parent reads once the clone returns
//!   (as glibc's `posix_spawn` does): with `CLONE_VFORK` that is after the exec or the exit, so 0
//!   there means the exec succeeded. The parent reaps a child that failed.
//!
//! The program is looked up as `execvp` does (the new environment's `PATH`, else `/bin:/usr/bin`;
//! `EACCES` remembered, `ENOENT` and the like skipped; a file the kernel cannot execute run by
//! `/bin/sh`), over candidate paths joined before the clone.
//!
//! Every `unsafe` of the spawner is in this module; [`spawn`] carries the contract of the caller's
//! setup closure. What this costs: one stack per spawning thread, kept (see [`Stack`]), of which
//! only the pages the child touches become resident.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString, c_char, c_int, c_void};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicI32, Ordering};

use rustix::process::Pid;

/// Bytes of the child's stack (mapped lazily: only the pages the child touches cost memory).
const STACK_BYTES: usize = 256 * 1024;

/// The inaccessible page below the child's stack: an overflow faults instead of writing over
/// the parent's memory.
const GUARD_BYTES: usize = 64 * 1024;

/// The shell a file the kernel cannot execute is handed to (`execvp`'s `_PATH_BSHELL`).
const SHELL: &std::ffi::CStr = c"/bin/sh";

/// What to start.
pub(crate) struct Command<'a> {
    /// The program: a path when it holds a `/`, else a name looked up in `PATH`.
    pub program: &'a Path,
    /// Its arguments (after `argv[0]`, which is `program`).
    pub args: &'a [OsString],
    /// The whole environment (nothing of spear's is inherited); a later duplicate wins.
    pub env: &'a [(OsString, OsString)],
    /// The working directory, or spear's.
    pub cwd: Option<&'a Path>,
    /// stdin: this fd, or `/dev/null`.
    pub stdin: Option<BorrowedFd<'a>>,
    /// Where stdout goes.
    pub stdout: Output<'a>,
    /// Where stderr goes.
    pub stderr: Output<'a>,
}

/// Where the child's stdout or stderr goes.
#[derive(Clone, Copy)]
pub(crate) enum Output<'a> {
    /// A pipe whose read end [`Spawned`] holds.
    Pipe,
    /// `/dev/null`.
    Null,
    /// This fd.
    To(BorrowedFd<'a>),
}

/// A started child: its pid (unreaped, the caller's to pin and reap) and the read ends of its
/// stdout and stderr pipes, where they are pipes ([`Output::Pipe`]).
pub(crate) struct Spawned {
    pub pid: Pid,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// Starts `cmd`, running `setup` in the child after its stdio and cwd are in place and before the
/// exec. An error of `setup` or of the exec is returned with its errno, the child reaped.
///
/// # Safety
///
/// `setup` runs in a child that shares this process's memory while the spawning thread is
/// suspended: it must be async-signal-safe in the strict sense (raw system calls on data prepared
/// before the call), allocate nothing (nor drop anything that frees), take no lock, touch no
/// thread-local, and not panic. Its errors must be OS errors (`io::Error::from_raw_os_error` or a
/// converted `Errno`), which own no memory.
#[allow(unsafe_code)]
pub(crate) unsafe fn spawn(
    cmd: &Command<'_>,
    setup: &dyn Fn() -> io::Result<()>,
) -> io::Result<Spawned> {
    // `/dev/null` as std opens it: read-only for stdin, write-only for an output.
    let null_in = dev_null(cmd.stdin.is_none(), false)?;
    let null_out = dev_null(
        matches!(cmd.stdout, Output::Null) || matches!(cmd.stderr, Output::Null),
        true,
    )?;
    let (stdout_r, stdout_w) = output(cmd.stdout)?;
    let (stderr_r, stderr_w) = output(cmd.stderr)?;
    let input = match (cmd.stdin, &null_in) {
        (Some(fd), _) => fd,
        (None, Some(null)) => null.as_fd(),
        (None, None) => return Err(io::Error::other("no /dev/null for stdin")),
    };
    // Moved above stdio where needed, so that no dup2 onto 0, 1 or 2 clobbers another source.
    let stdio = [
        above_stdio(input)?,
        above_stdio(target(cmd.stdout, stdout_w.as_ref(), null_out.as_ref())?)?,
        above_stdio(target(cmd.stderr, stderr_w.as_ref(), null_out.as_ref())?)?,
    ];
    let mut prepared = Prepared::new(cmd, stdio.each_ref().map(StdioFd::raw))?;
    let shell_argv = prepared.shell_argv.as_mut_ptr();
    let args = ChildArgs {
        prepared: &prepared,
        shell_argv,
        setup,
        errno: AtomicI32::new(0),
    };
    let pid = STACK
        .try_with(|cached| -> io::Result<c_int> {
            let mut cached = cached
                .try_borrow_mut()
                .map_err(|_| io::Error::other("re-entered"))?;
            if cached.is_none() {
                *cached = Some(Stack::new()?);
            }
            let top = cached.as_ref().map_or(ptr::null_mut(), Stack::top);
            let all = signal_set(true);
            let mut old = signal_set(false);
            // SAFETY: `all` and `old` are valid sigsets for the call.
            if unsafe { sigprocmask(libc::SIG_SETMASK, &raw const all, &raw mut old) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `child` gets `args`, which outlives the clone: with CLONE_VFORK this thread
            // resumes only after the child has exec'd (its memory is then its own) or exited, so
            // nothing here is freed or moved while the child uses it, and this thread does not run
            // while the child writes `args.errno` and `shell_argv[1]`. `top` is the top of a mapping
            // used by no one else (this thread's cached stack; the child is done with it when clone
            // returns), 16-byte aligned. Every signal is blocked, so no handler of ours runs in the
            // child before it has reset them.
            let pid = unsafe {
                libc::clone(
                    child,
                    top,
                    libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                    ptr::from_ref(&args).cast_mut().cast(),
                )
            };
            let clone_error = io::Error::last_os_error();
            // SAFETY: `old` is the mask read above.
            unsafe { sigprocmask(libc::SIG_SETMASK, &raw const old, ptr::null_mut()) };
            if pid < 0 { Err(clone_error) } else { Ok(pid) }
        })
        .map_err(|_| io::Error::other("spawn from a thread being torn down"))??;
    let errno = args.errno.load(Ordering::SeqCst);
    // The parent's copies of the child's ends close here (and on the error below).
    drop(prepared);
    drop(stdio);
    drop((stdout_w, stderr_w, null_in, null_out));
    if errno != 0 {
        reap(pid);
        return Err(io::Error::from_raw_os_error(errno));
    }
    let pid = Pid::from_raw(pid).ok_or_else(|| io::Error::other("clone returned no pid"))?;
    Ok(Spawned {
        pid,
        stdout: stdout_r,
        stderr: stderr_r,
    })
}

/// Everything the child reads, built before the clone.
struct Prepared {
    /// The paths to try, in order (one when the program holds a `/`).
    candidates: Vec<CString>,
    /// NUL-terminated pointers into `strings`.
    argv: Vec<*const c_char>,
    /// `[/bin/sh, <candidate>, args...]`, slot 1 filled by the child before it runs a file the
    /// kernel cannot execute.
    shell_argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
    cwd: Option<CString>,
    /// The fds the child puts at 0, 1 and 2 (none of them below 3).
    stdio: [RawFd; 3],
    /// What the pointers point into.
    _strings: Vec<CString>,
}

impl Prepared {
    fn new(cmd: &Command<'_>, stdio: [RawFd; 3]) -> io::Result<Prepared> {
        let program = cstring(cmd.program.as_os_str())?;
        let mut strings = vec![program];
        for a in cmd.args {
            strings.push(cstring(a)?);
        }
        let arg_count = strings.len();
        let env: BTreeMap<&OsStr, &OsStr> = cmd
            .env
            .iter()
            .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
            .collect();
        for (k, v) in &env {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            strings.push(cstring(OsStr::from_bytes(&kv))?);
        }
        let pointers: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        let mut argv = pointers[..arg_count].to_vec();
        argv.push(ptr::null());
        let mut envp = pointers[arg_count..].to_vec();
        envp.push(ptr::null());
        let mut shell_argv = vec![SHELL.as_ptr(), ptr::null()];
        shell_argv.extend_from_slice(&pointers[1..arg_count]);
        shell_argv.push(ptr::null());
        let path = env
            .get(OsStr::new("PATH"))
            .map_or(&b"/bin:/usr/bin"[..], |p| p.as_bytes());
        Ok(Prepared {
            candidates: candidates(cmd.program.as_os_str().as_bytes(), path)?,
            argv,
            shell_argv,
            envp,
            cwd: cmd.cwd.map(|c| cstring(c.as_os_str())).transpose()?,
            stdio,
            _strings: strings,
        })
    }
}

/// The paths `execvp` would try for `program` under `path`: the program itself when it holds a
/// `/`, else each entry of `path` joined with it (an empty entry: the working directory); none for
/// an empty program (`ENOENT`).
fn candidates(program: &[u8], path: &[u8]) -> io::Result<Vec<CString>> {
    if program.is_empty() {
        return Ok(Vec::new());
    }
    if program.contains(&b'/') {
        return Ok(vec![cstring(OsStr::from_bytes(program))?]);
    }
    path.split(|b| *b == b':')
        .map(|dir| {
            let mut full = dir.to_vec();
            if !dir.is_empty() {
                full.push(b'/');
            }
            full.extend_from_slice(program);
            cstring(OsStr::from_bytes(&full))
        })
        .collect()
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

/// What the child gets (through the clone's one pointer).
struct ChildArgs<'a> {
    prepared: &'a Prepared,
    /// `prepared.shell_argv`, writable.
    shell_argv: *mut *const c_char,
    setup: &'a dyn Fn() -> io::Result<()>,
    /// The errno of the step that failed; 0 while none did.
    errno: AtomicI32,
}

/// The child: runs until it execs, or stores the errno of the step that failed and exits.
#[allow(unsafe_code)]
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed to clone; it is alive and not touched by
    // the parent until this child has exec'd or exited (CLONE_VFORK).
    let args = unsafe { &*arg.cast::<ChildArgs<'_>>() };
    let errno = child_steps(args);
    args.errno.store(errno, Ordering::SeqCst);
    // SAFETY: `_exit` ends this process at once (no atexit handlers, no flush of stdio buffers
    // that are the parent's).
    unsafe { libc::_exit(127) }
}

/// The child's steps in order; returns the errno of the one that failed (never 0).
#[allow(unsafe_code)]
fn child_steps(args: &ChildArgs<'_>) -> c_int {
    let p = args.prepared;
    reset_signals();
    let empty = signal_set(false);
    // SAFETY: `empty` is a valid sigset; the mask is this child's own.
    if unsafe { sigprocmask(libc::SIG_SETMASK, &raw const empty, ptr::null_mut()) } != 0 {
        return errno();
    }
    for (target, fd) in (0..).zip(p.stdio) {
        // SAFETY: fd calls on numbers this child holds. `fd` is above 2, so the copy at `target`
        // is not close-on-exec.
        if unsafe { libc::dup2(fd, target) } < 0 {
            return errno();
        }
    }
    if let Some(cwd) = &p.cwd {
        // SAFETY: `cwd` is a NUL-terminated string prepared before the clone.
        if unsafe { libc::chdir(cwd.as_ptr()) } != 0 {
            return errno();
        }
    }
    if let Err(e) = (args.setup)() {
        let code = e.raw_os_error().unwrap_or(libc::EINVAL);
        // Not dropped: an OS error owns nothing, and a drop that freed would take malloc's lock.
        std::mem::forget(e);
        return code;
    }
    let mut eacces = false;
    let mut last = libc::ENOENT;
    for candidate in &p.candidates {
        // SAFETY: every pointer is NUL-terminated data prepared before the clone, argv and envp
        // NULL-terminated arrays of them. On success it does not return.
        unsafe { libc::execve(candidate.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr()) };
        last = errno();
        if last == libc::ENOEXEC {
            // SAFETY: slot 1 of `shell_argv` exists (it is at least 3 long) and nothing else reads
            // or writes it while this child runs; then as above.
            unsafe {
                *args.shell_argv.add(1) = candidate.as_ptr();
                libc::execve(SHELL.as_ptr(), args.shell_argv, p.envp.as_ptr());
            }
            last = errno();
        }
        match last {
            libc::EACCES => eacces = true,
            libc::ENOENT | libc::ESTALE | libc::ENOTDIR | libc::ENODEV | libc::ETIMEDOUT => {}
            _ => return last,
        }
    }
    if eacces { libc::EACCES } else { last }
}

/// Sets `SIG_DFL` for every signal that has a handler, and for `SIGPIPE`; an ignored signal stays
/// ignored (as across a fork and exec).
#[allow(unsafe_code)]
fn reset_signals() {
    // The kernel's signals are 1 to 64.
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid value of the C struct.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: reading a disposition into a local; the libc wrapper takes no lock. The two
        // signals glibc keeps for itself (SIGCANCEL, SIGSETXID) answer EINVAL and are left as
        // they are: glibc sends them only to threads of its own process, which this child is not.
        if unsafe { libc::sigaction(sig, ptr::null(), &raw mut current) } != 0 {
            continue;
        }
        let handled =
            current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN;
        if handled || sig == libc::SIGPIPE {
            // SAFETY: as above.
            let mut default: libc::sigaction = unsafe { std::mem::zeroed() };
            default.sa_sigaction = libc::SIG_DFL;
            // SAFETY: setting this child's own disposition (its handler table is not shared).
            unsafe { libc::sigaction(sig, &raw const default, ptr::null_mut()) };
        }
    }
}

/// A full or an empty signal set.
fn signal_set(full: bool) -> libc::sigset_t {
    #[allow(unsafe_code)]
    // SAFETY: sigemptyset/sigfillset initialise the set they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        if full {
            libc::sigfillset(&raw mut set);
        } else {
            libc::sigemptyset(&raw mut set);
        }
        set
    }
}

/// `rt_sigprocmask` itself: libc's wrapper would keep its own signals out of a full set, which
/// `posix_spawn` blocks too.
///
/// # Safety
/// `set` is null or points at a valid sigset; `old` is null or points at writable sigset.
#[allow(unsafe_code)]
unsafe fn sigprocmask(how: c_int, set: *const libc::sigset_t, old: *mut libc::sigset_t) -> c_int {
    // The kernel's sigset: 64 bits, the first word of libc's.
    const KERNEL_SIGSET_BYTES: usize = 8;
    // SAFETY: per the contract; the kernel reads and writes 8 bytes of the sets.
    let r = unsafe { libc::syscall(libc::SYS_rt_sigprocmask, how, set, old, KERNEL_SIGSET_BYTES) };
    if r == 0 { 0 } else { -1 }
}

fn errno() -> c_int {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

/// Waits for the failed child (it has exited or is exiting: the clone returned).
#[allow(unsafe_code)]
fn reap(pid: c_int) {
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child, writing its status to a local.
        let r = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        if r >= 0 || errno() != libc::EINTR {
            return;
        }
    }
}

/// `(read end, write end)` of a new pipe for an [`Output::Pipe`], none for the others.
fn output(out: Output<'_>) -> io::Result<(Option<OwnedFd>, Option<OwnedFd>)> {
    if matches!(out, Output::Pipe) {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        Ok((Some(read), Some(write)))
    } else {
        Ok((None, None))
    }
}

/// The fd an output is given at its number in the child.
fn target<'f>(
    out: Output<'f>,
    pipe: Option<&'f OwnedFd>,
    null: Option<&'f OwnedFd>,
) -> io::Result<BorrowedFd<'f>> {
    match (out, pipe, null) {
        (Output::To(fd), _, _) => Ok(fd),
        (Output::Pipe, Some(fd), _) | (Output::Null, _, Some(fd)) => Ok(fd.as_fd()),
        _ => Err(io::Error::other("an output has no fd")),
    }
}

/// `/dev/null`, close-on-exec, when `wanted`: for writing, or for reading.
fn dev_null(wanted: bool, write: bool) -> io::Result<Option<OwnedFd>> {
    if !wanted {
        return Ok(None);
    }
    let file = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .open("/dev/null")?;
    Ok(Some(file.into()))
}

/// An fd for the child's stdio: `fd` itself, or a close-on-exec copy of it above 2.
enum StdioFd<'a> {
    Borrowed(BorrowedFd<'a>),
    Owned(OwnedFd),
}

impl StdioFd<'_> {
    fn raw(&self) -> RawFd {
        match self {
            StdioFd::Borrowed(fd) => fd.as_raw_fd(),
            StdioFd::Owned(fd) => fd.as_raw_fd(),
        }
    }
}

fn above_stdio(fd: BorrowedFd<'_>) -> io::Result<StdioFd<'_>> {
    if fd.as_raw_fd() > 2 {
        Ok(StdioFd::Borrowed(fd))
    } else {
        Ok(StdioFd::Owned(rustix::io::fcntl_dupfd_cloexec(fd, 3)?))
    }
}

/// A child stack: a private mapping with an inaccessible guard below it. One per thread, kept:
/// the child is done with it when the clone returns, and unmapping it after each spawn would cost
/// a TLB shootdown across the CPUs running spear's threads (what the fork cost, once).
struct Stack {
    base: *mut c_void,
}

thread_local! {
    static STACK: RefCell<Option<Stack>> = const { RefCell::new(None) };
}

#[allow(unsafe_code)]
impl Stack {
    fn new() -> io::Result<Stack> {
        // SAFETY: a fresh anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                GUARD_BYTES + STACK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base };
        // SAFETY: the lowest pages of the mapping just made.
        if unsafe { libc::mprotect(base, GUARD_BYTES, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The highest address (the stack grows down), 16-byte aligned as the ABI wants.
    fn top(&self) -> *mut c_void {
        // SAFETY: one past the end of the mapping, which is page-aligned.
        unsafe { self.base.cast::<u8>().add(GUARD_BYTES + STACK_BYTES).cast() }
    }
}

impl Drop for Stack {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; no child runs on it (a spawn holds the borrow).
        unsafe { libc::munmap(self.base, GUARD_BYTES + STACK_BYTES) };
    }
}
