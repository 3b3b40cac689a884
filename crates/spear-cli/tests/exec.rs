//! `spear exec` and `spear doctor` as users call them: exit statuses, the JSON result, refusals
//! that spawn nothing, and a real agent workload (`cargo test`) in the sandbox.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use support::{Dirs, SpearCommands as _};

fn spear(args: &[&str], d: &Dirs) -> Output {
    d.spear(args)
        .env("OPENAI_API_KEY", "sk-cli-secret-should-not-leak")
        .stdin(Stdio::null())
        .output()
        .expect("spear runs")
}

fn dirs() -> Dirs {
    Dirs::with(&[("README.md", "readme\n")])
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn runs_a_script_and_passes_its_exit_status() {
    let d = dirs();
    let out = spear(
        &[
            "exec",
            "--auto",
            "-c",
            "cat README.md; echo err >&2; exit 3",
        ],
        &d,
    );
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "readme\n");
    assert!(text(&out.stderr).starts_with("err\n"));
}

/// `spear exec` prints a command's output as every client gets it: an OSC 52 clipboard write, a
/// CSI and a C1 CSI shown escaped, with one line on stderr saying so; `--json` counts them in
/// `escaped`. Positive control: the same output without them is printed byte for byte, with no
/// notice, and `escaped` is `null`.
#[test]
fn control_sequences_in_the_output_are_shown_escaped() {
    let d = Dirs::with(&[
        (
            "hostile.txt",
            "x\u{1b}]52;c;aGVsbG8=\u{7}y\u{1b}[2Jz\u{9b}31mw\r\n",
        ),
        ("plain.txt", "x]52;c;aGVsbG8=y[2Jz31mw\r\n"),
    ]);
    let out = spear(&["exec", "--", "cat", "hostile.txt"], &d);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "x\\u{1b}]52;c;aGVsbG8=\\u{7}y\\u{1b}[2Jz\\u{9b}31mw\r\n"
    );
    assert!(
        !out.stdout.contains(&0x1b),
        "no ESC byte reaches the terminal"
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("control characters were shown escaped") && err.contains("4 in stdout"),
        "{err}"
    );
    let out = spear(&["exec", "--json", "--", "cat", "hostile.txt"], &d);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["escaped"], serde_json::json!({"stdout": 4}), "{v}");
    // Positive control.
    let out = spear(&["exec", "--", "cat", "plain.txt"], &d);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(out.stdout, b"x]52;c;aGVsbG8=y[2Jz31mw\r\n");
    assert!(
        !text(&out.stderr).contains("escaped"),
        "{}",
        text(&out.stderr)
    );
    let out = spear(&["exec", "--json", "--", "cat", "plain.txt"], &d);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["escaped"].is_null(), "{v}");
}

#[test]
fn json_result_has_the_documented_fields() {
    let d = dirs();
    let out = spear(
        &[
            "exec",
            "--auto",
            "--json",
            "-c",
            "echo $OPENAI_API_KEY; touch new.txt",
        ],
        &d,
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut documented = spear_core::ToolResult::KEYS.to_vec();
    documented.sort_unstable();
    assert_eq!(keys, documented);
    assert_eq!(v["status"], "ok");
    assert_eq!(
        v["stdout"], "\n",
        "the host's secret did not reach the sandbox"
    );
    assert!(d.ws.join("new.txt").exists());
}

#[test]
fn safe_refuses_a_write_and_spawns_nothing() {
    let d = dirs();
    let out = spear(&["exec", "--safe", "--", "touch", "refused.txt"], &d);
    assert_eq!(code(&out), 126, "{}", text(&out.stderr));
    assert!(!d.ws.join("refused.txt").exists());
    assert!(
        text(&out.stderr).contains("--ask"),
        "says what to do: {}",
        text(&out.stderr)
    );
    // Positive control: AUTO runs the same argv.
    let out = spear(&["exec", "--auto", "--", "touch", "refused.txt"], &d);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(d.ws.join("refused.txt").exists());
}

#[test]
fn ask_without_a_terminal_is_cancelled() {
    let d = dirs();
    let out = spear(&["exec", "--ask", "-c", "touch asked.txt"], &d);
    assert_eq!(code(&out), 126, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cancelled"),
        "{}",
        text(&out.stderr)
    );
    assert!(!d.ws.join("asked.txt").exists());
}

#[test]
fn timeout_not_found_and_read_only_safe() {
    let d = dirs();
    let out = spear(&["exec", "--auto", "--timeout", "1", "-c", "sleep 30"], &d);
    assert_eq!(code(&out), 124, "{}", text(&out.stderr));
    let out = spear(&["exec", "--auto", "--", "spear-no-such-program"], &d);
    assert_eq!(code(&out), 127, "{}", text(&out.stderr));
    let out = spear(&["exec", "--safe", "--", "cat", "README.md"], &d);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "readme\n");
}

#[test]
fn doctor_reports_every_mechanism() {
    let d = dirs();
    let out = spear(&["doctor", "--json"], &d);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ready"], true, "{v:#}");
    assert_eq!(code(&out), 0);
    let names: Vec<&str> = v["mechanisms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for name in [
        "bwrap",
        "user namespaces",
        "seccomp",
        "pidfd",
        "cgroup backend",
        "landlock",
        "network path",
        "network preflight",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    // Every guarantee bit, and whether this host can give it; the confinement bits it gives
    // (it is ready), with what gives them.
    let rows = v["guarantees"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        spear_core::Guarantee::ALL.map(spear_core::Guarantee::as_str),
        "{v:#}"
    );
    for g in rows {
        assert!(g["can_give"].is_boolean() && g["detail"].is_string(), "{g}");
    }
    for name in ["process_boundary", "read_boundary", "network_closed"] {
        let row = rows.iter().find(|g| g["name"] == name).unwrap();
        assert_eq!(row["can_give"], true, "{row}");
        assert!(
            row["detail"].as_str().unwrap().contains("bubblewrap"),
            "{row}"
        );
    }
    let out = spear(&["doctor"], &d);
    assert!(text(&out.stdout).contains("spear can confine commands"));
    assert!(text(&out.stdout).contains("guarantees this host can give"));
    for name in spear_core::Guarantee::ALL {
        assert!(text(&out.stdout).contains(name.as_str()), "{name}");
    }
    // With the backend delegated, the host cannot give resource_limits, and doctor says why.
    let out = d
        .spear(&["doctor", "--json"])
        .env("SPEAR_RESOURCE_CONTROL", "delegated")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = v["guarantees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "resource_limits")
        .unwrap()
        .clone();
    assert_eq!(row["can_give"], false, "{row}");
    assert!(
        row["detail"].as_str().unwrap().contains("delegated"),
        "{row}"
    );
}

/// `spear exec --json` with the operator configuration `config` (none when `None`), the cgroup
/// backend delegated or the host's, running `touch NAME`.
fn exec_touch(d: &Dirs, config: Option<&Path>, delegated: bool, name: &str) -> serde_json::Value {
    let script = format!("touch {name}");
    let mut args = vec!["exec", "--auto", "--json"];
    if let Some(c) = config {
        args.extend(["--config", c.to_str().unwrap()]);
    }
    args.extend(["-c", &script]);
    let mut cmd = d.spear(&args);
    if delegated {
        cmd.env("SPEAR_RESOURCE_CONTROL", "delegated");
    } else {
        cmd.env_remove("SPEAR_RESOURCE_CONTROL");
    }
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", text(&out.stdout), text(&out.stderr)))
}

fn enforced(v: &serde_json::Value) -> Vec<&str> {
    v["guarantees"]["enforced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect()
}

#[test]
fn an_operator_requirement_reaches_every_command() {
    let d = dirs();
    let config = d.path("config.toml");
    std::fs::write(&config, "[sandbox]\nrequire = [\"resource_limits\"]\n").unwrap();
    // Required, and the host (delegated) cannot give it: refused before anything is spawned.
    let v = exec_touch(&d, Some(&config), true, "refused");
    assert_eq!(v["status"], "failed", "{v:#}");
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.contains("requires `resource_limits`") && reason.contains("`delegated`"),
        "{reason}"
    );
    assert_eq!(v["guarantees"], serde_json::Value::Null);
    assert!(!d.ws.join("refused").exists());
    // Positive control: without the requirement the same host runs it, and says what it lacked.
    let v = exec_touch(&d, None, true, "ran");
    assert_eq!(v["status"], "ok", "{v:#}");
    assert!(d.ws.join("ran").exists());
    assert_eq!(v["guarantees"]["limits"], "delegated");
    let bits = enforced(&v);
    assert!(!bits.contains(&"resource_limits"), "{bits:?}");
    for bit in [
        "process_boundary",
        "write_boundary",
        "read_boundary",
        "environment_scrubbed",
        "network_closed",
        "target_policy",
    ] {
        assert!(bits.contains(&bit), "{bit} in {bits:?}");
    }
    // With the host's own backend the requirement is met.
    let v = exec_touch(&d, Some(&config), false, "limited");
    assert_eq!(v["status"], "ok", "{v:#}");
    assert!(d.ws.join("limited").exists());
    assert!(enforced(&v).contains(&"resource_limits"), "{v:#}");
    // An unknown name is a configuration error naming the known ones; nothing runs.
    std::fs::write(&config, "[sandbox]\nrequire = [\"limits\"]\n").unwrap();
    let out = d
        .spear(&[
            "exec",
            "--auto",
            "--config",
            config.to_str().unwrap(),
            "-c",
            "touch bad",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("unknown guarantee \"limits\"")
            && text(&out.stderr).contains("resource_limits"),
        "{}",
        text(&out.stderr)
    );
    assert!(!d.ws.join("bad").exists());
}

#[test]
fn a_workspace_requirement_adds_to_the_operators() {
    let d = dirs();
    std::fs::create_dir_all(d.ws.join(".spear")).unwrap();
    std::fs::write(
        d.ws.join(".spear/policy.toml"),
        "[sandbox]\nrequire = [\"resource_limits\"]\n",
    )
    .unwrap();
    let v = exec_touch(&d, None, true, "refused");
    assert_eq!(v["status"], "failed", "{v:#}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("requires `resource_limits`")
    );
    assert!(!d.ws.join("refused").exists());
    // Positive control: the host's backend gives it.
    let v = exec_touch(&d, None, false, "ran");
    assert_eq!(v["status"], "ok", "{v:#}");
    assert!(d.ws.join("ran").exists());
}

/// The real agent workload: `cargo test` of a small crate in the workspace, offline, with its
/// dependency taken from the operator's cargo home (bound read-only).
#[test]
fn cargo_test_runs_in_the_sandbox() {
    let cargo_works = Command::new("cargo")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !cargo_works {
        // The unprivileged test user has no Rust toolchain of its own; the root run covers this.
        eprintln!("cargo is not usable by this user: the workload is exercised in the root run");
        return;
    }
    let d = dirs();
    std::fs::create_dir_all(d.ws.join("demo/src")).unwrap();
    std::fs::write(
        d.ws.join("demo/Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nthiserror = \"2\"\n",
    )
    .unwrap();
    std::fs::write(
        d.ws.join("demo/src/lib.rs"),
        "#[derive(Debug, thiserror::Error)]\n#[error(\"boom {0}\")]\npub struct Boom(pub u8);\n\n#[test]\nfn it_works() { assert_eq!(Boom(7).to_string(), \"boom 7\"); }\n",
    )
    .unwrap();
    let real_home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_spear"))
        .args([
            "exec",
            "--auto",
            "--timeout",
            "300",
            "-c",
            "cargo test --offline",
        ])
        .current_dir(d.ws.join("demo"))
        .env_remove("CARGO_TARGET_DIR")
        .env("HOME", &real_home)
        // The toolchain is the real home's; spear's state is the test's own.
        .env("XDG_STATE_HOME", &d.state)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(
        code(&out),
        0,
        "stdout: {}\nstderr: {stderr}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stdout).contains("test it_works ... ok"),
        "{}",
        text(&out.stdout)
    );
    assert!(d.ws.join("demo/target").exists());
}

/// Runs `spear exec ARGS` on a pseudo-terminal (util-linux `script`), typing `answer`.
fn on_a_terminal(args: &str, d: &Dirs, answer: &str) -> Output {
    let command = format!("{} exec {args}", env!("CARGO_BIN_EXE_spear"));
    let mut child = d
        .command("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), answer.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn ask_confirms_on_the_terminal_and_shows_what_runs() {
    let d = dirs();
    let out = on_a_terminal("--ask -c 'touch approved.txt'", &d, "y\n");
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("Run it? [y/N]"));
    assert!(d.ws.join("approved.txt").exists());

    let out = on_a_terminal("--ask -c 'touch declined.txt'", &d, "n\n");
    assert_eq!(code(&out), 126, "{}", text(&out.stdout));
    assert!(!d.ws.join("declined.txt").exists());

    // A right-to-left override is shown escaped, so what is approved reads as what runs.
    let out = on_a_terminal("--ask -c \"touch 'a\u{202e}txt.exe'\"", &d, "n\n");
    let shown = text(&out.stdout);
    assert!(shown.contains("\\u{202e}"), "{shown}");
    assert!(!shown.contains('\u{202e}'), "{shown}");

    // LOG-01: a bearer token is not put on the screen; the rest of the command is.
    let out = on_a_terminal(
        "--ask -c \"curl -sH 'Authorization: Bearer ghp_0123456789abcdefghijklmnopqrstuvwxyzAB' http://203.0.113.10:8080/\"",
        &d,
        "n\n",
    );
    let all = text(&out.stdout);
    // The refusal after the answer does not name the token either.
    assert!(all.contains("declined"), "{all}");
    assert!(!all.contains("ghp_0123"), "{all}");
    let shown = all.split("Run it?").next().unwrap();
    assert!(
        shown.contains("Authorization: Bearer [REDACTED]"),
        "{shown}"
    );
    assert!(!shown.contains("ghp_0123"), "{shown}");
    assert!(shown.contains("203.0.113.10:8080"), "{shown}");
}

/// Two `spear exec` processes on one workspace at once, each with its own staging: nothing of
/// either is lost. A file both change is left as the one that committed first has it (the other
/// finds it changed since it started), and the other's version is kept aside and named.
#[test]
fn two_spear_processes_on_one_workspace_lose_nothing() {
    let d = dirs();
    std::fs::write(d.ws.join("shared.txt"), "start\n").unwrap();
    let start = |script: &str| {
        d.spear(&["exec", "--auto", "--json", "-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let slow = start("echo slow > slow.txt; sleep 2; echo slow >> shared.txt");
    std::thread::sleep(std::time::Duration::from_millis(800));
    let fast = start("echo fast > fast.txt; echo fast >> shared.txt");
    let fast = fast.wait_with_output().unwrap();
    let slow = slow.wait_with_output().unwrap();
    assert!(fast.status.success(), "{}", text(&fast.stderr));
    assert_eq!(
        std::fs::read_to_string(d.ws.join("fast.txt")).unwrap(),
        "fast\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.ws.join("slow.txt")).unwrap(),
        "slow\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.ws.join("shared.txt")).unwrap(),
        "start\nfast\n",
        "the first commit stands"
    );
    let json: serde_json::Value = serde_json::from_slice(&slow.stdout).unwrap();
    let reason = json["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("changed on the host while the command ran")
            && reason.contains("shared.txt"),
        "{json}"
    );
    let kept = reason
        .split("kept in ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap()
        .trim();
    let kept = std::fs::read_to_string(Path::new(kept).join("0/shared.txt")).unwrap();
    assert!(
        kept.ends_with("slow\n"),
        "the other version is kept: {kept:?}"
    );
}
