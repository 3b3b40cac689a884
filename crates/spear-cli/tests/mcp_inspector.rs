//! The smoke test CI runs: the MCP Inspector's CLI (the reference client, pinned by
//! `scripts/setup-test-clients.sh`) starts `spear mcp`, lists its tools and calls one.
//!
//! The Inspector must be installed: a missing one fails the test (it is never skipped). It is
//! looked for in `$SPEAR_TEST_CLIENTS/bin`, by default `/opt/spear-test-clients/bin`.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{Dirs, SAFE_TOOLS, TOOLS};

/// The longest one Inspector run may take (Node starts, spawns spear, one request, exits).
const DEADLINE: Duration = Duration::from_secs(120);

/// The directory the pinned clients were installed in.
fn clients() -> PathBuf {
    std::env::var_os("SPEAR_TEST_CLIENTS")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/opt/spear-test-clients"), PathBuf::from)
}

/// `bin/` of the clients, after checking that the Inspector and its Node.js are there.
fn client_bin() -> PathBuf {
    let bin = clients().join("bin");
    for tool in ["mcp-inspector", "node"] {
        let path = bin.join(tool);
        assert!(
            path.exists(),
            "{} is missing: the MCP Inspector smoke test needs it. Run scripts/setup-test-clients.sh \
             (as root it installs into /opt/spear-test-clients), or set SPEAR_TEST_CLIENTS to the \
             directory it installed into.",
            path.display()
        );
    }
    bin
}

/// A workspace with one file, and beside it (never inside) HOME, spear's state, and the caches
/// Node and npm may write.
fn dirs() -> Dirs {
    let d = Dirs::with(&[("hello.txt", "hello from the inspector test\n")]);
    std::fs::create_dir_all(d.path("cache")).unwrap();
    d
}

/// `mcp-inspector --cli SPEAR mcp --workspace WS ... ARGS` with a clean environment, under a
/// deadline (a hung client or server kills the run and fails the test).
async fn inspector(d: &Dirs, spear_flags: &[&str], args: &[&str]) -> Output {
    let bin = client_bin();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    );
    let state = d.path("state");
    let mut cmd = tokio::process::Command::new(bin.join("mcp-inspector"));
    cmd.arg("--cli")
        .arg(env!("CARGO_BIN_EXE_spear"))
        .arg("mcp")
        .args(spear_flags)
        .arg("--workspace")
        .arg(&d.ws)
        // The Inspector hands its server only a few variables of its own (HOME and PATH among
        // them); spear's state directory is passed on explicitly.
        .arg("-e")
        .arg(format!("XDG_STATE_HOME={}", state.display()))
        .args(args)
        .env_clear()
        .env("PATH", path)
        .env("HOME", d.path("home"))
        .env("XDG_STATE_HOME", &state)
        .env("XDG_CACHE_HOME", d.path("cache"))
        .env("npm_config_cache", d.path("cache").join("npm"))
        .env("TMPDIR", &d.base)
        .current_dir(&d.base)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let run = cmd.output();
    tokio::time::timeout(DEADLINE, run)
        .await
        .unwrap_or_else(|_| panic!("the MCP Inspector ran longer than {DEADLINE:?}"))
        .expect("the MCP Inspector starts")
}

/// The Inspector's JSON output, or a failure that shows what it printed.
fn json_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "the MCP Inspector printed no JSON ({e}; exit {:?}):\n{stdout}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn the_inspector_lists_every_tool() {
    let d = dirs();
    let out = inspector(&d, &["--auto"], &["--method", "tools/list"]).await;
    assert_exit(&out, 0);
    let v = json_of(&out);
    let tools = v["tools"].as_array().unwrap_or_else(|| panic!("{v}"));
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for name in TOOLS {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    // In SAFE, only the tools that can act in SAFE.
    let out = inspector(&d, &["--safe"], &["--method", "tools/list"]).await;
    assert_exit(&out, 0);
    let v = json_of(&out);
    let mut safe: Vec<&str> = v["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    safe.sort_unstable();
    assert_eq!(safe, SAFE_TOOLS.to_vec());
    for tool in tools {
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        assert!(tool["annotations"]["readOnlyHint"].is_boolean(), "{tool}");
    }
}

#[tokio::test]
async fn the_inspector_reads_a_file() {
    let d = dirs();
    let out = inspector(
        &d,
        &[],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-arg",
            "path=hello.txt",
        ],
    )
    .await;
    assert_exit(&out, 0);
    let v = json_of(&out);
    assert_eq!(v["isError"], false, "{v}");
    assert_eq!(v["structuredContent"]["status"], "ok", "{v}");
    let stdout = v["structuredContent"]["stdout"]
        .as_str()
        .unwrap_or_default();
    assert!(
        stdout.contains("hello from the inspector test"),
        "the file's text is not in {v}"
    );
    assert!(
        v["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("hello from the inspector test")),
        "{v}"
    );
}

#[tokio::test]
async fn the_inspector_sees_a_refusal_as_an_error_and_nothing_is_written() {
    let d = dirs();
    // A listed tool whose command SAFE refuses.
    let out = inspector(
        &d,
        &["--safe"],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "terminal",
            "--tool-arg",
            "command=echo x > new.txt",
        ],
    )
    .await;
    let v = json_of(&out);
    assert_eq!(v["isError"], true, "{v}");
    assert_eq!(v["structuredContent"]["status"], "denied", "{v}");
    assert!(!Path::new(&d.ws.join("new.txt")).exists(), "SAFE wrote");
    // The Inspector's CLI exits non-zero on an error result.
    assert_ne!(out.status.code(), Some(0));
    // A writer SAFE does not list: the Inspector itself will not call it, and nothing is written.
    let out = inspector(
        &d,
        &["--safe"],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "write_file",
            "--tool-arg",
            "path=new.txt",
            "--tool-arg",
            "content=x",
        ],
    )
    .await;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Tool 'write_file' not found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!Path::new(&d.ws.join("new.txt")).exists(), "SAFE wrote");
}
