//! `Fetcher` against the test network (run inside `scripts/test-host.sh run`): web hosts at
//! public-looking addresses, a DNS server with a table of test names (mixed records, AAAA only,
//! rebinding, NXDOMAIN), and counting listeners on every refused kind of address this namespace
//! holds (loopback, private, metadata, ULA, 6to4 of metadata, its own public-looking addresses).
//! Every refused case asserts that its listener saw no connection; every kind of listener has a
//! positive control showing that a direct connection to it is counted. The `fetch_url` cases of the
//! public red-team file are driven by id: a case added to the file without a test here fails.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use spear_testkit::listener::{Counter, fixed_ports};
use spear_testkit::net::{
    METADATA, OWN, OWN6, PRIVATE, PUBLIC, PUBLIC6, SECOND, SECOND6, SIXTOFOUR_METADATA, ULA,
    WEB_HOST_BODY,
};
use spear_testkit::{child, net};
use spear_web::address::{Denied, Refused};
use spear_web::{FetchError, Fetched, Fetcher, Phase, READ_CAP, Timeouts, WebConfig};

fn setup() {
    spear_testkit::require_test_network!();
}

fn ok(url: &str, result: Result<Fetched, FetchError>) -> Fetched {
    result.unwrap_or_else(|e| panic!("{url}: expected a response, got {e:?}"))
}

fn refused(url: &str, result: Result<Fetched, FetchError>) -> (String, Refused) {
    match result {
        Err(FetchError::Refused { host, refused }) => (host, refused),
        other => panic!(
            "{url}: expected a refusal, got {:?}",
            other.map(|f| f.status)
        ),
    }
}

fn assert_refused(fetcher: &Fetcher, url: &str, why: Denied) -> Refused {
    let (_, r) = refused(url, fetcher.fetch(url, READ_CAP));
    assert_eq!(r.why, why, "{url}: {r}");
    r
}

fn assert_untouched(listeners: &[&Counter]) {
    for l in listeners {
        assert_eq!(
            l.count(),
            0,
            "the listener at {} saw a connection",
            l.addr()
        );
    }
}

fn sock(ip: &str, port: u16) -> SocketAddr {
    SocketAddr::new(ip.parse().unwrap(), port)
}

// ---- positive controls --------------------------------------------------------------------

#[test]
fn every_kind_of_counting_listener_counts_a_direct_connection() {
    setup();
    for ip in [
        "127.0.0.1",
        "::1",
        PRIVATE,
        METADATA,
        OWN,
        OWN6,
        ULA,
        SIXTOFOUR_METADATA,
    ] {
        let l = Counter::bind(ip, 0);
        assert_eq!(l.count(), 0, "{ip}");
        TcpStream::connect_timeout(&l.addr(), Duration::from_secs(2)).unwrap();
        assert_eq!(
            l.count(),
            1,
            "a direct connection to {} is counted",
            l.addr()
        );
    }
    // Port 80 too (the red-team URLs name no port), as whoever runs the tests.
    let _fixed = fixed_ports();
    for ip in [METADATA, "127.0.0.1", PRIVATE, ULA] {
        let l = Counter::bind(ip, 80);
        TcpStream::connect_timeout(&l.addr(), Duration::from_secs(2)).unwrap();
        assert_eq!(
            l.count(),
            1,
            "a direct connection to {} is counted",
            l.addr()
        );
    }
}

#[test]
fn the_web_hosts_answer_what_the_tests_use() {
    setup();
    let f = common::fetcher(&[]);
    let got = ok("/", f.fetch("http://public.test/", READ_CAP));
    assert_eq!(got.body, WEB_HOST_BODY);
    assert_eq!(got.status, 200);
    assert_eq!(got.connected, sock(PUBLIC, 80));
    assert!(got.hops.is_empty() && !got.cut);
    for (path, ctype, starts) in [
        ("/html", "text/html; charset=utf-8", &b"<!doctype html>"[..]),
        ("/text", "text/plain; charset=utf-8", b"plain text"),
        ("/json", "application/json", b"{\"name\""),
        ("/pdf", "application/pdf", b"%PDF-1.4"),
        ("/image", "image/png", b"\x89PNG\r\n\x1a\n"),
        ("/echo?ct=text/csv&body=a,b", "text/csv", b"a,b"),
        (
            "/echo?ct=application/x-t&b64=AAEC",
            "application/x-t",
            b"\0\x01\x02",
        ),
    ] {
        let url = format!("http://public.test{path}");
        let got = ok(&url, f.fetch(&url, READ_CAP));
        assert_eq!(got.content_type.as_deref(), Some(ctype), "{url}");
        assert!(got.body.starts_with(starts), "{url}: {:?}", got.body);
    }
    let got = ok("404", f.fetch("http://public.test/status/404", READ_CAP));
    assert_eq!(got.status, 404);
    // The request as the host saw it: the name, spear's user agent, no proxy in the way.
    let got = ok("headers", f.fetch("http://public.test/headers", READ_CAP));
    let seen: serde_json::Value = serde_json::from_slice(&got.body).unwrap();
    assert_eq!(seen["host"], "public.test");
    assert_eq!(seen["x-peer"], "203.0.113.1");
    assert!(
        seen["user-agent"].as_str().unwrap().starts_with("spear/"),
        "{seen}"
    );
    // The other hosts, by name and by literal.
    for (url, addr) in [
        ("http://second.test/", sock(SECOND, 80)),
        (&format!("http://{SECOND}/"), sock(SECOND, 80)),
        (&format!("http://[{SECOND6}]/"), sock(SECOND6, 80)),
        ("http://dual.test/", sock(PUBLIC, 80)),
    ] {
        let got = ok(url, f.fetch(url, READ_CAP));
        assert_eq!(got.body, WEB_HOST_BODY, "{url}");
        if url != "http://dual.test/" {
            assert_eq!(got.connected, addr, "{url}");
        }
    }
    // A file a test writes is served at /files/NAME (by whoever runs the tests).
    let name = format!("t-{}.json", std::process::id());
    let path = std::path::Path::new(net::WEB_FILES).join(&name);
    std::fs::write(&path, b"{\"written\": true}").unwrap();
    let url = format!("http://public.test/files/{name}");
    let got = f.fetch(&url, READ_CAP);
    std::fs::remove_file(&path).unwrap();
    let got = ok(&url, got);
    assert_eq!(got.content_type.as_deref(), Some("application/json"));
    assert_eq!(got.body, b"{\"written\": true}");
}

// ---- the public red-team cases, by id -----------------------------------------------------

#[derive(Debug)]
struct Case {
    id: String,
    url: String,
    harness_env: Vec<(String, String)>,
}

fn red_team_cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/redteam-public-cases.jsonl"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["target"] == "fetch_url")
        .map(|v| Case {
            id: v["id"].as_str().unwrap().to_owned(),
            url: v["input"]["args"]["url"].as_str().unwrap().to_owned(),
            harness_env: v["input"]["harness_env"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

fn case(id: &str) -> Case {
    red_team_cases()
        .into_iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("{id} is not a fetch_url case of the red-team file"))
}

/// One `#[test]` per red-team case (named), and the list of ids they cover.
macro_rules! red_team_cases {
    ($($id:literal => $test:ident = $handler:path;)*) => {
        const DRIVEN: &[&str] = &[$($id),*];
        $(
            #[test]
            fn $test() {
                setup();
                $handler(&case($id), stringify!($test));
            }
        )*
    };
}

red_team_cases! {
    "SSR-01" => ssr_01_the_metadata_literal_is_refused = metadata_case;
    "SSR-04" => ssr_04_localhost_dot_is_refused_after_resolution = loopback_case;
    "SSR-07" => ssr_07_a_decimal_metadata_address_is_refused = metadata_case;
    "SSR-10" => ssr_10_a_short_form_metadata_address_is_refused = metadata_case;
    "SSR-13" => ssr_13_a_mapped_metadata_address_is_refused = metadata_case;
    "SSR-16" => ssr_16_a_6to4_metadata_address_is_refused = metadata_case;
    "SSR-19" => ssr_19_a_redirect_to_metadata_is_refused_at_the_hop = redirect_to_metadata_case;
    "SSR-22" => ssr_22_a_redirect_loop_stops = redirect_loop_case;
    "SSR-25" => ssr_25_a_name_with_a_loopback_record_is_refused = mixed_records_case;
    "SSR-28" => ssr_28_the_environments_proxies_are_ignored = env_proxy_case;
    "SSR-31" => ssr_31_a_fullwidth_localhost_is_refused = loopback_case;
    "SSR-34" => ssr_34_a_decompression_bomb_stops_at_the_cap = bomb_case;
}

#[test]
fn every_fetch_url_case_of_the_red_team_file_has_a_test() {
    setup();
    let in_file: BTreeSet<String> = red_team_cases().into_iter().map(|c| c.id).collect();
    let driven: BTreeSet<String> = DRIVEN.iter().map(|s| (*s).to_owned()).collect();
    assert!(in_file.len() >= 12, "{in_file:?}");
    let missing: Vec<_> = in_file.difference(&driven).collect();
    assert!(
        missing.is_empty(),
        "fetch_url cases of testdata/redteam-public-cases.jsonl without a test: {missing:?}"
    );
    let stale: Vec<_> = driven.difference(&in_file).collect();
    assert!(
        stale.is_empty(),
        "tests of cases no longer in the file: {stale:?}"
    );
}

/// SSR-01, 07, 10, 13, 16: a metadata address however it is written, refused before connecting
/// (listeners at 169.254.169.254:80 and at the 6to4 address that embeds it).
fn metadata_case(case: &Case, _test: &str) {
    let _fixed = fixed_ports();
    let meta = Counter::bind(METADATA, 80);
    let sixtofour = Counter::bind(SIXTOFOUR_METADATA, 80);
    let f = common::fetcher(&[]);
    let r = assert_refused(&f, &case.url, Denied::Metadata);
    let metadata: std::net::Ipv4Addr = METADATA.parse().unwrap();
    match r.addr {
        IpAddr::V4(v4) => assert_eq!(v4, metadata, "{}", case.url),
        IpAddr::V6(_) => assert_eq!(r.embedded, Some(metadata), "{}: {r}", case.url),
    }
    assert_untouched(&[&meta, &sixtofour]);
}

/// SSR-04, 31: names that are loopback only after IDNA mapping or resolution (`localhost.`,
/// fullwidth `ｌｏｃａｌｈｏｓｔ`), refused with listeners on both loopback addresses.
fn loopback_case(case: &Case, _test: &str) {
    let (v4, v6) = Counter::bind_pair("127.0.0.1", "::1");
    let url = case.url.replace("{PORT}", &v4.port().to_string());
    let f = common::fetcher(&[v4.port()]);
    let (host, r) = refused(&url, f.fetch(&url, READ_CAP));
    assert_eq!(host, "localhost", "{url}");
    assert_eq!(r.why, Denied::Loopback, "{url}: {r}");
    assert_untouched(&[&v4, &v6]);
}

/// SSR-19: the first hop is the public host (it answers a redirect), the second is refused.
fn redirect_to_metadata_case(case: &Case, _test: &str) {
    let _fixed = fixed_ports();
    let meta = Counter::bind(METADATA, 80);
    // The first hop is answered: with no redirect allowed, the fetch stops at it.
    let strict = Fetcher::new(WebConfig {
        max_redirects: 0,
        ..common::config(&[])
    })
    .unwrap();
    assert!(matches!(
        strict.fetch(&case.url, READ_CAP),
        Err(FetchError::TooManyRedirects { max: 0, .. })
    ));
    let f = common::fetcher(&[]);
    let (host, r) = refused(&case.url, f.fetch(&case.url, READ_CAP));
    assert_eq!(host, METADATA);
    assert_eq!(r.why, Denied::Metadata);
    assert_untouched(&[&meta]);
}

/// SSR-22: a redirect to itself stops after the limit, quickly, and says it looped.
fn redirect_loop_case(case: &Case, _test: &str) {
    let f = common::fetcher(&[]);
    let start = Instant::now();
    match f.fetch(&case.url, READ_CAP) {
        Err(FetchError::TooManyRedirects { max, looped, .. }) => {
            assert_eq!(max, 5);
            assert!(looped);
        }
        other => panic!("{}: {:?}", case.url, other.map(|f| f.status)),
    }
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

/// SSR-25: `multi.test` has a public and a loopback record: the name is refused, and the loopback
/// listener sees nothing (no happy-eyeballs fallback to it).
fn mixed_records_case(case: &Case, _test: &str) {
    let _fixed = fixed_ports();
    let (v4, v6) = (Counter::bind("127.0.0.1", 80), Counter::bind("::1", 80));
    let f = common::fetcher(&[]);
    let (host, r) = refused(&case.url, f.fetch(&case.url, READ_CAP));
    assert_eq!(host, "multi.test");
    assert_eq!(r.why, Denied::Loopback);
    assert_eq!(r.addr, "127.0.0.1".parse::<IpAddr>().unwrap());
    assert_untouched(&[&v4, &v6]);
}

/// SSR-28: with `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` naming a counting listener in the
/// fetcher's environment, the fetch goes to the host directly and the proxy sees nothing. Runs in
/// a child process, whose environment has them from the start.
fn env_proxy_case(case: &Case, test: &str) {
    if child::is_child(test) {
        let f = common::fetcher(&[]);
        let got = ok(&case.url, f.fetch(&case.url, READ_CAP));
        assert_eq!(got.body, WEB_HOST_BODY);
        assert_eq!(got.connected, sock(PUBLIC, 80));
        let got = ok("https", f.fetch("https://public.test/", READ_CAP));
        assert_eq!(got.body, WEB_HOST_BODY);
        child::child_done(test);
        return;
    }
    let proxy = Counter::bind("127.0.0.1", 0);
    let port = proxy.port().to_string();
    let mut env: Vec<(String, String)> = case
        .harness_env
        .iter()
        .map(|(k, v)| (k.clone(), v.replace("{PROXYPORT}", &port)))
        .collect();
    assert!(env.iter().any(|(k, _)| k == "HTTP_PROXY"), "{case:?}");
    env.push(("HTTPS_PROXY".into(), format!("http://127.0.0.1:{port}")));
    for (k, v) in env.clone() {
        env.push((k.to_lowercase(), v));
    }
    let ca = net::web_ca();
    env.push(("SSL_CERT_FILE".into(), ca.to_str().unwrap().to_owned()));
    let set: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    child::run_child(test, &set, &["NO_PROXY", "no_proxy"]);
    assert_untouched(&[&proxy]);
}

/// SSR-34: a gzip stream inflating to 4 GiB stops at the cap, in bounded time and memory (in a
/// child, whose peak resident size is then its own).
fn bomb_case(case: &Case, test: &str) {
    if !child::is_child(test) {
        child::run_child(test, &[], &[]);
        return;
    }
    let f = common::fetcher(&[]);
    let start = Instant::now();
    let got = ok(&case.url, f.fetch(&case.url, READ_CAP));
    assert!(got.cut);
    assert_eq!(got.body.len() as u64, READ_CAP);
    assert!(got.body.iter().all(|b| *b == 0));
    assert_eq!(got.content_length, None);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let peak_kib = spear_testkit::process::peak_rss_kib(std::process::id());
    assert!(peak_kib < 128 * 1024, "peak resident size {peak_kib} KiB");
    child::child_done(test);
}

// ---- refused kinds, as literals, names and redirect targets --------------------------------

/// A listener on each refused kind of address, and the URLs that lead to them.
struct Refusable {
    listeners: Vec<Counter>,
    targets: Vec<(String, Denied)>,
}

impl Refusable {
    fn new() -> Refusable {
        let (lo4, lo6) = Counter::bind_pair("127.0.0.1", "::1");
        let private = Counter::bind(PRIVATE, 0);
        let meta = Counter::bind(METADATA, 0);
        let sixtofour = Counter::bind(SIXTOFOUR_METADATA, 0);
        let ula = Counter::bind(ULA, 0);
        let own = Counter::bind(OWN, 0);
        let own6 = Counter::bind(OWN6, 0);
        let p = |c: &Counter| c.port();
        let targets = vec![
            // Loopback.
            (lo4.url(), Denied::Loopback),
            (lo6.url(), Denied::Loopback),
            (format!("http://localhost:{}/", p(&lo4)), Denied::Loopback),
            (format!("http://localhost.:{}/", p(&lo4)), Denied::Loopback),
            (format!("http://LocalHost:{}/", p(&lo4)), Denied::Loopback),
            (
                format!("http://loopback.test:{}/", p(&lo4)),
                Denied::Loopback,
            ),
            (format!("http://127.1:{}/", p(&lo4)), Denied::Loopback),
            (format!("http://0x7f.1:{}/", p(&lo4)), Denied::Loopback),
            (format!("http://2130706433:{}/", p(&lo4)), Denied::Loopback),
            (
                format!("http://017700000001:{}/", p(&lo4)),
                Denied::Loopback,
            ),
            (
                format!("http://\u{2460}\u{2461}\u{2466}.0.0.1:{}/", p(&lo4)),
                Denied::Loopback,
            ),
            (
                format!("http://[::ffff:127.0.0.1]:{}/", p(&lo4)),
                Denied::Loopback,
            ),
            (
                format!("http://[::127.0.0.1]:{}/", p(&lo4)),
                Denied::Loopback,
            ),
            // 0.0.0.0 connects to this host's loopback on Linux.
            (format!("http://0.0.0.0:{}/", p(&lo4)), Denied::Unspecified),
            (format!("http://[::]:{}/", p(&lo6)), Denied::Unspecified),
            // Private.
            (private.url(), Denied::Private),
            (
                format!("http://private.test:{}/", p(&private)),
                Denied::Private,
            ),
            (
                format!("http://[::ffff:{PRIVATE}]:{}/", p(&private)),
                Denied::Private,
            ),
            (
                format!("http://[::ffff:a4d:1]:{}/", p(&private)),
                Denied::Private,
            ),
            // Metadata.
            (meta.url(), Denied::Metadata),
            (format!("http://meta.test:{}/", p(&meta)), Denied::Metadata),
            (
                format!("http://mapped.test:{}/", p(&meta)),
                Denied::Metadata,
            ),
            (format!("http://2852039166:{}/", p(&meta)), Denied::Metadata),
            (
                format!("http://169.254.43518:{}/", p(&meta)),
                Denied::Metadata,
            ),
            (
                format!("http://[::ffff:a9fe:a9fe]:{}/", p(&meta)),
                Denied::Metadata,
            ),
            (sixtofour.url(), Denied::Metadata),
            // Unique local.
            (ula.url(), Denied::UniqueLocal),
            (format!("http://ula.test:{}/", p(&ula)), Denied::UniqueLocal),
            // This host's own addresses, public-looking ones included.
            (own.url(), Denied::HostOwn),
            (format!("http://own.test:{}/", p(&own)), Denied::HostOwn),
            (own6.url(), Denied::HostOwn),
            (format!("http://own6.test:{}/", p(&own6)), Denied::HostOwn),
        ];
        Refusable {
            listeners: vec![lo4, lo6, private, meta, sixtofour, ula, own, own6],
            targets,
        }
    }

    fn ports(&self) -> Vec<u16> {
        self.listeners.iter().map(Counter::port).collect()
    }

    fn assert_untouched(&self) {
        assert_untouched(&self.listeners.iter().collect::<Vec<_>>());
    }
}

#[test]
fn refused_kinds_are_refused_as_literals_and_names_before_any_connection() {
    setup();
    let r = Refusable::new();
    let f = common::fetcher(&r.ports());
    for (url, why) in &r.targets {
        assert_refused(&f, url, *why);
    }
    r.assert_untouched();
    // Positive control: the same fetcher, with the same ports allowed, reaches a public host.
    let got = ok("public", f.fetch("http://public.test/", READ_CAP));
    assert_eq!(got.body, WEB_HOST_BODY);
}

#[test]
fn redirects_to_every_refused_kind_are_refused_at_the_hop() {
    setup();
    let r = Refusable::new();
    let f = common::fetcher(&r.ports());
    for status in [301, 302, 303, 307, 308] {
        for (target, why) in &r.targets {
            for base in ["http://public.test", &format!("http://[{PUBLIC6}]")] {
                let url = net::redirect(base, target, status);
                let (host, refused) = refused(&url, f.fetch(&url, READ_CAP));
                assert_eq!(refused.why, *why, "{url}: {refused}");
                assert_ne!(host, "public.test", "{url}: refused at the second hop");
            }
        }
    }
    r.assert_untouched();
    // Positive control: a redirect to a public host is followed.
    let url = net::redirect("http://public.test", "http://second.test/json", 302);
    let got = ok(&url, f.fetch(&url, READ_CAP));
    assert_eq!(got.connected, sock(SECOND, 80));
    assert_eq!(got.hops.len(), 1);
    assert_eq!(got.hops[0].connected, sock(PUBLIC, 80));
}

#[test]
fn dns_rebinding_is_refused_at_the_next_resolution() {
    setup();
    let _fixed = fixed_ports();
    let private = Counter::bind(PRIVATE, 80);
    let f = common::fetcher(&[]);
    // The first lookup answers the public host, and the fetch connects there.
    let name = net::fresh_rebind_name();
    let url = format!("http://{name}/");
    let got = ok(&url, f.fetch(&url, READ_CAP));
    assert_eq!(got.connected, sock(PUBLIC, 80));
    assert_eq!(got.body, WEB_HOST_BODY);
    // The next one answers the private address: refused.
    let (_, r) = refused(&url, f.fetch(&url, READ_CAP));
    assert_eq!((r.why, r.addr), (Denied::Private, PRIVATE.parse().unwrap()));
    // Within one fetch: a redirect back to the same name resolves it again, and is refused.
    let name = net::fresh_rebind_name();
    let url = net::redirect(
        &format!("http://{name}"),
        &format!("http://{name}/text"),
        302,
    );
    let (host, r) = refused(&url, f.fetch(&url, READ_CAP));
    assert_eq!(host, name);
    assert_eq!((r.why, r.addr), (Denied::Private, PRIVATE.parse().unwrap()));
    assert_untouched(&[&private]);
}

#[test]
fn a_public_a_beside_a_private_aaaa_refuses_the_name() {
    setup();
    let _fixed = fixed_ports();
    let ula = Counter::bind(ULA, 80);
    let f = common::fetcher(&[]);
    let (host, r) = refused("mixed6", f.fetch("http://mixed6.test/", READ_CAP));
    assert_eq!(host, "mixed6.test");
    assert_eq!((r.why, r.addr), (Denied::UniqueLocal, ULA.parse().unwrap()));
    assert_untouched(&[&ula]);
}

#[test]
fn an_aaaa_only_name_is_fetched_over_ipv6() {
    setup();
    let f = common::fetcher(&[]);
    for url in ["http://v6only.test/", &format!("http://[{PUBLIC6}]/")] {
        let got = ok(url, f.fetch(url, READ_CAP));
        assert_eq!(got.connected, sock(PUBLIC6, 80), "{url}");
        assert_eq!(got.body, WEB_HOST_BODY);
    }
}

#[test]
fn unknown_names_are_resolve_errors() {
    setup();
    let f = common::fetcher(&[]);
    for (url, host) in [
        ("http://nxdomain.test/", "nxdomain.test"),
        ("http://empty.test/", "empty.test"),
    ] {
        match f.fetch(url, READ_CAP) {
            Err(FetchError::Resolve { host: h, .. }) => assert_eq!(h, host),
            other => panic!("{url}: {:?}", other.map(|f| f.status)),
        }
    }
}

// ---- redirects ----------------------------------------------------------------------------

#[test]
fn five_redirects_are_followed_and_a_sixth_is_refused() {
    setup();
    let f = common::fetcher(&[]);
    let got = ok("chain/5", f.fetch("http://public.test/chain/5", READ_CAP));
    assert_eq!(got.hops.len(), 5);
    assert_eq!(got.body, b"end of chain\n");
    assert_eq!(got.target.url().path(), "/chain/0");
    assert!(got.hops.iter().all(|h| h.status == 302));
    match f.fetch("http://public.test/chain/6", READ_CAP) {
        Err(FetchError::TooManyRedirects { max, looped, .. }) => {
            assert_eq!(max, 5);
            assert!(!looped);
        }
        other => panic!("chain/6: {:?}", other.map(|f| f.status)),
    }
}

#[test]
fn https_to_http_redirects_are_refused() {
    const TEST: &str = "https_to_http_redirects_are_refused";
    setup();
    if !child::is_child(TEST) {
        let _fixed = fixed_ports();
        let meta = Counter::bind(METADATA, 80);
        let ca = net::web_ca();
        child::run_child(TEST, &[("SSL_CERT_FILE", ca.to_str().unwrap())], &[]);
        assert_untouched(&[&meta]);
        return;
    }
    let f = common::fetcher(&[]);
    for to in [
        "http://public.test/",
        "http://second.test/",
        "http://169.254.169.254/",
    ] {
        let url = net::redirect("https://public.test", to, 302);
        match f.fetch(&url, READ_CAP) {
            Err(FetchError::Downgrade { .. }) => {}
            other => panic!("{url}: {:?}", other.map(|f| f.status)),
        }
    }
    // Positive control: https to https is followed, to another host too.
    let url = net::redirect("https://public.test", "https://second.test/json", 301);
    let got = ok(&url, f.fetch(&url, READ_CAP));
    assert_eq!(got.connected, sock(SECOND, 443));
    assert_eq!(got.content_type.as_deref(), Some("application/json"));
    // And http to https.
    let url = net::redirect("http://public.test", "https://public.test/text", 302);
    let got = ok(&url, f.fetch(&url, READ_CAP));
    assert!(got.target.is_https());
    child::child_done(TEST);
}

// ---- time and bytes -----------------------------------------------------------------------

fn quick(total: Duration, first_byte: Duration) -> Fetcher {
    Fetcher::new(WebConfig {
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            first_byte,
            total,
        },
        ..WebConfig::default()
    })
    .unwrap()
}

#[test]
fn a_slowloris_is_cut_by_the_total_timeout() {
    setup();
    // One byte a second never trips the read timeout; the total does.
    let f = quick(Duration::from_secs(3), Duration::from_secs(10));
    for url in ["http://public.test/slow", "http://public.test/slow/body"] {
        let start = Instant::now();
        match f.fetch(url, READ_CAP) {
            Err(FetchError::Timeout { phase, limit, .. }) => {
                assert_eq!(phase, Phase::Total, "{url}");
                assert_eq!(limit, Duration::from_secs(3));
            }
            other => panic!("{url}: {:?}", other.map(|f| f.status)),
        }
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(2900) && took < Duration::from_secs(5),
            "{url}: {took:?}"
        );
    }
}

#[test]
fn a_stalled_body_is_cut_by_the_read_timeout() {
    setup();
    let f = quick(Duration::from_secs(20), Duration::from_secs(1));
    let start = Instant::now();
    match f.fetch("http://public.test/stall", READ_CAP) {
        Err(FetchError::Timeout { phase, .. }) => assert_eq!(phase, Phase::Body),
        other => panic!("stall: {:?}", other.map(|f| f.status)),
    }
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_gzip_bomb_stops_at_any_cap() {
    setup();
    let f = common::fetcher(&[]);
    for cap in [1, 1000, 1 << 20] {
        let start = Instant::now();
        let got = ok("bomb", f.fetch("http://public.test/bomb", cap));
        assert!(got.cut, "{cap}");
        assert_eq!(got.body.len() as u64, cap);
        assert!(got.body.iter().all(|b| *b == 0));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }
}

#[test]
fn a_100_mib_body_is_cut_at_the_cap() {
    setup();
    let f = common::fetcher(&[]);
    for (url, length) in [
        ("http://public.test/big", Some(100 << 20)),
        ("http://public.test/big?length=0", None),
    ] {
        let start = Instant::now();
        let got = ok(url, f.fetch(url, READ_CAP));
        assert!(got.cut, "{url}");
        assert_eq!(got.body.len() as u64, READ_CAP, "{url}");
        assert_eq!(got.content_length, length, "{url}");
        assert!(got.body.iter().all(|b| *b == b'a'));
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
    }
    // Exactly at the length: not cut.
    let got = ok("1 MiB", f.fetch("http://public.test/big?mib=1", 1 << 20));
    assert!(!got.cut);
    assert_eq!(got.body.len(), 1 << 20);
}

// ---- TLS ----------------------------------------------------------------------------------

#[test]
fn https_with_the_test_ca_is_fetched() {
    const TEST: &str = "https_with_the_test_ca_is_fetched";
    setup();
    if !child::is_child(TEST) {
        let ca = net::web_ca();
        child::run_child(TEST, &[("SSL_CERT_FILE", ca.to_str().unwrap())], &[]);
        return;
    }
    let f = common::fetcher(&[]);
    assert!(f.trusted_roots() >= 1);
    for (url, addr) in [
        ("https://public.test/", sock(PUBLIC, 443)),
        ("https://second.test/", sock(SECOND, 443)),
        ("https://v6only.test/", sock(PUBLIC6, 443)),
        (&format!("https://{PUBLIC}/"), sock(PUBLIC, 443)),
        (&format!("https://[{PUBLIC6}]/"), sock(PUBLIC6, 443)),
    ] {
        let got = ok(url, f.fetch(url, READ_CAP));
        assert_eq!(got.body, WEB_HOST_BODY, "{url}");
        assert_eq!(got.connected, addr, "{url}");
    }
    child::child_done(TEST);
}

#[test]
fn https_without_the_test_ca_fails_with_a_tls_error() {
    const TEST: &str = "https_without_the_test_ca_fails_with_a_tls_error";
    setup();
    if !child::is_child(TEST) {
        child::run_child(TEST, &[], &["SSL_CERT_FILE", "SSL_CERT_DIR"]);
        return;
    }
    let f = common::fetcher(&[]);
    match f.fetch("https://public.test/", READ_CAP) {
        Err(FetchError::Tls { .. }) => {}
        other => panic!("{:?}", other.map(|f| f.status)),
    }
    child::child_done(TEST);
}

#[test]
fn an_untrusted_or_misnamed_certificate_is_refused() {
    const TEST: &str = "an_untrusted_or_misnamed_certificate_is_refused";
    setup();
    if !child::is_child(TEST) {
        let ca = net::web_ca();
        child::run_child(TEST, &[("SSL_CERT_FILE", ca.to_str().unwrap())], &[]);
        return;
    }
    let f = common::fetcher(&[]);
    for url in [
        "https://untrusted.test/",
        "https://wrongname.test/",
        &format!("https://{}/", net::UNTRUSTED),
    ] {
        match f.fetch(url, READ_CAP) {
            Err(FetchError::Tls { .. }) => {}
            other => panic!("{url}: {:?}", other.map(|f| f.status)),
        }
    }
    // Positive control: the same fetcher trusts the test CA's certificate.
    let got = ok("public", f.fetch("https://public.test/", READ_CAP));
    assert_eq!(got.body, WEB_HOST_BODY);
    // And the untrusted host answers plain HTTP (its refusal above is the certificate's).
    let got = ok(
        "untrusted http",
        f.fetch("http://untrusted.test/", READ_CAP),
    );
    assert_eq!(got.body, WEB_HOST_BODY);
    child::child_done(TEST);
}
