//! Counting listeners: a TCP listener on an address of the tests' namespace that counts the
//! connections it accepts, so that a test can show a refused fetch never connected (and its
//! positive control did).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::serial::Turns;

static FIXED_PORTS: Turns = Turns::new();

/// Held while a test binds fixed ports (80): tests that do run one at a time.
pub fn fixed_ports() -> MutexGuard<'static, ()> {
    FIXED_PORTS.take()
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
