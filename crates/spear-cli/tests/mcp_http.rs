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

mod listening;
mod python_client;
mod support;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use listening::{CLIENT, Listening, add_token, add_token_with, client, session_id, terminal};
use serde_json::{Value, json};
use support::{Dirs, SpearCommands as _};

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

/// A token narrowed to a directory of the server's workspace and to SAFE gets exactly that: its
/// session sees only the directory, and a write is refused and not made; a workspace outside
/// its grant is refused at the door (403). Every audit record names the token, never its value.
/// The positive control: a token without limits, on the same server, writes.
#[test]
fn a_token_is_kept_to_its_workspace_and_its_mode() {
    let d = Dirs::with(&[("README.md", "readme\n"), ("sub/inner.txt", "inner\n")]);
    let sub = d.ws.join("sub");
    let narrow = add_token_with(
        &d,
        "narrow",
        &["--workspace", sub.to_str().unwrap(), "--mode", "safe"],
    );
    let wide = add_token(&d, "wide");
    let server = Listening::start(&d, &["--auto"]);

    let out = client(
        &d,
        &json!({
            "url": server.url(),
            "token": narrow,
            "generation": "legacy",
            "calls": [terminal("ls"), terminal("echo x > made.txt")],
        }),
    );
    let listed = &out["results"][0];
    assert_eq!(listed["status"], "ok", "{out}");
    assert_eq!(listed["stdout"], "inner.txt\n", "{out}");
    assert_ne!(out["results"][1]["status"], "ok", "{out}");
    assert!(!sub.join("made.txt").exists());
    assert!(!d.ws.join("made.txt").exists());

    // Asking for more than the grant: 403 before anything is made; asking for what it grants:
    // admitted.
    let outside = format!("/mcp?workspace={}", d.ws.display());
    let (status, response) = server.initialize_at(&outside, Some(&narrow));
    assert_eq!(status, 403, "{response}");
    assert!(response.contains("does not grant"), "{response}");
    let inside = format!("/mcp?workspace={}", sub.display());
    let (status, response) = server.initialize_at(&inside, Some(&narrow));
    assert_eq!(status, 200, "{response}");

    // Positive control: the unlimited token writes, in the whole workspace.
    let out = client(
        &d,
        &json!({
            "url": server.url(),
            "token": wide,
            "generation": "legacy",
            "calls": [terminal("echo x > made.txt")],
        }),
    );
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
    assert!(d.ws.join("made.txt").exists());

    let records = support::audit_records(&d);
    let principals: std::collections::BTreeSet<&str> = records
        .iter()
        .filter_map(|r| r["principal"].as_str())
        .collect();
    assert!(principals.contains("token:narrow"), "{principals:?}");
    assert!(principals.contains("token:wide"), "{principals:?}");
    let log = std::fs::read_to_string(d.state.join("spear/audit.jsonl")).unwrap();
    for value in [&narrow, &wide] {
        assert!(
            !log.contains(value.as_str()),
            "a token's value is in the audit log"
        );
    }
}

/// A token's `--sessions` and the node's `--max-sessions` each answer 429 once reached, saying
/// which; a session that ends gives its place back.
#[test]
fn sessions_are_counted_per_token_and_per_node() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let one = add_token_with(&d, "one", &["--sessions", "1"]);
    let two = add_token(&d, "two");
    let three = add_token(&d, "three");
    let server = Listening::start(&d, &["--auto", "--max-sessions", "2"]);

    let (status, first) = server.initialize(Some(&one));
    assert_eq!(status, 200, "{first}");
    let (status, response) = server.initialize(Some(&one));
    assert_eq!(status, 429, "{response}");
    assert!(
        response.contains("token:one may hold 1 session"),
        "{response}"
    );
    assert!(
        response.to_ascii_lowercase().contains("retry-after"),
        "{response}"
    );

    let (status, response) = server.initialize(Some(&two));
    assert_eq!(status, 200, "{response}");
    let (status, response) = server.initialize(Some(&three));
    assert_eq!(status, 429, "{response}");
    assert!(response.contains("--max-sessions"), "{response}");

    // The first session ends: its place comes back, for its token and the node.
    let id = session_id(&first);
    let (status, response) =
        server.with_token("DELETE", "/mcp", &one, &[("Mcp-Session-Id", id.as_str())]);
    // 200, not rmcp's 202, which the SDKs log as a failed termination.
    assert_eq!(status, 200, "{response}");
    let again = spear_testkit::wait::wait_for_value(Duration::from_secs(10), || {
        let (status, _) = server.initialize(Some(&one));
        (status == 200).then_some(())
    });
    assert!(
        again.is_some(),
        "the place of an ended session was not given back"
    );
}

/// The stateless generation keeps a spear session from one request to the next in a session
/// the client names in its URL: a background job started by one request is read by the next.
/// The control: on `/mcp` each stateless request is a session of its own, where that job is not
/// found. Another token cannot reach the session (404, as for an unknown one); `DELETE` ends it.
#[test]
fn a_session_named_in_its_url_carries_jobs_between_stateless_requests() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let a = add_token(&d, "a");
    let b = add_token(&d, "b");
    let server = Listening::start(&d, &["--auto"]);
    let calls = json!([
        {"tool": "terminal", "args": {"command": "echo started; sleep 0.3; echo done", "background": true}},
        {"tool": "terminal_output", "args": {"job_id": "job-1"}},
    ]);

    let (status, made) = server.make_session(&a, "");
    assert_eq!(status, 201, "{made}");
    let id = made["session"].as_str().unwrap().to_owned();
    let url = made["url"].as_str().unwrap().to_owned();
    assert_eq!(url, format!("http://{}/mcp/sessions/{id}", server.addr));
    let out = client(
        &d,
        &json!({"url": url, "token": a, "generation": "modern", "calls": calls}),
    );
    assert_eq!(out["protocol"], "2026-07-28", "{out}");
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
    assert_eq!(out["results"][1]["status"], "ok", "{out}");

    // The control: stateless on /mcp, each request a session of its own.
    let out = client(
        &d,
        &json!({"url": server.url(), "token": a, "generation": "modern", "calls": calls}),
    );
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
    assert_ne!(out["results"][1]["status"], "ok", "{out}");

    // Another token: the session does not exist for it.
    let path = format!("/mcp/sessions/{id}");
    let (status, response) = server.initialize_at(&path, Some(&b));
    assert_eq!(status, 404, "{response}");
    let (status, response) = server.with_token("DELETE", &path, &b, &[]);
    assert_eq!(status, 404, "{response}");
    let (status, response) = server.with_token("GET", &format!("{path}/patch"), &b, &[]);
    assert_eq!(status, 404, "{response}");
    // ... and it still answers its own token.
    let (status, response) = server.initialize_at(&path, Some(&a));
    assert_eq!(status, 200, "{response}");
    // A session on the server's workspace has no patch.
    let (status, response) = server.with_token("GET", &format!("{path}/patch"), &a, &[]);
    assert_eq!(status, 409, "{response}");

    // An output too long for the preview is stored, in the session's own directory...
    let out = client(
        &d,
        &json!({"url": url, "token": a, "generation": "modern",
                "calls": [terminal("seq 1 200000")]}),
    );
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
    let stored = d.state.join("spear/results").join(&id);
    assert!(stored.is_dir(), "no stored output: {out}");

    // ... and when the session ends, so does what it made.
    let (status, response) = server.with_token("DELETE", &path, &a, &[]);
    assert_eq!(status, 200, "{response}");
    let (status, response) = server.initialize_at(&path, Some(&a));
    assert_eq!(status, 404, "{response}");
    assert!(
        spear_testkit::wait::wait_for(Duration::from_secs(10), || !stored.exists()),
        "the ended session's stored outputs are left"
    );
}

/// A token that is revoked has its sessions ended within seconds: the job its session runs is
/// killed, and no cgroup of its commands is left. The positive control: the job runs before.
#[test]
fn revoking_a_token_ends_its_sessions_and_their_jobs() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let a = add_token(&d, "a");
    let server = Listening::start(&d, &["--auto"]);
    let marker = format!("300.{}1", std::process::id());
    let (status, made) = server.make_session(&a, "");
    assert_eq!(status, 201, "{made}");
    let out = client(
        &d,
        &json!({"url": made["url"], "token": a, "generation": "modern", "calls": [
            {"tool": "terminal", "args": {"command": format!("sleep {marker}"), "background": true}},
        ]}),
    );
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
    assert!(
        spear_testkit::wait::wait_for(Duration::from_secs(10), || {
            !spear_testkit::process::processes_with(&marker).is_empty()
        }),
        "the job never ran"
    );

    let out = d.spear(&["token", "revoke", "a"]).output().unwrap();
    assert!(out.status.success());
    spear_testkit::wait::wait_for(Duration::from_secs(10), || {
        spear_testkit::process::processes_with(&marker).is_empty()
    });
    let left = spear_testkit::process::processes_with(&marker);
    assert!(
        left.is_empty(),
        "the revoked token's job still runs: {left:?}"
    );
    // The job's cgroup goes once the job's end is reported, just after its process.
    let prefix = format!("spear-{}-", server.child.id());
    spear_testkit::wait::wait_for(Duration::from_secs(10), || {
        spear_testkit::cgroup::named("/sys/fs/cgroup", &prefix).is_empty()
    });
    let cgroups = spear_testkit::cgroup::named("/sys/fs/cgroup", &prefix);
    assert!(cgroups.is_empty(), "cgroups left: {cgroups:?}");
}

/// A session named in its URL with no request for `--session-idle` ends, and its job with it;
/// SIGTERM ends every session, and the server leaves no process or cgroup behind.
#[test]
fn idle_sessions_end_and_sigterm_ends_them_all() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let a = add_token(&d, "a");
    // Long enough for the Python client to start and reach the session it was given.
    let server = Listening::start(&d, &["--auto", "--session-idle", "6"]);
    let pid = server.child.id();
    let start_job = |marker: &str| {
        let (status, made) = server.make_session(&a, "");
        assert_eq!(status, 201, "{made}");
        let out = client(
            &d,
            &json!({"url": made["url"], "token": a, "generation": "modern", "calls": [
                {"tool": "terminal", "args": {"command": format!("sleep {marker}"), "background": true}},
            ]}),
        );
        assert_eq!(out["results"][0]["status"], "ok", "{out}");
        assert!(
            spear_testkit::wait::wait_for(Duration::from_secs(10), || {
                !spear_testkit::process::processes_with(marker).is_empty()
            }),
            "the job never ran"
        );
        made["session"].as_str().unwrap().to_owned()
    };
    let idle = format!("300.{}2", std::process::id());
    let id = start_job(&idle);
    spear_testkit::wait::wait_for(Duration::from_secs(20), || {
        spear_testkit::process::processes_with(&idle).is_empty()
    });
    assert!(
        spear_testkit::process::processes_with(&idle).is_empty(),
        "an idle session's job runs on"
    );
    let (status, response) = server.initialize_at(&format!("/mcp/sessions/{id}"), Some(&a));
    assert_eq!(status, 404, "{response}");

    // SIGTERM with a session and its job running.
    let busy = format!("300.{}3", std::process::id());
    start_job(&busy);
    drop(server);
    let left = spear_testkit::process::processes_with(&busy);
    assert!(left.is_empty(), "a job outlived the server: {left:?}");
    let cgroups = spear_testkit::cgroup::named("/sys/fs/cgroup", &format!("spear-{pid}-"));
    assert!(cgroups.is_empty(), "cgroups left: {cgroups:?}");
}

/// Bad input gets a clear error and changes nothing: malformed JSON, a wrong Content-Type or
/// Accept, an unknown session, a body over the cap, a client too slow to send its headers.
#[test]
fn bad_requests_are_refused_and_change_nothing() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let token = add_token(&d, "t");
    let server = Listening::start(&d, &["--auto"]);
    let auth = format!("Bearer {token}");
    let json_accept = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let write = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "terminal", "arguments": {"command": "echo x > made.txt"}}})
    .to_string();

    let (status, response) = server.raw("POST", "/mcp", &json_accept, "{\"jsonrpc\": ");
    assert!((400..500).contains(&status), "malformed JSON: {response}");
    let mut wrong_type = json_accept;
    wrong_type[1] = ("Content-Type", "text/plain");
    let (status, response) = server.raw("POST", "/mcp", &wrong_type, &write);
    assert!(
        (400..500).contains(&status),
        "wrong Content-Type: {response}"
    );
    let mut wrong_accept = json_accept;
    wrong_accept[2] = ("Accept", "text/html");
    let (status, response) = server.raw("POST", "/mcp", &wrong_accept, &write);
    assert!((400..500).contains(&status), "wrong Accept: {response}");
    let mut unknown = json_accept.to_vec();
    unknown.push(("Mcp-Session-Id", "no-such-session"));
    let (status, response) = server.raw("POST", "/mcp", &unknown, &write);
    assert_eq!(status, 404, "unknown session: {response}");
    // A body over the cap, announced by its length: refused at once, before it is sent.
    let mut big = TcpStream::connect(server.addr).unwrap();
    big.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        big,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\nContent-Type: \
         application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: \
         {}\r\n\r\n{{\"pad\": \"xxxx",
        server.addr,
        5 << 20
    )
    .unwrap();
    let mut response = String::new();
    let _ = big.read_to_string(&mut response);
    assert!(
        response.starts_with("HTTP/1.1 413"),
        "over the cap: {response}"
    );
    assert!(response.contains("payload_too_large"), "{response}");
    let (status, response) = server.make_session(&token, "{\"mode\": \"auto\"}");
    assert_eq!(status, 400, "an ask with an unknown field: {response}");

    // A client that sends half its headers and stops is cut off.
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "a slow client held its connection for {:?}",
        started.elapsed()
    );

    // Nothing ran: the workspace is as it was.
    assert!(!d.ws.join("made.txt").exists());
    // Positive control: the same call in a session writes.
    let out = client(
        &d,
        &json!({"url": server.url(), "token": token, "generation": "legacy",
                "calls": [terminal("echo x > made.txt")]}),
    );
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
    assert!(d.ws.join("made.txt").exists());
}

/// An ASK node whose client cannot ask its user (the SDK's client declares no elicitation)
/// waits for `spear approve` on the node: the pending item names the session, nothing is
/// written before the answer, and the call runs after it.
#[test]
fn spear_approve_answers_a_listening_servers_sessions() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let token = add_token(&d, "t");
    let server = Listening::start(&d, &["--ask", "--approval-wait", "60"]);
    let (status, made) = server.make_session(&token, "");
    assert_eq!(status, 201, "{made}");
    let approve = |args: &[&str]| {
        let mut all = vec!["approve"];
        all.extend_from_slice(args);
        let out = d.spear(&all).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let out = std::thread::scope(|s| {
        let call = s.spawn(|| {
            client(
                &d,
                &json!({"url": made["url"], "token": token, "generation": "legacy",
                        "calls": [terminal("echo x > approved.txt")]}),
            )
        });
        let (code, listed) = approve(&["--wait", "30", "--json"]);
        assert_eq!(code, Some(0), "nothing pending: {listed}");
        let listed: Value = serde_json::from_str(&listed).unwrap();
        let item = &listed["pending"][0];
        assert_eq!(item["session"], made["session"], "{listed}");
        assert!(
            !d.ws.join("approved.txt").exists(),
            "written before the answer"
        );
        let (code, answered) = approve(&[item["id"].as_str().unwrap()]);
        assert_eq!(code, Some(0), "{answered}");
        call.join().unwrap()
    });
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
    assert!(d.ws.join("approved.txt").exists());
}

/// Every file, directory and link under `root` (but `.git`), with its executable bit, its content
/// or its target: two trees with the same digest are the same tree as a patch carries it.
fn tree_digest(root: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                continue;
            } else {
                let exec = meta.permissions().mode() & 0o111 != 0;
                let content = std::fs::read(&path).unwrap();
                format!("file exec={exec} {}", String::from_utf8_lossy(&content))
            };
            out.insert(rel, what);
        }
    }
    out
}

/// A token for a template gets sessions that each work in a copy of their own: the session
/// writes, deletes and renames files; the template is unchanged; the patch it returns applies to
/// a fresh copy of the template and gives the session's tree; a second session does not see the
/// first's changes; when the session ends, its copy goes and no mount is left. A token without
/// the template is refused it (403).
#[test]
fn a_template_session_works_in_a_copy_of_its_own_and_returns_its_patch() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let template = d.base.join("repo");
    for (name, content) in [
        ("src/lib.rs", "pub fn f() -> u32 { 1 }\n"),
        ("src/old.rs", "// to be renamed\n"),
        ("docs/gone.md", "to be deleted\n"),
        ("run.sh", "#!/bin/sh\necho run\n"),
    ] {
        let path = template.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let before = tree_digest(&template);
    let rollout = add_token_with(&d, "rollout", &["--template", template.to_str().unwrap()]);
    let plain = add_token(&d, "plain");
    let server = Listening::start(&d, &["--auto", "--template", template.to_str().unwrap()]);

    let (status, made) = server.make_session(&plain, "{\"template\": \"repo\"}");
    assert_eq!(status, 403, "{made}");
    let (status, made) = server.make_session(&rollout, "{\"template\": \"repo\"}");
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["template"], true, "{made}");
    let copy = std::path::PathBuf::from(made["workspace"].as_str().unwrap());
    assert_ne!(copy, template);
    let out = client(
        &d,
        &json!({"url": made["url"], "token": rollout, "generation": "modern", "calls": [
            {"tool": "write_file", "args": {"path": "src/new.rs", "content": "// new\n"}},
            terminal("rm docs/gone.md && mv src/old.rs src/renamed.rs && printf 'x\\n' >> src/lib.rs && chmod -x run.sh"),
            terminal("ls src"),
        ]}),
    );
    for r in out["results"].as_array().unwrap() {
        assert_eq!(r["status"], "ok", "{out}");
    }
    assert_eq!(
        out["results"][2]["stdout"], "lib.rs\nnew.rs\nrenamed.rs\n",
        "{out}"
    );
    let after = tree_digest(&copy);
    assert_ne!(after, before, "the session changed nothing");
    assert_eq!(tree_digest(&template), before, "the template changed");

    // A second session on the template sees the template, not the first session's changes.
    let (status, second) = server.make_session(&rollout, "{\"template\": \"repo\"}");
    assert_eq!(status, 201, "{second}");
    let second_copy = std::path::PathBuf::from(second["workspace"].as_str().unwrap());
    assert_eq!(tree_digest(&second_copy), before);

    // The patch, applied to a fresh copy of the template, gives the session's tree.
    let id = made["session"].as_str().unwrap();
    let auth = format!("Bearer {rollout}");
    let (status, response) = server.raw(
        "GET",
        &format!("/mcp/sessions/{id}/patch"),
        &[("Authorization", &auth)],
        "",
    );
    assert_eq!(status, 200, "{response}");
    let patch = response.split("\r\n\r\n").nth(1).unwrap().to_owned();
    assert!(patch.contains("diff --git"), "{patch}");
    let fresh = d.base.join("fresh");
    let cp = Command::new("cp")
        .arg("-a")
        .arg(&template)
        .arg(&fresh)
        .status()
        .unwrap();
    assert!(cp.success());
    let mut apply = Command::new("git")
        .args(["apply", "--whitespace=nowarn", "-"])
        .current_dir(&fresh)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    apply
        .stdin
        .take()
        .unwrap()
        .write_all(patch.as_bytes())
        .unwrap();
    assert!(
        apply.wait().unwrap().success(),
        "git apply refused: {patch}"
    );
    assert_eq!(tree_digest(&fresh), after);

    // The session ends: its copy goes, and no mount of it is left.
    let (status, response) =
        server.with_token("DELETE", &format!("/mcp/sessions/{id}"), &rollout, &[]);
    assert_eq!(status, 200, "{response}");
    assert!(
        spear_testkit::wait::wait_for(Duration::from_secs(10), || !copy.exists()),
        "the ended session's copy is left: {}",
        copy.display()
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(copy.to_str().unwrap()),
        "a mount of the copy is left"
    );
    drop(server);
    assert!(!second_copy.exists(), "SIGTERM left a copy");
    assert_eq!(tree_digest(&template), before, "the template changed");
}

/// With a certificate, the server speaks TLS: the SDK's client, trusting that certificate, runs a
/// call over https, and a client speaking clear text gets no answer. Without one, an address
/// that is not loopback is refused at start, before anything is bound.
#[test]
fn tls_serves_sessions_and_clear_text_is_kept_off_the_network() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let token = add_token(&d, "t");
    // In a directory the operator names for host reads (`[paths] read`): what a command could
    // read with `host:read`, were the key not the node's secret.
    let tls = d.base.join("tls");
    std::fs::create_dir(&tls).unwrap();
    let (cert, key) = (tls.join("cert.pem"), tls.join("key.pem"));
    let config = d.base.join("config.toml");
    std::fs::write(
        &config,
        format!("[paths]\nread = [\"{}\"]\n", tls.display()),
    )
    .unwrap();
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args(["-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (server, scheme) = Listening::start_at(
        &d,
        "127.0.0.1:0",
        &[
            "--auto",
            "--config",
            config.to_str().unwrap(),
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    assert_eq!(scheme, "https");
    let out = client(
        &d,
        &json!({"url": format!("https://{}/mcp", server.addr), "token": token,
                "generation": "legacy", "cafile": cert, "calls": [terminal("cat README.md")]}),
    );
    assert_eq!(out["results"][0]["stdout"], "readme\n", "{out}");
    // The key is the node's secret: no command reads it, however it names it, and no bind
    // shows it; the certificate beside it is read (the positive control).
    let out = client(
        &d,
        &json!({"url": format!("https://{}/mcp", server.addr), "token": token,
        "generation": "legacy", "cafile": cert, "calls": [
            terminal(&format!("cat {}", cert.display())),
            terminal(&format!("cat {}", key.display())),
            terminal(&format!("f=key; cat {}/$f.pem", tls.display())),
            terminal(&format!("grep -r PRIVATE {}; wc -c {}/*", tls.display(), tls.display())),
        ]}),
    );
    let results = out["results"].as_array().unwrap();
    assert!(
        results[0]["stdout"]
            .as_str()
            .unwrap()
            .contains("BEGIN CERTIFICATE"),
        "{out}"
    );
    assert_eq!(results[1]["rule"], "credential_store", "{out}");
    for r in results {
        assert!(
            !r.to_string().contains("PRIVATE KEY"),
            "the node's TLS key was read: {r}"
        );
    }
    assert!(
        results[3]["stdout"]
            .as_str()
            .unwrap()
            .lines()
            .any(|l| l.trim_start().starts_with("0 ") && l.ends_with("key.pem")),
        "the key is not masked in its directory's bind: {out}"
    );
    let (status, response) = server.initialize(Some(&token));
    assert_ne!(
        status, 200,
        "clear text was served on a TLS port: {response}"
    );

    // A key in the workspace, where every session's tools would reach it: refused at start.
    let inside = d.ws.join("key.pem");
    std::fs::copy(&key, &inside).unwrap();
    let out = d
        .spear(&[
            "mcp",
            "--listen",
            "127.0.0.1:0",
            "--auto",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            inside.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("move it out"), "{err}");

    // Not loopback, no TLS: refused at start, naming the way out.
    let out = d
        .spear(&["mcp", "--listen", "192.0.2.1:8787", "--auto"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--insecure-http") && err.contains("--tls-cert"),
        "{err}"
    );
}

/// On a unix socket the server answers a token's `initialize`, and the socket goes when the
/// server stops.
#[test]
fn a_unix_socket_serves_and_goes_when_the_server_stops() {
    use std::os::unix::net::UnixStream;
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let token = add_token(&d, "t");
    let run = d.base.join("run");
    std::fs::create_dir(&run).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let socket = run.join("spear.sock");
    let mut child = d
        .spear(&[
            "mcp",
            "--auto",
            "--listen",
            &format!("unix:{}", socket.display()),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        spear_testkit::wait::wait_for(Duration::from_secs(30), || socket.exists()),
        "no socket"
    );
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = UnixStream::connect(&socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("serverInfo"), "{response}");
    let pid = rustix::process::Pid::from_raw(child.id().cast_signed()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    child.wait().unwrap();
    assert!(!socket.exists(), "the socket outlived the server");
}

/// `GET /metrics` answers only a credential, in Prometheus's text format, counting the calls
/// made and the sessions open.
#[test]
fn metrics_count_sessions_and_calls_behind_the_gate() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let token = add_token(&d, "t");
    let server = Listening::start(&d, &["--auto"]);
    let out = client(
        &d,
        &json!({"url": server.url(), "token": token, "generation": "legacy",
                "calls": [terminal("true"), terminal("true")]}),
    );
    assert_eq!(out["results"][1]["status"], "ok", "{out}");
    let (status, response) = server.raw("GET", "/metrics", &[], "");
    assert_eq!(status, 401, "{response}");
    let (status, response) = server.with_token("GET", "/metrics", &token, &[]);
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("text/plain; version=0.0.4"), "{response}");
    assert!(
        response.contains("spear_tool_calls_total{tool=\"terminal\",status=\"ok\"} 2"),
        "{response}"
    );
    assert!(
        response.contains("spear_sessions_opened_total"),
        "{response}"
    );
    assert!(
        response.contains("spear_resident_memory_bytes"),
        "{response}"
    );
    assert!(!response.contains(&token), "a token in the metrics");
}

/// The tests' own authorization server: an RSA key, its JWKS, and access tokens signed with it
/// (`PyJWT`), printed as JSON.
const ISSUER: &str = r#"
import json, sys, time
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
out = sys.argv[1]
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
jwk.update({"kid": "k1", "alg": "RS256", "use": "sig"})
open(f"{out}/jwks.json", "w").write(json.dumps({"keys": [jwk]}))
now = int(time.time())
def token(signer=key, **over):
    claims = {"iss": "https://issuer.test", "aud": "https://node.test/mcp", "sub": "alice",
              "scope": "spear:run", "iat": now, "exp": now + 600}
    claims.update(over)
    return jwt.encode(claims, signer, algorithm="RS256", headers={"kid": "k1", "typ": "at+jwt"})
print(json.dumps({
    "good": token(),
    "wrong_audience": token(aud="https://elsewhere.test/mcp"),
    "wrong_issuer": token(iss="https://evil.test"),
    "expired": token(exp=now - 3600, iat=now - 7200),
    "other_key": token(signer=other),
    "no_scope": token(scope="email"),
    "short": token(sub="bob", exp=now + 12),
}))
"#;

/// An OAuth access token of the operator's authorization server is admitted, as its subject, with
/// what its scope maps to; tokens for another audience, from another issuer, signed by another
/// key, expired, or without a mapped scope are refused (401). The metadata document names the
/// issuer. A token that expires while its session runs a job has the session ended, and the job
/// killed, within the sweep's second, as a revoked one has.
#[test]
fn oauth_access_tokens_of_the_operators_issuer_are_admitted() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let out = Command::new(python_client::python())
        .arg("-c")
        .arg(ISSUER)
        .arg(&d.base)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tokens: Value = serde_json::from_slice(&out.stdout).unwrap();
    let config = d.base.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[serve.oauth]\nissuer = \"https://issuer.test\"\naudience = \"https://node.test/mcp\"\n\
             leeway_secs = 0\njwks_file = \"{}\"\n[serve.oauth.scopes]\n\"spear:run\" = {{ mode = \"auto\" }}\n",
            d.base.join("jwks.json").display()
        ),
    )
    .unwrap();
    let server = Listening::start(&d, &["--auto", "--config", config.to_str().unwrap()]);

    let (status, metadata) = server.raw("GET", "/.well-known/oauth-protected-resource", &[], "");
    assert_eq!(status, 200, "{metadata}");
    assert!(metadata.contains("https://issuer.test"), "{metadata}");
    for refused in [
        "wrong_audience",
        "wrong_issuer",
        "expired",
        "other_key",
        "no_scope",
    ] {
        let (status, response) = server.initialize(tokens[refused].as_str());
        assert_eq!(status, 401, "{refused}: {response}");
    }
    let out = client(
        &d,
        &json!({"url": server.url(), "token": tokens["good"], "generation": "legacy",
                "calls": [terminal("echo x > by-oauth.txt")]}),
    );
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
    assert!(d.ws.join("by-oauth.txt").exists());
    let principals: Vec<Value> = support::audit_records(&d)
        .into_iter()
        .map(|r| r["principal"].clone())
        .collect();
    assert!(principals.contains(&json!("oauth:alice")), "{principals:?}");

    // A session of a token about to expire, running a job: both end when the token does.
    let short = tokens["short"].as_str().unwrap();
    let (status, made) = server.make_session(short, "");
    assert_eq!(status, 201, "{made}");
    let marker = format!("300.{}6", std::process::id());
    let out = client(
        &d,
        &json!({"url": made["url"], "token": short, "generation": "modern", "calls": [
            {"tool": "terminal", "args": {"command": format!("sleep {marker}"), "background": true}},
        ]}),
    );
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
    assert!(
        spear_testkit::wait::wait_for(Duration::from_secs(10), || {
            !spear_testkit::process::processes_with(&marker).is_empty()
        }),
        "the job never ran (the positive control)"
    );
    assert!(
        spear_testkit::wait::wait_for(Duration::from_secs(20), || {
            spear_testkit::process::processes_with(&marker).is_empty()
        }),
        "a job outlived its session's expired token"
    );
    let path = format!("/mcp/sessions/{}", made["session"].as_str().unwrap());
    let (status, response) = server.initialize_at(&path, Some(short));
    assert_eq!(status, 401, "{response}");
    // Its session is gone, not merely refused to it: the good token cannot reach it either.
    let (status, response) = server.initialize_at(&path, tokens["good"].as_str());
    assert_eq!(status, 404, "{response}");
}

/// A token's calls in flight are counted over its sessions: one over its `--calls` is answered
/// 429 at once (never queued), while a notification on the same session, and another token's
/// call, go through; once an answer comes, the next call runs.
#[test]
fn calls_in_flight_are_counted_per_token() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let busy = add_token_with(&d, "busy", &["--calls", "2"]);
    let other = add_token(&d, "other");
    let server = Listening::start(&d, &["--auto"]);
    let open = |token: &str| {
        let (status, response) = server.initialize(Some(token));
        assert_eq!(status, 200, "{response}");
        let id = session_id(&response);
        let (status, response) = server.post(
            token,
            &id,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(status, 202, "{response}");
        id
    };
    let call = |id: u64, command: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "terminal", "arguments": {"command": command}}})
    };
    let session = open(&busy);
    let theirs = open(&other);

    let marker = format!("4.{}5", std::process::id());
    let mut answers = Vec::new();
    std::thread::scope(|s| {
        let waiting: Vec<_> = (0..2)
            .map(|i| {
                let (server, busy, session) = (&server, &busy, &session);
                let body = call(10 + i, &format!("sleep {marker}; echo slept"));
                s.spawn(move || server.post(busy, session, &body))
            })
            .collect();
        assert!(
            spear_testkit::wait::wait_for(Duration::from_secs(10), || {
                // Each call's `sleep` itself (its shell and sandbox name the marker too).
                let sleep = format!(": sleep {marker}");
                spear_testkit::process::processes_with(&marker)
                    .iter()
                    .filter(|p| p.trim_end().ends_with(&sleep))
                    .count()
                    == 2
            }),
            "the two calls never ran"
        );
        // Both in flight: a third is refused at once.
        let (status, refused) = server.post(&busy, &session, &call(20, "echo third > third.txt"));
        assert_eq!(status, 429, "{refused}");
        assert!(
            refused.contains(
                "token:busy has its most calls in flight (2): wait for an answer before the next \
                 call"
            ),
            "{refused}"
        );
        assert!(
            refused.to_ascii_lowercase().contains("retry-after"),
            "{refused}"
        );
        let (status, response) = server.post(
            &busy,
            &session,
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 99}}),
        );
        assert_eq!(status, 202, "a notification at the limit: {response}");
        let (status, response) = server.post(&other, &theirs, &call(30, "echo theirs"));
        assert_eq!(
            status, 200,
            "another token at the first's limit: {response}"
        );
        assert!(response.contains("theirs"), "{response}");
        answers = waiting.into_iter().map(|h| h.join().unwrap()).collect();
    });
    for (status, response) in &answers {
        assert_eq!(*status, 200, "{response}");
        assert!(response.contains("slept"), "{response}");
    }
    // The refused call never ran; once the answers came, the same call runs.
    assert!(!d.ws.join("third.txt").exists());
    let (status, response) = server.post(&busy, &session, &call(40, "echo third > third.txt"));
    assert_eq!(status, 200, "{response}");
    assert!(d.ws.join("third.txt").exists(), "{response}");
}

/// `--token-file`: the server's own tokens, from a file or from its standard input, open the
/// door with what the server serves (its workspace and its templates), for its life, and leave
/// nothing in the operator's store; every audit record names the token by its line, never its
/// value; no session's command can read the file. A file the sessions could reach, or one with a
/// weak token, stops the server at start. The positive control of the masking: a file beside it
/// that is not the token file reads whole.
#[test]
fn the_servers_own_token_file_opens_the_door_and_no_session_reads_it() {
    use std::os::unix::fs::PermissionsExt as _;
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let template = d.base.join("tpl");
    std::fs::create_dir_all(&template).unwrap();
    std::fs::write(template.join("a.txt"), "template\n").unwrap();
    let first = "first-token-0123456789abcdef0123456789";
    let second = "second-token-0123456789abcdef012345678";
    let secrets = d.base.join("secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    let file = secrets.join("tokens");
    std::fs::write(&file, format!("# the node's tokens\n{first}\n\n{second}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(secrets.join("control"), "readable\n").unwrap();
    // Its directory named for host reads (`[paths] read`): what a command could read with
    // `host:read`, were the file not the node's secret.
    let config = d.base.join("config.toml");
    std::fs::write(
        &config,
        format!("[paths]\nread = [\"{}\"]\n", secrets.display()),
    )
    .unwrap();
    let (server, _) = Listening::spawn(d.spear(&[
        "mcp",
        "--listen",
        "127.0.0.1:0",
        "--auto",
        "--config",
        config.to_str().unwrap(),
        "--template",
        template.to_str().unwrap(),
        "--token-file",
        file.to_str().unwrap(),
    ]));

    let (status, response) = server.initialize(Some("wrong-token-0123456789abcdef0123456789"));
    assert_eq!(status, 401, "{response}");
    let (status, response) = server.initialize(Some(first));
    assert_eq!(status, 200, "{response}");
    // The server's workspace and its template, both granted.
    let (status, made) = server.make_session(second, "");
    assert_eq!(status, 201, "{made}");
    let (status, copy) = server.make_session(second, r#"{"template": "tpl"}"#);
    assert_eq!(status, 201, "{copy}");
    let out = client(
        &d,
        &json!({"url": made["url"], "token": second, "generation": "modern", "calls": [
            terminal(&format!("cat {}", secrets.join("control").display())),
            terminal(&format!("cat {}", file.display())),
            terminal(&format!("f=tokens; cat {}/$f", secrets.display())),
            terminal(&format!("grep -r token {}; wc -c {}/*", secrets.display(), secrets.display())),
            terminal("echo written > w.txt"),
        ]}),
    );
    let results = out["results"].as_array().unwrap();
    assert_eq!(
        results[0]["stdout"], "readable\n",
        "the control was not read: {out}"
    );
    assert_eq!(results[1]["rule"], "credential_store", "{out}");
    for r in results {
        assert!(
            !r.to_string().contains("token-0123"),
            "a session read the token file: {r}"
        );
    }
    assert!(
        results[3]["stdout"]
            .as_str()
            .unwrap()
            .lines()
            .any(|l| l.trim_start().starts_with("0 ") && l.ends_with("/tokens")),
        "the token file is not masked in its directory's bind: {out}"
    );
    assert_eq!(results[4]["status"], "ok", "{out}");
    assert_eq!(
        std::fs::read_to_string(d.ws.join("w.txt")).unwrap(),
        "written\n"
    );
    let principals: std::collections::BTreeSet<String> = support::audit_records(&d)
        .iter()
        .filter_map(|r| r["principal"].as_str().map(str::to_owned))
        .collect();
    assert!(principals.contains("token-file:2"), "{principals:?}");
    let audit = std::fs::read_to_string(d.state.join("spear/audit.jsonl")).unwrap();
    assert!(
        !audit.contains("token-0123"),
        "a token value in the audit log"
    );
    // Nothing in the operator's store.
    let listed = d.spear(&["token", "list", "--json"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "[]");
    drop(server);

    // From standard input, as `spear.Node` hands it over.
    let (server, _) = Listening::spawn_with_stdin(
        d.spear(&[
            "mcp",
            "--listen",
            "127.0.0.1:0",
            "--auto",
            "--token-file",
            "-",
        ]),
        Some(&format!("{first}\n")),
    );
    let (status, made) = server.make_session(first, "");
    assert_eq!(status, 201, "{made}");
    let (status, response) = server.initialize(Some(second));
    assert_eq!(status, 401, "{response}");
    drop(server);

    // Refused at start, each saying why, never repeating a token.
    let inside = d.ws.join("tokens");
    std::fs::write(&inside, format!("{first}\n")).unwrap();
    let weak = secrets.join("weak");
    std::fs::write(&weak, "hunter2\n").unwrap();
    for (path, why) in [
        (&inside, "which this server's sessions work in"),
        (&weak, "under the 32 a token needs"),
    ] {
        let out = d
            .spear(&[
                "mcp",
                "--listen",
                "127.0.0.1:0",
                "--token-file",
                path.to_str().unwrap(),
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(why), "{stderr}");
        assert!(
            !stderr.contains("hunter2") && !stderr.contains(first),
            "{stderr}"
        );
        assert!(!stderr.contains("listening on"), "{stderr}");
    }
}

/// The node's own paths (`POST /mcp/sessions`, a session's end and patch, `/metrics`) refuse a
/// `Host` the node does not answer to and a browser `Origin` it does not allow, as rmcp refuses
/// them on `/mcp`: a page that rebinds a name of its own to the node, holding a token, makes no
/// session, ends none and reads none. Nothing is made; the health path still answers (probes
/// name the pod's address). The positive control: the same requests with the node's own names.
#[test]
fn the_nodes_own_paths_refuse_foreign_hosts_and_origins() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let token = add_token(&d, "t");
    let server = Listening::start(&d, &["--auto"]);
    let auth = format!("Bearer {token}");
    let post = |headers: &[(&str, &str)]| {
        let mut all = vec![
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ];
        all.extend_from_slice(headers);
        server.raw("POST", "/mcp/sessions", &all, "{}")
    };
    let (status, response) = post(&[("Host", "rebind.example:80")]);
    assert_eq!(status, 403, "{response}");
    assert!(response.contains("Host"), "{response}");
    let (status, response) = post(&[("Origin", "https://evil.example")]);
    assert_eq!(status, 403, "{response}");
    let (status, response) = post(&[("Origin", "null")]);
    assert_eq!(status, 403, "{response}");
    let (status, made) = server.make_session(&token, "");
    assert_eq!(status, 201, "{made}");
    let path = format!("/mcp/sessions/{}", made["session"].as_str().unwrap());
    for (method, p) in [
        ("GET", format!("{path}/patch")),
        ("DELETE", path.clone()),
        ("GET", "/metrics".to_owned()),
    ] {
        let (status, response) = server.raw(
            method,
            &p,
            &[("Authorization", &auth), ("Host", "rebind.example")],
            "",
        );
        assert_eq!(status, 403, "{method} {p}: {response}");
    }
    // The session is still there: the refused DELETE ended nothing.
    let (status, response) = server.with_token("GET", &format!("{path}/patch"), &token, &[]);
    assert_eq!(status, 409, "{response}");
    // Only the one session was made, by the positive control.
    let (status, metrics) = server.with_token("GET", "/metrics", &token, &[]);
    assert_eq!(status, 200, "{metrics}");
    assert!(
        metrics.contains("spear_sessions_opened_total 1\n"),
        "{metrics}"
    );
    // The user's own page on loopback is allowed, and probes answer whatever their Host.
    let (status, made) = post(&[("Origin", "http://localhost:3000")]);
    assert_eq!(status, 201, "{made}");
    let (status, health) = server.raw("GET", "/healthz", &[("Host", "10.1.2.3:8787")], "");
    assert_eq!(status, 200, "{health}");
}
