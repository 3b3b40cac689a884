//! The approval channel the model cannot reach: how ASK asks when the client cannot.
//!
//! A call that needs confirmation from a client that cannot ask its user (no elicitation) is
//! registered here as a pending confirmation and waits, for a bounded time, for a person to answer
//! it with `spear approve` in another terminal. That command talks to the server over a Unix
//! socket in spear's state directory, `$XDG_STATE_HOME/spear/approve/<pid>.sock`:
//!
//! - the directory is 0700 and the socket 0600, owned by the server's user, and the server checks
//!   every peer's uid (`SO_PEERCRED`) against its own: only that user's processes can answer;
//! - spear's state directory is never visible in a sandbox nor to the file tools, so a command
//!   or tool call of the model cannot reach the socket (see `spear_tools::ToolRouter::new` and
//!   the runner's masks);
//! - one request and one reply per connection, each one JSON line of at most [`MAX_LINE`] bytes,
//!   read with a timeout ([`ApproveRequest`], [`ApproveReply`]);
//! - an id (random, [`ID_BYTES`] bytes) names one question exactly as asked; it is answered at
//!   most once, and the answer goes only to the call that registered it.
//!
//! [`Approvals`] is the registry, [`ApprovalConfirmer`] the `Confirmer` a call waits in,
//! [`ApprovalChannel`] the socket's server side, and [`client`] the side `spear approve` uses.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use spear_core::Refusal;
use spear_policy::{ConfirmRequest, Confirmation, Confirmer};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

/// How long a call waits for `spear approve` unless told otherwise.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);

/// The longest request or reply line, in bytes. Attack stopped: a peer sending an endless line to
/// make the server buffer without bound.
pub const MAX_LINE: usize = 1 << 20;

/// How long a connection may take to send its request or read its reply. Attack stopped: a peer
/// that connects and sends nothing holding the channel.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Random bytes in a pending confirmation's id (shown as hex).
pub const ID_BYTES: usize = 6;

/// The directory of the approval sockets under spear's state directory.
pub fn socket_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("approve")
}

/// The socket of the server with process id `pid` in `dir`.
pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.sock"))
}

/// The server pid a socket's file name names (`<pid>.sock`), or `None` for any other name.
pub fn socket_pid(name: &str) -> Option<u32> {
    let digits = name.strip_suffix(".sock")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `id` is shaped like a pending confirmation's id (lowercase hex of `ID_BYTES` bytes).
pub fn is_valid_id(id: &str) -> bool {
    id.len() == ID_BYTES * 2 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// One pending confirmation, as `spear approve` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingItem {
    /// Its id: what `spear approve ID` names.
    pub id: String,
    /// The pid of the server that asks.
    pub server_pid: u32,
    /// The server's session.
    pub session: String,
    /// The tool called (`terminal`, `write_file`...).
    pub tool: String,
    /// Exactly what will run, with control, bidirectional and invisible characters shown escaped
    /// and plain secrets redacted.
    pub command: String,
    /// The whole question, escaped the same way (what spear-mcp's `asking::question` writes).
    pub question: String,
    /// When it was asked, in seconds since the Unix epoch.
    pub asked_at: u64,
    /// The digest of the question asked (`asking::request_digest`), in hex.
    pub digest: String,
}

/// A request over the socket: one JSON line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum ApproveRequest {
    /// List what is pending.
    List,
    /// Approve the pending confirmation `id`, once.
    Allow {
        /// Its id.
        id: String,
    },
    /// Refuse the pending confirmation `id`: nothing runs.
    Refuse {
        /// Its id.
        id: String,
    },
}

/// The reply to an [`ApproveRequest`]: one JSON line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ApproveReply {
    /// Whether the request was done.
    pub ok: bool,
    /// What is pending (for `list`).
    #[serde(default)]
    pub pending: Vec<PendingItem>,
    /// Why not, when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ApproveReply {
    fn failed(error: impl Into<String>) -> Self {
        ApproveReply {
            ok: false,
            pending: Vec::new(),
            error: Some(error.into()),
        }
    }
}

/// The error of an id that names nothing pending (never asked, already answered, withdrawn).
pub const NO_SUCH_PENDING: &str = "no such pending confirmation";

/// How a pending confirmation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Allowed,
    Refused,
    /// The call was cancelled, or the server is going away.
    Withdrawn,
}

struct Slot {
    item: PendingItem,
    answer: Option<Answer>,
}

#[derive(Default)]
struct Slots {
    pending: HashMap<String, Slot>,
    /// Set when the server goes away: nothing more is registered.
    closed: bool,
}

/// The pending confirmations of one server process (over stdio its one session; over HTTP every
/// session it serves, each item naming its own): registered by calls, answered through the
/// socket.
pub struct Approvals {
    pid: u32,
    slots: Mutex<Slots>,
    changed: Condvar,
}

impl Approvals {
    /// An empty registry for this process's server.
    pub fn new() -> Arc<Self> {
        Arc::new(Approvals {
            pid: std::process::id(),
            slots: Mutex::new(Slots::default()),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `request` of a call to `tool` in `session` as pending; returns its id, or `None`
    /// when the server is going away or no random id could be made (nothing is pending then).
    fn register(&self, session: &str, tool: &str, request: &ConfirmRequest) -> Option<String> {
        let id = random_id()?;
        let item = PendingItem {
            id: id.clone(),
            server_pid: self.pid,
            session: session.to_owned(),
            tool: tool.to_owned(),
            command: spear_tools::confirmation_text(&request.command),
            question: crate::asking::question(request),
            asked_at: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            digest: hex(&crate::asking::request_digest(request)),
        };
        let mut slots = self.lock();
        if slots.closed || slots.pending.contains_key(&id) {
            return None;
        }
        slots
            .pending
            .insert(id.clone(), Slot { item, answer: None });
        drop(slots);
        self.changed.notify_all();
        Some(id)
    }

    /// Waits until `id` is answered or `deadline` passes; the slot is gone afterwards either way,
    /// so a late answer finds nothing. Woken by each answer, never by polling.
    fn wait(&self, id: &str, deadline: Instant) -> Option<Answer> {
        let mut slots = self.lock();
        loop {
            let slot = slots.pending.get(id)?;
            if let Some(answer) = slot.answer {
                slots.pending.remove(id);
                return Some(answer);
            }
            let now = Instant::now();
            if now >= deadline {
                slots.pending.remove(id);
                return None;
            }
            slots = self
                .changed
                .wait_timeout(slots, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Answers `id` once: `false` when nothing pending has that id (never asked, answered
    /// already, withdrawn or timed out). Attack stopped: one approval allowing two runs.
    fn answer(&self, id: &str, answer: Answer) -> bool {
        let mut slots = self.lock();
        let Some(slot) = slots.pending.get_mut(id).filter(|s| s.answer.is_none()) else {
            return false;
        };
        slot.answer = Some(answer);
        drop(slots);
        self.changed.notify_all();
        true
    }

    /// Withdraws `id` (its call was cancelled): its waiter returns, nothing runs.
    pub fn withdraw(&self, id: &str) {
        self.answer(id, Answer::Withdrawn);
    }

    /// Withdraws everything `session` has pending (it ends; the server goes on serving others).
    pub fn withdraw_session(&self, session: &str) {
        let mut slots = self.lock();
        for slot in slots.pending.values_mut() {
            if slot.item.session == session {
                slot.answer.get_or_insert(Answer::Withdrawn);
            }
        }
        drop(slots);
        self.changed.notify_all();
    }

    /// Withdraws everything pending and registers nothing more: the server is going away.
    pub fn close(&self) {
        let mut slots = self.lock();
        slots.closed = true;
        for slot in slots.pending.values_mut() {
            slot.answer.get_or_insert(Answer::Withdrawn);
        }
        drop(slots);
        self.changed.notify_all();
    }

    /// What is pending now (unanswered), oldest first.
    pub fn list(&self) -> Vec<PendingItem> {
        let mut items: Vec<PendingItem> = self
            .lock()
            .pending
            .values()
            .filter(|s| s.answer.is_none())
            .map(|s| s.item.clone())
            .collect();
        items.sort_by(|a, b| a.asked_at.cmp(&b.asked_at).then(a.id.cmp(&b.id)));
        items
    }

    /// Does what `request` asks and says how it went.
    pub fn handle(&self, request: &ApproveRequest) -> ApproveReply {
        let (id, answer) = match request {
            ApproveRequest::List => {
                return ApproveReply {
                    ok: true,
                    pending: self.list(),
                    error: None,
                };
            }
            ApproveRequest::Allow { id } => (id, Answer::Allowed),
            ApproveRequest::Refuse { id } => (id, Answer::Refused),
        };
        if self.answer(id, answer) {
            ApproveReply {
                ok: true,
                ..ApproveReply::default()
            }
        } else {
            ApproveReply::failed(NO_SUCH_PENDING)
        }
    }
}

fn random_id() -> Option<String> {
    let mut bytes = [0u8; ID_BYTES];
    rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).ok()?;
    Some(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Asks through the approval channel: registers the question, waits at most `wait` for
/// `spear approve` to answer it, and stops waiting when the call is cancelled. Approves only when
/// that very id was allowed. Called from the call's blocking thread, never the runtime's own.
pub struct ApprovalConfirmer {
    /// The server's registry.
    pub approvals: Arc<Approvals>,
    /// The session that asks.
    pub session: String,
    /// The tool called.
    pub tool: String,
    /// The longest wait.
    pub wait: Duration,
    /// The call's cancellation.
    pub cancelled: CancellationToken,
    /// The runtime that watches the cancellation.
    pub runtime: Handle,
}

impl Confirmer for ApprovalConfirmer {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        let deadline = Instant::now() + self.wait;
        let Some(id) = self.approvals.register(&self.session, &self.tool, request) else {
            return Confirmation::Unavailable;
        };
        tracing::warn!(
            "{}: waiting up to {} s for `spear approve {id}` (or `spear approve --refuse {id}`) in another terminal",
            self.tool,
            self.wait.as_secs()
        );
        let watch = {
            let approvals = Arc::clone(&self.approvals);
            let cancelled = self.cancelled.clone();
            let id = id.clone();
            self.runtime.spawn(async move {
                cancelled.cancelled().await;
                approvals.withdraw(&id);
            })
        };
        let answer = self.approvals.wait(&id, deadline);
        watch.abort();
        match answer {
            Some(Answer::Allowed) => Confirmation::Approved,
            Some(Answer::Refused) => Confirmation::Declined,
            Some(Answer::Withdrawn) | None => Confirmation::Unavailable,
        }
    }

    fn unanswered(&self, what: String) -> Refusal {
        Refusal::unapproved(what, self.wait.as_secs())
    }
}

/// Why the approval channel could not be opened (the server then serves without it, and what
/// needs confirmation from a client that cannot ask is cancelled).
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// The directory or socket could not be made.
    #[error("the approval socket {} cannot be made: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The directory exists but is not this user's private directory.
    #[error(
        "{} is not a directory private to this user (it must be a directory owned by uid {uid} with mode 0700), so no approval socket is made there",
        path.display()
    )]
    NotPrivate {
        /// The directory.
        path: PathBuf,
        /// This user's uid.
        uid: u32,
    },
}

/// Makes `dir` (and its parents) and checks that it is a real directory owned by this user with
/// mode 0700, tightening the mode if it is ours. Attack stopped: another user, or a link planted
/// before the first run, putting the sockets where others can connect.
pub fn private_dir(dir: &Path) -> Result<(), ChannelError> {
    let io = |source| ChannelError::Io {
        path: dir.to_path_buf(),
        source,
    };
    if let Some(parent) = dir.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(io)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    let uid = rustix::process::geteuid().as_raw();
    let meta = std::fs::symlink_metadata(dir).map_err(io)?;
    if !meta.is_dir() || meta.uid() != uid {
        return Err(ChannelError::NotPrivate {
            path: dir.to_path_buf(),
            uid,
        });
    }
    if meta.mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

/// Whether a peer with uid `peer` may use the channel of a server running as `own`. Pure.
/// Attack stopped: another user's process reaching the socket (a mode loosened by hand, a
/// directory shared by mistake) answering this user's questions.
pub fn peer_allowed(peer: u32, own: u32) -> bool {
    peer == own
}

/// The server side of the channel: a socket served on a thread of its own, removed when this is
/// dropped.
pub struct ApprovalChannel {
    path: PathBuf,
}

impl ApprovalChannel {
    /// Opens this server's socket in `dir` (made private first; sockets of servers that are gone
    /// are removed) and serves `approvals` on it until the process ends.
    pub fn open(dir: &Path, approvals: Arc<Approvals>) -> Result<Self, ChannelError> {
        private_dir(dir)?;
        sweep_stale(dir);
        let path = socket_path(dir, std::process::id());
        let io = |source| ChannelError::Io {
            path: path.clone(),
            source,
        };
        // A socket left by an earlier process with this pid.
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        let listener = UnixListener::bind(&path).map_err(io)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        std::thread::Builder::new()
            .name("spear-approve".into())
            .spawn(move || serve(&listener, &approvals))
            .map_err(io)?;
        Ok(ApprovalChannel { path })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ApprovalChannel {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::debug!("the approval socket {} stays: {e}", self.path.display());
        }
    }
}

/// Whether the process `pid` exists.
fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes the sockets in `dir` of servers that are gone.
fn sweep_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if let Some(pid) = name.to_str().and_then(socket_pid)
            && pid != std::process::id()
            && !alive(pid)
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn serve(listener: &UnixListener, approvals: &Approvals) {
    let own = rustix::process::geteuid().as_raw();
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                if let Err(e) = answer_one(&stream, approvals, own) {
                    tracing::debug!("an approval connection ended early: {e}");
                }
            }
            Err(e) => tracing::debug!("an approval connection failed: {e}"),
        }
    }
}

/// One connection: the peer's uid checked, one request read (bounded, with a timeout), one reply.
fn answer_one(stream: &UnixStream, approvals: &Approvals, own: u32) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let peer = rustix::net::sockopt::socket_peercred(stream)?;
    let reply = if peer_allowed(peer.uid.as_raw(), own) {
        match read_line(stream) {
            Ok(line) => match serde_json::from_str::<ApproveRequest>(&line) {
                Ok(request) => approvals.handle(&request),
                Err(e) => ApproveReply::failed(format!("not a request: {e}")),
            },
            Err(e) => ApproveReply::failed(e.to_string()),
        }
    } else {
        tracing::warn!(
            "a process of uid {} tried the approval socket of uid {own}: refused",
            peer.uid.as_raw()
        );
        ApproveReply::failed("this server answers only its own user")
    };
    write_line(stream, &reply)
}

/// One line of at most [`MAX_LINE`] bytes, without its newline.
fn read_line(stream: &UnixStream) -> std::io::Result<String> {
    let mut line = String::new();
    let limit = u64::try_from(MAX_LINE).unwrap_or(u64::MAX) + 1;
    BufReader::new(stream.take(limit)).read_line(&mut line)?;
    if line.len() > MAX_LINE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a line longer than {MAX_LINE} bytes"),
        ));
    }
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}

fn write_line<T: Serialize>(mut stream: &UnixStream, value: &T) -> std::io::Result<()> {
    let mut text = serde_json::to_string(value).map_err(std::io::Error::other)?;
    text.push('\n');
    stream.write_all(text.as_bytes())?;
    stream.flush()
}

/// The side of the channel `spear approve` uses.
pub mod client {
    use super::{
        ApproveReply, ApproveRequest, IO_TIMEOUT, Path, PathBuf, UnixStream, alive, read_line,
        socket_pid, write_line,
    };

    /// Why a server could not be asked.
    #[derive(Debug, thiserror::Error)]
    pub enum ClientError {
        /// Connecting, writing or reading failed.
        #[error("{}: {source}", path.display())]
        Io {
            /// The socket.
            path: PathBuf,
            /// The error.
            source: std::io::Error,
        },
        /// The reply was not one.
        #[error("{}: not a reply: {why}", path.display())]
        Reply {
            /// The socket.
            path: PathBuf,
            /// What was wrong.
            why: String,
        },
    }

    /// The sockets in `dir` of servers still running, by pid.
    pub fn servers(dir: &Path) -> Vec<(u32, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut found: Vec<(u32, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let pid = e.file_name().to_str().and_then(socket_pid)?;
                alive(pid).then(|| (pid, e.path()))
            })
            .collect();
        found.sort();
        found
    }

    /// Sends `request` to the server at `socket` and returns its reply.
    pub fn ask(socket: &Path, request: &ApproveRequest) -> Result<ApproveReply, ClientError> {
        let io = |source| ClientError::Io {
            path: socket.to_path_buf(),
            source,
        };
        let stream = UnixStream::connect(socket).map_err(io)?;
        stream.set_read_timeout(Some(IO_TIMEOUT)).map_err(io)?;
        stream.set_write_timeout(Some(IO_TIMEOUT)).map_err(io)?;
        // A server that refuses the peer answers before reading: its reply says why.
        let sent = write_line(&stream, request);
        let line = match (read_line(&stream), sent) {
            (Ok(line), _) if !line.is_empty() => line,
            (_, Err(e)) | (Err(e), Ok(())) => return Err(io(e)),
            (Ok(line), Ok(())) => line,
        };
        serde_json::from_str(&line).map_err(|e| ClientError::Reply {
            path: socket.to_path_buf(),
            why: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use spear_core::{Capability, CapabilitySet, CommandClass};

    fn request(command: &str) -> ConfirmRequest {
        ConfirmRequest {
            command: command.to_owned(),
            class: CommandClass::WorkspaceMutating,
            capabilities: CapabilitySet::of(&[Capability::WorkspaceWrite]),
            reason: "it writes".to_owned(),
            setting: None,
            escalation: None,
            bound: None,
            host_config: Vec::new(),
            after_run: false,
        }
    }

    #[test]
    fn socket_names_and_ids() {
        for (name, pid) in [
            ("123.sock", Some(123)),
            ("1.sock", Some(1)),
            (".sock", None),
            ("12a.sock", None),
            ("-1.sock", None),
            ("123.sock.tmp", None),
            ("123", None),
            ("99999999999999999999.sock", None),
        ] {
            assert_eq!(socket_pid(name), pid, "{name}");
        }
        let dir = Path::new("/s/spear/approve");
        assert_eq!(socket_pid("7.sock"), Some(7));
        assert_eq!(socket_path(dir, 7), Path::new("/s/spear/approve/7.sock"));
        assert_eq!(socket_dir(Path::new("/s/spear")), dir);
        let id = random_id().unwrap();
        assert!(is_valid_id(&id), "{id}");
        for bad in [
            "",
            "ABCDEF012345",
            "abcdef01234",
            "abcdef0123456",
            "abcdef01234g",
        ] {
            assert!(!is_valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn only_the_servers_own_user_is_allowed() {
        for (peer, own, allowed) in [
            (1000, 1000, true),
            (0, 0, true),
            (0, 1000, false),
            (1001, 1000, false),
        ] {
            assert_eq!(peer_allowed(peer, own), allowed, "{peer} {own}");
        }
        // SO_PEERCRED on a real pair reads this process's own uid: allowed.
        let (a, _b) = UnixStream::pair().unwrap();
        let cred = rustix::net::sockopt::socket_peercred(&a).unwrap();
        assert!(peer_allowed(
            cred.uid.as_raw(),
            rustix::process::geteuid().as_raw()
        ));
    }

    #[test]
    fn requests_parse_strictly() {
        for (line, want) in [
            (r#"{"op":"list"}"#, Some(ApproveRequest::List)),
            (
                r#"{"op":"allow","id":"ab"}"#,
                Some(ApproveRequest::Allow { id: "ab".into() }),
            ),
            (
                r#"{"op":"refuse","id":"ab"}"#,
                Some(ApproveRequest::Refuse { id: "ab".into() }),
            ),
            (r#"{"op":"allow"}"#, None),
            (r#"{"op":"allow","id":"ab","all":true}"#, None),
            (r#"{"op":"approve_all"}"#, None),
            ("list", None),
        ] {
            assert_eq!(
                serde_json::from_str::<ApproveRequest>(line).ok(),
                want,
                "{line}"
            );
        }
    }

    /// A node's sessions share one registry: one session ending withdraws its own questions,
    /// never another's.
    #[test]
    fn a_session_that_ends_withdraws_only_its_own() {
        let approvals = Approvals::new();
        let mine = approvals.register("a", "terminal", &request("x")).unwrap();
        let theirs = approvals.register("b", "terminal", &request("y")).unwrap();
        approvals.withdraw_session("a");
        let listed: Vec<String> = approvals.list().into_iter().map(|i| i.id).collect();
        assert_eq!(listed, vec![theirs.clone()]);
        assert!(!approvals.answer(&mine, Answer::Allowed));
        assert!(approvals.answer(&theirs, Answer::Allowed));
    }

    #[test]
    fn an_answer_goes_once_to_the_id_that_asked() {
        let approvals = Approvals::new();
        let asked = request("echo \u{202e}hi > a");
        let id = approvals.register("s", "terminal", &asked).unwrap();
        let other = approvals
            .register("s", "write_file", &request("b"))
            .unwrap();
        let listed = approvals.list();
        assert_eq!(listed.len(), 2);
        let item = listed.iter().find(|i| i.id == id).unwrap();
        assert_eq!(item.tool, "terminal");
        assert_eq!(item.session, "s");
        assert!(!item.command.contains('\u{202e}'), "{item:?}");
        assert!(item.command.contains("\\u{202e}"), "{item:?}");
        assert!(item.question.contains("\\u{202e}"), "{item:?}");
        assert_eq!(item.digest, hex(&crate::asking::request_digest(&asked)));
        // An unknown id answers nothing.
        assert!(
            !approvals
                .handle(&ApproveRequest::Allow {
                    id: "000000000000".into()
                })
                .ok
        );
        assert!(
            approvals
                .handle(&ApproveRequest::Allow { id: id.clone() })
                .ok
        );
        // Answered once: a second allow, or a refuse, finds nothing pending.
        let again = approvals.handle(&ApproveRequest::Allow { id: id.clone() });
        assert_eq!(again.error.as_deref(), Some(NO_SUCH_PENDING));
        assert!(
            !approvals
                .handle(&ApproveRequest::Refuse { id: id.clone() })
                .ok
        );
        assert_eq!(
            approvals.list().len(),
            1,
            "the answered one is no longer listed"
        );
        let soon = Instant::now() + Duration::from_secs(5);
        assert_eq!(approvals.wait(&id, soon), Some(Answer::Allowed));
        // The other call's answer is its own.
        assert!(
            approvals
                .handle(&ApproveRequest::Refuse { id: other.clone() })
                .ok
        );
        assert_eq!(approvals.wait(&other, soon), Some(Answer::Refused));
        // Once the waiter has its answer, the id is gone.
        assert!(!approvals.handle(&ApproveRequest::Allow { id }).ok);
        assert!(approvals.list().is_empty());
    }

    #[test]
    fn an_unanswered_question_times_out_and_a_late_answer_finds_nothing() {
        let approvals = Approvals::new();
        let id = approvals.register("s", "terminal", &request("a")).unwrap();
        let started = Instant::now();
        assert_eq!(
            approvals.wait(&id, started + Duration::from_millis(50)),
            None
        );
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(!approvals.handle(&ApproveRequest::Allow { id }).ok);
    }

    #[test]
    fn closing_withdraws_and_refuses_new_questions() {
        let approvals = Approvals::new();
        let id = approvals.register("s", "terminal", &request("a")).unwrap();
        let waiter = {
            let approvals = Arc::clone(&approvals);
            std::thread::spawn(move || {
                approvals.wait(&id, Instant::now() + Duration::from_secs(30))
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        approvals.close();
        assert_eq!(waiter.join().unwrap(), Some(Answer::Withdrawn));
        assert!(approvals.register("s", "terminal", &request("b")).is_none());
    }

    #[test]
    fn the_confirmer_approves_only_its_own_allowed_id() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let approvals = Approvals::new();
        let confirmer = |wait: u64, cancelled: CancellationToken| ApprovalConfirmer {
            approvals: Arc::clone(&approvals),
            session: "s".into(),
            tool: "terminal".into(),
            wait: Duration::from_secs(wait),
            cancelled,
            runtime: runtime.handle().clone(),
        };
        // An approver answering whatever is pending, as `spear approve` would.
        let answer_next = |allow: bool| {
            let approvals = Arc::clone(&approvals);
            std::thread::spawn(move || {
                loop {
                    if let Some(item) = approvals.list().first() {
                        let id = item.id.clone();
                        let r = if allow {
                            ApproveRequest::Allow { id }
                        } else {
                            ApproveRequest::Refuse { id }
                        };
                        assert!(approvals.handle(&r).ok);
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        let t = answer_next(true);
        let c = confirmer(30, CancellationToken::new());
        assert_eq!(c.confirm(&request("a")), Confirmation::Approved);
        t.join().unwrap();
        let t = answer_next(false);
        assert_eq!(c.confirm(&request("a")), Confirmation::Declined);
        t.join().unwrap();
        // Cancelled while waiting: unavailable at once, and withdrawn.
        let token = CancellationToken::new();
        let c = confirmer(30, token.clone());
        let cancel = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            token.cancel();
        });
        let started = Instant::now();
        assert_eq!(c.confirm(&request("a")), Confirmation::Unavailable);
        assert!(started.elapsed() < Duration::from_secs(10));
        cancel.join().unwrap();
        assert!(approvals.list().is_empty());
        // The refusal names `spear approve` and the wait.
        let m = c.unanswered("echo a".into()).message();
        assert!(m.contains("spear approve") && m.contains("30 s"), "{m}");
    }

    #[test]
    fn the_socket_is_private_and_answers_over_one_line() {
        let base = tempfile_dir();
        let dir = socket_dir(&base);
        // A stale socket of a process that is gone is swept.
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let stale = socket_path(&dir, 999_999_999);
        std::fs::write(&stale, "").unwrap();
        let approvals = Approvals::new();
        let channel = ApprovalChannel::open(&dir, Arc::clone(&approvals)).unwrap();
        assert!(!stale.exists());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700, "tightened");
        assert_eq!(mode(channel.path()), 0o600);
        assert_eq!(
            client::servers(&dir),
            [(std::process::id(), channel.path().to_path_buf())]
        );
        let id = approvals.register("s", "terminal", &request("a")).unwrap();
        let listed = client::ask(channel.path(), &ApproveRequest::List).unwrap();
        assert!(listed.ok);
        assert_eq!(listed.pending[0].id, id);
        let r = client::ask(channel.path(), &ApproveRequest::Refuse { id: id.clone() }).unwrap();
        assert!(r.ok, "{r:?}");
        assert_eq!(
            approvals.wait(&id, Instant::now() + Duration::from_secs(1)),
            Some(Answer::Refused)
        );
        // A line that is not a request, and one too long: an error reply, nothing answered.
        for line in ["{\"op\":\"nope\"}\n".to_owned(), "x".repeat(MAX_LINE + 10)] {
            let mut s = UnixStream::connect(channel.path()).unwrap();
            let _ = s.write_all(line.as_bytes());
            let reply: ApproveReply = serde_json::from_str(&read_line(&s).unwrap()).unwrap();
            assert!(!reply.ok && reply.error.is_some(), "{reply:?}");
        }
        let path = channel.path().to_path_buf();
        drop(channel);
        assert!(!path.exists(), "removed when the server goes");
        assert!(client::servers(&dir).is_empty());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_directory_of_another_kind_is_refused() {
        let base = tempfile_dir();
        let target = base.join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        let link = base.join("approve");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            ApprovalChannel::open(&link, Approvals::new()),
            Err(ChannelError::NotPrivate { .. })
        ));
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            0,
            "nothing made there"
        );
        // Positive control: a plain directory beside it works.
        assert!(ApprovalChannel::open(&base.join("plain"), Approvals::new()).is_ok());
        std::fs::remove_dir_all(&base).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "spear-approvals-{}-{}",
            std::process::id(),
            random_id().unwrap()
        ));
        std::fs::create_dir(&dir).unwrap();
        dir
    }
}
