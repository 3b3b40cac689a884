//! `spear grant` and `spear exec --grant`: an operator's grant runs exactly its command, in
//! exactly its directory, once; anything else it is shown for does not run (real bwrap).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::process::{Output, Stdio};

use serde_json::Value;
use support::{Dirs, SpearCommands as _};

fn spear(d: &Dirs, args: &[&str]) -> Output {
    d.spear(args)
        .stdin(Stdio::null())
        .output()
        .expect("spear runs")
}

/// `spear grant ARGS`: the token it prints.
fn grant(d: &Dirs, args: &[&str]) -> String {
    let mut words = vec!["grant"];
    words.extend_from_slice(args);
    let out = spear(d, &words);
    assert!(
        out.status.success(),
        "spear grant {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(token.starts_with("spear-grant-1."), "{token}");
    token
}

/// `spear exec --json --grant TOKEN -- ARGV`: its exit status and result.
fn exec_granted(d: &Dirs, token: &str, argv: &[&str]) -> (i32, Value) {
    let mut words = vec!["exec", "--json", "--grant", token, "--"];
    words.extend_from_slice(argv);
    let out = spear(d, &words);
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), v)
}

fn refused_for(v: &Value, failure: &str) {
    assert_eq!(v["status"], "denied", "{v}");
    assert_eq!(v["rule"], "grant_refused", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.contains(failure), "{failure}: {reason}");
}

#[test]
fn a_grant_runs_exactly_its_command_once() {
    let d = Dirs::with(&[("README.md", "hi\n")]);
    // Positive control of the gate: without a grant (and with nobody to ask), ASK runs nothing.
    let out = spear(
        &d,
        &["exec", "--ask", "--json", "--", "touch", "granted.txt"],
    );
    assert_eq!(out.status.code(), Some(126));
    assert!(!d.ws.join("granted.txt").exists());

    let token = grant(&d, &["--", "touch", "granted.txt"]);
    // Shown for another command (one byte differs): refused, and the grant is not used up.
    let (code, v) = exec_granted(&d, &token, &["touch", "granted.txd"]);
    assert_eq!(code, 126);
    refused_for(&v, "another command");
    assert!(!d.ws.join("granted.txd").exists());
    // Its own command runs, once.
    let (code, v) = exec_granted(&d, &token, &["touch", "granted.txt"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["changed_paths"],
        serde_json::json!(["granted.txt"]),
        "{v}"
    );
    assert!(d.ws.join("granted.txt").exists());
    std::fs::remove_file(d.ws.join("granted.txt")).unwrap();
    let (code, v) = exec_granted(&d, &token, &["touch", "granted.txt"]);
    assert_eq!(code, 126);
    refused_for(&v, "already used");
    assert!(!d.ws.join("granted.txt").exists());
    // The key is the user's alone.
    let mode = std::fs::metadata(d.state.join("spear/grant.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // The audit log records the refusals and the run.
    let log = std::fs::read_to_string(d.state.join("spear/audit.jsonl")).unwrap();
    assert_eq!(log.matches("\"grant_refused\"").count(), 2, "{log}");
}

#[test]
fn a_grant_is_for_its_directory_and_dies_with_its_key() {
    let d = Dirs::with(&[("README.md", "hi\n")]);
    std::fs::create_dir(d.ws.join("sub")).unwrap();
    let sub = d.ws.join("sub");
    let token = grant(
        &d,
        &["--cwd", sub.to_str().unwrap(), "--", "touch", "x.txt"],
    );
    // Run from the workspace root, not from sub/: another directory.
    let (code, v) = exec_granted(&d, &token, &["touch", "x.txt"]);
    assert_eq!(code, 126);
    refused_for(&v, "another working directory");
    assert!(!d.ws.join("x.txt").exists() && !sub.join("x.txt").exists());

    // Rotating the key voids it, even in its own directory.
    let out = spear(&d, &["grant", "--rotate"]);
    assert!(out.status.success());
    let out = d
        .spear(&["exec", "--json", "--grant", &token, "--", "touch", "x.txt"])
        .current_dir(&sub)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    refused_for(&v, "does not verify");
    assert!(!sub.join("x.txt").exists());

    // Positive control: a grant made after the rotation runs there.
    let token = grant(
        &d,
        &["--cwd", sub.to_str().unwrap(), "--", "touch", "x.txt"],
    );
    let out = d
        .spear(&["exec", "--json", "--grant", &token, "--", "touch", "x.txt"])
        .current_dir(&sub)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(sub.join("x.txt").exists());
}

#[test]
fn no_grant_for_what_needs_none_or_what_the_mode_refuses() {
    let d = Dirs::with(&[("README.md", "hi\n")]);
    let out = spear(&d, &["grant", "--", "cat", "README.md"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs no grant"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = spear(&d, &["grant", "--", "sudo", "true"]);
    assert_eq!(out.status.code(), Some(126));
    assert!(out.stdout.is_empty());
    // --grant is ASK's: it cannot be combined with another mode.
    let out = spear(&d, &["exec", "--auto", "--grant", "x", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_state_directory_is_not_in_the_sandbox() {
    let d = Dirs::with(&[("README.md", "hi\n")]);
    let _ = grant(&d, &["--", "touch", "y.txt"]);
    let key = d.state.join("spear/grant.key");
    assert!(key.exists());
    let script = format!("cat {} README.md", key.display());
    let out = spear(&d, &["exec", "--auto", "--json", "-c", &script]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Naming the key is refused before anything runs: nothing is read.
    assert_eq!(v["rule"], "spear_state", "{v}");
    assert_eq!(v["stdout"], "", "{v}");
    // Positive control: README.md alone is read.
    let out = spear(&d, &["exec", "--auto", "--json", "-c", "cat README.md"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["stdout"].as_str().unwrap().contains("hi"), "{v}");
}

/// The red-team case `id`'s command, with `{CANARY}` made `canary`.
fn case_command(id: &str, canary: &std::path::Path) -> String {
    let cases = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/redteam-public-cases.jsonl"
    ))
    .unwrap();
    let case: Value = cases
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|c| c["id"] == id)
        .unwrap();
    let input = &case["input"];
    let command = input["command"].as_str().or(input.as_str()).unwrap();
    command.replace("{CANARY}", canary.to_str().unwrap())
}

fn git_init(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let ok = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// APR-04 (rule over-generalisation): an approval is for exactly one argv, never a prefix. A
/// grant for `git stash` does not open for the same command with `-c core.fsmonitor=...` folded
/// in; the over-general command is refused, the canary absent, the grant still good for its own.
#[test]
fn apr_04_a_grant_is_not_a_prefix_rule() {
    let d = Dirs::with(&[("README.md", "hi\n")]);
    git_init(&d.ws);
    let canary = d.path("canary-apr04");
    let attack = case_command("APR-04", &canary);
    assert!(attack.contains("core.fsmonitor"), "{attack}");
    // The case's command with `status` as the approved subcommand's stand-in: `git status`
    // needs no approval in ASK, `git stash` does.
    let attack = attack.replace(" status", " stash");
    let token = grant(&d, &["--", "git", "stash"]);
    let out = spear(&d, &["exec", "--json", "--grant", &token, "-c", &attack]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "denied", "{v}");
    assert!(!canary.exists());
    // The grant runs its own argv (positive control: git itself ran, and says there is nothing
    // to stash yet).
    let (_, v) = exec_granted(&d, &token, &["git", "stash"]);
    assert!(v["rule"].is_null(), "{v}");
    assert!(
        v["stderr"].as_str().unwrap().contains("initial commit"),
        "{v}"
    );
}

/// APR-07 (cross-repository persistence): an approval given in repository A does not carry to
/// repository B, whose configuration runs code.
#[test]
fn apr_07_a_grant_stays_in_its_repository() {
    let d = Dirs::with(&[("README.md", "hi\n")]);
    let (a, b) = (d.ws.join("a"), d.ws.join("b"));
    git_init(&a);
    git_init(&b);
    let canary = d.path("canary-apr07");
    let config = b.join(".git/config");
    let text = format!(
        "{}[core]\n\tfsmonitor = touch {}\n",
        std::fs::read_to_string(&config).unwrap(),
        canary.display()
    );
    std::fs::write(&config, text).unwrap();
    let token = grant(&d, &["--cwd", a.to_str().unwrap(), "--", "git", "stash"]);
    let out = d
        .spear(&["exec", "--json", "--grant", &token, "--", "git", "stash"])
        .current_dir(&b)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    refused_for(&v, "another working directory");
    assert!(!canary.exists());
    // In A, where it was given, it runs (git itself ran: nothing to stash yet).
    let out = d
        .spear(&["exec", "--json", "--grant", &token, "--", "git", "stash"])
        .current_dir(&a)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["rule"].is_null(), "{v}");
    assert!(
        v["stderr"].as_str().unwrap().contains("initial commit"),
        "{v}"
    );
}

/// `spear ARGS` with `env` added to its environment: its exit status and, for `exec --json`, its
/// result.
fn spear_with(d: &Dirs, args: &[String], env: &[(&str, &str)]) -> Output {
    d.spear(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("spear runs")
}

/// One widening of a granted run: the command, the flags and environment of the run, the
/// environment the grant was issued in, and what the refusal names.
struct Row {
    what: &'static str,
    argv: Vec<&'static str>,
    flags: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
    issued_env: Vec<(&'static str, &'static str)>,
    reason: &'static str,
}

/// Issue 31, part 5, at the binary: a grant issued under one configuration runs under no wider
/// one. Each row is what `spear exec --grant` adds (flags, a `--config`, the environment): the
/// grant is refused with `grant_refused` naming what changed, and nothing is written. Positive
/// control per row: issued with the same flags, configuration and environment, the same run is
/// granted, once.
#[test]
#[allow(clippy::too_many_lines, reason = "a table: one row per widening")]
fn a_grant_never_runs_with_more_than_it_was_issued_for() {
    let d = Dirs::with(&[("README.md", "hi\n")]);
    let outside = d.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let write = |name: &str, text: String| {
        let path = d.path(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let config = |name: &str, text: &str| write(name, text.to_owned());
    let touch = vec!["touch", "granted.txt"];
    let rows = vec![
        Row {
            what: "--env of a secret",
            argv: touch.clone(),
            flags: vec!["--env".into(), "APP_TOKEN".into()],
            env: vec![("APP_TOKEN", "s3cr3t-token-value")],
            issued_env: vec![("APP_TOKEN", "s3cr3t-token-value")],
            reason: "the variables passed into the sandbox changed: now APP_TOKEN",
        },
        Row {
            what: "[env] pass",
            argv: touch.clone(),
            flags: vec![
                "--config".into(),
                config("env.toml", "[env]\npass = [\"APP_*\"]\n"),
            ],
            env: vec![("APP_MODE", "dev")],
            issued_env: vec![("APP_MODE", "dev")],
            reason: "now APP_MODE",
        },
        Row {
            what: "another value of a variable passed",
            argv: touch.clone(),
            flags: vec!["--env".into(), "APP_MODE".into()],
            env: vec![("APP_MODE", "prod")],
            issued_env: vec![("APP_MODE", "dev")],
            reason: "another value of a variable passed",
        },
        Row {
            what: "a root outside the workspace",
            argv: touch.clone(),
            flags: vec![
                "--config".into(),
                write(
                    "roots.toml",
                    format!("[workspace]\nroots = [\"{}\"]\n", outside.display()),
                ),
            ],
            env: vec![],
            issued_env: vec![],
            reason: "the workspace roots changed: now",
        },
        Row {
            what: "more memory",
            argv: touch.clone(),
            flags: vec!["--memory".into(), "3G".into()],
            env: vec![],
            issued_env: vec![],
            reason: "the limits changed",
        },
        Row {
            what: "more tasks",
            argv: touch.clone(),
            flags: vec!["--tasks".into(), "512".into()],
            env: vec![],
            issued_env: vec![],
            reason: "the limits changed",
        },
        Row {
            what: "a longer timeout",
            argv: touch.clone(),
            flags: vec!["--timeout".into(), "90".into()],
            env: vec![],
            issued_env: vec![],
            reason: "the limits changed",
        },
        Row {
            what: "[limits] in a --config",
            argv: touch.clone(),
            flags: vec![
                "--config".into(),
                config("limits.toml", "[limits]\ncpu = 12\noutput_cap = \"4M\"\n"),
            ],
            env: vec![],
            issued_env: vec![],
            reason: "the limits changed",
        },
        Row {
            what: "a host path the operator lets commands read",
            argv: touch.clone(),
            flags: vec![
                "--config".into(),
                write(
                    "paths.toml",
                    format!("[paths]\nread = [\"{}\"]\n", outside.display()),
                ),
            ],
            env: vec![],
            issued_env: vec![],
            reason: "other rules for what it may read or write",
        },
        Row {
            what: "rules that protect less",
            argv: touch.clone(),
            flags: vec![
                "--config".into(),
                config("targets.toml", "[targets]\nunprotect = [\".spear/\"]\n"),
            ],
            env: vec![],
            issued_env: vec![],
            reason: "other rules for what it may read or write",
        },
        Row {
            what: "host-run configuration let through without asking",
            argv: touch.clone(),
            flags: vec![
                "--config".into(),
                config(
                    "policy.toml",
                    "[policy]\nallow_host_config = [\"vscode\"]\n",
                ),
            ],
            env: vec![],
            issued_env: vec![],
            reason: "other rules for what it may read or write",
        },
        Row {
            what: "an egress allowance",
            argv: vec!["curl", "--version"],
            flags: vec![
                "--config".into(),
                config("network.toml", "[network]\nallow = [\"203.0.113.0/24\"]\n"),
            ],
            env: vec![],
            issued_env: vec![],
            reason: "the network's egress allowances changed",
        },
    ];
    for r in rows {
        let _ = std::fs::remove_file(d.ws.join("granted.txt"));
        // Issued plainly; run with the row's widening.
        let mut words: Vec<String> = vec!["grant".into(), "--".into()];
        words.extend(r.argv.iter().map(|a| (*a).to_owned()));
        let out = spear_with(&d, &words, &r.issued_env);
        assert!(
            out.status.success(),
            "{}: {}",
            r.what,
            String::from_utf8_lossy(&out.stderr)
        );
        let plain = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        let run = |token: &str| -> (Option<i32>, Value) {
            let mut words: Vec<String> = vec!["exec".into(), "--json".into()];
            words.extend(r.flags.iter().cloned());
            words.extend(["--grant".into(), token.to_owned(), "--".into()]);
            words.extend(r.argv.iter().map(|a| (*a).to_owned()));
            let out = spear_with(&d, &words, &r.env);
            let text = String::from_utf8_lossy(&out.stdout);
            let v: Value = serde_json::from_str(text.trim())
                .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&out.stderr)));
            (out.status.code(), v)
        };
        if r.what == "another value of a variable passed" {
            // Issued with the variable passed: the widening is its value alone.
            let mut words: Vec<String> = vec!["grant".into()];
            words.extend(r.flags.iter().cloned());
            words.push("--".into());
            words.extend(r.argv.iter().map(|a| (*a).to_owned()));
            let out = spear_with(&d, &words, &r.issued_env);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
            let (code, v) = run(&token);
            assert_eq!(code, Some(126), "{}: {v}", r.what);
            refused_for(&v, r.reason);
        } else {
            let (code, v) = run(&plain);
            assert_eq!(code, Some(126), "{}: {v}", r.what);
            refused_for(&v, r.reason);
            assert!(
                !v["reason"].as_str().unwrap().contains("s3cr3t"),
                "{}: a value shown: {v}",
                r.what
            );
        }
        assert!(!d.ws.join("granted.txt").exists(), "{}: written", r.what);
        // Positive control: issued with the same flags and environment, it runs, once.
        let mut words: Vec<String> = vec!["grant".into()];
        words.extend(r.flags.iter().cloned());
        words.push("--".into());
        words.extend(r.argv.iter().map(|a| (*a).to_owned()));
        let out = spear_with(&d, &words, &r.env);
        assert!(
            out.status.success(),
            "{}: {}",
            r.what,
            String::from_utf8_lossy(&out.stderr)
        );
        let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        let (code, v) = run(&token);
        assert_eq!(code, Some(0), "{}: the control: {v}", r.what);
        if r.argv == touch {
            assert!(
                d.ws.join("granted.txt").exists(),
                "{}: the control wrote",
                r.what
            );
            std::fs::remove_file(d.ws.join("granted.txt")).unwrap();
        }
        let (code, v) = run(&token);
        assert_eq!(code, Some(126), "{}: {v}", r.what);
        refused_for(&v, "already used");
    }
}
