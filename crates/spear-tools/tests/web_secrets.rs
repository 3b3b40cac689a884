//! Issue 31, part 8, through the router against the hermetic test network: run inside
//! `scripts/test-host.sh run cargo test -p spear-tools --test web_secrets` (as spear-test:
//! scripts/test-unprivileged.sh); outside it every test fails, saying so.
//!
//! A known secret (a secret-looking variable of spear's environment) in what `fetch_url` or
//! `search_internet` would send, in every encoding (as is, in the path, in the host name,
//! percent-encoded once and twice, `+` for spaces, base64 standard and URL-safe at each
//! alignment, hex), is refused in SAFE and AUTO and asked in ASK; the web hosts' request log shows
//! that a refused request never arrived, and every row's positive control (the same request with
//! a value spear does not know) arrives. The result, the question and the audit record show the
//! secret redacted; an approved request goes out, and its redirect to another URL carrying the
//! secret does not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ffi::OsString;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use common::{Answer, Env, Opts, router};
use serde_json::{Value, json};
use spear_core::ExecutionMode::{Ask, Auto, Safe};
use spear_core::known_secrets::KnownSecrets;
use spear_core::{RefusalRule, ToolStatus};
use spear_policy::Confirmation;
use spear_policy::web::{SearchSettings, WebSettings};
use spear_testkit::net::{encode, marker, redirect, requests_with};
use spear_tools::{ToolResultEnvelope, WebPair};

/// The secret of most rows: known by its variable's name and by its shape, and a valid host-name
/// label once in lower case.
const SECRET: &str = "sEcr3tV4lu3Xq9Zk2Lm7Pw";
/// The same shape, under no variable spear knows: the positive control.
const CONTROL: &str = "cOntr0lV4lu3Xq9Zk2Lm7Pw";
/// A passphrase, for `+` as a space.
const PHRASE: &str = "correct horse battery staple 42";

/// The pair of a session whose environment holds `vars`.
fn pair(vars: &[(&str, &str)]) -> WebPair {
    let env: Vec<(OsString, OsString)> = vars
        .iter()
        .map(|(n, v)| ((*n).into(), (*v).into()))
        .collect();
    WebPair::from_settings(&WebSettings::default()).with_environment(&env)
}

fn known(value: &str) -> KnownSecrets {
    let mut k = KnownSecrets::new();
    k.add("v", value, spear_core::known_secrets::Origin::Environment);
    k
}

fn setup() -> Env {
    spear_testkit::require_test_network!();
    Env::new()
}

fn wire(e: &ToolResultEnvelope) -> Value {
    serde_json::to_value(e).unwrap()
}

/// Each byte of `v` as `each` writes it, joined.
fn bytes_as(v: &str, each: impl Fn(u8) -> String) -> String {
    v.bytes().map(each).collect::<Vec<_>>().concat()
}

/// A URL carrying a value (and a marker no other request holds).
type Carry = fn(&str, &str) -> String;

/// Each row: what it shows, the variable and its value, and how the URL carries it.
fn rows() -> Vec<(&'static str, &'static str, &'static str, Carry)> {
    vec![
        ("in the query, as is", "APP_SESSION_KEY", SECRET, |v, m| {
            format!("http://public.test/echo?body=ok&m={m}&k={v}")
        }),
        ("in the path", "APP_SESSION_KEY", SECRET, |v, m| {
            format!("http://public.test/echo/{v}?body=ok&m={m}")
        }),
        (
            "in the host name, lower case",
            "APP_SESSION_KEY",
            SECRET,
            |v, m| {
                format!(
                    "http://rebind-{}-{m}.test/echo?body=ok",
                    v.to_ascii_lowercase()
                )
            },
        ),
        ("percent-encoded", "APP_SESSION_KEY", SECRET, |v, m| {
            let all = bytes_as(v, |b| format!("%{b:02X}"));
            format!("http://public.test/echo?body=ok&m={m}&k={all}")
        }),
        (
            "percent-encoded twice, lower-case hex",
            "APP_SESSION_KEY",
            SECRET,
            |v, m| {
                let once = bytes_as(v, |b| format!("%{b:02x}"));
                format!("http://public.test/echo?body=ok&m={m}&k={}", encode(&once))
            },
        ),
        (
            "`+` for its spaces",
            "APP_SIGNING_PHRASE",
            PHRASE,
            |v, m| {
                format!(
                    "http://public.test/echo?body=ok&m={m}&k={}",
                    v.replace(' ', "+")
                )
            },
        ),
        (
            "base64 inside a larger blob",
            "APP_SESSION_KEY",
            SECRET,
            |v, m| {
                let blob = STANDARD.encode(format!("user={v};role=admin"));
                format!("http://public.test/echo?body=ok&m={m}&k={}", encode(&blob))
            },
        ),
        (
            "base64url at offset 1",
            "APP_SESSION_KEY",
            SECRET,
            |v, m| {
                let blob = URL_SAFE_NO_PAD.encode(format!("x{v}"));
                format!("http://public.test/echo?body=ok&m={m}&k={blob}")
            },
        ),
        (
            "base64url at offset 2, in the path",
            "APP_SESSION_KEY",
            SECRET,
            |v, m| {
                let blob = URL_SAFE_NO_PAD.encode(format!("xy{v}"));
                format!("http://public.test/echo/{blob}?body=ok&m={m}")
            },
        ),
        ("hex", "APP_SESSION_KEY", SECRET, |v, m| {
            let hex = bytes_as(v, |b| format!("{b:02x}"));
            format!("http://public.test/echo?body=ok&m={m}&k={hex}")
        }),
    ]
}

/// The same text with the control in place of `value` (and of its lower case).
fn control_of(value: &str) -> &'static str {
    if value == PHRASE {
        "another horse, another staple 42"
    } else {
        CONTROL
    }
}

/// SAFE and AUTO: denied with `secret_in_request`, the web hosts never see the request, and
/// neither the result nor the audit record carries the value in any form. Positive control per
/// row: the same URL with a value spear does not know reaches the web host.
#[test]
fn safe_and_auto_never_send_a_known_secret_in_any_encoding() {
    let env = setup();
    for mode in [Safe, Auto] {
        for (what, name, value, carry) in rows() {
            let r = router(&env, Opts::web(mode, pair(&[(name, value)])));
            let m = marker("refused");
            let url = carry(value, &m);
            let e = r.call("fetch_url", json!({"url": url}));
            assert_eq!(
                e.result.status,
                ToolStatus::Denied,
                "{mode:?} {what}: {e:?}"
            );
            assert_eq!(
                e.result.rule(),
                Some(RefusalRule::SecretInRequest),
                "{mode:?} {what}: {e:?}"
            );
            let reason = e.result.reason.clone().unwrap();
            assert!(reason.contains(name), "{what}: {reason}");
            assert!(
                requests_with(&m).is_empty(),
                "{mode:?} {what}: the request arrived: {:?}",
                requests_with(&m)
            );
            let shown = wire(&e).to_string();
            assert_eq!(known(value).find(&shown), None, "{what}: {shown}");
            let line = std::fs::read_to_string(env.audit_path())
                .unwrap()
                .lines()
                .last()
                .unwrap()
                .to_owned();
            assert_eq!(known(value).find(&line), None, "{what}: {line}");
            let last: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(last["tool"], "fetch_url", "{last}");
            assert_eq!(last["rule"], "secret_in_request", "{last}");
            // Positive control: a value spear does not know goes out.
            let m = marker("control");
            let control = control_of(value);
            let e = r.call("fetch_url", json!({"url": carry(control, &m)}));
            assert_ne!(e.result.rule(), Some(RefusalRule::SecretInRequest), "{e:?}");
            assert_eq!(
                requests_with(&m).len(),
                1,
                "{mode:?} {what}: the control did not arrive: {e:?}"
            );
        }
    }
}

/// ASK: the person is asked, shown the call with the secret redacted; a decline sends nothing,
/// an approval sends exactly that request (it arrives) and its result and audit record show the
/// secret redacted.
#[test]
fn ask_asks_and_sends_only_what_was_approved() {
    let env = setup();
    for (what, name, value, carry) in rows() {
        let (no, seen) = Answer::new(Confirmation::Declined);
        let mut o = Opts::web(Ask, pair(&[(name, value)]));
        o.confirmer = Some(no);
        let r = router(&env, o);
        let m = marker("declined");
        let e = r.call("fetch_url", json!({"url": carry(value, &m)}));
        assert_eq!(
            e.result.rule(),
            Some(RefusalRule::Declined),
            "{what}: {e:?}"
        );
        assert!(requests_with(&m).is_empty(), "{what}: sent after a decline");
        let asked = seen.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{what}: {asked:?}");
        assert!(asked[0].contains("[REDACTED]"), "{what}: {asked:?}");
        assert_eq!(known(value).find(&asked[0]), None, "{what}: {asked:?}");

        let (yes, _) = Answer::new(Confirmation::Approved);
        let mut o = Opts::web(Ask, pair(&[(name, value)]));
        o.confirmer = Some(yes);
        let r = router(&env, o);
        let m = marker("approved");
        let e = r.call("fetch_url", json!({"url": carry(value, &m)}));
        assert_ne!(e.result.rule(), Some(RefusalRule::SecretInRequest), "{e:?}");
        assert_eq!(requests_with(&m).len(), 1, "{what}: approved, it arrives");
        let shown = wire(&e).to_string();
        assert_eq!(known(value).find(&shown), None, "{what}: {shown}");
        let log = std::fs::read_to_string(env.audit_path()).unwrap();
        let line = log.lines().last().unwrap();
        assert_eq!(known(value).find(line), None, "{what}: {line}");
    }
}

/// A request a person approved goes out; the redirect it answers with, to another URL carrying
/// the secret, is refused at that hop and never arrives. Positive control: the same approved
/// request redirecting to a URL without it is followed.
#[test]
fn an_approved_request_does_not_carry_the_secret_through_a_redirect() {
    let env = setup();
    let (yes, _) = Answer::new(Confirmation::Approved);
    let mut o = Opts::web(Ask, pair(&[("APP_SESSION_KEY", SECRET)]));
    o.confirmer = Some(yes);
    let r = router(&env, o);
    for (carried, refused) in [(SECRET, true), (CONTROL, false)] {
        let m = marker("hop");
        let to = format!("http://second.test/echo?body=ok&m={m}&k={carried}");
        let url = format!("{}&k={SECRET}", redirect("http://public.test", &to, 302));
        let e = r.call("fetch_url", json!({"url": url}));
        let lines = requests_with(&m);
        assert!(
            lines.iter().any(|l| l.starts_with("public.test ")),
            "the approved request was sent: {lines:?}"
        );
        let second = lines
            .iter()
            .filter(|l| l.starts_with("second.test "))
            .count();
        if refused {
            assert_eq!(e.result.rule(), Some(RefusalRule::SecretInRequest), "{e:?}");
            assert!(
                e.result
                    .reason
                    .clone()
                    .unwrap()
                    .contains("a redirect's URL"),
                "{e:?}"
            );
            assert_eq!(second, 0, "the redirect arrived: {lines:?}");
        } else {
            assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
            assert_eq!(second, 1, "the control redirect is followed: {lines:?}");
        }
        assert_eq!(known(SECRET).find(&wire(&e).to_string()), None, "{e:?}");
    }
}

/// `search_internet`: a query holding a known secret is refused in SAFE and AUTO and never reaches
/// the backend; the same query without it does.
#[test]
fn a_search_query_never_carries_a_known_secret() {
    let env = setup();
    let pair = |vars: &[(&str, &str)]| {
        let env: Vec<(OsString, OsString)> = vars
            .iter()
            .map(|(n, v)| ((*n).into(), (*v).into()))
            .collect();
        WebPair::from_settings(&WebSettings {
            search: Some(SearchSettings::Searxng {
                url: "http://public.test/searxng/".into(),
            }),
            ..WebSettings::default()
        })
        .with_environment(&env)
    };
    for mode in [Safe, Auto] {
        let r = router(&env, Opts::web(mode, pair(&[("APP_SESSION_KEY", SECRET)])));
        let m = marker("query");
        let e = r.call("search_internet", json!({"query": format!("{m} {SECRET}")}));
        assert_eq!(
            e.result.rule(),
            Some(RefusalRule::SecretInRequest),
            "{mode:?}: {e:?}"
        );
        assert!(requests_with(&m).is_empty(), "{mode:?}: the query arrived");
        let m = marker("query-control");
        let e = r.call(
            "search_internet",
            json!({"query": format!("{m} {CONTROL}")}),
        );
        assert_eq!(e.result.status, ToolStatus::Ok, "{mode:?}: {e:?}");
        assert_eq!(requests_with(&m).len(), 1, "{mode:?}: the control arrived");
    }
}

/// The mode matters only where a secret is carried: SAFE's and AUTO's fetches of an ordinary URL
/// run in a session knowing a secret (no false refusal).
#[test]
fn a_session_knowing_secrets_fetches_ordinary_urls() {
    let env = setup();
    for mode in [Safe, Ask, Auto] {
        let r = router(&env, Opts::web(mode, pair(&[("APP_SESSION_KEY", SECRET)])));
        let m = marker("plain");
        let e = r.call(
            "fetch_url",
            json!({"url": format!("http://public.test/echo?body=ok&m={m}")}),
        );
        assert_eq!(e.result.status, ToolStatus::Ok, "{mode:?}: {e:?}");
        assert_eq!(requests_with(&m).len(), 1, "{mode:?}");
    }
}
