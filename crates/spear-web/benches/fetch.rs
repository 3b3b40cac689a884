//! `fetch_url`'s fetch against a bare HTTP GET of the same page, interleaved: the cost of the
//! guard (the resolver asked, every address judged, the host's own addresses listed, a client
//! pinned to them, a runtime of its own). Runs inside the test network
//! (`scripts/test-host.sh run cargo bench -p spear-web --bench fetch`), where `public.test` is a
//! public-looking host; prints the medians of a raw TCP GET (the bare baseline: the system's
//! resolver and one socket), of reqwest used plainly (a fresh client, the system's resolver), and
//! of the guarded fetch, and the guarded fetch's ratio to each.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use spear_web::{Fetcher, READ_CAP, WebConfig};

const URL: &str = "http://public.test/";

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A GET with the system's resolver (getaddrinfo) and a raw socket: no checks, no client.
fn raw_get() -> usize {
    let addr = ("public.test", 80)
        .to_socket_addrs()
        .unwrap()
        .next()
        .unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: public.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    out.len()
}

fn main() {
    assert!(
        std::env::var_os("SPEAR_TEST_NETWORK").is_some(),
        "run inside the test network: scripts/test-host.sh run cargo bench -p spear-web --bench fetch"
    );
    let runs: usize = std::env::var("SPEAR_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    // The baseline's reqwest has no TLS provider of its own (spear-web brings ring): install it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fetcher = Fetcher::new(WebConfig::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The baseline: reqwest as a program would use it (a fresh client, the system resolver,
    // redirects and proxies as they come), on a runtime kept across requests.
    let bare = || {
        runtime.block_on(async {
            let client = reqwest::Client::builder().no_proxy().build().unwrap();
            client
                .get(URL)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap()
                .len()
        })
    };
    let guarded = || {
        let f = fetcher.fetch(URL, READ_CAP).unwrap();
        assert_eq!(f.status, 200);
        f.body.len()
    };
    assert_eq!(bare(), guarded(), "both read the same page");
    raw_get();
    let (mut b, mut g, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        bare();
        b.push(t.elapsed());
        let t = Instant::now();
        guarded();
        g.push(t.elapsed());
        let t = Instant::now();
        raw_get();
        r.push(t.elapsed());
    }
    let (b, g, r) = (median(b), median(g), median(r));
    println!(
        "raw TCP GET (getaddrinfo, no client):   median {:7.3} ms  ({runs} runs)",
        ms(r)
    );
    println!(
        "bare reqwest GET (fresh client):        median {:7.3} ms",
        ms(b)
    );
    println!(
        "fetch_url's Fetcher::fetch (guarded):   median {:7.3} ms",
        ms(g)
    );
    println!(
        "ratio of medians, guarded / raw GET: {:.2}x ({:+.3} ms a fetch); guarded / bare reqwest: {:.2}x",
        g.as_secs_f64() / r.as_secs_f64(),
        ms(g) - ms(r),
        g.as_secs_f64() / b.as_secs_f64(),
    );
}
