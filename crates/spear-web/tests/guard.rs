//! A fetcher's [`RequestGuard`] against the test network (run inside `scripts/test-host.sh run`):
//! every request is shown to it before its name is resolved, the first and each redirect, and a
//! refused one never reaches a server. The web hosts' request log says which requests arrived;
//! each refused case has a positive control (the same fetch unguarded arrives).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::fetcher;
use spear_testkit::listener::Counter;
use spear_testkit::net::{marker, redirect, requests_with};
use spear_web::READ_CAP as READ_CAP_FOR_TESTS;
use spear_web::{FetchError, Outgoing, RequestGuard};

/// What a guard was shown of one request: its URL, whether it was a redirect's, whether it went
/// to an operator's endpoint, and the names of its headers.
type Seen = (String, bool, bool, Vec<String>);

/// Refuses every request (or only redirects) whose URL holds `word`, and remembers what it saw.
#[derive(Debug)]
struct Refuses {
    word: String,
    redirects_only: bool,
    seen: Mutex<Vec<Seen>>,
}

impl Refuses {
    fn new(word: &str, redirects_only: bool) -> Arc<Refuses> {
        Arc::new(Refuses {
            word: word.to_owned(),
            redirects_only,
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl RequestGuard for Refuses {
    fn check(&self, r: &Outgoing<'_>) -> Result<(), String> {
        self.seen.lock().unwrap().push((
            r.url.to_string(),
            r.redirect,
            r.operator,
            r.headers.iter().map(|(n, _)| (*n).to_owned()).collect(),
        ));
        if r.url.as_str().contains(&self.word) && (r.redirect || !self.redirects_only) {
            Err(format!("the URL holds {}", self.word))
        } else {
            Ok(())
        }
    }
}

/// Each row: the URL asked for, whether the guard refuses only redirects, and the host whose
/// request must never arrive. Refused: `FetchError::Guarded`, and no request with the marker at
/// that host. Positive control: the same fetch without a guard arrives there.
#[test]
fn a_refused_request_never_arrives_first_or_redirected() {
    spear_testkit::require_test_network!();
    let rows: Vec<(&str, bool, &str)> = vec![
        ("first request", false, "public.test"),
        ("redirect", true, "second.test"),
    ];
    for (what, redirects_only, host) in rows {
        let word = marker("guarded");
        let url = if redirects_only {
            redirect(
                "http://public.test",
                &format!("http://second.test/echo?body=x&m={word}"),
                302,
            )
        } else {
            format!("http://public.test/echo?body=x&m={word}")
        };
        let guard = Refuses::new(&word, redirects_only);
        let guarded = fetcher(&[]).with_guard(guard.clone());
        assert!(guarded.is_guarded());
        match guarded.fetch(&url, READ_CAP_FOR_TESTS) {
            Err(FetchError::Guarded { why }) => {
                assert!(why.contains(&word), "{what}: {why}");
                assert!(
                    FetchError::Guarded { why }
                        .to_string()
                        .ends_with("; nothing was sent")
                );
            }
            other => panic!(
                "{what}: expected a refusal, got {:?}",
                other.map(|f| f.status)
            ),
        }
        let at = |h: &str| {
            requests_with(&word)
                .into_iter()
                .filter(|l| l.starts_with(&format!("{h} ")))
                .count()
        };
        assert_eq!(at(host), 0, "{what}: the request reached {host}");
        let seen = guard.seen.lock().unwrap().clone();
        assert_eq!(seen.last().unwrap().1, redirects_only, "{what}: {seen:?}");
        if redirects_only {
            assert_eq!(at("public.test"), 1, "{what}: the first request was sent");
        }
        // Positive control: unguarded, it arrives.
        let f = fetcher(&[]).fetch(&url, READ_CAP_FOR_TESTS).unwrap();
        assert_eq!(f.status, 200, "{what}");
        assert_eq!(at(host), 1, "{what}: unguarded, the request reached {host}");
    }
}

/// A fetch approved as asked skips the guard for its first request only: its redirect is shown to
/// the guard and refused. Positive control: the first request arrived.
#[test]
fn an_approved_first_request_still_has_its_redirects_guarded() {
    spear_testkit::require_test_network!();
    let word = marker("approved");
    let url = redirect(
        "http://public.test",
        &format!("http://second.test/echo?body=x&m={word}"),
        302,
    );
    let guard = Refuses::new(&word, false);
    let approved = fetcher(&[]).with_guard(guard.clone()).approved_as_asked();
    assert!(matches!(
        approved.fetch(&url, READ_CAP_FOR_TESTS),
        Err(FetchError::Guarded { .. })
    ));
    let seen = guard.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "only the redirect was shown: {seen:?}");
    assert!(seen[0].1, "{seen:?}");
    let lines = requests_with(&word);
    assert!(
        lines.iter().any(|l| l.starts_with("public.test ")),
        "the approved request was sent: {lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("second.test ")),
        "the redirect was not: {lines:?}"
    );
}

/// An operator's endpoint (no address check: a listener on this host's loopback) is guarded too,
/// its headers shown: refused, the listener counts nothing; unguarded, it counts the request.
#[test]
fn an_operator_endpoint_is_guarded_with_its_headers() {
    spear_testkit::require_test_network!();
    let listener = Counter::bind("127.0.0.1", 0);
    let word = marker("operator");
    let url = format!("{}search?q={word}", listener.url());
    let guard = Refuses::new(&word, false);
    let headers = [("x-api-key", "k".to_owned())];
    let guarded = fetcher(&[]).with_guard(guard.clone());
    assert!(matches!(
        guarded.fetch_operator_endpoint(&url, &headers, READ_CAP_FOR_TESTS),
        Err(FetchError::Guarded { .. })
    ));
    assert_eq!(listener.count(), 0, "the endpoint saw a connection");
    let seen = guard.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].2, "shown as the operator's: {seen:?}");
    assert_eq!(seen[0].3, ["x-api-key"], "{seen:?}");
    let f = fetcher(&[])
        .fetch_operator_endpoint(&url, &headers, READ_CAP_FOR_TESTS)
        .unwrap();
    assert_eq!(f.status, 200);
    assert_eq!(listener.count(), 1, "unguarded, the endpoint is reached");
}
