//! A client that speaks JSON-RPC to an MCP server line by line over its stdio: for the lines no
//! SDK client sends (malformed, oversized, bursts) and for calls sent before their answers are
//! read.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::workspace::Dirs;

/// How long the handshake's answer may take.
const HANDSHAKE: Duration = Duration::from_secs(30);

/// A server after the handshake (`initialize` at 2025-11-25, then `notifications/initialized`),
/// spoken to line by line; every line it writes on stdout must be JSON. Dropped: its stdin is
/// closed first, so that the server ends its sandboxes and their cgroups itself, and it is killed
/// only if it has not gone within 10 s.
pub struct RawClient {
    server: Child,
    stdin: Option<ChildStdin>,
    answers: mpsc::Receiver<Value>,
    /// The server's directories (workspace, HOME, state); its log is [`Dirs::log`].
    pub dirs: Dirs,
}

impl RawClient {
    /// Starts `server` with its stdin and stdout piped to this client and its stderr kept in
    /// `dirs`' [`Dirs::log`], and makes the handshake; fails the test unless the server answers
    /// `initialize` (id 0) with a protocol version within 30 s.
    pub fn start(dirs: Dirs, mut server: Command) -> RawClient {
        let log = std::fs::File::create(dirs.log_path()).unwrap();
        let mut server = server
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdin = server.stdin.take();
        let stdout = server.stdout.take().unwrap();
        let (tx, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("stdout carried a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let mut raw = RawClient {
            server,
            stdin,
            answers,
            dirs,
        };
        raw.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        );
        let init = raw.next(HANDSHAKE).unwrap_or_else(|| {
            panic!(
                "no answer to initialize within {HANDSHAKE:?}\n{}",
                raw.dirs.log()
            )
        });
        assert_eq!(init["id"], 0, "{init}");
        assert!(init["result"]["protocolVersion"].is_string(), "{init}");
        raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    /// Writes `bytes` to the server's stdin as they are (no newline added).
    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Writes `line` and its newline.
    pub fn send_line(&mut self, line: &[u8]) {
        let mut bytes = line.to_vec();
        bytes.push(b'\n');
        self.write(&bytes);
    }

    /// Writes `message` as one line of JSON.
    pub fn send(&mut self, message: &Value) {
        self.send_line(&serde_json::to_vec(message).unwrap());
    }

    /// Sends a `tools/call` of `tool` with `arguments`, as request `id`; its answer is read with
    /// [`RawClient::answer`].
    pub fn call(&mut self, id: u64, tool: &str, arguments: &Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
    }

    /// The next message on stdout, within `limit` (`None`: none came).
    pub fn next(&self, limit: Duration) -> Option<Value> {
        self.answers.recv_timeout(limit).ok()
    }

    /// The answer to `id`, within `limit` (other messages, progress, are passed over); fails the
    /// test, showing the server's log, when none comes.
    pub fn answer(&self, id: u64, limit: Duration) -> Value {
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let message = self.next(left).unwrap_or_else(|| {
                panic!("no answer to {id} within {limit:?}\n{}", self.dirs.log())
            });
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.server.id()
    }

    /// Closes the server's stdin (the end of the session, for the server).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Waits for the server to exit, at most `limit`; returns how long it took (`None`: it has
    /// not exited).
    pub fn exits_within(&mut self, limit: Duration) -> Option<Duration> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.server.try_wait().unwrap().is_some() {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        self.close_stdin();
        if self.exits_within(Duration::from_secs(10)).is_none() {
            let _ = self.server.kill();
        }
        let _ = self.server.wait();
    }
}
