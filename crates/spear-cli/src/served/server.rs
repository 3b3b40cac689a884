//! `spear serve`: the server side.

use std::io::{IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use clap::Parser as _;
use rustix::event::{PollFd, PollFlags, poll};
use spear_runtime::HostSnapshot;
use spear_sandbox::CancelToken;

use super::shelf::Shelf;
use super::wire::{self, Identity, Request, Verdict};

/// How many calls a server runs at once; a call past them is declined, and runs in its
/// client's own process.
const MAX_CALLS: usize = 32;
/// How many connections a server reads requests from at once; one past them is closed at once
/// (its client runs the call itself). Attack (and accident) stopped: a flood of connections
/// that send nothing making a thread each.
const MAX_CONNECTIONS: usize = 64;
/// How long a connection may take to send its request. Attack (and accident) stopped: a peer
/// that connects and sends nothing holding a thread forever.
const REQUEST_WAIT: Duration = Duration::from_secs(5);
/// How long a stopping server waits for its running calls (cancelled, their trees killed) to
/// end before it exits anyway.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// `spear serve [--idle-exit SECS]`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Exit after this many seconds without a call (default: serve until SIGTERM, SIGINT or
    /// SIGHUP).
    #[arg(long, value_name = "SECS")]
    idle_exit: Option<u64>,
}

/// Serves `spear exec` calls on the socket in spear's state directory until a signal (or the
/// idle time) stops it; returns 0 then. Refuses to start when a server already answers there.
pub fn run(args: &Args, host: &HostSnapshot) -> Result<i32, String> {
    let state = crate::state_home::state_dir(host)?;
    let dir = super::socket_dir(&state);
    spear_mcp::private_dir(&dir).map_err(|e| e.to_string())?;
    let path = super::socket_path(&state);
    if UnixStream::connect(&path).is_ok() {
        return Err(format!(
            "a spear serve already serves {}; stop it first",
            path.display()
        ));
    }
    // A socket left by a server that died: nothing answers it.
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(|e| {
        format!(
            "cannot serve on {}: {e} (a path of more than 107 bytes cannot be a socket: set XDG_STATE_HOME to a shorter directory)",
            path.display()
        )
    })?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| e.to_string())?;
    let bound = std::fs::symlink_metadata(&path).map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let server = Arc::new(Server {
        identity: super::process_identity::of_process(&|name| {
            host.var_os(name).map(|v| v.as_bytes().to_vec())
        }),
        own_uid: rustix::process::geteuid().as_raw(),
        shelf: Shelf::default(),
        calls: Calls::default(),
        connections: AtomicUsize::new(0),
        last_call: Mutex::new(Instant::now()),
    });
    let stop = stop_on_signals().map_err(|e| format!("cannot watch for signals: {e}"))?;
    eprintln!("spear serve: serving spear exec on {}", path.display());
    let idle = args.idle_exit.map(Duration::from_secs);
    serve(&listener, &server, &stop, idle);
    // What was ours is removed: the socket (unless another server has bound the path since),
    // every running call (cancelled, its tree killed), every waiting sandbox.
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.ino() == bound.ino()) {
        let _ = std::fs::remove_file(&path);
    }
    drop(listener);
    server.calls.cancel_all_and_wait(STOP_WAIT);
    server.shelf.clear();
    eprintln!("spear serve: stopped");
    Ok(0)
}

/// What the connections share.
struct Server {
    identity: Identity,
    own_uid: u32,
    shelf: Shelf,
    calls: Calls,
    /// Connections being handled ([`MAX_CONNECTIONS`]).
    connections: AtomicUsize,
    last_call: Mutex<Instant>,
}

/// The calls running, by number, each with its cancellation.
#[derive(Default)]
struct Calls {
    running: Mutex<Vec<(u64, CancelToken)>>,
    ended: Condvar,
    next: AtomicU64,
    stopping: AtomicBool,
}

impl Calls {
    /// Registers a call; `None` when [`MAX_CALLS`] run or the server is stopping.
    fn start(&self, cancel: &CancelToken) -> Option<u64> {
        let mut running = lock(&self.running);
        if running.len() >= MAX_CALLS || self.stopping.load(Ordering::SeqCst) {
            return None;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        running.push((n, cancel.clone()));
        Some(n)
    }

    fn end(&self, n: u64) {
        lock(&self.running).retain(|(m, _)| *m != n);
        self.ended.notify_all();
    }

    fn count(&self) -> usize {
        lock(&self.running).len()
    }

    /// Cancels every running call (their trees are killed) and waits at most `limit` for them
    /// to end.
    fn cancel_all_and_wait(&self, limit: Duration) {
        self.stopping.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + limit;
        let mut running = lock(&self.running);
        for (_, cancel) in running.iter() {
            cancel.cancel();
        }
        while !running.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!("{} calls did not end in time", running.len());
                return;
            }
            running = self
                .ended
                .wait_timeout(running, left)
                .map_or_else(|e| e.into_inner().0, |(g, _)| g);
        }
    }
}

/// Accepts connections until `stop` is readable or the server has been idle for `idle`.
fn serve(listener: &UnixListener, server: &Arc<Server>, stop: &OwnedFd, idle: Option<Duration>) {
    loop {
        let mut fds = [
            PollFd::new(listener, PollFlags::IN),
            PollFd::new(stop, PollFlags::IN),
        ];
        let tick = rustix::event::Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        if let Err(e) = poll(&mut fds, Some(&tick))
            && e != rustix::io::Errno::INTR
        {
            tracing::warn!("poll: {e}");
            return;
        }
        if !fds[1].revents().is_empty() {
            return;
        }
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    if server.connections.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                        server.connections.fetch_sub(1, Ordering::SeqCst);
                        tracing::warn!("{MAX_CONNECTIONS} connections at once: one closed");
                        continue;
                    }
                    let shared = Arc::clone(server);
                    let spawned = std::thread::Builder::new()
                        .name("spear-serve-call".into())
                        .spawn(move || {
                            handle(stream, &shared);
                            shared.connections.fetch_sub(1, Ordering::SeqCst);
                        });
                    if let Err(e) = spawned {
                        server.connections.fetch_sub(1, Ordering::SeqCst);
                        tracing::warn!("no thread for a call ({e}); its client runs it");
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    tracing::warn!("accept: {e}");
                    break;
                }
            }
        }
        if let Some(idle) = idle
            && server.calls.count() == 0
            && lock(&server.last_call).elapsed() >= idle
        {
            tracing::info!("idle for {} s: stopping", idle.as_secs());
            return;
        }
    }
}

/// One connection: the peer checked, its request read and judged, then either declined or run.
fn handle(mut stream: UnixStream, server: &Server) {
    tracing::debug!("connection accepted");
    *lock(&server.last_call) = Instant::now();
    // Attack stopped: another user's process reaching the socket.
    match rustix::net::sockopt::socket_peercred(&stream) {
        Ok(peer) if spear_mcp::peer_allowed(peer.uid.as_raw(), server.own_uid) => {}
        Ok(peer) => {
            tracing::warn!("refused a connection of uid {}", peer.uid.as_raw());
            return;
        }
        Err(e) => {
            tracing::warn!("refused a connection whose peer is unknown ({e})");
            return;
        }
    }
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(REQUEST_WAIT));
    let (request, stdin) = match read_request(&mut stream) {
        Ok(r) => r,
        Err(why) => {
            decline(&mut stream, &why);
            return;
        }
    };
    let _ = stream.set_read_timeout(None);
    tracing::debug!("request read");
    let args = match judge(&request, stdin.as_ref(), server) {
        Ok(args) => args,
        Err(why) => {
            decline(&mut stream, &why);
            return;
        }
    };
    let Ok(cancel) = CancelToken::new() else {
        decline(&mut stream, "no cancellation could be made for the call");
        return;
    };
    let Some(n) = server.calls.start(&cancel) else {
        decline(&mut stream, "the server is busy or stopping");
        return;
    };
    let accepted = wire::frame(&Verdict::Accepted.encode())
        .map_err(std::io::Error::other)
        .and_then(|f| stream.write_all(&f));
    if accepted.is_ok() {
        let host = HostSnapshot::new(request.env, request.cwd);
        let done = {
            let _watch = HangupWatch::start(&stream, &cancel);
            crate::exec::call(
                &args,
                &host,
                Ok(stdin.map(Arc::new)),
                Some(cancel),
                Some(&server.shelf),
            )
        };
        // Logged before the answer, so that whoever has the answer finds the line.
        tracing::debug!("call answered");
        if let Ok(frame) = wire::frame(&done.encode()) {
            // A client that went away reads nothing: its command was cancelled already.
            let _ = stream.write_all(&frame);
        }
    }
    server.calls.end(n);
    *lock(&server.last_call) = Instant::now();
}

/// Whether the server runs `request`: the same identity, arguments that parse, a mode that
/// does not ask, and the stdin it announced. The arguments, when it does.
fn judge(
    request: &Request,
    stdin: Option<&OwnedFd>,
    server: &Server,
) -> Result<crate::exec::Args, String> {
    if let Some(name) = server.identity.differs(&request.identity) {
        return Err(format!(
            "the client's {name} is not the server's, so the call would not run as it would in the client"
        ));
    }
    // The server's own now (it may have been moved since it started), against the client's.
    let client = request
        .identity
        .get("cgroup")
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let own = super::process_identity::own_cgroup().unwrap_or_default();
    if let Err(why) = super::cgroups::within(&client, &own) {
        return Err(format!(
            "the client's {why}, so the call would not run within the client's limits"
        ));
    }
    if request.stdin != stdin.is_some() {
        return Err("the stdin the call announced did not come with it".into());
    }
    let words =
        std::iter::once(std::ffi::OsString::from("spear exec")).chain(request.args.iter().cloned());
    let parsed = ExecWords::try_parse_from(words).map_err(|_| {
        "the call's arguments do not parse here (the client reports why)".to_owned()
    })?;
    if !parsed.args.may_be_served() {
        return Err("ASK and grants ask on the client's terminal".into());
    }
    Ok(parsed.args)
}

/// `spear exec`'s arguments alone.
#[derive(clap::Parser)]
#[command(name = "spear exec")]
struct ExecWords {
    #[command(flatten)]
    args: crate::exec::Args,
}

/// Reads the request and the stdin descriptor that came with its first byte.
fn read_request(stream: &mut UnixStream) -> Result<(Request, Option<OwnedFd>), String> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut header = [0u8; 4];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(
        &*stream,
        &mut [IoSliceMut::new(&mut header)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC | RecvFlags::WAITALL,
    )
    .map_err(|e| format!("the request could not be read: {e}"))?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if got.bytes != 4 {
        return Err("the request was cut short".into());
    }
    if fds.len() > 1 {
        return Err("more than one descriptor came with the request".into());
    }
    let len = wire::frame_len(header).map_err(|e| e.to_string())?;
    let mut payload = vec![0u8; len];
    stream
        .read_exact(&mut payload)
        .map_err(|e| format!("the request could not be read: {e}"))?;
    let request = Request::decode(&payload).map_err(|e| e.to_string())?;
    Ok((request, fds.pop()))
}

fn decline(stream: &mut UnixStream, why: &str) {
    tracing::debug!("declined a call: {why}");
    if let Ok(frame) = wire::frame(&Verdict::Declined(why.to_owned()).encode()) {
        let _ = stream.write_all(&frame);
    }
}

/// Cancels a call when its client's end of the connection closes (the client died, or was
/// killed by Ctrl-C), until dropped.
struct HangupWatch {
    done: Option<OwnedFd>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HangupWatch {
    fn start(stream: &UnixStream, cancel: &CancelToken) -> Self {
        let pipe = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
        let (Ok(peer), Ok((done_read, done))) = (stream.try_clone(), pipe) else {
            tracing::warn!("a call's hangup cannot be watched: it runs to its end or timeout");
            return HangupWatch {
                done: None,
                thread: None,
            };
        };
        let cancel = cancel.clone();
        let thread = std::thread::Builder::new()
            .name("spear-serve-hangup".into())
            .spawn(move || {
                let mut fds = [
                    PollFd::new(&peer, PollFlags::IN | PollFlags::RDHUP),
                    PollFd::new(&done_read, PollFlags::IN),
                ];
                loop {
                    match poll(&mut fds, None) {
                        Err(rustix::io::Errno::INTR) => {}
                        Err(_) => return,
                        Ok(_) => break,
                    }
                }
                if fds[1].revents().is_empty() && !fds[0].revents().is_empty() {
                    tracing::debug!("the client hung up: cancelling its call");
                    cancel.cancel();
                }
            })
            .ok();
        HangupWatch {
            done: Some(done),
            thread,
        }
    }
}

impl Drop for HangupWatch {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A pipe that becomes readable when SIGTERM, SIGINT or SIGHUP arrives (watched by a thread of
/// its own from now on, instead of their default of ending the process without cleaning up).
fn stop_on_signals() -> std::io::Result<OwnedFd> {
    use tokio::signal::unix::{SignalKind, signal};
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("spear-serve-signals".into())
        .spawn(move || {
            runtime.block_on(async move {
                let streams = (
                    signal(SignalKind::terminate()),
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::hangup()),
                );
                let (Ok(mut term), Ok(mut int), Ok(mut hup)) = streams else {
                    let _ = ready_tx.send(false);
                    return;
                };
                let _ = ready_tx.send(true);
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM: stopping"),
                    _ = int.recv() => tracing::info!("SIGINT: stopping"),
                    _ = hup.recv() => tracing::info!("SIGHUP: stopping"),
                }
                let _ = rustix::io::write(&write, b"s");
            });
        })?;
    match ready_rx.recv() {
        Ok(true) => Ok(read),
        _ => Err(std::io::Error::other(
            "the signal handlers could not be installed",
        )),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
