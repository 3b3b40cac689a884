//! The test network as every crate's network tests meet it (scripts/test-host.sh and
//! scripts/test-web-host.py make it): its names and addresses, the checks that a test binary runs
//! inside it, the web hosts' request log, and the URLs the tests build. Counting listeners are in
//! [`crate::listener`], files the web hosts serve in [`crate::web_file`], and child processes for
//! the cases that need an environment of their own in [`crate::child`].

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The test "internet" host of the sandbox's network tests (spear-runtime's), which
/// `scripts/test-host.sh run` serves beside the tests.
pub const TEST_HOST_ADDR: &str = "203.0.113.10:8080";

/// The public web host (`public.test`), HTTP on 80 and HTTPS on 443.
pub const PUBLIC: &str = "93.184.216.34";
/// A second web host (`second.test`).
pub const SECOND: &str = "93.184.216.35";
/// A web host whose certificate nobody trusts (`untrusted.test`).
pub const UNTRUSTED: &str = "93.184.216.36";
/// The web host's IPv6 address (`v6only.test`).
pub const PUBLIC6: &str = "2a0b:4d07::34";
/// A second IPv6 web host.
pub const SECOND6: &str = "2a0b:4d07::35";
/// A private address of the tests' namespace (`private.test`).
pub const PRIVATE: &str = "10.77.0.1";
/// The metadata address, held by the tests' namespace (`meta.test`).
pub const METADATA: &str = "169.254.169.254";
/// A public-looking address that is the tests' namespace's own (`own.test`).
pub const OWN: &str = "93.184.217.1";
/// The tests' namespace's own IPv6 address, in the web hosts' /64 (`own6.test`).
pub const OWN6: &str = "2a0b:4d07::1";
/// A unique local address of the tests' namespace (`ula.test`, `mixed6.test`'s AAAA).
pub const ULA: &str = "fd00:77::1";
/// 6to4 of the metadata address, held by the tests' namespace.
pub const SIXTOFOUR_METADATA: &str = "2002:a9fe:a9fe::1";

/// The body of every web host's `/`.
pub const WEB_HOST_BODY: &[u8] = b"spear test web host\n";

/// Where the test CA is when `SPEAR_TEST_WEB_CA` is not passed down (scripts/test-unprivileged.sh
/// clears the environment).
pub const DEFAULT_WEB_CA: &str = "/dev/net/spear-testnet/web/ca.pem";

/// The directory the web hosts serve at `/files/NAME` (world-writable).
pub const WEB_FILES: &str = "/dev/net/spear-testnet/web/files";

/// Where the web hosts write one line per request they receive: its `Host` header and its
/// target, as sent.
pub const WEB_LOG: &str = "/dev/net/spear-testnet/web/requests.log";

/// The lines of [`WEB_LOG`] (every request the web hosts received so far) that hold `marker`.
/// Read after a moment, as [`crate::listener::Counter::count`] does, for a request on its way.
pub fn requests_with(marker: &str) -> Vec<String> {
    std::thread::sleep(Duration::from_millis(150));
    let log = std::fs::read_to_string(WEB_LOG).unwrap_or_else(|e| {
        panic!("the web hosts' request log {WEB_LOG} cannot be read (run inside scripts/test-host.sh): {e}")
    });
    log.lines()
        .filter(|l| l.contains(marker))
        .map(str::to_owned)
        .collect()
}

/// A word no other request of any test holds: `STEM-PID-N-NANOS`.
pub fn marker(stem: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{stem}-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Fails, saying how to run the tests, when this process is not inside the test network: a fetch
/// test run without it would fail on every case for a reason it cannot name. The body is checked,
/// not just the connection: a machine's own network may answer any address (a proxy).
///
/// The message names the calling test binary (`cargo test -p PACKAGE --test TEST`), which is why
/// this is a macro: it reads `CARGO_PKG_NAME` and `CARGO_CRATE_NAME` where it is called.
#[macro_export]
macro_rules! require_test_network {
    () => {
        $crate::net::require_web_host(env!("CARGO_PKG_NAME"), env!("CARGO_CRATE_NAME"))
    };
}

/// [`require_test_network!`](crate::require_test_network) for the test binary `test` of
/// `package`, which the failure message names: fails unless the public web host answers `/` with
/// [`WEB_HOST_BODY`].
pub fn require_web_host(package: &str, test: &str) {
    let addr = SocketAddr::new(PUBLIC.parse().unwrap(), 80);
    let answer = raw_get("/");
    let answered = answer.as_ref().is_ok_and(|b| b.ends_with(WEB_HOST_BODY));
    assert!(
        answered,
        "the test web host {addr} does not answer ({:?}): run these tests inside the test network, \
         as root: scripts/test-host.sh run cargo test -p {} --test {} (as spear-test: \
         scripts/test-unprivileged.sh)",
        answer.map(|b| String::from_utf8_lossy(&b).into_owned()),
        package,
        test,
    );
}

/// Fails, saying how to run the test, when this process is not inside the test network: a
/// network test of the sandbox run without it would fail on every probe for a reason it cannot
/// name. The body [`TEST_HOST_ADDR`] answers is checked, not just the connection: a machine's own
/// network may answer any address (a proxy).
pub fn require_test_host() {
    let addr: SocketAddr = TEST_HOST_ADDR.parse().unwrap();
    let answer = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).and_then(|mut s| {
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(b"GET / HTTP/1.0\r\n\r\n")?;
        let mut body = String::new();
        s.read_to_string(&mut body)?;
        Ok(body)
    });
    let answered = answer
        .as_ref()
        .is_ok_and(|b| b.ends_with("\r\n\r\nspear test host\n"));
    assert!(
        answered,
        "the test host {TEST_HOST_ADDR} does not answer the tests ({answer:?}): run them inside \
         the test network, as root: scripts/test-host.sh run cargo test -p spear-runtime \
         --test network (as spear-test: scripts/test-unprivileged.sh)"
    );
}

/// What `public.test` answers to `GET PATH` over HTTP/1.0, head and body, read by hand (no
/// client library, no policy): what the web host really sends, for positive controls.
pub fn raw_get(path: &str) -> std::io::Result<Vec<u8>> {
    let addr = SocketAddr::new(PUBLIC.parse().unwrap(), 80);
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: public.test\r\n\r\n").as_bytes())?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    Ok(answer)
}

/// The test CA's certificate file.
pub fn web_ca() -> PathBuf {
    let path = std::env::var_os("SPEAR_TEST_WEB_CA")
        .map_or_else(|| PathBuf::from(DEFAULT_WEB_CA), PathBuf::from);
    assert!(
        std::fs::File::open(&path).is_ok(),
        "the test CA {} cannot be read: run inside scripts/test-host.sh",
        path.display()
    );
    path
}

/// `http://public.test/redirect?to=TARGET&status=STATUS` (TARGET encoded).
pub fn redirect(base: &str, target: &str, status: u16) -> String {
    format!("{base}/redirect?to={}&status={status}", encode(target))
}

/// `text` percent-encoded for a query value (every byte but ASCII letters, digits and `-._~`).
pub fn encode(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A name no earlier lookup asked for (`rebind-LABEL.test` answers its first A question with
/// the public host, every later one with the private address).
pub fn fresh_rebind_name() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "rebind-{}-{}-{}.test",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        nanos % 1_000_000_000
    )
}
