//! The server over MCP's streamable HTTP transport (`spear mcp --listen ADDR`): rmcp's
//! [`StreamableHttpService`] behind spear's door ([`Gatekeeper`]), served by hyper over HTTP/1.1
//! on a loopback address, until a signal.
//!
//! - **One MCP session, one spear session.** Each session the client starts (`initialize`, then
//!   its `Mcp-Session-Id` on every request; `DELETE` ends it) gets a [`SpearServer`] of its own
//!   from the opener the caller gives: its own router, workspace view, turns, jobs, scratch and
//!   stored outputs. Nothing is shared between sessions but the process.
//! - **Who may connect.** Every request to `/mcp` must carry `Authorization: Bearer <token>` that
//!   the [`Gatekeeper`] admits; any other gets `401` with `WWW-Authenticate: Bearer` naming the
//!   Protected Resource Metadata document (RFC 9728) at
//!   `/.well-known/oauth-protected-resource`, which answers without credentials, as MCP's
//!   authorization section asks of a resource server. Attack stopped: any local process (another
//!   user's included) reaching a loopback port and running commands as spear's user.
//! - `/healthz` answers `{"status":"ok"}` without credentials and says nothing else.
//! - **Where.** Only a loopback address is accepted (no TLS yet), and rmcp checks `Host` against
//!   the loopback names (attack stopped: DNS rebinding, a web page's script reaching the port
//!   through a name that resolves to 127.0.0.1). Request bodies are capped
//!   ([`MAX_BODY_BYTES`]).
//!
//! Not yet: the stateless 2026-07-28 generation's spear sessions named in the URL (a request of
//! that generation is served by rmcp without a session, so by a fresh spear session of its own),
//! per-token workspaces and modes, OAuth, TLS, limits on sessions, idle timeouts (issue 35).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::ServeError;
use crate::server::SpearServer;

/// The largest request body spear reads (4 MiB): a tool call's arguments, a file written whole.
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// The path the MCP endpoint answers on.
pub const MCP_PATH: &str = "/mcp";

/// The path of the Protected Resource Metadata document (RFC 9728).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The path that answers whether the server is up, without credentials, and says nothing else.
pub const HEALTH_PATH: &str = "/healthz";

/// Who may use the server: the verdict on a request's bearer token.
pub trait Gatekeeper: Send + Sync + 'static {
    /// The name of the credential `bearer` is (for the logs and the audit), or why it is not
    /// admitted. `None`: the request carried no bearer token.
    fn admit(&self, bearer: Option<&str>) -> Result<String, Denied>;
}

/// Why a request is not admitted, in words a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// The client's credential is missing, malformed, unknown, revoked, expired or not for this
    /// server: `401` with the challenge.
    Unauthorized(String),
    /// The server cannot judge any credential now (its token store cannot be read): `503`, the
    /// operator's to fix, not the client's.
    Unavailable(String),
}

/// A bound listener, the runtime it is served on and the signals that stop it.
pub struct Http {
    runtime: tokio::runtime::Runtime,
    listener: std::net::TcpListener,
}

impl Http {
    /// Binds `addr`, which must be a loopback address (`127.0.0.1:PORT`, `[::1]:PORT`; port 0
    /// picks a free one), and builds the runtime. Anything else is refused: without TLS the
    /// tokens would cross the network in clear.
    pub fn bind(addr: SocketAddr) -> Result<Http, ServeError> {
        if !addr.ip().is_loopback() {
            return Err(ServeError::Setup(std::io::Error::other(format!(
                "{addr} is not a loopback address: spear mcp --listen serves without TLS, so only \
                 on 127.0.0.1 or ::1 (reach it from elsewhere through an SSH tunnel or a proxy \
                 that terminates TLS)"
            ))));
        }
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        Ok(Http { runtime, listener })
    }

    /// The address it listens on (the port picked, with port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until SIGTERM, SIGINT or SIGHUP: each new MCP session gets the [`SpearServer`]
    /// `open` makes (a failure refuses that session with a 500 saying why), every request passes
    /// `gate` first. On the signal every session is ended, and so its calls.
    pub fn run(
        self,
        open: impl Fn() -> Result<SpearServer, String> + Send + Sync + 'static,
        gate: Arc<dyn Gatekeeper>,
    ) -> Result<(), ServeError> {
        let Http { runtime, listener } = self;
        runtime.block_on(serve(listener, open, gate))
    }
}

async fn serve(
    listener: std::net::TcpListener,
    open: impl Fn() -> Result<SpearServer, String> + Send + Sync + 'static,
    gate: Arc<dyn Gatekeeper>,
) -> Result<(), ServeError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let stop = tokio_util::sync::CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.clone())
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    let mcp = StreamableHttpService::new(
        move || open().map_err(std::io::Error::other),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let local = listener.local_addr()?;
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = hup.recv() => break,
        };
        let mcp = mcp.clone();
        let gate = Arc::clone(&gate);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let mcp = mcp.clone();
                let gate = Arc::clone(&gate);
                async move { Ok::<_, Infallible>(answer(request, &mcp, gate.as_ref(), local).await) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!("a connection ended: {e}");
            }
        });
    }
    tracing::info!("stopping: every session ends");
    stop.cancel();
    Ok(())
}

/// The answer to one request: the metadata document, the MCP endpoint behind the gate, or 404.
async fn answer(
    request: Request<Incoming>,
    mcp: &StreamableHttpService<SpearServer, LocalSessionManager>,
    gate: &dyn Gatekeeper,
    local: SocketAddr,
) -> Response<BoxBody<Bytes, Infallible>> {
    use tower_service::Service as _;
    match request.uri().path() {
        METADATA_PATH => json(StatusCode::OK, &metadata(local)),
        HEALTH_PATH => json(StatusCode::OK, &serde_json::json!({"status": "ok"})),
        MCP_PATH => {
            let bearer = bearer(request.headers());
            match gate.admit(bearer) {
                Ok(name) => {
                    tracing::debug!(credential = %name, method = %request.method(), "admitted");
                    let mut mcp = mcp.clone();
                    match mcp.call(request).await {
                        Ok(response) => response,
                        Err(never) => match never {},
                    }
                }
                Err(Denied::Unauthorized(why)) => unauthorized(&why, local),
                Err(Denied::Unavailable(why)) => {
                    tracing::error!("no request can be admitted: {why}");
                    json(
                        StatusCode::SERVICE_UNAVAILABLE,
                        &serde_json::json!({"error": "unavailable", "error_description": why}),
                    )
                }
            }
        }
        _ => json(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": format!("not found: the MCP endpoint is {MCP_PATH}")}),
        ),
    }
}

/// The bearer token of `Authorization: Bearer <token>`, if the request has one.
fn bearer(headers: &hyper::HeaderMap) -> Option<&str> {
    let value = headers.get(hyper::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The Protected Resource Metadata document (RFC 9728) of the server at `local`.
fn metadata(local: SocketAddr) -> serde_json::Value {
    serde_json::json!({
        "resource": format!("http://{local}{MCP_PATH}"),
        "bearer_methods_supported": ["header"],
        "authorization_servers": [],
        "resource_documentation": "spear token add NAME prints a token for this server",
    })
}

/// `401` with the challenge MCP's authorization section asks for.
fn unauthorized(why: &str, local: SocketAddr) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = json(
        StatusCode::UNAUTHORIZED,
        &serde_json::json!({"error": "invalid_token", "error_description": why}),
    );
    let challenge = format!(
        "Bearer error=\"invalid_token\", resource_metadata=\"http://{local}{METADATA_PATH}\""
    );
    if let Ok(value) = hyper::header::HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(hyper::header::WWW_AUTHENTICATE, value);
    }
    response
}

fn json(status: StatusCode, value: &serde_json::Value) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_token_is_read_from_the_header_only_when_it_is_one() {
        let cases: [(Option<&str>, Option<&str>); 6] = [
            (Some("Bearer spear_abc"), Some("spear_abc")),
            (Some("bearer  spear_abc "), Some("spear_abc")),
            (Some("Basic dXNlcjpwYXNz"), None),
            (Some("Bearer "), None),
            (Some("spear_abc"), None),
            (None, None),
        ];
        for (header, want) in cases {
            let mut headers = hyper::HeaderMap::new();
            if let Some(h) = header {
                headers.insert(
                    hyper::header::AUTHORIZATION,
                    hyper::header::HeaderValue::from_str(h).unwrap(),
                );
            }
            assert_eq!(bearer(&headers), want, "{header:?}");
        }
    }

    #[test]
    fn only_loopback_addresses_are_bound() {
        let e = Http::bind("0.0.0.0:0".parse().unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("is not a loopback address"), "{e}");
        // Positive control: loopback binds, on a port picked.
        let http = Http::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_ne!(http.local_addr().unwrap().port(), 0);
    }

    #[test]
    fn the_challenge_names_the_metadata_document() {
        let local: SocketAddr = "127.0.0.1:4711".parse().unwrap();
        let response = unauthorized("no token", local);
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let challenge = response.headers()[hyper::header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap();
        assert_eq!(
            challenge,
            "Bearer error=\"invalid_token\", \
             resource_metadata=\"http://127.0.0.1:4711/.well-known/oauth-protected-resource\""
        );
        assert_eq!(metadata(local)["resource"], "http://127.0.0.1:4711/mcp");
    }
}
