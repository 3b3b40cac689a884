//! Fuzzes `spear_mcp::WebGuard::admits`: the `Host` and `Origin` headers of a request to a
//! listening node's own paths (`/mcp/sessions`, a session's end and patch, `/metrics`), which
//! any client, or a web page through a rebound name, chooses.
//!
//! The input is text (`String::from_utf8_lossy`): its first line is the `Host` header, its second
//! the `Origin` header (absent when there is no second line). The guard is a node's on
//! 127.0.0.1:8787 with `--public-host spear.ns.svc --public-host node.example:8443` and
//! `--allow-origin https://app.example`.
//!
//! Checks: no panic; the same answer twice; an admitted request's `Host` names one of the
//! allowed names (and `node.example` only on port 8443), and its `Origin`, when there is one,
//! is http or https on a loopback name or `https://app.example` on port 443.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use spear_mcp::{ListenAddr, WebGuard, web_guard};

fn guard() -> &'static WebGuard {
    static GUARD: OnceLock<WebGuard> = OnceLock::new();
    GUARD.get_or_init(|| {
        let addr: ListenAddr = "127.0.0.1:8787".parse().unwrap();
        web_guard(
            &addr,
            &["spear.ns.svc".to_owned(), "node.example:8443".to_owned()],
            &["https://app.example".to_owned()],
        )
        .unwrap()
    })
}

/// The name and port a `Host` (or an origin's authority) spells, lowercased, brackets removed.
fn split(authority: &str) -> (String, Option<&str>) {
    let authority = authority.trim();
    let (name, port) = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((inside, after)) => (inside, after.strip_prefix(':')),
            None => (rest, None),
        },
        None => match authority.rsplit_once(':') {
            Some((name, port)) if !name.contains(':') => (name, Some(port)),
            _ => (authority, None),
        },
    };
    (name.to_ascii_lowercase(), port)
}

/// A port of ASCII digits only (leading zeros allowed, as `http` reads them), as a number.
fn digits(port: &str) -> Option<u16> {
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    port.parse().ok()
}

fuzz_target!(
    init: spear_fuzz::install_panic_hook(),
    |data: &[u8]| {
        let text = String::from_utf8_lossy(data);
        let mut lines = text.splitn(2, '\n');
        let host = lines.next().unwrap_or_default();
        let origin = lines.next();
        let verdict = guard().admits(Some(host), origin);
        if guard().admits(Some(host), origin) != verdict {
            panic!("two answers for {host:?} {origin:?}");
        }
        if verdict.is_err() {
            return;
        }
        let (name, port) = split(host);
        let allowed = match name.as_str() {
            "localhost" | "127.0.0.1" | "::1" | "spear.ns.svc" => true,
            "node.example" => port.is_some_and(|p| digits(p) == Some(8443)),
            _ => false,
        };
        if !allowed {
            panic!("Host {host:?} admitted");
        }
        if let Some(origin) = origin {
            let Some((scheme, rest)) = origin.trim().split_once("://") else {
                panic!("Origin {origin:?} without a scheme admitted");
            };
            let scheme = scheme.to_ascii_lowercase();
            let (name, port) = split(rest);
            let loopback = matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1")
                && (scheme == "http" || scheme == "https");
            let listed = name == "app.example"
                && scheme == "https"
                && port.is_none_or(|p| digits(p) == Some(443));
            if !(loopback || listed) {
                panic!("Origin {origin:?} admitted");
            }
        }
    }
);
