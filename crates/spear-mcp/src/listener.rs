//! Where `spear mcp --listen` listens and how a connection reaches the HTTP server: a TCP address
//! or a unix socket ([`ListenAddr`]), in clear or through TLS ([`TlsFiles`]), and the names and
//! origins a request may carry ([`WebGuard`]).
//!
//! What it guarantees:
//!
//! - **No token in clear on a network.** [`bind_verdict`] (pure) lets a listener in clear only
//!   on a loopback address or a unix socket; any other address needs TLS, or the operator's
//!   `--insecure-http`, which is said on stderr each time. Attack stopped: the bearer tokens of
//!   every request sniffed on the network.
//! - **TLS is rustls with the ring provider**, TLS 1.2 and 1.3, ALPN `http/1.1`, the certificate
//!   and key read from PEM files and checked to match before anything is bound.
//! - **No client holds the server.** A TLS handshake runs on a task of its own, at most
//!   [`MAX_HANDSHAKES`] at once, each within [`HANDSHAKE_TIMEOUT`]; one that fails or is too slow
//!   is logged (debug) and dropped, and neither stops the server nor delays another client's
//!   connection. Attack stopped: a client that opens connections and never speaks, holding the
//!   accept loop.
//! - **A unix socket is this user's.** Made 0600 in a directory owned by this user that nobody
//!   else may write; an existing path is replaced only when it is a socket nobody answers on (a
//!   stale one); a peer of another uid is refused at accept; the socket is removed when the
//!   [`Listener`] is dropped (if it is still the one bound).
//! - **Host and Origin are checked** ([`web_guard`], pure): the `Host` a request names must be a
//!   loopback name, the address bound, or one the operator named (`--public-host`); a browser's
//!   `Origin` must be one the operator listed (`--allow-origin`), none by default. Attacks
//!   stopped: DNS rebinding (a page's script reaching the port through a name that resolves to
//!   it) and a web page in the user's browser posting to the server.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

/// The longest a TLS handshake may take before its connection is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most TLS handshakes in progress at once; further connections wait in the kernel's backlog
/// until one ends (at the latest after [`HANDSHAKE_TIMEOUT`]).
pub const MAX_HANDSHAKES: usize = 64;

/// The longest path a unix socket may have (`sun_path` is 108 bytes with its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The names a loopback listener answers to, as rmcp's `allowed_hosts` spells them.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The browser origins always allowed: pages this machine serves on loopback (any port), which
/// are the user's own, as MCP's transport section and its conformance suite expect of a local
/// server. A page from anywhere else, `null` included, is refused unless `--allow-origin` lists
/// it.
pub const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// Why the server cannot listen as asked, in words the operator can act on.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// The `--listen` value is neither `HOST:PORT` nor `unix:/PATH`.
    #[error("--listen {value}: {why}")]
    BadAddress {
        /// The value as given.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// A non-loopback address without TLS and without `--insecure-http`.
    #[error(
        "{addr} is not a loopback address: the bearer tokens would cross the network in clear. \
         Give a certificate (--tls-cert FILE --tls-key FILE), listen on 127.0.0.1, ::1 or a unix \
         socket (reach it through an SSH tunnel or a proxy that terminates TLS), or accept the \
         risk with --insecure-http"
    )]
    InClear {
        /// The address asked for.
        addr: String,
    },
    /// A TLS file could not be read.
    #[error("cannot read the TLS {what} {}: {source}", path.display())]
    TlsRead {
        /// `certificate` or `private key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A TLS file holds no PEM block of the kind expected.
    #[error("the TLS {what} {} is not PEM: {why}", path.display())]
    NotPem {
        /// `certificate` or `private key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What was found instead.
        why: String,
    },
    /// The private key is not the certificate's.
    #[error(
        "the private key {} does not match the certificate {} (its public key is another)",
        key.display(),
        cert.display()
    )]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refused the certificate or key for another reason.
    #[error("the TLS certificate {} and key {} cannot be used: {source}", cert.display(), key.display())]
    Tls {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls's reason.
        source: rustls::Error,
    },
    /// The unix socket's directory is not this user's alone.
    #[error(
        "cannot make the socket {}: {why} (use a directory of your own that others cannot \
         write, such as $XDG_RUNTIME_DIR)",
        path.display()
    )]
    UnixDir {
        /// The socket's path.
        path: PathBuf,
        /// What is wrong with its directory.
        why: String,
    },
    /// Something else is at the unix socket's path.
    #[error("cannot make the socket {}: {why}", path.display())]
    UnixPathTaken {
        /// The socket's path.
        path: PathBuf,
        /// What is there.
        why: String,
    },
    /// A `--public-host` value is not a host name.
    #[error("--public-host {value}: {why}")]
    BadPublicHost {
        /// The value as given.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// An `--allow-origin` value is not an origin.
    #[error("--allow-origin {value}: {why}")]
    BadOrigin {
        /// The value as given.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// Binding, or accepting, failed.
    #[error("cannot listen on {addr}: {source}")]
    Io {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Where to listen: what `--listen` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address (`127.0.0.1:8787`, `[::1]:0`; port 0 picks a free one).
    Tcp(SocketAddr),
    /// A unix socket (`unix:/run/user/1000/spear.sock`): an absolute path.
    Unix(PathBuf),
}

impl FromStr for ListenAddr {
    type Err = ListenError;

    /// Parses `HOST:PORT` (an IP address, IPv6 in brackets) or `unix:/ABSOLUTE/PATH`. Host names
    /// are refused: what a name resolves to can change between the check and the bind.
    fn from_str(value: &str) -> Result<Self, ListenError> {
        let bad = |why: &str| ListenError::BadAddress {
            value: value.to_owned(),
            why: why.to_owned(),
        };
        if let Some(path) = value.strip_prefix("unix:") {
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(bad("a unix socket's path must be absolute (unix:/PATH)"));
            }
            if path.as_os_str().len() > MAX_SOCKET_PATH {
                return Err(bad(&format!(
                    "a unix socket's path is at most {MAX_SOCKET_PATH} bytes"
                )));
            }
            if path.file_name().is_none() {
                return Err(bad("a unix socket's path must name a file"));
            }
            return Ok(ListenAddr::Unix(path));
        }
        value.parse::<SocketAddr>().map(ListenAddr::Tcp).map_err(|_| {
            bad("expected IP:PORT (127.0.0.1:8787, [::1]:8787) or unix:/PATH; host names are not \
                 resolved")
        })
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "{addr}"),
            ListenAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

impl ListenAddr {
    /// Whether only this host can reach the address: a loopback IP (an IPv4-mapped one included)
    /// or a unix socket.
    pub fn is_local(&self) -> bool {
        match self {
            ListenAddr::Tcp(addr) => addr.ip().to_canonical().is_loopback(),
            ListenAddr::Unix(_) => true,
        }
    }
}

/// What [`bind_verdict`] says of an address, TLS and `--insecure-http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindVerdict {
    /// Reachable from this host only (loopback or a unix socket): allowed with or without TLS.
    Local,
    /// Reachable from the network, with TLS: allowed.
    Encrypted,
    /// Reachable from the network without TLS, by the operator's `--insecure-http`: allowed, with
    /// [`INSECURE_WARNING`] said.
    InClear,
    /// Reachable from the network without TLS, and not asked for: refused.
    Refused,
}

/// The line said when the operator serves in clear on a network address.
pub const INSECURE_WARNING: &str = "warning: --insecure-http: spear listens without TLS on an \
     address other hosts can reach; bearer tokens and every tool call cross the network in clear";

/// The bind rule. Pure. Attack stopped: the bearer tokens (and the calls, files and output) of
/// every request sniffed on the network, when a server reachable from it speaks in clear.
pub fn bind_verdict(addr: &ListenAddr, tls: bool, insecure_http: bool) -> BindVerdict {
    match (addr.is_local(), tls, insecure_http) {
        (true, _, _) => BindVerdict::Local,
        (false, true, _) => BindVerdict::Encrypted,
        (false, false, true) => BindVerdict::InClear,
        (false, false, false) => BindVerdict::Refused,
    }
}

/// The PEM files of the server's certificate (its chain, leaf first) and private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first (`--tls-cert`).
    pub cert: PathBuf,
    /// The private key, PKCS#8, PKCS#1 or SEC1 (`--tls-key`).
    pub key: PathBuf,
}

impl TlsFiles {
    /// The rustls server configuration: the ring provider, TLS 1.2 and 1.3, no client
    /// certificates, ALPN `http/1.1`. Fails, naming the file, when a file is missing or
    /// unreadable, holds no PEM certificate (or key), or the key is not the certificate's.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, ListenError> {
        let read = |what: &'static str, path: &Path| {
            std::fs::read(path).map_err(|source| ListenError::TlsRead {
                what,
                path: path.to_path_buf(),
                source,
            })
        };
        let not_pem = |what: &'static str, path: &Path, why: String| ListenError::NotPem {
            what,
            path: path.to_path_buf(),
            why,
        };
        let cert_pem = read("certificate", &self.cert)?;
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| not_pem("certificate", &self.cert, e.to_string()))?;
        if chain.is_empty() {
            return Err(not_pem(
                "certificate",
                &self.cert,
                "no `BEGIN CERTIFICATE` block".to_owned(),
            ));
        }
        let key_pem = read("private key", &self.key)?;
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
            let why = match e {
                rustls::pki_types::pem::Error::NoItemsFound => {
                    "no `BEGIN PRIVATE KEY` (or RSA, EC) block".to_owned()
                }
                e => e.to_string(),
            };
            not_pem("private key", &self.key, why)
        })?;
        let tls_error = |source| match source {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                ListenError::KeyMismatch {
                    cert: self.cert.clone(),
                    key: self.key.clone(),
                }
            }
            source => ListenError::Tls {
                cert: self.cert.clone(),
                key: self.key.clone(),
                source,
            },
        };
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(tls_error)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(tls_error)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// A connection's byte stream, in clear or decrypted: what hyper serves.
pub trait Connection: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Connection for T {}

/// A connection accepted (its TLS handshake done, when there is TLS).
pub struct Accepted {
    /// The stream to serve.
    pub stream: Box<dyn Connection>,
    /// Who connected, for the logs: the peer's address, or `unix (uid N)`.
    pub peer: String,
}

/// A bound listener: TCP or a unix socket, with TLS or without. Dropping it closes the socket and
/// removes a unix socket's path (if it is still the socket bound).
pub struct Listener {
    addr: ListenAddr,
    /// Bound, not yet registered with tokio (done at the first [`Listener::accept`], inside the
    /// runtime).
    bound: Option<Bound>,
    live: Option<Live>,
    tls: Option<TlsAcceptor>,
    url: String,
    /// The unix socket's path and identity, removed at drop.
    unix: Option<UnixPath>,
    handshakes: JoinSet<Option<Accepted>>,
}

enum Bound {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

enum Live {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
}

struct UnixPath {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl Listener {
    /// Binds `addr` as [`bind_verdict`] allows (saying [`INSECURE_WARNING`] on stderr when it is
    /// [`BindVerdict::InClear`]), with `tls` loaded and checked first. A unix socket is made as
    /// the module says (0600, a private directory, a stale socket replaced). Needs no runtime;
    /// [`Listener::accept`] must run inside a tokio runtime with I/O enabled.
    pub fn bind(
        addr: &ListenAddr,
        tls: Option<&TlsFiles>,
        insecure_http: bool,
    ) -> Result<Listener, ListenError> {
        match bind_verdict(addr, tls.is_some(), insecure_http) {
            BindVerdict::Refused => {
                return Err(ListenError::InClear {
                    addr: addr.to_string(),
                });
            }
            BindVerdict::InClear => eprintln!("{INSECURE_WARNING}"),
            BindVerdict::Local | BindVerdict::Encrypted => {}
        }
        let tls = tls
            .map(TlsFiles::server_config)
            .transpose()?
            .map(TlsAcceptor::from);
        let io = |source| ListenError::Io {
            addr: addr.to_string(),
            source,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let (bound, url, unix) = match addr {
            ListenAddr::Tcp(socket) => {
                let listener = std::net::TcpListener::bind(socket).map_err(io)?;
                listener.set_nonblocking(true).map_err(io)?;
                let local = listener.local_addr().map_err(io)?;
                (Bound::Tcp(listener), format!("{scheme}://{local}"), None)
            }
            ListenAddr::Unix(path) => {
                let (listener, unix) = bind_unix(path)?;
                (
                    Bound::Unix(listener),
                    format!("{scheme}://localhost"),
                    Some(unix),
                )
            }
        };
        Ok(Listener {
            addr: addr.clone(),
            bound: Some(bound),
            live: None,
            tls,
            url,
            unix,
            handshakes: JoinSet::new(),
        })
    }

    /// The server's base URL, without a path: `http://127.0.0.1:PORT` (the port picked, with
    /// port 0), `https://[::1]:PORT` with TLS, `http://localhost` on a unix socket. What the
    /// Protected Resource Metadata's `resource` is built from (with `/mcp` added).
    pub fn local_url(&self) -> &str {
        &self.url
    }

    /// The TCP address bound (the port picked, with port 0); `None` for a unix socket.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match (&self.bound, &self.live) {
            (Some(Bound::Tcp(l)), _) => l.local_addr().ok(),
            (_, Some(Live::Tcp(l))) => l.local_addr().ok(),
            _ => None,
        }
    }

    /// Whether connections are TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The next connection ready to serve: accepted, from an allowed peer (a unix socket's: this
    /// user), its TLS handshake done. A handshake that fails or outlasts [`HANDSHAKE_TIMEOUT`],
    /// a peer refused and a connection aborted before it was accepted are logged and skipped; a
    /// lack of file descriptors is waited out. Errs only when the socket itself fails, or when
    /// called outside a tokio runtime. Cancel-safe: a connection whose handshake completes while
    /// no one awaits is kept for the next call.
    pub async fn accept(&mut self) -> Result<Accepted, ListenError> {
        if self.live.is_none() {
            let io = |source| ListenError::Io {
                addr: self.addr.to_string(),
                source,
            };
            let live = match self.bound.take() {
                Some(Bound::Tcp(l)) => Live::Tcp(tokio::net::TcpListener::from_std(l).map_err(io)?),
                Some(Bound::Unix(l)) => {
                    l.set_nonblocking(true).map_err(io)?;
                    Live::Unix(tokio::net::UnixListener::from_std(l).map_err(io)?)
                }
                None => return Err(io(std::io::Error::other("the listener is gone"))),
            };
            self.live = Some(live);
        }
        let Listener {
            addr,
            live,
            tls,
            handshakes,
            ..
        } = self;
        let Some(live) = live.as_ref() else {
            return Err(ListenError::Io {
                addr: addr.to_string(),
                source: std::io::Error::other("the listener is gone"),
            });
        };
        loop {
            let room = handshakes.len() < MAX_HANDSHAKES;
            tokio::select! {
                Some(done) = handshakes.join_next(), if !handshakes.is_empty() => match done {
                    Ok(Some(accepted)) => return Ok(accepted),
                    Ok(None) => {}
                    Err(e) => tracing::debug!("a TLS handshake task ended: {e}"),
                },
                got = accept_one(live), if room => match got {
                    Ok(Some((stream, peer))) => match tls {
                        None => return Ok(Accepted { stream, peer }),
                        Some(acceptor) => {
                            handshakes.spawn(handshake(acceptor.clone(), stream, peer));
                        }
                    },
                    Ok(None) => {}
                    Err(e) if is_transient(&e) => {
                        tracing::warn!("a connection was not accepted: {e}");
                        if is_exhaustion(&e) {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                    Err(source) => {
                        return Err(ListenError::Io { addr: addr.to_string(), source });
                    }
                },
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let Some(unix) = &self.unix else { return };
        // Only the socket this listener made: another server may have replaced a stale path.
        if let Ok(meta) = std::fs::symlink_metadata(&unix.path)
            && meta.dev() == unix.dev
            && meta.ino() == unix.ino
            && let Err(e) = std::fs::remove_file(&unix.path)
        {
            tracing::debug!("the socket {} stays: {e}", unix.path.display());
        }
    }
}

/// One connection from the socket; `None` for a unix peer of another user (refused).
async fn accept_one(live: &Live) -> Result<Option<(Box<dyn Connection>, String)>, std::io::Error> {
    match live {
        Live::Tcp(l) => {
            let (stream, peer) = l.accept().await?;
            // An answer goes out in pieces (headers, then each event of its stream): without
            // this, Nagle's algorithm holds the last piece back until the client's delayed ACK,
            // 40 ms on Linux, on every call.
            stream.set_nodelay(true)?;
            Ok(Some((Box::new(stream), peer.to_string())))
        }
        Live::Unix(l) => {
            let (stream, _) = l.accept().await?;
            let own = rustix::process::geteuid().as_raw();
            let peer = stream.peer_cred()?.uid();
            if !crate::approvals::peer_allowed(peer, own) {
                tracing::warn!("a connection from uid {peer} to the unix socket was refused");
                return Ok(None);
            }
            Ok(Some((Box::new(stream), format!("unix (uid {peer})"))))
        }
    }
}

/// The TLS handshake of one connection, within [`HANDSHAKE_TIMEOUT`]; `None` (logged) when it
/// fails or takes too long.
async fn handshake(
    acceptor: TlsAcceptor,
    stream: Box<dyn Connection>,
    peer: String,
) -> Option<Accepted> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(Accepted {
            stream: Box::new(tls),
            peer,
        }),
        Ok(Err(e)) => {
            tracing::debug!("the TLS handshake with {peer} failed: {e}");
            None
        }
        Err(_) => {
            tracing::debug!(
                "the TLS handshake with {peer} took longer than {} s: dropped",
                HANDSHAKE_TIMEOUT.as_secs()
            );
            None
        }
    }
}

/// Whether an accept error is one connection's, or a passing shortage: the listener goes on.
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::ConnectionAborted | K::ConnectionReset | K::Interrupted | K::WouldBlock
    ) || is_exhaustion(e)
        || e.raw_os_error() == Some(libc_eproto())
}

/// Out of file descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): worth waiting out.
fn is_exhaustion(e: &std::io::Error) -> bool {
    let code = e.raw_os_error();
    [
        rustix::io::Errno::MFILE,
        rustix::io::Errno::NFILE,
        rustix::io::Errno::NOBUFS,
        rustix::io::Errno::NOMEM,
    ]
    .iter()
    .any(|errno| code == Some(errno.raw_os_error()))
}

fn libc_eproto() -> i32 {
    rustix::io::Errno::PROTO.raw_os_error()
}

/// Binds the unix socket at `path` as the module says.
fn bind_unix(path: &Path) -> Result<(std::os::unix::net::UnixListener, UnixPath), ListenError> {
    let dir_error = |why: String| ListenError::UnixDir {
        path: path.to_path_buf(),
        why,
    };
    let dir = path
        .parent()
        .ok_or_else(|| dir_error("it has no directory".to_owned()))?;
    let own = rustix::process::geteuid().as_raw();
    let meta = std::fs::metadata(dir)
        .map_err(|e| dir_error(format!("its directory {}: {e}", dir.display())))?;
    if let Some(why) = socket_dir_fault(meta.is_dir(), meta.uid(), meta.mode(), own) {
        return Err(dir_error(format!("its directory {} {why}", dir.display())));
    }
    let taken = |why: String| ListenError::UnixPathTaken {
        path: path.to_path_buf(),
        why,
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(taken(e.to_string())),
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(taken(
                "the path exists and is not a socket; remove it or choose another".to_owned(),
            ));
        }
        Ok(_) => match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => {
                return Err(taken(
                    "a server is answering on it; stop it or choose another path".to_owned(),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                tracing::info!("replacing the stale socket {}", path.display());
                std::fs::remove_file(path).map_err(|e| taken(e.to_string()))?;
            }
            Err(e) => return Err(taken(format!("cannot tell whether it is stale: {e}"))),
        },
    }
    let io = |source| ListenError::Io {
        addr: format!("unix:{}", path.display()),
        source,
    };
    let listener = std::os::unix::net::UnixListener::bind(path).map_err(io)?;
    // Until this mode is set the socket follows the umask; a peer of another uid that connects
    // meanwhile is refused at accept.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    Ok((
        listener,
        UnixPath {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
        },
    ))
}

/// What is wrong with a unix socket's directory, if anything. Pure. It must be a directory owned
/// by this user (`own`) that neither group nor others may write. Attack stopped: another user
/// replacing the socket with one of their own (reading the tokens clients send) or planting a
/// link in its place.
fn socket_dir_fault(is_dir: bool, uid: u32, mode: u32, own: u32) -> Option<String> {
    if !is_dir {
        return Some("is not a directory".to_owned());
    }
    if uid != own {
        return Some(format!("belongs to uid {uid}, not to you (uid {own})"));
    }
    if mode & 0o022 != 0 {
        return Some(format!(
            "may be written by others (mode {:o})",
            mode & 0o7777
        ));
    }
    None
}

/// The `Host` names and browser `Origin`s a request may carry: rmcp's `allowed_hosts` and
/// `allowed_origins`, with Origin validation always on (no `Origin` header: allowed; an `Origin`
/// not listed, `null` included: `403`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebGuard {
    /// The names `Host` may carry (any port): the loopback names, the IP bound (when it is a
    /// specific address), and each `--public-host`.
    pub allowed_hosts: Vec<String>,
    /// The origins a browser's request may come from (`--allow-origin`), each with an explicit
    /// port; none by default.
    pub allowed_origins: Vec<String>,
}

impl WebGuard {
    /// `config` with these hosts and origins, and Origin validation enforced even with no origin
    /// listed.
    pub fn apply(&self, config: StreamableHttpServerConfig) -> StreamableHttpServerConfig {
        config
            .with_allowed_hosts(self.allowed_hosts.iter().cloned())
            .with_allowed_origins(self.allowed_origins.iter().cloned())
            .enforce_origin_validation()
    }
}

impl WebGuard {
    /// Whether a request naming `host` (its `Host` header) and `origin` (its `Origin` header,
    /// none when it has none) may be served, as rmcp judges the MCP endpoint's requests: for the
    /// node's own paths (`/mcp/sessions`, a session's end and patch, `/metrics`), which rmcp does
    /// not see. Pure. Attacks stopped: as [`web_guard`]'s, on those paths: a rebinding page
    /// making sessions, ending or reading them with a token it found, a browser page posting.
    ///
    /// # Errors
    /// Why not, in a line for the `403` (a missing or malformed `Host`: `400`).
    pub fn admits(&self, host: Option<&str>, origin: Option<&str>) -> Result<(), GuardRefusal> {
        let host = host.ok_or(GuardRefusal::NoHost)?;
        let (name, port) = authority(host).ok_or(GuardRefusal::NoHost)?;
        let host_ok = self.allowed_hosts.iter().any(|allowed| {
            authority(allowed).is_some_and(|(a_name, a_port)| {
                a_name == name && a_port.is_none_or(|p| port == Some(p))
            })
        });
        if !host_ok {
            return Err(GuardRefusal::Host);
        }
        let Some(origin) = origin else {
            return Ok(());
        };
        let (scheme, rest) = origin
            .trim()
            .split_once("://")
            .ok_or(GuardRefusal::Origin)?;
        let scheme = scheme.to_ascii_lowercase();
        let (o_name, o_port) = authority(rest).ok_or(GuardRefusal::Origin)?;
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return Err(GuardRefusal::Origin),
        };
        let o_port = o_port.unwrap_or(default_port);
        let listed = self.allowed_origins.iter().any(|allowed| {
            let Some((a_scheme, a_rest)) = allowed.split_once("://") else {
                return false;
            };
            let (a_host, any_port) = match a_rest.strip_suffix(":*") {
                Some(h) => (h, true),
                None => (a_rest, false),
            };
            a_scheme.eq_ignore_ascii_case(&scheme)
                && authority(a_host).is_some_and(|(a_name, a_port)| {
                    a_name == o_name && (any_port || a_port.unwrap_or(default_port) == o_port)
                })
        });
        if listed {
            Ok(())
        } else {
            Err(GuardRefusal::Origin)
        }
    }
}

/// Why [`WebGuard::admits`] refuses a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GuardRefusal {
    /// No `Host`, or one that is not a host and port.
    #[error("the request has no valid Host header")]
    NoHost,
    /// A `Host` the server does not answer to (DNS rebinding).
    #[error(
        "Host names no name this server answers to (loopback, the address bound, or a \
         --public-host)"
    )]
    Host,
    /// An `Origin` the operator did not list (`--allow-origin`), `null` included.
    #[error("Origin is not one this server allows (--allow-origin)")]
    Origin,
}

/// A port as `Host` spells it: ASCII digits only (`+8443` is no port, though Rust parses it).
fn port_number(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A host and port as `Host` spells them (`name`, `name:port`, `[v6]`, `[v6]:port`): the name
/// lowercased without brackets, and the port if any. None for anything else.
fn authority(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    if text.is_empty() || text.contains(['/', '@', '?', '#', ' ']) {
        return None;
    }
    let (name, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(port_number(p.strip_prefix(':')?)?),
        };
        (inside, port)
    } else {
        match text.rsplit_once(':') {
            Some((name, port)) if !name.contains(':') => (name, Some(port_number(port)?)),
            // No port, or an IPv6 address without brackets, as an allow-list may spell one.
            _ => (text, None),
        }
    };
    if name.is_empty() {
        return None;
    }
    Some((name.to_ascii_lowercase(), port))
}

/// The guard for a server at `addr`. Pure. Attacks stopped: DNS rebinding (a web page's script
/// reaching the port through a name of the attacker's that resolves to it: its `Host` is not
/// allowed), and a web page open in the user's browser posting to the server (its `Origin` is not
/// listed). `public_hosts` are `NAME` or `NAME:PORT` (a port limits the name to it);
/// `allow_origins` are `http(s)://HOST[:PORT]` (the scheme's port when none is given).
pub fn web_guard(
    addr: &ListenAddr,
    public_hosts: &[String],
    allow_origins: &[String],
) -> Result<WebGuard, ListenError> {
    let mut allowed_hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    if let ListenAddr::Tcp(socket) = addr
        && !socket.ip().is_unspecified()
    {
        allowed_hosts.push(host_entry(socket.ip().to_canonical()));
    }
    for value in public_hosts {
        allowed_hosts.push(public_host(value)?);
    }
    let mut seen = std::collections::HashSet::new();
    allowed_hosts.retain(|h| seen.insert(h.clone()));
    let mut allowed_origins: Vec<String> =
        LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).collect();
    for value in allow_origins {
        allowed_origins.push(origin(value)?);
    }
    Ok(WebGuard {
        allowed_hosts,
        allowed_origins,
    })
}

/// A `--public-host` value, checked and lowercased: a DNS name or an IP address (IPv6 in
/// brackets when a port follows), with an optional port. No wildcard: a wildcard would let any
/// name through, the rebinding attack's.
fn public_host(value: &str) -> Result<String, ListenError> {
    let bad = |why: &str| ListenError::BadPublicHost {
        value: value.to_owned(),
        why: why.to_owned(),
    };
    let value = value.trim();
    if value.contains("://") || value.contains('/') {
        return Err(bad(
            "a host name, not a URL (example.com or example.com:8443)",
        ));
    }
    if let Ok(ip) = value.parse::<IpAddr>() {
        return Ok(host_entry(ip));
    }
    let authority = value
        .parse::<hyper::http::uri::Authority>()
        .map_err(|_| bad("not a host name"))?;
    if authority.as_str().contains('@') {
        return Err(bad("no user part"));
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let is_ip = host.parse::<IpAddr>().is_ok();
    if !is_ip && !is_dns_name(host) {
        return Err(bad(
            "not a host name (letters, digits, `-` and `.`; no wildcard)",
        ));
    }
    let host = host.to_ascii_lowercase();
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    Ok(match authority.port_u16() {
        Some(port) => format!("{host}:{port}"),
        None if authority.as_str().ends_with(':') => return Err(bad("an empty port")),
        None => host,
    })
}

/// An IP address as an `allowed_hosts` entry: IPv6 in brackets, so that its colons are never
/// read as a port.
fn host_entry(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// Whether `name` is a DNS name: labels of letters, digits and `-`, not starting or ending with
/// `-`, at most 63 bytes each and 253 in all.
fn is_dns_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// An `--allow-origin` value, checked and normalised to `scheme://host:port` (lowercase, the
/// scheme's port made explicit). Only `http` and `https`; no path, user, query, wildcard or
/// `null` (the origin of local files and sandboxed frames, which any page can produce).
fn origin(value: &str) -> Result<String, ListenError> {
    let bad = |why: &str| ListenError::BadOrigin {
        value: value.to_owned(),
        why: why.to_owned(),
    };
    let trimmed = value.trim().trim_end_matches('/');
    if trimmed.eq_ignore_ascii_case("null") {
        return Err(bad(
            "`null` is the origin of local files and sandboxed frames, which any page can make",
        ));
    }
    if trimmed.contains('*') {
        return Err(bad("no wildcard: list each origin"));
    }
    let uri = trimmed
        .parse::<hyper::Uri>()
        .map_err(|_| bad("expected http(s)://HOST[:PORT]"))?;
    let scheme = uri
        .scheme_str()
        .map(str::to_ascii_lowercase)
        .ok_or_else(|| bad("expected http(s)://HOST[:PORT]"))?;
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return Err(bad("the scheme must be http or https")),
    };
    let authority = uri
        .authority()
        .ok_or_else(|| bad("expected http(s)://HOST[:PORT]"))?;
    if authority.as_str().contains('@') {
        return Err(bad("an origin has no user part"));
    }
    if uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
        return Err(bad("an origin has no path or query"));
    }
    let host = authority.host().to_ascii_lowercase();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_err() && !is_dns_name(bare) {
        return Err(bad("not a host name"));
    }
    let port = authority.port_u16().unwrap_or(default_port);
    Ok(format!("{scheme}://{host}:{port}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    fn addr(s: &str) -> ListenAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_nodes_own_paths_admit_what_rmcp_admits_on_the_mcp_path() {
        let addr: ListenAddr = "127.0.0.1:8787".parse().unwrap();
        let guard = web_guard(
            &addr,
            &["spear.ns.svc".to_owned(), "node.example:8443".to_owned()],
            &["https://app.example".to_owned()],
        )
        .unwrap();
        let ok = |host: &str, origin: Option<&str>| guard.admits(Some(host), origin);
        // Hosts: loopback names and the bound address at any port, public hosts as listed.
        for host in [
            "127.0.0.1:8787",
            "localhost",
            "LOCALHOST:9",
            "[::1]:8787",
            "spear.ns.svc:8787",
            "node.example:8443",
        ] {
            assert_eq!(ok(host, None), Ok(()), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8787",
            "node.example:8787",
            "127.0.0.2:8787",
            "spear.ns.svc.evil.example",
            "localhost.evil.example",
        ] {
            assert_eq!(ok(host, None), Err(GuardRefusal::Host), "{host}");
        }
        for host in [
            "",
            "localhost:99999",
            "localhost:x",
            "[::1",
            "x/y",
            "user@localhost",
        ] {
            assert_eq!(ok(host, None), Err(GuardRefusal::NoHost), "{host:?}");
        }
        assert_eq!(guard.admits(None, None), Err(GuardRefusal::NoHost));
        // Origins: the user's loopback pages at any port, and the listed one at its port only.
        for origin in [
            "http://localhost:3000",
            "https://127.0.0.1:1",
            "http://[::1]:80",
            "https://app.example",
            "https://app.example:443",
        ] {
            assert_eq!(ok("localhost", Some(origin)), Ok(()), "{origin}");
        }
        for origin in [
            "null",
            "https://evil.example",
            "http://app.example",
            "https://app.example:8443",
            "ftp://localhost:21",
            "localhost",
            "https://app.example.evil.example",
        ] {
            assert_eq!(
                ok("localhost", Some(origin)),
                Err(GuardRefusal::Origin),
                "{origin}"
            );
        }
    }

    #[test]
    fn listen_values_are_parsed() {
        let cases: [(&str, Result<ListenAddr, &str>); 9] = [
            (
                "127.0.0.1:8787",
                Ok(ListenAddr::Tcp("127.0.0.1:8787".parse().unwrap())),
            ),
            ("[::1]:0", Ok(ListenAddr::Tcp("[::1]:0".parse().unwrap()))),
            (
                "0.0.0.0:443",
                Ok(ListenAddr::Tcp("0.0.0.0:443".parse().unwrap())),
            ),
            (
                "unix:/run/user/1000/spear.sock",
                Ok(ListenAddr::Unix("/run/user/1000/spear.sock".into())),
            ),
            ("unix:spear.sock", Err("must be absolute")),
            ("unix:/", Err("must name a file")),
            ("localhost:8787", Err("host names are not resolved")),
            ("127.0.0.1", Err("expected IP:PORT")),
            ("", Err("expected IP:PORT")),
        ];
        for (value, want) in cases {
            match (value.parse::<ListenAddr>(), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{value}"),
                (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{value}: {e}"),
                (got, want) => panic!("{value}: {got:?}, wanted {want:?}"),
            }
        }
        let long = format!("unix:/{}", "a".repeat(MAX_SOCKET_PATH));
        assert!(long.parse::<ListenAddr>().is_err(), "longer than sun_path");
        assert_eq!(addr("unix:/tmp/s").to_string(), "unix:/tmp/s");
        assert_eq!(addr("[::1]:9").to_string(), "[::1]:9");
    }

    #[test]
    fn the_bind_rule_keeps_clear_text_off_the_network() {
        use BindVerdict::{Encrypted, InClear, Local, Refused};
        let cases = [
            // (address, tls, --insecure-http, verdict)
            ("127.0.0.1:0", false, false, Local),
            ("127.0.0.1:0", true, false, Local),
            ("127.8.9.10:0", false, false, Local),
            ("[::1]:0", false, false, Local),
            ("[::ffff:127.0.0.1]:0", false, false, Local),
            ("unix:/tmp/spear.sock", false, false, Local),
            ("unix:/tmp/spear.sock", true, false, Local),
            ("0.0.0.0:0", false, false, Refused),
            ("[::]:0", false, false, Refused),
            ("192.168.1.5:0", false, false, Refused),
            ("[::ffff:10.0.0.1]:0", false, false, Refused),
            ("0.0.0.0:0", true, false, Encrypted),
            ("0.0.0.0:0", true, true, Encrypted),
            ("192.168.1.5:0", false, true, InClear),
        ];
        for (a, tls, insecure, want) in cases {
            assert_eq!(
                bind_verdict(&addr(a), tls, insecure),
                want,
                "{a} tls={tls} insecure={insecure}"
            );
        }
    }

    #[test]
    fn a_network_address_without_tls_is_refused_at_bind() {
        let e = Listener::bind(&addr("0.0.0.0:0"), None, false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a loopback address"), "{e}");
        assert!(
            e.contains("--tls-cert") && e.contains("--insecure-http"),
            "{e}"
        );
        // Positive controls: loopback binds without TLS; the network address with
        // --insecure-http.
        let local = Listener::bind(&addr("127.0.0.1:0"), None, false).unwrap();
        let port = local.local_addr().unwrap().port();
        assert_eq!(local.local_url(), format!("http://127.0.0.1:{port}"));
        assert!(!local.is_tls());
        let open = Listener::bind(&addr("0.0.0.0:0"), None, true).unwrap();
        assert_ne!(open.local_addr().unwrap().port(), 0);
    }

    #[test]
    fn a_socket_directory_must_be_this_users_alone() {
        let cases = [
            (true, 1000, 0o40700, None),
            (true, 1000, 0o40755, None),
            (true, 1000, 0o41700, None),
            (false, 1000, 0o100_600, Some("is not a directory")),
            (true, 0, 0o40700, Some("belongs to uid 0")),
            (
                true,
                1000,
                0o40770,
                Some("may be written by others (mode 770)"),
            ),
            (
                true,
                1000,
                0o41777,
                Some("may be written by others (mode 1777)"),
            ),
        ];
        for (is_dir, uid, mode, want) in cases {
            let got = socket_dir_fault(is_dir, uid, mode, 1000);
            match want {
                None => assert_eq!(got, None, "{mode:o}"),
                Some(part) => assert!(got.as_deref().unwrap().contains(part), "{got:?}"),
            }
        }
    }

    #[test]
    fn hosts_are_loopback_the_address_bound_and_the_operators() {
        let guard = web_guard(&addr("127.0.0.1:8787"), &[], &[]).unwrap();
        assert_eq!(guard.allowed_hosts, ["localhost", "127.0.0.1", "::1"]);
        assert_eq!(guard.allowed_origins, LOOPBACK_ORIGINS);
        let guard =
            web_guard(&addr("0.0.0.0:443"), &["Spear.Example.COM".to_owned()], &[]).unwrap();
        assert_eq!(
            guard.allowed_hosts,
            ["localhost", "127.0.0.1", "::1", "spear.example.com"]
        );
        let guard = web_guard(
            &addr("192.168.1.5:8443"),
            &[
                "box.lan:8443".to_owned(),
                "[fe80::1]:8443".to_owned(),
                "fe80::2".to_owned(),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            guard.allowed_hosts,
            [
                "localhost",
                "127.0.0.1",
                "::1",
                "192.168.1.5",
                "box.lan:8443",
                "[fe80::1]:8443",
                "[fe80::2]"
            ]
        );
        let guard = web_guard(&addr("[2001:db8::5]:443"), &[], &[]).unwrap();
        assert_eq!(guard.allowed_hosts[3], "[2001:db8::5]");
        let guard = web_guard(&addr("unix:/tmp/s"), &[], &[]).unwrap();
        assert_eq!(guard.allowed_hosts, ["localhost", "127.0.0.1", "::1"]);
    }

    #[test]
    fn public_hosts_are_names_never_wildcards_or_urls() {
        let cases: [(&str, Result<&str, &str>); 11] = [
            ("example.com", Ok("example.com")),
            ("EXAMPLE.com:8443", Ok("example.com:8443")),
            ("10.0.0.7", Ok("10.0.0.7")),
            ("fe80::1", Ok("[fe80::1]")),
            ("[FE80::1]", Ok("[fe80::1]")),
            ("*.example.com", Err("not a host name")),
            ("*", Err("not a host name")),
            ("https://example.com", Err("not a URL")),
            ("example.com/mcp", Err("not a URL")),
            ("user@example.com", Err("")),
            ("-bad-.example", Err("not a host name")),
        ];
        for (value, want) in cases {
            match (public_host(value), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{value}"),
                (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{value}: {e}"),
                (got, want) => panic!("{value}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn origins_are_listed_exactly_with_their_port() {
        let cases: [(&str, Result<&str, &str>); 11] = [
            ("https://app.example.com", Ok("https://app.example.com:443")),
            (
                "https://App.Example.com/",
                Ok("https://app.example.com:443"),
            ),
            ("http://localhost:3000", Ok("http://localhost:3000")),
            ("http://127.0.0.1", Ok("http://127.0.0.1:80")),
            ("http://[::1]:8080", Ok("http://[::1]:8080")),
            ("null", Err("`null`")),
            ("https://*.example.com", Err("no wildcard")),
            ("http://localhost:*", Err("no wildcard")),
            ("file:///home", Err("")),
            ("https://app.example.com/path", Err("no path")),
            ("app.example.com", Err("expected http(s)://")),
        ];
        for (value, want) in cases {
            match (origin(value), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{value}"),
                (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{value}: {e}"),
                (got, want) => panic!("{value}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn the_guard_enforces_origins_in_rmcps_config() {
        let guard = web_guard(
            &addr("127.0.0.1:0"),
            &["spear.example".to_owned()],
            &["https://app.example".to_owned()],
        )
        .unwrap();
        let config = guard.apply(StreamableHttpServerConfig::default());
        assert_eq!(config.allowed_hosts, guard.allowed_hosts);
        assert_eq!(
            config.allowed_origins[LOOPBACK_ORIGINS.len()..],
            ["https://app.example:443"]
        );
        // With no origin listed, validation is still on: every Origin but loopback's is
        // refused. Its flag is private; rmcp's Debug shows it.
        let none = web_guard(&addr("127.0.0.1:0"), &[], &[])
            .unwrap()
            .apply(StreamableHttpServerConfig::default());
        assert!(
            format!("{none:?}").contains("validate_empty_origin_allowlist: true"),
            "{none:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rmcp_refuses_hosts_and_origins_the_guard_does_not_list() {
        use http_body_util::Full;
        use rmcp::transport::streamable_http_server::StreamableHttpService;
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use tower_service::Service as _;

        let guard = web_guard(
            &addr("0.0.0.0:8443"),
            &["spear.example".to_owned(), "fe80::2".to_owned()],
            &["https://app.example".to_owned()],
        )
        .unwrap();
        let mcp: StreamableHttpService<crate::SpearServer, LocalSessionManager> =
            StreamableHttpService::new(
                || Err(std::io::Error::other("no session in this test")),
                Arc::new(LocalSessionManager::default()),
                guard.apply(StreamableHttpServerConfig::default()),
            );
        let status = async |host: &str, origin: Option<&str>| {
            let mut request = hyper::Request::post("/mcp")
                .header(hyper::header::HOST, host)
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .header(hyper::header::ACCEPT, "application/json, text/event-stream");
            if let Some(origin) = origin {
                request = request.header(hyper::header::ORIGIN, origin);
            }
            let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
            let request = request.body(Full::new(bytes::Bytes::from(body))).unwrap();
            let response = mcp.clone().call(request).await.unwrap();
            response.status()
        };
        let forbidden = hyper::StatusCode::FORBIDDEN;
        // DNS rebinding: a name of the attacker's that resolves to the server.
        assert_eq!(status("evil.example:8443", None).await, forbidden);
        // A web page in the user's browser posting to the server.
        assert_eq!(
            status("localhost:8443", Some("https://evil.example")).await,
            forbidden
        );
        assert_eq!(status("localhost:8443", Some("null")).await, forbidden);
        assert_eq!(
            status("spear.example", Some("https://app.example:8443")).await,
            forbidden,
            "another port of a listed origin"
        );
        // Positive controls: the names and the origin listed, and a client that is no browser,
        // pass the guard (what follows is rmcp's: no session here).
        for (host, origin) in [
            ("localhost:8443", None),
            ("127.0.0.1:8443", None),
            ("spear.example:8443", None),
            ("[fe80::2]:8443", None),
            ("spear.example", Some("https://app.example")),
            ("spear.example", Some("https://app.example:443")),
            ("localhost:8443", Some("http://localhost:5173")),
            ("127.0.0.1:8443", Some("http://127.0.0.1:8443")),
        ] {
            assert_ne!(status(host, origin).await, forbidden, "{host} {origin:?}");
        }
    }

    /// A self-signed certificate for `localhost` and its key, written to `dir`.
    fn self_signed(dir: &Path, name: &str) -> (TlsFiles, rcgen::CertifiedKey<rcgen::KeyPair>) {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let files = TlsFiles {
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}.key")),
        };
        std::fs::write(&files.cert, made.cert.pem()).unwrap();
        std::fs::write(&files.key, made.signing_key.serialize_pem()).unwrap();
        (files, made)
    }

    #[test]
    fn tls_files_are_checked_with_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (good, _) = self_signed(dir.path(), "a");
        let (other, _) = self_signed(dir.path(), "b");
        let text = dir.path().join("text.pem");
        std::fs::write(&text, "not a certificate\n").unwrap();
        let config = good.server_config().unwrap();
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
        let err = |files: TlsFiles| files.server_config().err().unwrap();
        let missing = err(TlsFiles {
            cert: dir.path().join("nope.pem"),
            key: good.key.clone(),
        });
        assert!(
            matches!(
                missing,
                ListenError::TlsRead {
                    what: "certificate",
                    ..
                }
            ),
            "{missing}"
        );
        assert!(missing.to_string().contains("nope.pem"), "{missing}");
        let not_pem = err(TlsFiles {
            cert: text.clone(),
            key: good.key.clone(),
        });
        assert!(
            matches!(
                not_pem,
                ListenError::NotPem {
                    what: "certificate",
                    ..
                }
            ),
            "{not_pem}"
        );
        let key_not_pem = err(TlsFiles {
            cert: good.cert.clone(),
            key: text,
        });
        assert!(
            matches!(
                key_not_pem,
                ListenError::NotPem {
                    what: "private key",
                    ..
                }
            ),
            "{key_not_pem}"
        );
        // A certificate given as the key is not a key.
        let swapped = err(TlsFiles {
            cert: good.cert.clone(),
            key: good.cert.clone(),
        });
        assert!(matches!(swapped, ListenError::NotPem { .. }), "{swapped}");
        let mismatch = err(TlsFiles {
            cert: good.cert.clone(),
            key: other.key,
        });
        assert!(
            matches!(mismatch, ListenError::KeyMismatch { .. }),
            "{mismatch}"
        );
        assert!(
            mismatch.to_string().contains("does not match"),
            "{mismatch}"
        );
    }

    fn client_config(cert: &rcgen::Certificate) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.der().clone()).unwrap();
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tls_client_completes_the_handshake_and_bytes_go_through() {
        let dir = tempfile::tempdir().unwrap();
        let (files, made) = self_signed(dir.path(), "server");
        let mut listener = Listener::bind(&addr("127.0.0.1:0"), Some(&files), false).unwrap();
        let local = listener.local_addr().unwrap();
        assert_eq!(listener.local_url(), format!("https://{local}"));
        let connector = tokio_rustls::TlsConnector::from(client_config(&made.cert));

        // A client that fails its handshake (it speaks plain text) and one that never speaks:
        // neither stops the server nor holds up the good client below.
        let mut bad = tokio::net::TcpStream::connect(local).await.unwrap();
        bad.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let _silent = tokio::net::TcpStream::connect(local).await.unwrap();

        let client = tokio::spawn(async move {
            let tcp = tokio::net::TcpStream::connect(local).await.unwrap();
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let mut tls = connector.connect(name, tcp).await.unwrap();
            assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
            tls.write_all(b"x").await.unwrap();
            let mut back = [0u8; 1];
            tls.read_exact(&mut back).await.unwrap();
            back[0]
        });
        let mut accepted = tokio::time::timeout(Duration::from_secs(5), listener.accept())
            .await
            .expect("the good client is served before the silent one times out")
            .unwrap();
        let mut byte = [0u8; 1];
        accepted.stream.read_exact(&mut byte).await.unwrap();
        assert_eq!(&byte, b"x");
        accepted.stream.write_all(b"y").await.unwrap();
        accepted.stream.flush().await.unwrap();
        assert_eq!(client.await.unwrap(), b'y');
        assert!(accepted.peer.starts_with("127.0.0.1:"), "{}", accepted.peer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_unix_socket_is_private_replaces_a_stale_one_and_goes_at_drop() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = dir.path().join("spear.sock");
        // A stale socket: bound, then its listener gone.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let at = ListenAddr::Unix(path.clone());
        let mut listener = Listener::bind(&at, None, false).unwrap();
        assert_eq!(listener.local_url(), "http://localhost");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );

        let client_path = path.clone();
        let client = tokio::spawn(async move {
            let mut s = tokio::net::UnixStream::connect(&client_path).await.unwrap();
            s.write_all(b"x").await.unwrap();
            let mut back = [0u8; 1];
            s.read_exact(&mut back).await.unwrap();
            back[0]
        });
        let mut accepted = tokio::time::timeout(Duration::from_secs(5), listener.accept())
            .await
            .unwrap()
            .unwrap();
        let mut byte = [0u8; 1];
        accepted.stream.read_exact(&mut byte).await.unwrap();
        accepted.stream.write_all(b"y").await.unwrap();
        assert_eq!(client.await.unwrap(), b'y');
        assert!(accepted.peer.starts_with("unix (uid "), "{}", accepted.peer);
        // A second server on the same path is refused while this one answers.
        let e = Listener::bind(&at, None, false).err().unwrap().to_string();
        assert!(e.contains("a server is answering"), "{e}");
        drop(listener);
        assert!(!path.exists(), "removed at drop");
    }

    #[test]
    fn a_unix_socket_refuses_other_files_and_open_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "keep me").unwrap();
        let e = Listener::bind(&ListenAddr::Unix(file.clone()), None, false)
            .err()
            .unwrap();
        assert!(matches!(e, ListenError::UnixPathTaken { .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = Listener::bind(&ListenAddr::Unix(open.join("s.sock")), None, false)
            .err()
            .unwrap();
        assert!(matches!(e, ListenError::UnixDir { .. }), "{e}");
        assert!(!open.join("s.sock").exists());
    }
}
