//! The audit-log cases of the public red-team file, end to end: each command goes through the
//! router (and the real sandbox) and the log is read back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, Opts, router};
use serde_json::{Value, json};
use spear_core::ExecutionMode;

const CASES: &str = include_str!("../../../testdata/redteam-public-cases.jsonl");

const PEM: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\n\
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n\
QyNTUxOQAAACDx7QvYcAm9B8cQpQn9fK3kq0dZ3q8oR1bV5m2mXnK0aQAAAJgQ9wLxEPcC\n\
-----END OPENSSH PRIVATE KEY-----\n";

/// Every 5-character window of `secret` that is not common text.
fn windows(secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    chars
        .windows(5)
        .map(|w| w.iter().collect::<String>())
        .filter(|w| w.chars().all(char::is_alphanumeric))
        .collect()
}

#[test]
fn every_public_audit_case() {
    let cases: Vec<Value> = CASES
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|c: &Value| c["target"] == "audit-log")
        .collect();
    assert!(cases.len() >= 3);
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let env = Env::new();
        env.write("test_key.pem", PEM);
        let command = match &case["input"] {
            Value::String(s) => s.clone(),
            other => other["command"].as_str().unwrap().to_owned(),
        };
        // AUTO: the command runs (or is refused) without anyone to ask; the log is what matters.
        let r = router(&env, Opts::mode(ExecutionMode::Auto));
        let e = r.call("terminal", json!({ "command": command }));
        let log = std::fs::read_to_string(env.audit_path()).unwrap();
        // One record, and it parses: a forged line inside the command is not a record.
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 1, "{id}: {log}");
        let record: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(record["event"], "tool_call", "{id}");
        assert_eq!(record["tool"], "terminal");
        // Neither the token nor the key nor the output reaches it. The session and turn ids are
        // random hex, which can hold a short window of the token's digits by chance (`45678`):
        // they are left out of the search.
        let mut searched = log.clone();
        for field in ["session", "turn"] {
            if let Some(v) = record[field].as_str() {
                searched = searched.replace(v, "");
            }
        }
        for secret in ["ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", PEM] {
            for w in windows(secret) {
                assert!(!searched.contains(&w), "{id}: `{w}` of a secret in {log}");
            }
        }
        assert!(!log.contains("rm -rf"), "{id}: no command text: {log}");
        // Positive control: the secret was really in play (the key printed by LOG-04's `cat`).
        if id == "LOG-04" {
            assert!(e.result.stdout.contains("BEGIN OPENSSH"), "{e:?}");
        }
    }
}
