//! What the tests of `spear mcp --listen` share (`mcp_http`, `mcp_isolation`): operator tokens
//! made with `spear token add`, a listening server over a test's [`Dirs`] and raw HTTP to it, and
//! the Python MCP SDK's streamable HTTP client (`tests/mcp_http/client.py`) run against it.

#![allow(dead_code)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Dirs, SpearCommands as _};

/// The streamable HTTP client, written beside each test's workspace before it runs.
pub const CLIENT: &str = include_str!("../mcp_http/client.py");

/// `spear token add NAME` over `d`'s state: the token's value (its line of stdout).
pub fn add_token(d: &Dirs, name: &str) -> String {
    add_token_with(d, name, &[])
}

/// `spear token add NAME FLAGS...`: the token's value.
pub fn add_token_with(d: &Dirs, name: &str, flags: &[&str]) -> String {
    let mut args = vec!["token", "add", name];
    args.extend_from_slice(flags);
    let out = d.spear(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let token = text
        .lines()
        .find(|l| l.starts_with("spear_"))
        .unwrap_or_else(|| panic!("no token printed: {text}"))
        .trim()
        .to_owned();
    assert!(token.len() > 40, "{token}");
    token
}

/// A listening server, killed (SIGTERM, then waited for) when dropped.
pub struct Listening {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Listening {
    pub fn start(d: &Dirs, flags: &[&str]) -> Listening {
        Listening::start_at(d, "127.0.0.1:0", flags).0
    }

    /// A server listening on `listen` with `flags`: it, and the scheme of its URL.
    pub fn start_at(d: &Dirs, listen: &str, flags: &[&str]) -> (Listening, String) {
        let mut args = vec!["mcp", "--listen", listen];
        args.extend_from_slice(flags);
        Listening::spawn(d.spear(&args))
    }

    /// `spear mcp --listen ...` as `command` (built by [`SpearCommands::spear`], with whatever
    /// environment the test adds) started and waited for until it listens: it, and the scheme of
    /// its URL.
    pub fn spawn(command: Command) -> (Listening, String) {
        Listening::spawn_with_stdin(command, None)
    }

    /// As [`Listening::spawn`], with `input` written to its standard input (then closed).
    pub fn spawn_with_stdin(mut command: Command, input: Option<&str>) -> (Listening, String) {
        let mut child = command
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(input) = input {
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(input.as_bytes()).unwrap();
        }
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let (scheme, addr) = loop {
            let Some(Ok(line)) = lines.next() else {
                panic!("the server ended before it listened: {seen}");
            };
            seen.push_str(&line);
            seen.push('\n');
            if let Some(rest) = line.split("listening on ").nth(1) {
                let (scheme, rest) = rest.split_once("://").unwrap();
                let addr = rest.split('/').next().unwrap();
                break (scheme.to_owned(), addr.parse().unwrap());
            }
        };
        // Keep draining its stderr so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        (Listening { child, addr }, scheme)
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// One raw HTTP/1.1 request: the status code and the whole response.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut lines = vec![
            format!("{method} {path} HTTP/1.1"),
            "Connection: close".to_owned(),
        ];
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            lines.push(format!("Host: {}", self.addr));
        }
        lines.extend(headers.iter().map(|(k, v)| format!("{k}: {v}")));
        lines.push(format!("Content-Length: {}", body.len()));
        let request = format!("{}\r\n\r\n{body}", lines.join("\r\n"));
        // A server that refuses a body early may close before it is all written.
        let _ = stream.write_all(request.as_bytes());
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, response)
    }

    /// `initialize` with `token` (none: no Authorization header).
    pub fn initialize(&self, token: Option<&str>) -> (u16, String) {
        self.initialize_at("/mcp", token)
    }

    /// `initialize` on `path` with `token`.
    pub fn initialize_at(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(a) = &auth {
            headers.push(("Authorization", a.as_str()));
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string();
        self.raw("POST", path, &headers, &body)
    }

    /// A request on `path` with `token` and no body.
    pub fn with_token(
        &self,
        method: &str,
        path: &str,
        token: &str,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let auth = format!("Bearer {token}");
        let mut all = vec![("Authorization", auth.as_str())];
        all.extend_from_slice(headers);
        self.raw(method, path, &all, "")
    }

    /// A JSON-RPC message posted to the MCP session `session` on `/mcp` with `token`: the
    /// status and the whole response.
    pub fn post(&self, token: &str, session: &str, message: &Value) -> (u16, String) {
        let auth = format!("Bearer {token}");
        self.raw(
            "POST",
            "/mcp",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", session),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            &message.to_string(),
        )
    }

    /// `POST /mcp/sessions` with `token` and `body`: the status and the answer's JSON (or the
    /// whole response, as a string, when it is not JSON).
    pub fn make_session(&self, token: &str, body: &str) -> (u16, Value) {
        let auth = format!("Bearer {token}");
        let (status, response) = self.raw(
            "POST",
            "/mcp/sessions",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body,
        );
        let json = response
            .split("\r\n\r\n")
            .nth(1)
            .and_then(|b| serde_json::from_str(b).ok())
            .unwrap_or(Value::String(response));
        (status, json)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_raw(self.child.id().cast_signed()).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = self.child.wait();
    }
}

/// The `Mcp-Session-Id` of a response.
pub fn session_id(response: &str) -> String {
    response
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id: {response}"))
}

/// Runs the Python client with `config`; its JSON.
pub fn client(d: &Dirs, config: &Value) -> Value {
    let script = d.base.join("mcp_http_client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let mut child = Command::new(crate::python_client::python())
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(config.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A `terminal` call of the client's list.
pub fn terminal(command: &str) -> Value {
    json!({"tool": "terminal", "args": {"command": command}})
}
