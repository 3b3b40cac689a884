//! `spear mcp --listen`: the same server over MCP's streamable HTTP transport on a loopback
//! address, behind the operator's tokens (`spear token add`).
//!
//! The door is checked with raw HTTP (no token, a wrong one, a revoked one: 401 with the
//! challenge naming the metadata document; a foreign `Host`: refused; a store the server cannot
//! trust: 503; `/healthz` without credentials), and the sessions with the
//! Python MCP SDK's streamable HTTP client (`tests/mcp_http/client.py`, the pinned `mcp` of
//! scripts/setup-test-clients.sh): a call runs and writes in the workspace, and two MCP sessions
//! at once are two spear sessions.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod python_client;
mod support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Dirs, SpearCommands as _};

const CLIENT: &str = include_str!("mcp_http/client.py");

/// `spear token add NAME` over `d`'s state: the token's value (its line of stdout).
fn add_token(d: &Dirs, name: &str) -> String {
    let out = d.spear(&["token", "add", name]).output().unwrap();
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
struct Listening {
    child: Child,
    addr: SocketAddr,
}

impl Listening {
    fn start(d: &Dirs, flags: &[&str]) -> Listening {
        let mut args = vec!["mcp", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        let mut child = d
            .spear(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let addr = loop {
            let Some(Ok(line)) = lines.next() else {
                panic!("the server ended before it listened: {seen}");
            };
            seen.push_str(&line);
            seen.push('\n');
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest.split('/').next().unwrap();
                break addr.parse().unwrap();
            }
        };
        // Keep draining its stderr so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Listening { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// One raw HTTP/1.1 request: the status code and the whole response.
    fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
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
        stream.write_all(request.as_bytes()).unwrap();
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
    fn initialize(&self, token: Option<&str>) -> (u16, String) {
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
        self.raw("POST", "/mcp", &headers, &body)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_raw(self.child.id().cast_signed()).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = self.child.wait();
    }
}

/// Runs the Python client with `config`; its JSON.
fn client(d: &Dirs, config: &Value) -> Value {
    let script = d.base.join("mcp_http_client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let mut child = Command::new(python_client::python())
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

fn terminal(command: &str) -> Value {
    json!({"tool": "terminal", "args": {"command": command}})
}

/// Without a token, with a wrong one, and after its revocation: 401, with the challenge naming
/// the metadata document, which answers without credentials; nothing runs. With the token: the
/// session starts (the positive control).
#[test]
fn only_the_operators_tokens_open_the_door() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let token = add_token(&d, "ci");
    let server = Listening::start(&d, &["--auto"]);

    let (status, response) = server.initialize(None);
    assert_eq!(status, 401, "{response}");
    let challenge = response
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("www-authenticate:"))
        .unwrap_or_else(|| panic!("no challenge: {response}"));
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"http://{}/.well-known/oauth-protected-resource\"",
            server.addr
        )),
        "{challenge}"
    );
    assert!(response.contains("no bearer token"), "{response}");
    let (status, response) = server.initialize(Some("spear_not-a-token-of-this-server"));
    assert_eq!(status, 401, "{response}");

    let (status, metadata) = server.raw("GET", "/.well-known/oauth-protected-resource", &[], "");
    assert_eq!(status, 200, "{metadata}");
    assert!(
        metadata.contains(&format!("\"resource\":\"{}\"", server.url())),
        "{metadata}"
    );

    // Positive control: the operator's token is admitted.
    let (status, response) = server.initialize(Some(&token));
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"serverInfo\""), "{response}");

    // A name that is not loopback's in Host (DNS rebinding): refused, token or not.
    let auth = format!("Bearer {token}");
    let (status, response) = server.raw(
        "POST",
        "/mcp",
        &[
            ("Host", "rebind.example:80"),
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        "{}",
    );
    assert!((400..500).contains(&status), "{response}");

    // The health path answers without credentials and says nothing else.
    let (status, health) = server.raw("GET", "/healthz", &[], "");
    assert_eq!(status, 200, "{health}");
    assert!(health.ends_with("{\"status\":\"ok\"}"), "{health}");

    // A store the server may not trust (readable by others): no token is admitted, and the
    // answer is the operator's 503, not the client's 401.
    let store = d.state.join("spear/tokens.json");
    let mode = |m: u32| {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(m)).unwrap();
    };
    mode(0o644);
    let (status, response) = server.initialize(Some(&token));
    assert_eq!(status, 503, "{response}");
    assert!(
        response.contains("cannot read its token store"),
        "{response}"
    );
    mode(0o600);
    let (status, response) = server.initialize(Some(&token));
    assert_eq!(status, 200, "{response}");

    // Revoked: refused at the next request.
    let out = d.spear(&["token", "revoke", "ci"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, response) = server.initialize(Some(&token));
    assert_eq!(status, 401, "{response}");
}

/// The SDK's client opens a session with the token and runs a command that writes in the
/// workspace; two sessions at once each get their own spear session, and each sees the other's
/// committed file only through the workspace.
#[test]
fn a_client_with_a_token_runs_calls_in_a_session_of_its_own() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let token = add_token(&d, "agent");
    let server = Listening::start(&d, &["--auto"]);
    let config = |name: &str| {
        json!({
            "url": server.url(),
            "token": token,
            "generation": "legacy",
            "calls": [terminal(&format!("echo {name} > {name}.txt && cat README.md"))],
        })
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| client(&d, &config("a")));
        let b = s.spawn(|| client(&d, &config("b")));
        (a.join().unwrap(), b.join().unwrap())
    });
    for (name, out) in [("a", &a), ("b", &b)] {
        assert_eq!(out["protocol"], "2025-11-25", "{out}");
        let result = &out["results"][0];
        assert_eq!(result["status"], "ok", "{out}");
        assert_eq!(result["stdout"], "readme\n", "{out}");
        assert_eq!(
            std::fs::read_to_string(d.ws.join(format!("{name}.txt"))).unwrap(),
            format!("{name}\n")
        );
    }
    // A wrong token: the SDK's client gets no session, and nothing was written.
    let mut bad = config("c");
    bad["token"] = json!("spear_wrong");
    let script = d.base.join("mcp_http_client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let out = Command::new(python_client::python())
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin
                .take()
                .unwrap()
                .write_all(bad.to_string().as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(!out.status.success(), "a wrong token was served");
    assert!(!d.ws.join("c.txt").exists());
}
