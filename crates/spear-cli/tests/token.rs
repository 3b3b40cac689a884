//! `spear token add|list|revoke`, run as the operator runs them: a value printed once and never
//! stored, names unique, concurrent issues all kept, and the store out of every sandbox's view.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::Value;
use support::{Dirs, SpearCommands as _};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn spear(d: &Dirs, args: &[&str]) -> Output {
    d.spear(args).stdin(Stdio::null()).output().unwrap()
}

/// `spear token add ARGS`: the value it printed (its whole stdout, one line) and its stderr.
fn add(d: &Dirs, args: &[&str]) -> (String, String) {
    let mut words = vec!["token", "add"];
    words.extend_from_slice(args);
    let out = spear(d, &words);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let value = stdout.strip_suffix('\n').unwrap().to_owned();
    assert!(!value.contains('\n'), "one line: {stdout:?}");
    assert!(value.starts_with("spear_") && value.len() == 49, "{value}");
    (value, text(&out.stderr))
}

fn list_json(d: &Dirs) -> Vec<Value> {
    let out = spear(d, &["token", "list", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn tokens_file(d: &Dirs) -> std::path::PathBuf {
    d.state.join("spear/tokens.json")
}

#[test]
fn add_list_revoke_round_trip() {
    let d = Dirs::with(&[("README.md", "hi\n")]);
    let ws = d.ws.to_str().unwrap();
    // No store yet: an empty list.
    assert_eq!(list_json(&d), Vec::<Value>::new());
    let (value, said) = add(
        &d,
        &[
            "ci",
            "--workspace",
            ws,
            "--mode",
            "ask",
            "--no-network",
            "--sessions",
            "4",
            "--expires",
            "7d",
        ],
    );
    for grant in [
        ws,
        "mode ask, no network",
        "at most 4",
        "until 20",
        "shown once",
    ] {
        assert!(said.contains(grant), "{grant}: {said}");
    }
    assert!(
        !said.contains(&value),
        "the value is on stdout alone: {said}"
    );
    let (other, _) = add(&d, &["open"]);
    assert_ne!(value, other);

    // The list: every token, what it grants, and never a value.
    let out = spear(&d, &["token", "list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert!(lines[0].starts_with("NAME"), "{table}");
    assert!(
        lines[1].starts_with("ci ") && lines[1].contains(ws),
        "{table}"
    );
    assert!(lines[1].contains("ask, no network"), "{table}");
    assert!(
        lines[2].starts_with("open ") && lines[2].contains("never"),
        "{table}"
    );
    let json = list_json(&d);
    assert_eq!(json.len(), 2);
    assert_eq!(json[0]["name"], "ci");
    assert_eq!(json[0]["workspaces"], serde_json::json!([ws]));
    assert_eq!(json[0]["mode"], "ask");
    assert_eq!(json[0]["no_network"], true);
    assert_eq!(json[0]["sessions"], 4);
    assert_eq!(json[0]["expired"], false);
    assert!(json[0]["expires"].as_str().unwrap().ends_with('Z'));
    assert_eq!(json[1]["mode"], Value::Null);
    assert_eq!(json[1]["expires"], Value::Null);
    let shown = format!("{table}{}", serde_json::Value::Array(json));
    for v in [&value, &other] {
        assert!(!shown.contains(&v[6..]), "{shown}");
    }
    // The store: the user's alone, with no value in it.
    let file = tokens_file(&d);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(
        stored.contains("\"ci\"") && stored.contains("sha256"),
        "{stored}"
    );
    assert!(!stored.contains(&value[6..]) && !stored.contains(&other[6..]));

    // Revoked: gone from the list; a second revocation names the mistake.
    let out = spear(&d, &["token", "revoke", "ci"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("revoked"));
    let json = list_json(&d);
    assert_eq!(json.len(), 1);
    assert_eq!(json[0]["name"], "open");
    let out = spear(&d, &["token", "revoke", "ci"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no token is named ci"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_duplicate_name_and_bad_usage_are_refused_with_the_reason() {
    let d = Dirs::with(&[]);
    let (_value, _) = add(&d, &["ci"]);
    let before = std::fs::read(tokens_file(&d)).unwrap();
    let missing = d.path("missing");
    for (args, says) in [
        (vec!["ci"], "already exists"),
        (vec!["a b"], "cannot name a token"),
        (vec!["x", "--expires", "7"], "30m, 12h or 7d"),
        (vec!["x", "--expires", "0d"], "no time at all"),
        (vec!["x", "--mode", "yolo"], "safe, ask or auto"),
        (vec!["x", "--sessions", "0"], "--sessions 1"),
        (
            vec!["x", "--workspace", missing.to_str().unwrap()],
            "the workspace",
        ),
    ] {
        let mut words = vec!["token", "add"];
        words.extend_from_slice(&args);
        let out = spear(&d, &words);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: no value printed");
        let err = text(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read(tokens_file(&d)).unwrap(),
        before,
        "the store is unchanged"
    );
    assert_eq!(spear(&d, &["token"]).status.code(), Some(2));
}

#[test]
fn concurrent_adds_both_land() {
    let d = Dirs::with(&[]);
    let mut values = Vec::new();
    for round in 0..4 {
        let names = [format!("a{round}"), format!("b{round}")];
        let children: Vec<_> = names
            .iter()
            .map(|name| {
                d.spear(&["token", "add", name])
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
            values.push(text(&out.stdout).trim().to_owned());
        }
    }
    let json = list_json(&d);
    let mut names: Vec<&str> = json.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"]);
    values.sort();
    values.dedup();
    assert_eq!(values.len(), 8, "eight different values");
}

/// `spear ARGS` with the state directory at `state`.
fn spear_with_state(d: &Dirs, state: &Path, args: &[&str]) -> Output {
    d.spear(args)
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The store is in spear's state directory, which no sandbox sees: not by its name (refused
/// before anything runs), not by a name the classifier cannot read, not by a search, even where
/// the operator let commands read the directory that holds it.
#[test]
fn a_sandboxed_command_cannot_read_the_store() {
    let d = Dirs::with(&[("README.md", "hi\n")]);
    let shared = d.path("shared");
    std::fs::create_dir_all(shared.join("state")).unwrap();
    std::fs::write(shared.join("beside.txt"), "beside\n").unwrap();
    let config = d.home.join(".config/spear");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[paths]\nread = [\"{}\"]\n", shared.display()),
    )
    .unwrap();
    let state = shared.join("state");
    let out = spear_with_state(&d, &state, &["token", "add", "ci"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value = text(&out.stdout).trim().to_owned();
    // Positive control: the file is there on the host, the store of that token, without its
    // value; and a file beside the state directory is readable in the sandbox.
    let file = state.join("spear/tokens.json");
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(
        stored.contains("\"ci\"") && stored.contains("sha256"),
        "{stored}"
    );
    assert!(!stored.contains(&value[6..]));
    let beside = shared.join("beside.txt");
    let out = spear_with_state(
        &d,
        &state,
        &["exec", "--auto", "--", "cat", beside.to_str().unwrap()],
    );
    assert_eq!(text(&out.stdout), "beside\n", "{}", text(&out.stderr));

    // Named: refused before anything runs.
    let out = spear_with_state(
        &d,
        &state,
        &[
            "exec",
            "--auto",
            "--json",
            "--",
            "cat",
            file.to_str().unwrap(),
        ],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rule"], "spear_state", "{v}");
    assert_eq!(v["stdout"], "", "{v}");
    // Spelled so that no analysis sees the name, and searched for: not there.
    let script = format!(
        "s={}/sta; cat \"${{s}}te/spear/tokens.json\"; find {}; grep -r sha256 {}",
        shared.display(),
        shared.display(),
        shared.display()
    );
    let out = spear_with_state(&d, &state, &["exec", "--auto", "--json", "-c", &script]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // It ran: the sandbox, not the analysis, keeps the file out of sight.
    assert!(v["rule"].is_null(), "{v}");
    assert!(
        v["stderr"].as_str().unwrap().contains("No such file"),
        "{v}"
    );
    assert!(v["stdout"].as_str().unwrap().contains("beside.txt"), "{v}");
    let seen = format!("{}{}", v["stdout"], v["stderr"]);
    assert!(!seen.contains("sha256\""), "{v}");
    assert!(!v["stdout"].as_str().unwrap().contains("tokens"), "{v}");
    assert!(!seen.contains(&value[6..]), "{v}");
    assert!(file.exists(), "the host still has it");
}
