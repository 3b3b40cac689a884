//! The test network as every crate's network tests meet it (scripts/test-host.sh and
//! scripts/test-web-host.py make it): its names and addresses, the check that a test binary runs
//! inside it, counting listeners, files served by the web hosts, and child processes for the cases
//! that need an environment of their own. Standard library only: spear-web's tests include it as
//! `common::testnet`, spear-tools' and spear-cli's network tests by `#[path]`.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

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
/// Read after a moment, as [`Counter::count`] does, for a request on its way.
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
pub fn require_test_network() {
    let addr = SocketAddr::new(PUBLIC.parse().unwrap(), 80);
    let answer = raw_get("/");
    let answered = answer.as_ref().is_ok_and(|b| b.ends_with(WEB_HOST_BODY));
    assert!(
        answered,
        "the test web host {addr} does not answer ({:?}): run these tests inside the test network, \
         as root: scripts/test-host.sh run cargo test -p {} --test {} (as spear-test: \
         scripts/test-unprivileged.sh)",
        answer.map(|b| String::from_utf8_lossy(&b).into_owned()),
        env!("CARGO_PKG_NAME"),
        env!("CARGO_CRATE_NAME"),
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

static FIXED_PORTS: Mutex<()> = Mutex::new(());

/// Held while a test binds fixed ports (80): tests that do run one at a time.
pub fn fixed_ports() -> MutexGuard<'static, ()> {
    FIXED_PORTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A TCP listener that counts the connections it accepts (and answers each with a short HTTP
/// response, so that a client that did reach it would get an answer, not an error). Closed when
/// dropped.
pub struct Counter {
    addr: SocketAddr,
    count: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Counter {
    /// Binds `ip:port` (port 0: any).
    pub fn bind(ip: &str, port: u16) -> Counter {
        Counter::try_bind(ip, port)
            .unwrap_or_else(|e| panic!("binding a counting listener to {ip} port {port}: {e}"))
    }

    fn try_bind(ip: &str, port: u16) -> std::io::Result<Counter> {
        let ip: IpAddr = ip.parse().unwrap();
        let listener = TcpListener::bind(SocketAddr::new(ip, port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let count = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, stopped) = (count.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        seen.fetch_add(1, Ordering::SeqCst);
                        std::thread::spawn(move || answer(stream));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(Counter {
            addr,
            count,
            stop,
            thread: Some(thread),
        })
    }

    /// Binds `v4` and `v6` on one port number (as `localhost` names both).
    pub fn bind_pair(v4: &str, v6: &str) -> (Counter, Counter) {
        for _ in 0..50 {
            let first = Counter::bind(v4, 0);
            if let Ok(second) = Counter::try_bind(v6, first.port()) {
                return (first, second);
            }
        }
        panic!("no port free on both {v4} and {v6}");
    }

    /// The address bound.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port bound.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://ADDR:PORT/` (IPv6 in brackets).
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The connections accepted so far, after a moment for any that is on its way (a connection
    /// the kernel completed waits in the backlog until the thread accepts it).
    pub fn count(&self) -> usize {
        std::thread::sleep(Duration::from_millis(150));
        self.count.load(Ordering::SeqCst)
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn answer(mut stream: TcpStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 4096];
    let _ = stream.read(&mut buf);
    let _ = stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 8\r\nconnection: close\r\n\r\ncounted\n",
    );
}

/// The environment variable that tells a re-executed test binary which test it is to run as the
/// child (see [`run_child`]).
pub const CHILD: &str = "SPEAR_WEB_TEST_CHILD";

/// Whether this process is the child [`run_child`] started for `test`.
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|v| v == test)
}

/// Runs the test `test` of this binary again in a child process with `set` added to this
/// process's environment and `remove` removed, and fails unless that one test ran and passed.
/// For what reads the environment (`SSL_CERT_FILE` at `Fetcher::new`, the proxy variables):
/// setting variables in this process is unsafe while other tests run in threads.
pub fn run_child(test: &str, set: &[(&str, &str)], remove: &[&str]) {
    let exe = std::env::current_exe().unwrap();
    let mut command = std::process::Command::new(exe);
    command.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    command.env(CHILD, test);
    for (name, value) in set {
        command.env(name, value);
    }
    for name in remove {
        command.env_remove(name);
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed") && stdout.contains(&child_mark(test)),
        "the child running {test} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

/// What a child prints once its test's body has run (so that the parent knows it did).
pub fn child_mark(test: &str) -> String {
    format!("child ran {test} to the end")
}

/// Prints [`child_mark`].
pub fn child_done(test: &str) {
    println!("{}", child_mark(test));
}

/// A file the web hosts serve at `/files/NAME`, under a name no other test uses (the directory is
/// shared by the root and the unprivileged runs, and sticky: a name another user made cannot be
/// replaced). Removed when dropped.
pub struct WebFile {
    name: String,
    path: PathBuf,
}

impl WebFile {
    /// Writes `body` as `STEM-UNIQUE.EXT` in [`WEB_FILES`].
    pub fn new(stem: &str, ext: &str, body: &[u8]) -> WebFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!(
            "{stem}-{}-{}-{nanos}.{ext}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let path = PathBuf::from(WEB_FILES).join(&name);
        std::fs::write(&path, body).unwrap_or_else(|e| {
            panic!(
                "writing {} (run inside scripts/test-host.sh, which makes the web hosts' files \
                 directory): {e}",
                path.display()
            )
        });
        WebFile { name, path }
    }

    /// The file's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `http://public.test/files/NAME`.
    pub fn url(&self) -> String {
        format!("http://public.test/files/{}", self.name)
    }
}

impl Drop for WebFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
