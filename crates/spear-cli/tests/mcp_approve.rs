//! `spear approve`: a person in a second terminal answers the ASK confirmation of a client that
//! cannot ask (rmcp's client without elicitation, on both protocol generations), over the
//! server's socket in spear's state directory.
//!
//! Every client call has a deadline: a server that hangs fails the test instead of hanging it.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod mcp_client;
mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use spear_testkit::mcp::{Generation, Session, User, envelope};
use spear_testkit::process::is_root;
use support::Dirs;

const BOTH: [Generation; 2] = [Generation::Initialize, Generation::Discover];

/// The second terminal: `spear approve` with the test's HOME and state directory.
#[derive(Clone)]
struct Who {
    home: PathBuf,
    state: PathBuf,
}

impl Who {
    fn of(dirs: &Dirs) -> Who {
        Who {
            home: dirs.home.clone(),
            state: dirs.state.clone(),
        }
    }

    /// `spear approve ARGS`: its exit status, stdout and stderr.
    fn approve(&self, args: &[&str]) -> (i32, String, String) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_spear"))
            .arg("approve")
            .args(args)
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env_remove("XDG_CONFIG_HOME")
            .current_dir("/")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// Waits (10 s at most) for one pending confirmation and returns it, as `--json` lists it.
    fn next_pending(&self) -> Value {
        let (code, out, err) = self.approve(&["--wait", "10", "--json"]);
        assert_eq!(code, 0, "nothing pending within 10 s: {out} {err}");
        let listed: Value = serde_json::from_str(&out).unwrap();
        let pending = listed["pending"].as_array().unwrap();
        assert_eq!(pending.len(), 1, "{listed}");
        pending[0].clone()
    }
}

fn approve(dirs: &Dirs, args: &[&str]) -> (i32, String, String) {
    Who::of(dirs).approve(args)
}

/// Calls `tool` with `args` in the background (the call waits for its approval meanwhile).
fn call_later(
    s: &Session<User>,
    tool: &'static str,
    args: Value,
) -> tokio::task::JoinHandle<rmcp::model::CallToolResult> {
    let peer = s.client.peer().clone();
    tokio::spawn(async move {
        let Value::Object(args) = args else {
            panic!("arguments are an object")
        };
        let call =
            peer.call_tool(rmcp::model::CallToolRequestParams::new(tool).with_arguments(args));
        tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .expect("the call ends within 60 s")
            .expect("a result")
    })
}

/// What `f` returns, run on a blocking thread (a second process, while the runtime drives the
/// client).
async fn second_terminal<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

fn socket_dir(dirs: &Dirs) -> PathBuf {
    dirs.state.join("spear").join("approve")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_process_approves_a_pending_call_once() {
    for generation in BOTH {
        let s = mcp_client::start(
            &["--ask", "--approval-wait", "30"],
            User::mute(),
            generation,
        )
        .await;
        let dirs = &s.dirs;
        let who = Who::of(dirs);
        // Nothing pending yet: exit 1.
        let (code, _, err) = who.approve(&[]);
        assert_eq!(code, 1, "{generation:?}: {err}");
        let call = call_later(
            &s,
            "write_file",
            json!({"path": "approved.txt", "content": "once\n"}),
        );
        let (item, allowed) = second_terminal({
            let who = who.clone();
            move || {
                let item = who.next_pending();
                let answered = who.approve(&[item["id"].as_str().unwrap()]);
                (item, answered)
            }
        })
        .await;
        assert_eq!(allowed.0, 0, "{allowed:?}");
        assert!(allowed.1.starts_with("allowed "), "{allowed:?}");
        let r = call.await.unwrap();
        let e = envelope(&r);
        assert_eq!(e["status"], "ok", "{generation:?}: {e}\n{}", dirs.log());
        assert_eq!(
            std::fs::read_to_string(dirs.ws.join("approved.txt")).unwrap(),
            "once\n"
        );
        assert_eq!(item["tool"], "write_file", "{item}");
        assert_eq!(item["server_pid"], s.pid(), "{item}");
        assert!(
            item["question"].as_str().unwrap().contains("approved.txt"),
            "{item}"
        );
        // The id allowed once: it is gone, and allowing it again does nothing.
        let id = item["id"].as_str().unwrap();
        let (code, _, err) = who.approve(&[id]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("no such pending confirmation"), "{err}");
        // A well-formed id nobody asked: 1; a malformed one, or --refuse alone: usage, 2.
        assert_eq!(who.approve(&["0123456789ab"]).0, 1);
        assert_eq!(who.approve(&["not-an-id"]).0, 2);
        assert_eq!(who.approve(&["--refuse"]).0, 2);
        // The next write asks again (one approval, one write); refused, it does not happen.
        let call = call_later(
            &s,
            "write_file",
            json!({"path": "approved.txt", "content": "twice\n"}),
        );
        let (pending, refused) = second_terminal({
            let who = who.clone();
            move || {
                let item = who.next_pending();
                let answered = who.approve(&["--refuse", item["id"].as_str().unwrap()]);
                (item, answered)
            }
        })
        .await;
        assert_eq!(refused.0, 0, "{refused:?}");
        assert_ne!(pending["id"], item["id"], "a new question, a new id");
        let r = call.await.unwrap();
        let e = envelope(&r);
        assert_eq!(e["status"], "denied", "{generation:?}: {e}");
        assert_eq!(e["rule"], "declined", "{e}");
        assert_eq!(
            std::fs::read_to_string(dirs.ws.join("approved.txt")).unwrap(),
            "once\n"
        );
        s.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_command_runs_nothing_and_the_list_shows_hidden_characters() {
    for generation in BOTH {
        let s = mcp_client::start(
            &["--ask", "--approval-wait", "30"],
            User::mute(),
            generation,
        )
        .await;
        let dirs = &s.dirs;
        let who = Who::of(dirs);
        let call = call_later(
            &s,
            "terminal",
            json!({"command": "echo \u{202e}gpj.exe > canary.txt"}),
        );
        let (shown, refused) = second_terminal({
            let who = who.clone();
            move || {
                let (code, shown, err) = who.approve(&["--wait", "10"]);
                assert_eq!(code, 0, "{shown} {err}");
                let id = shown.split_whitespace().next().unwrap().to_owned();
                (shown, who.approve(&["--refuse", "--json", &id]))
            }
        })
        .await;
        // APR-01: the override is shown escaped, never sent to the terminal as it is.
        assert!(!shown.contains('\u{202e}'), "{shown}");
        assert!(
            shown.contains("echo \\u{202e}gpj.exe > canary.txt"),
            "{shown}"
        );
        assert!(shown.contains("class: WORKSPACE_MUTATING"), "{shown}");
        assert!(shown.contains("spear approve --refuse ID"), "{shown}");
        assert_eq!(refused.0, 0, "{refused:?}");
        let answered: Value = serde_json::from_str(&refused.1).unwrap();
        assert_eq!(answered["answer"], "refused", "{answered}");
        let r = call.await.unwrap();
        let e = envelope(&r);
        assert_eq!(e["status"], "denied", "{generation:?}: {e}");
        assert_eq!(e["rule"], "declined", "{e}");
        assert!(
            !dirs.ws.join("canary.txt").exists(),
            "the refused command ran"
        );
        // Positive control: what needs no confirmation runs at once.
        let r = s.call("terminal", json!({"command": "echo fine"})).await;
        assert_eq!(envelope(&r)["stdout"], "fine\n");
        s.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_approver_the_call_is_cancelled_and_says_to_run_spear_approve() {
    for generation in BOTH {
        let s =
            mcp_client::start(&["--ask", "--approval-wait", "1"], User::mute(), generation).await;
        let dirs = &s.dirs;
        let started = std::time::Instant::now();
        let r = s
            .call(
                "write_file",
                json!({"path": "unasked.txt", "content": "no"}),
            )
            .await;
        let e = envelope(&r);
        assert_eq!(e["status"], "cancelled", "{generation:?}: {e}");
        assert_eq!(e["rule"], "unapproved", "{e}");
        let message = e["reason"].as_str().unwrap();
        assert!(message.contains("`spear approve`"), "{message}");
        assert!(message.contains("1 s"), "{message}");
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert!(!dirs.ws.join("unasked.txt").exists());
        // Nothing stays pending.
        assert_eq!(approve(dirs, &[]).0, 1);
        s.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_socket_is_private_to_its_user_and_goes_with_the_server() {
    let s = mcp_client::start(
        &["--ask", "--approval-wait", "20"],
        User::mute(),
        Generation::Initialize,
    )
    .await;
    let dirs = &s.dirs;
    let dir = socket_dir(dirs);
    let socket = dir.join(format!("{}.sock", s.pid()));
    assert_eq!(mode(&dir), 0o700, "{}", dirs.log());
    assert_eq!(mode(&socket), 0o600);
    assert!(dirs.log().contains("spear approve"), "{}", dirs.log());
    if is_root() {
        another_user_is_refused(&s).await;
    }
    let pid = s.pid();
    s.stop().await;
    // The server has gone: its socket with it.
    for _ in 0..100 {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!socket.exists(), "the socket outlived its server");
}

/// As root: another uid cannot reach the socket (its directory is 0700), and with every mode
/// loosened by hand it connects but the server refuses it (`SO_PEERCRED`): the pending write is
/// neither listed to it nor allowed by it. Then this user allows it (positive control).
async fn another_user_is_refused(s: &Session<User>) {
    let dirs = &s.dirs;
    let who = Who::of(dirs);
    let call = call_later(
        s,
        "write_file",
        json!({"path": "theirs.txt", "content": "x"}),
    );
    let item = second_terminal({
        let who = who.clone();
        move || who.next_pending()
    })
    .await;
    let id = item["id"].as_str().unwrap().to_owned();
    let as_nobody = |args: &[&str]| {
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_spear"))
            .arg("approve")
            .args(args)
            .env("SPEAR_LOG", "debug")
            .env("HOME", &dirs.home)
            .env("XDG_STATE_HOME", &dirs.state)
            .current_dir("/")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Everything above the approval directory opened to everyone: only its 0700 stands.
    for d in [&dirs.base, &dirs.state, &dirs.state.join("spear")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (code, out, err) = as_nobody(&["--json"]);
    assert_eq!(code, 1, "{out} {err}");
    assert!(!out.contains(&id), "{out}");
    assert_eq!(as_nobody(&[&id]).0, 1);
    // The directory and the socket opened too: the server itself refuses the other uid.
    let dir = socket_dir(dirs);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let socket = dir.join(format!("{}.sock", s.pid()));
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, out, err) = as_nobody(&["--json"]);
    assert_eq!(code, 1, "{out} {err}");
    assert!(!out.contains(&id), "{out}");
    assert!(err.contains("answers only its own user"), "{err}");
    assert_eq!(as_nobody(&[&id]).0, 1);
    assert!(!dirs.ws.join("theirs.txt").exists());
    assert!(
        dirs.log().contains("tried the approval socket"),
        "{}",
        dirs.log()
    );
    // Positive control: this user allows it.
    let (code, out, err) = who.approve(&[&id]);
    assert_eq!(code, 0, "{out} {err}");
    let r = call.await.unwrap();
    assert_eq!(envelope(&r)["status"], "ok");
    assert!(dirs.ws.join("theirs.txt").exists());
}

/// Issue 31, part 1: AUTO asks about host-run configuration as ASK would. A client that cannot
/// ask: `spear approve` answers, for a file tool (before it writes) and for a command whose
/// write the classifier could not see (after it ran, before anything reaches the workspace),
/// both protocol generations; refused, nothing of it lands and the result is not `ok`. Positive
/// control: an ordinary write in AUTO is answered at once, asking nobody.
#[tokio::test(flavor = "multi_thread")]
async fn auto_asks_before_host_run_configuration_is_written() {
    for generation in BOTH {
        let s = mcp_client::start(
            &["--auto", "--approval-wait", "30"],
            User::mute(),
            generation,
        )
        .await;
        let dirs = &s.dirs;
        let who = Who::of(dirs);
        let e = s
            .call("write_file", json!({"path": "plain.txt", "content": "x\n"}))
            .await;
        assert_eq!(envelope(&e)["status"], "ok", "{generation:?}");
        assert_eq!(who.approve(&[]).0, 1, "nothing was asked");
        // A file tool: asked before it writes.
        let call = call_later(
            &s,
            "write_file",
            json!({"path": ".envrc", "content": "use flake\n"}),
        );
        let item = second_terminal({
            let who = who.clone();
            move || {
                let item = who.next_pending();
                assert_eq!(who.approve(&[item["id"].as_str().unwrap()]).0, 0);
                item
            }
        })
        .await;
        let question = item["question"].as_str().unwrap();
        assert!(
            question.contains("host-run configuration") && question.contains("`.envrc` (direnv)"),
            "{question}"
        );
        let r = call.await.unwrap();
        assert_eq!(envelope(&r)["status"], "ok", "{generation:?}: {r:?}");
        assert!(dirs.ws.join(".envrc").exists());
        // A command the classifier cannot see into: asked after it ran.
        std::fs::write(
            dirs.ws.join("w.py"),
            "import os, sys\nos.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)\nopen(sys.argv[1], 'w').write('{}')\n",
        )
        .unwrap();
        for (path, allow) in [(".vscode/tasks.json", true), (".zed/tasks.json", false)] {
            std::fs::write(dirs.ws.join("t.txt"), path).unwrap();
            let call = call_later(
                &s,
                "terminal",
                json!({"command": "python3 w.py \"$(cat t.txt)\""}),
            );
            let item = second_terminal({
                let who = who.clone();
                move || {
                    let item = who.next_pending();
                    let id = item["id"].as_str().unwrap().to_owned();
                    let args: Vec<&str> = if allow {
                        vec![&id]
                    } else {
                        vec!["--refuse", &id]
                    };
                    assert_eq!(who.approve(&args).0, 0);
                    item
                }
            })
            .await;
            let question = item["question"].as_str().unwrap();
            assert!(
                question.contains("ran in the sandbox") && question.contains(path),
                "{question}"
            );
            let r = call.await.unwrap();
            let e = envelope(&r);
            if allow {
                assert_eq!(e["status"], "ok", "{generation:?}: {e}");
                assert!(dirs.ws.join(path).exists(), "{e}");
            } else {
                assert_eq!(e["status"], "denied", "{generation:?}: {e}");
                assert!(!dirs.ws.join(path).exists(), "{e}");
                assert!(e["reason"].as_str().unwrap().contains(path), "{e}");
            }
        }
        s.stop().await;
    }
}

/// AUTO, a client that elicits: the question about host-run configuration reaches the user
/// through the client, naming the file and what runs it; accepted, the write lands.
#[tokio::test(flavor = "multi_thread")]
async fn auto_elicits_before_host_run_configuration_is_written() {
    let user = User::answering(rmcp::model::ElicitationAction::Accept);
    let s = mcp_client::start(&["--auto"], user.clone(), Generation::Initialize).await;
    let e = s
        .call(
            "write_file",
            json!({"path": ".mcp.json", "content": "{\"mcpServers\": {}}\n"}),
        )
        .await;
    assert_eq!(envelope(&e)["status"], "ok", "{e:?}");
    assert!(s.dirs.ws.join(".mcp.json").exists());
    let asked = user.questions();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].contains("host-run configuration") && asked[0].contains("`.mcp.json` (mcp)"),
        "{}",
        asked[0]
    );
    // Positive control: an ordinary write elicits nothing.
    let e = s
        .call("write_file", json!({"path": "plain.txt", "content": "x\n"}))
        .await;
    assert_eq!(envelope(&e)["status"], "ok");
    assert_eq!(user.questions().len(), 1);
    s.stop().await;
}
