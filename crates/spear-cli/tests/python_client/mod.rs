//! What the tests that drive `spear mcp` with the Python MCP SDK share (the pinned `mcp` of
//! scripts/setup-test-clients.sh, run by `tests/mcp_python/client.py`): the two protocol
//! generations, a server's directories and its run in the client's config, running the client,
//! and the checks every result must pass.
//!
//! The clients are found at /opt/spear-test-clients (or `$SPEAR_TEST_CLIENTS`); without them
//! every test fails and says to run scripts/setup-test-clients.sh.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::Dirs;

/// The client, written next to each test's config (so the source tree needs to be neither
/// readable by the unprivileged user nor written with `__pycache__`).
pub const CLIENT: &str = include_str!("../mcp_python/client.py");

/// The fields every result envelope carries besides the result's own
/// ([`spear_core::ToolResult::KEYS`]); `output_ref`, `stderr_ref`, `job` and `turn_stopped` come
/// only when they apply.
pub const ENVELOPE: [&str; 1] = ["tool"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    Legacy,
    Modern,
}

pub use Generation::{Legacy, Modern};

impl Generation {
    pub fn name(self) -> &'static str {
        match self {
            Legacy => "legacy",
            Modern => "modern",
        }
    }

    pub fn protocol(self) -> &'static str {
        match self {
            Legacy => "2025-11-25",
            Modern => "2026-07-28",
        }
    }
}

pub const BOTH: [Generation; 2] = [Legacy, Modern];

/// The venv python of the pinned clients; a missing install fails the test (never skips it).
pub fn python() -> PathBuf {
    let dir = std::env::var_os("SPEAR_TEST_CLIENTS")
        .map_or_else(|| PathBuf::from("/opt/spear-test-clients"), PathBuf::from);
    let py = dir.join("bin/python");
    assert!(
        py.is_file(),
        "the pinned MCP test clients are missing ({} does not exist): run \
         scripts/setup-test-clients.sh once (as root it installs into /opt/spear-test-clients; \
         elsewhere set SPEAR_TEST_CLIENTS to the directory it installed into)",
        py.display()
    );
    py
}

/// One server's workspace, HOME and state directory, and the generation its client speaks.
pub struct Server {
    pub generation: Generation,
    pub dirs: Dirs,
}

impl Server {
    pub fn new(generation: Generation) -> Self {
        Server {
            generation,
            dirs: Dirs::with(&[("README.md", "readme\n")]),
        }
    }

    /// The run's entry of the client's config: this server with `flags`, plus `extra`.
    pub fn run(&self, flags: &[&str], extra: Value) -> Value {
        let mut env = json!({
            "HOME": self.dirs.home,
            "XDG_STATE_HOME": self.dirs.state,
        });
        if let Some(tmp) = std::env::var_os("TMPDIR") {
            env["TMPDIR"] = json!(tmp.to_string_lossy());
        }
        let mut run = json!({
            "generation": self.generation.name(),
            "spear": env!("CARGO_BIN_EXE_spear"),
            "workspace": self.dirs.ws,
            "server_args": flags,
            "env": env,
        });
        let Value::Object(extra) = extra else {
            panic!("a run's extra is an object: {extra}")
        };
        for (k, v) in extra {
            run[k] = v;
        }
        run
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dirs.ws.join(name)
    }
}

/// Runs `scenario` with `runs` in one Python process and returns each run's result, checked to
/// be on its generation's protocol. Fails with the client's whole output on any error.
pub fn client(scenario: &str, runs: &[Value]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("client.py");
    let config = dir.path().join("config.json");
    let out_path = dir.path().join("stdout");
    let err_path = dir.path().join("stderr");
    std::fs::write(&script, CLIENT).unwrap();
    std::fs::write(
        &config,
        serde_json::to_vec(&json!({"scenario": scenario, "runs": runs})).unwrap(),
    )
    .unwrap();
    let mut child = Command::new(python())
        .arg("-B")
        .arg(&script)
        .arg(&config)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("the test client's python starts");
    // The client bounds every wait itself; this is the backstop.
    let deadline = Instant::now() + Duration::from_secs(150);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the {scenario} client did not finish in 150 s\nstderr:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap();
    let stderr = std::fs::read_to_string(&err_path).unwrap();
    let last = stdout.lines().last().unwrap_or("");
    let parsed: Value = serde_json::from_str(last).unwrap_or(Value::Null);
    assert!(
        status.success() && parsed.get("runs").is_some(),
        "the {scenario} client failed ({status}):\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let results = parsed["runs"].as_array().unwrap().clone();
    for (run, result) in runs.iter().zip(&results) {
        let generation = if run["generation"] == "legacy" {
            Legacy
        } else {
            Modern
        };
        assert_eq!(
            result["protocol"],
            generation.protocol(),
            "{scenario}: negotiated protocol: {result}"
        );
    }
    results
}

/// Asserts that one call's answer is a tool result (not a protocol error) with the whole
/// envelope as structured content, `isError` exactly when the status is not ok, and a text block
/// that starts with the tool and its status. Returns the structured content.
pub fn envelope<'a>(entry: &'a Value, tool: &str) -> &'a Value {
    assert!(
        entry.get("protocol_error").is_none(),
        "a protocol error, not a tool result: {entry}"
    );
    let s = &entry["structured"];
    assert!(s.is_object(), "no structuredContent: {entry}");
    for key in spear_core::ToolResult::KEYS.iter().chain(&ENVELOPE) {
        assert!(s.get(key).is_some(), "`{key}` missing: {entry}");
    }
    assert_eq!(s["tool"], tool, "{entry}");
    let status = s["status"].as_str().unwrap();
    assert_eq!(
        entry["is_error"].as_bool(),
        Some(status != "ok"),
        "isError against status: {entry}"
    );
    let text = entry["text"][0].as_str().unwrap_or("");
    assert!(
        text.starts_with(&format!("{tool}: {status}")),
        "text block: {entry}"
    );
    s
}

/// The calls' entries of a `calls` run, with each one's envelope checked.
pub fn results(run: &Value) -> &Vec<Value> {
    let results = run["results"].as_array().unwrap();
    for entry in results {
        envelope(entry, entry["tool"].as_str().unwrap());
    }
    results
}

pub fn status(entry: &Value) -> &str {
    entry["structured"]["status"].as_str().unwrap_or("")
}

pub fn reason(entry: &Value) -> &str {
    entry["structured"]["reason"].as_str().unwrap_or("")
}

/// The rule that refused the call (`""` when none did).
pub fn rule(entry: &Value) -> &str {
    entry["structured"]["rule"].as_str().unwrap_or("")
}

pub fn stdout(entry: &Value) -> &str {
    entry["structured"]["stdout"].as_str().unwrap_or("")
}

pub fn call(tool: &str, args: Value) -> Value {
    let mut call = json!({ "tool": tool });
    call["args"] = args;
    call
}

pub fn answered(tool: &str, args: Value, answer: &str) -> Value {
    let mut call = call(tool, args);
    call["answer"] = json!(answer);
    call
}
