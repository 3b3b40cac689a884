//! [`Fetcher`]: one GET of a URL, with every connection checked before it is made.
//!
//! For each hop (the URL, then each redirect):
//! 1. the URL is parsed and judged ([`Target`]: scheme, userinfo, port);
//! 2. a name is resolved once, by hickory-resolver from the system's resolv.conf, asking for A and
//!    AAAA records both; every address is judged by [`address::check`] against the deny table and
//!    the host's own addresses, and one refused address refuses the name (a name with a private
//!    record is not raced against its public one); an address literal is judged as it is;
//! 3. the HTTP client is given exactly those addresses for that name and a resolver that refuses
//!    every other name, so it cannot resolve again (DNS rebinding between check and connect has
//!    nothing to act on), and the address it reports connecting to is checked to be one of them;
//! 4. a redirect is followed by hand, at most [`WebConfig::max_redirects`] times, https to http
//!    refused.
//!
//! System proxies are ignored (`HTTP_PROXY` would route the request around the check). Time is
//! bounded per phase (connect, first byte, a stalled body) and in total; the body is read up to a
//! cap while it streams, after decompression, so a gzip bomb stops at the cap.
//!
//! Attack: server-side request forgery, from the model's URL or from any server it leads to.

use std::collections::HashSet;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::address::{self, Refused};
use crate::guard::{Outgoing, RequestGuard};
use crate::target::{Target, TargetError, TargetHost};

/// Bytes of a body read for reading (the rest is cut).
pub const READ_CAP: u64 = 8 << 20;

/// Bytes of a body read for `save_as` (a larger body is refused, not saved in part).
pub const SAVE_CAP: u64 = 64 << 20;

/// Time limits of one fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// To establish a TCP connection (and the TLS handshake's first step).
    pub connect: Duration,
    /// From the request sent to the response's headers, and between two reads of the body.
    pub first_byte: Duration,
    /// The whole fetch: every hop, every byte.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(20),
            total: Duration::from_secs(60),
        }
    }
}

/// What the operator configures of fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebConfig {
    /// Ports allowed besides 80 and 443.
    pub extra_ports: Vec<u16>,
    /// Time limits.
    pub timeouts: Timeouts,
    /// Redirects followed at most.
    pub max_redirects: usize,
    /// The `User-Agent` sent.
    pub user_agent: String,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            extra_ports: Vec::new(),
            timeouts: Timeouts::default(),
            max_redirects: 5,
            user_agent: concat!("spear/", env!("CARGO_PKG_VERSION"), " (fetch_url)").to_owned(),
        }
    }
}

/// One redirect followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// The URL asked for (query redacted).
    pub url: String,
    /// Its status.
    pub status: u16,
    /// The address connected to.
    pub connected: SocketAddr,
}

/// A response, read up to its cap.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL that answered (after redirects).
    pub target: Target,
    /// Its status (any; a 404 is a response, not an error).
    pub status: u16,
    /// The `Content-Type`, as sent.
    pub content_type: Option<String>,
    /// The `Content-Length`, when sent.
    pub content_length: Option<u64>,
    /// The body, decompressed, at most the cap asked for.
    pub body: Vec<u8>,
    /// Whether the body went on past the cap (and was cut there).
    pub cut: bool,
    /// The address connected to.
    pub connected: SocketAddr,
    /// The redirects followed to get here, in order.
    pub hops: Vec<Hop>,
}

/// The phase a fetch ran out of time in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Connecting.
    Connect,
    /// Waiting for the response's headers.
    FirstByte,
    /// Waiting for more of the body.
    Body,
    /// The fetch as a whole.
    Total,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Connect => "connecting",
            Phase::FirstByte => "waiting for the response",
            Phase::Body => "waiting for more of the body",
            Phase::Total => "the whole fetch",
        })
    }
}

/// Why a fetch gave no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The URL (or a redirect's) may not be fetched.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The host is, or resolves to, an address that is refused.
    #[error(
        "{} fetch_url connects only to public addresses (not this host, its networks or a cloud metadata service)",
        refused_text(host, refused)
    )]
    Refused {
        /// The host as the URL named it.
        host: String,
        /// The address and the rule.
        refused: Refused,
    },
    /// The name did not resolve.
    #[error("{host} could not be resolved: {why}")]
    Resolve {
        /// The name.
        host: String,
        /// The resolver's answer.
        why: String,
    },
    /// No connection could be made.
    #[error("{url}: the connection failed: {why}")]
    Connect {
        /// The URL (query redacted).
        url: String,
        /// Why.
        why: String,
    },
    /// The TLS handshake failed (an untrusted or mismatched certificate, among others).
    #[error("{url}: the TLS handshake failed: {why}")]
    Tls {
        /// The URL (query redacted).
        url: String,
        /// Why.
        why: String,
    },
    /// A phase took longer than its limit.
    #[error("{url}: timed out {phase} (limit {limit:?})")]
    Timeout {
        /// The URL (query redacted).
        url: String,
        /// The phase.
        phase: Phase,
        /// Its limit.
        limit: Duration,
    },
    /// The server's answer was not HTTP, or broke off.
    #[error("{url}: {why}")]
    Http {
        /// The URL (query redacted).
        url: String,
        /// Why.
        why: String,
    },
    /// More redirects than allowed (a loop among them).
    #[error("{url}: more than {max} redirects{}", if *looped { " (a redirect loop)" } else { "" })]
    TooManyRedirects {
        /// The first URL (query redacted).
        url: String,
        /// The limit.
        max: usize,
        /// Whether a URL came back.
        looped: bool,
    },
    /// A redirect from https to http.
    #[error("{from} redirects to {to}: a redirect from https to http is not followed")]
    Downgrade {
        /// The https URL (query redacted).
        from: String,
        /// The http URL it named (query redacted).
        to: String,
    },
    /// A redirect status without a usable `Location`.
    #[error("{url} answered {status} without a Location to follow")]
    NoLocation {
        /// The URL (query redacted).
        url: String,
        /// The status.
        status: u16,
    },
    /// The client could not be set up (no runtime, no TLS configuration).
    #[error("the fetch could not start: {0}")]
    Setup(String),
    /// The fetcher's [`RequestGuard`] refused a request (the first, or a redirect's) before
    /// anything of it was sent.
    #[error("{why}; nothing was sent")]
    Guarded {
        /// The guard's reason (never a secret's value).
        why: String,
    },
}

/// "`host` resolves to `addr`, which is ..." for a name, "`addr` is ..." for a literal.
fn refused_text(host: &str, refused: &Refused) -> String {
    if host == refused.addr.to_string() {
        format!("{refused}, so it is not fetched.")
    } else {
        let embedded = refused
            .embedded
            .map(|v4| format!(" (it embeds {v4})"))
            .unwrap_or_default();
        format!(
            "{host} resolves to {}, which is {}{embedded}, so it is not fetched.",
            refused.addr, refused.why
        )
    }
}

/// Fetches URLs. Cheap to share; every fetch resolves and connects anew.
#[derive(Debug, Clone)]
pub struct Fetcher {
    config: WebConfig,
    tls: Arc<rustls::ClientConfig>,
    trusted_roots: usize,
    /// Shown every request before its name is resolved ([`crate::guard`]).
    guard: Option<Arc<dyn RequestGuard>>,
    /// Whether the first request of a fetch was approved by a person as it is: the guard is not
    /// asked about it (it still is about every redirect).
    first_approved: bool,
}

/// What a hop's addresses are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checked {
    /// The deny table and the host's own addresses.
    Public,
    /// Nothing: the operator's own endpoint (a search backend), which may be on this host. Its
    /// redirects are not followed at all.
    Operator,
}

impl Fetcher {
    /// A fetcher with `config`, trusting the system's certificate store, or `SSL_CERT_FILE` /
    /// `SSL_CERT_DIR` when either is set.
    pub fn new(config: WebConfig) -> Result<Fetcher, FetchError> {
        let loaded = rustls_native_certs::load_native_certs();
        let mut roots = rustls::RootCertStore::empty();
        let (trusted_roots, _) = roots.add_parsable_certificates(loaded.certs);
        if !loaded.errors.is_empty() {
            tracing::debug!(errors = ?loaded.errors, "some trusted certificates could not be loaded");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| FetchError::Setup(format!("TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Fetcher {
            config,
            tls: Arc::new(tls),
            trusted_roots,
            guard: None,
            first_approved: false,
        })
    }

    /// The same fetcher, showing `guard` every request it would send (see [`crate::guard`]).
    #[must_use]
    pub fn with_guard(mut self, guard: Arc<dyn RequestGuard>) -> Fetcher {
        self.guard = Some(guard);
        self
    }

    /// The same fetcher for one fetch a person approved as it is (shown the URL and what its
    /// guard found in it): the guard is not asked about its first request, and is about every
    /// redirect it leads to.
    #[must_use]
    pub fn approved_as_asked(&self) -> Fetcher {
        Fetcher {
            first_approved: true,
            ..self.clone()
        }
    }

    /// Whether this fetcher shows its requests to a guard.
    pub fn is_guarded(&self) -> bool {
        self.guard.is_some()
    }

    /// The configuration.
    pub fn config(&self) -> &WebConfig {
        &self.config
    }

    /// How many trusted certificates were loaded (0: every https fetch fails).
    pub fn trusted_roots(&self) -> usize {
        self.trusted_roots
    }

    /// GETs `url`, following redirects, reading at most `cap` bytes of the body. Blocks; runs
    /// its own single-threaded runtime, so it may be called from any thread but a runtime's
    /// worker (call it from `spawn_blocking` there).
    pub fn fetch(&self, url: &str, cap: u64) -> Result<Fetched, FetchError> {
        let target = Target::parse(url, &self.config.extra_ports)?;
        self.run(target, cap, &[], Checked::Public)
    }

    /// GETs the operator's own endpoint `url` (a search backend) with `headers`: its address is
    /// not judged (it may be a `SearXNG` on this host), it gets no redirects, and everything else
    /// holds (no proxy, pinned resolution, time and byte caps).
    pub fn fetch_operator_endpoint(
        &self,
        url: &str,
        headers: &[(&str, String)],
        cap: u64,
    ) -> Result<Fetched, FetchError> {
        let target = Target::parse_operator(url)?;
        self.run(target, cap, headers, Checked::Operator)
    }

    fn run(
        &self,
        target: Target,
        cap: u64,
        headers: &[(&str, String)],
        checked: Checked,
    ) -> Result<Fetched, FetchError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| FetchError::Setup(format!("runtime: {e}")))?;
        let total = self.config.timeouts.total;
        let url = target.redacted();
        runtime.block_on(async {
            match tokio::time::timeout(total, self.follow(target, cap, headers, checked)).await {
                Ok(result) => result,
                Err(_) => Err(FetchError::Timeout {
                    url,
                    phase: Phase::Total,
                    limit: total,
                }),
            }
        })
    }

    async fn follow(
        &self,
        first: Target,
        cap: u64,
        headers: &[(&str, String)],
        checked: Checked,
    ) -> Result<Fetched, FetchError> {
        let resolver = hickory_resolver::TokioResolver::builder_tokio()
            .map_err(|e| FetchError::Setup(format!("the system's resolver configuration: {e}")))?
            .with_options({
                let mut opts = hickory_resolver::config::ResolverOpts::default();
                opts.ip_strategy = hickory_resolver::config::LookupIpStrategy::Ipv4AndIpv6;
                opts
            });
        let resolver = resolver
            .build()
            .map_err(|e| FetchError::Setup(format!("the resolver: {e}")))?;
        let own = own_addresses();
        let first_url = first.redacted();
        let mut seen = HashSet::new();
        let mut looped = false;
        let mut hops = Vec::new();
        let mut target = first;
        loop {
            looped |= !seen.insert(target.url().as_str().to_owned());
            // Before anything of the request leaves the host: the guard sees it, its host
            // included, before the name is resolved.
            if let Some(guard) = &self.guard
                && !(hops.is_empty() && self.first_approved)
            {
                guard
                    .check(&Outgoing {
                        url: target.url(),
                        headers,
                        redirect: !hops.is_empty(),
                        operator: checked == Checked::Operator,
                    })
                    .map_err(|why| FetchError::Guarded { why })?;
            }
            let addrs = match checked {
                Checked::Public => addresses(&resolver, &target, &own).await?,
                Checked::Operator => unchecked_addresses(&resolver, &target).await?,
            };
            let response = self.send(&target, &addrs, headers).await?;
            let status = response.status().as_u16();
            let connected = connected_to(&target, &response, &addrs)?;
            if !(300..400).contains(&status) || status == 304 || status == 300 {
                return read(target, response, connected, hops, cap, self.config.timeouts).await;
            }
            hops.push(Hop {
                url: target.redacted(),
                status,
                connected,
            });
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                // Raw UTF-8 is read as UTF-8 (as browsers do; the URL parser percent-encodes it);
                // other bytes become U+FFFD, which the parser encodes too.
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            drop(response);
            let Some(location) = location else {
                return Err(FetchError::NoLocation {
                    url: target.redacted(),
                    status,
                });
            };
            if checked == Checked::Operator || hops.len() > self.config.max_redirects {
                return Err(FetchError::TooManyRedirects {
                    url: first_url,
                    max: if checked == Checked::Operator {
                        0
                    } else {
                        self.config.max_redirects
                    },
                    looped,
                });
            }
            let next = target.join(&location, &self.config.extra_ports)?;
            if target.is_https() && !next.is_https() {
                return Err(FetchError::Downgrade {
                    from: target.redacted(),
                    to: next.redacted(),
                });
            }
            target = next;
        }
    }

    /// Sends the GET to `target` over a client that knows only `addrs`.
    async fn send(
        &self,
        target: &Target,
        addrs: &[SocketAddr],
        headers: &[(&str, String)],
    ) -> Result<reqwest::Response, FetchError> {
        let timeouts = self.config.timeouts;
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .referer(false)
            .http1_only()
            .pool_max_idle_per_host(0)
            .connect_timeout(timeouts.connect)
            .read_timeout(timeouts.first_byte)
            .dns_resolver(Arc::new(NoResolution))
            .tls_backend_preconfigured((*self.tls).clone())
            .user_agent(self.config.user_agent.clone());
        if let TargetHost::Name(name) = target.host() {
            builder = builder.resolve_to_addrs(name, addrs);
        }
        let client = builder
            .build()
            .map_err(|e| FetchError::Setup(format!("the HTTP client: {}", chain(&e))))?;
        let mut request = client.get(target.url().clone()).header(
            reqwest::header::ACCEPT,
            "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,application/pdf;q=0.9,*/*;q=0.5",
        );
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        match tokio::time::timeout(timeouts.first_byte + timeouts.connect, request.send()).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(self.send_error(target, &e)),
            Err(_) => Err(FetchError::Timeout {
                url: target.redacted(),
                phase: Phase::FirstByte,
                limit: timeouts.first_byte,
            }),
        }
    }

    fn send_error(&self, target: &Target, e: &reqwest::Error) -> FetchError {
        let url = target.redacted();
        let timeouts = self.config.timeouts;
        let why = chain(e);
        if e.is_timeout() {
            let (phase, limit) = if e.is_connect() {
                (Phase::Connect, timeouts.connect)
            } else {
                (Phase::FirstByte, timeouts.first_byte)
            };
            return FetchError::Timeout { url, phase, limit };
        }
        if has_source::<rustls::Error>(e) {
            let why = if self.trusted_roots == 0 {
                format!(
                    "{why} (no trusted certificate was loaded: the system's store is empty, or SSL_CERT_FILE / SSL_CERT_DIR name none)"
                )
            } else {
                why
            };
            return FetchError::Tls { url, why };
        }
        if e.is_connect() {
            return FetchError::Connect { url, why };
        }
        FetchError::Http { url, why }
    }
}

/// Reads the body of `response` up to `cap` bytes (decompressed), cutting it there.
async fn read(
    target: Target,
    mut response: reqwest::Response,
    connected: SocketAddr,
    hops: Vec<Hop>,
    cap: u64,
    timeouts: Timeouts,
) -> Result<Fetched, FetchError> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let content_length = response.content_length();
    let cap_bytes = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut body = Vec::with_capacity(
        content_length
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
            .min(cap_bytes)
            .min(1 << 20),
    );
    let mut cut = false;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) if e.is_timeout() => {
                return Err(FetchError::Timeout {
                    url: target.redacted(),
                    phase: Phase::Body,
                    limit: timeouts.first_byte,
                });
            }
            Err(e) => {
                return Err(FetchError::Http {
                    url: target.redacted(),
                    why: format!("the body broke off or could not be decoded: {}", chain(&e)),
                });
            }
        };
        let room = cap_bytes - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
        if body.len() == cap_bytes {
            // Exactly at the cap: the body is cut if anything follows.
            cut = !matches!(response.chunk().await, Ok(None));
            break;
        }
    }
    Ok(Fetched {
        target,
        status,
        content_type,
        content_length,
        body,
        cut,
        connected,
        hops,
    })
}

/// The address `response` came from, which must be one of `addrs`: the client was given no other
/// (this re-checks that, so a client that resolved on its own would be caught, not trusted).
fn connected_to(
    target: &Target,
    response: &reqwest::Response,
    addrs: &[SocketAddr],
) -> Result<SocketAddr, FetchError> {
    match response.remote_addr() {
        Some(addr) if addrs.iter().any(|a| a.ip() == addr.ip()) => Ok(addr),
        other => Err(FetchError::Http {
            url: target.redacted(),
            why: format!(
                "the connection was made to {}, which is not an address that was checked",
                other.map_or_else(|| "an unknown address".to_owned(), |a| a.to_string())
            ),
        }),
    }
}

/// Every address of `target`, each judged; one refused refuses them all.
async fn addresses(
    resolver: &hickory_resolver::TokioResolver,
    target: &Target,
    own: &[IpAddr],
) -> Result<Vec<SocketAddr>, FetchError> {
    let (host, ips) = match target.host() {
        TargetHost::Addr(ip) => (ip.to_string(), vec![*ip]),
        TargetHost::Name(name) => (name.clone(), resolve(resolver, name).await?),
    };
    for ip in &ips {
        address::check(*ip, own).map_err(|refused| FetchError::Refused {
            host: host.clone(),
            refused,
        })?;
    }
    Ok(ips
        .into_iter()
        .map(|ip| SocketAddr::new(ip, target.port()))
        .collect())
}

/// Every address of `target`, unjudged (the operator's own endpoint).
async fn unchecked_addresses(
    resolver: &hickory_resolver::TokioResolver,
    target: &Target,
) -> Result<Vec<SocketAddr>, FetchError> {
    let ips = match target.host() {
        TargetHost::Addr(ip) => vec![*ip],
        TargetHost::Name(name) => resolve(resolver, name).await?,
    };
    Ok(ips
        .into_iter()
        .map(|ip| SocketAddr::new(ip, target.port()))
        .collect())
}

async fn resolve(
    resolver: &hickory_resolver::TokioResolver,
    name: &str,
) -> Result<Vec<IpAddr>, FetchError> {
    // A fully qualified name: the search domains of resolv.conf are not tried.
    let fqdn = format!("{name}.");
    let lookup = resolver
        .lookup_ip(fqdn.as_str())
        .await
        .map_err(|e| FetchError::Resolve {
            host: name.to_owned(),
            why: e.to_string(),
        })?;
    let mut ips: Vec<IpAddr> = lookup.iter().collect();
    ips.sort_unstable();
    ips.dedup();
    if ips.is_empty() {
        return Err(FetchError::Resolve {
            host: name.to_owned(),
            why: "no address records".to_owned(),
        });
    }
    Ok(ips)
}

/// This host's addresses, as its interfaces hold them now.
fn own_addresses() -> Vec<IpAddr> {
    match if_addrs::get_if_addrs() {
        Ok(interfaces) => interfaces.into_iter().map(|i| i.ip()).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "the host's own addresses could not be listed");
            Vec::new()
        }
    }
}

/// The HTTP client's resolver: refuses every name. Each client is built with the checked
/// addresses of its one name, so a lookup that reaches this is a name nobody checked.
struct NoResolution;

impl reqwest::dns::Resolve for NoResolution {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_owned();
        Box::pin(async move {
            Err(format!("{name} was not checked; fetch_url resolves names itself").into())
        })
    }
}

/// An error and its sources, each message once.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Whether `e` or one of its sources is a `T`. An `io::Error` wrapping one (as TLS streams return
/// rustls' errors) counts: its `source()` skips the error it wraps, so that is looked at too.
fn has_source<T: std::error::Error + 'static>(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(e);
    while let Some(s) = source {
        if s.is::<T>() {
            return true;
        }
        let wrapped = s
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref);
        if wrapped.is_some_and(|inner| has_source::<T>(inner)) {
            return true;
        }
        source = s.source();
    }
    false
}
