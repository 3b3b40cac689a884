//! The node: the credentials that have sessions, the sessions clients name in their URL, and
//! the routing of one request.
//!
//! - `/mcp`: MCP sessions (2025-11-25) and stateless requests (2026-07-28), each credential with
//!   a [`StreamableHttpService`] of its own for each ask (`?workspace=DIR`). A session lives in
//!   its credential's service only, so another credential's request that names it is answered
//!   `404`: no session can be used, or even confirmed to exist, with someone else's token.
//! - `POST /mcp/sessions`: a session the client names in its URL, `/mcp/sessions/<id>`, where
//!   both generations reach the same spear session from one request to the next; `DELETE` there
//!   (without `Mcp-Session-Id`) ends it, and `GET /mcp/sessions/<id>/patch` returns a template
//!   session's changes.
//! - Every JSON-RPC request holds a [`CallSlot`] of its credential's from before it is handed to
//!   rmcp until its answer is sent: one over the credential's limit is answered `429`, never
//!   queued. Notifications and responses (an answer to an elicitation) take none: refusing one
//!   would leave a call waiting for it.
//! - Every session holds a [`Ticket`] from before it is made until it ends. A sweep every second
//!   asks the gate again about each credential with sessions (a revoked or expired one has them
//!   ended) and ends the sessions named in URLs that have been idle too long; rmcp ends its own
//!   idle ones ([`NodeLimits::session_idle`] as their keep-alive).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest as _, Sha256};
use tokio_util::sync::CancellationToken;

use super::respond::{self, Body};
use super::tickets::{CallSlot, Counter, Full, Ticket};
use super::{
    Admission, Changes, Denied, Gatekeeper, HEALTH_PATH, MAX_BODY_BYTES, MCP_PATH, METADATA_PATH,
    METRICS_PATH, NodeLimits, Opened, Opener, SESSIONS_PATH, SessionAsk, SessionFactory,
};
use crate::ServeError;
use crate::listener::{Listener, WebGuard};
use crate::metrics::{METRICS_CONTENT_TYPE, Metrics};
use crate::server::SpearServer;

type Service = StreamableHttpService<SpearServer, LocalSessionManager>;

/// A credential's key: the SHA-256 of its bearer value (a token reissued under the same name
/// is another credential).
type Key = [u8; 32];

/// How often credentials with sessions are asked about again, and idle sessions looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a credential with no session is remembered after its last request (with its
/// services, so that a client between two sessions does not pay for new ones).
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// The largest body of `POST /mcp/sessions` (an ask is two paths).
const MAX_ASK_BYTES: usize = 64 << 10;

/// The most connections open at once: one more is closed at once (attack stopped: thousands of
/// idle connections holding the node's memory and file descriptors).
const MAX_CONNECTIONS: usize = 1024;

/// How long a client may take to send a request's headers (attack stopped: a slow client holding
/// a connection open for ever, a byte at a time).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The header that names an MCP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Where the node serves: the bound listener, the `Host` and `Origin` allow-lists rmcp checks,
/// and the base URL clients reach it by.
pub(super) struct Site {
    pub(super) listener: Listener,
    pub(super) guard: WebGuard,
    pub(super) base: String,
}

/// Serves `site` until a signal, then ends every session.
pub(super) async fn serve(
    site: Site,
    opener: Arc<dyn Opener>,
    gate: Arc<dyn Gatekeeper>,
    limits: NodeLimits,
) -> Result<(), ServeError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let Site {
        mut listener,
        guard,
        base,
    } = site;
    let node = Arc::new(Node {
        opener,
        gate,
        limits,
        guard,
        base,
        metrics: Arc::new(Metrics::new()),
        stop: CancellationToken::new(),
        open: Counter::new(Some(limits.max_sessions)),
        credentials: Mutex::new(HashMap::new()),
        named: Mutex::new(HashMap::new()),
        next_request: AtomicU64::new(0),
    });
    let sweeper = tokio::spawn({
        let node = Arc::clone(&node);
        async move {
            let mut tick = tokio::time::interval(SWEEP_EVERY);
            loop {
                tick.tick().await;
                let node = Arc::clone(&node);
                // The gate reads the token store: blocking work, off the event loop.
                if tokio::task::spawn_blocking(move || node.sweep())
                    .await
                    .is_err()
                {
                    tracing::error!("a sweep of the sessions failed");
                }
            }
        }
    });
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted
                .map_err(|e| ServeError::Setup(std::io::Error::other(e)))?,
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = hup.recv() => break,
        };
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            tracing::warn!(
                "{MAX_CONNECTIONS} connections are open: {}'s is closed",
                accepted.peer
            );
            drop(accepted);
            continue;
        };
        let node = Arc::clone(&node);
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let node = Arc::clone(&node);
                async move { Ok::<_, Infallible>(respond::close_if_refused(node.answer(request).await)) }
            });
            let io = hyper_util::rt::TokioIo::new(accepted.stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(io, service)
                .await
            {
                tracing::debug!("a connection ended: {e}");
            }
        });
    }
    tracing::info!("stopping: every session ends");
    sweeper.abort();
    // The socket goes first: a unix socket's path is removed.
    drop(listener);
    let closing = Arc::clone(&node);
    // Each router's end kills its jobs and reports them: blocking work.
    if tokio::task::spawn_blocking(move || closing.close_all())
        .await
        .is_err()
    {
        tracing::error!("ending the sessions failed");
    }
    Ok(())
}

/// Everything the server holds between requests.
struct Node {
    opener: Arc<dyn Opener>,
    gate: Arc<dyn Gatekeeper>,
    limits: NodeLimits,
    /// The `Host` and `Origin` allow-lists every service checks.
    guard: WebGuard,
    /// The base URL clients reach the node by.
    base: String,
    /// Where every session's calls are counted (`GET /metrics`).
    metrics: Arc<Metrics>,
    /// Cancelled on the signal: every service's token is a child of it.
    stop: CancellationToken,
    /// The node's count of sessions.
    open: Arc<Counter>,
    credentials: Mutex<HashMap<Key, Arc<Credential>>>,
    named: Mutex<HashMap<String, Arc<Named>>>,
    next_request: AtomicU64,
}

/// An admitted credential with (or about to have) sessions.
struct Credential {
    key: Key,
    admission: Admission,
    /// Kept to ask the gate again (revocation, expiry); never logged.
    bearer: String,
    count: Arc<Counter>,
    /// Its calls in flight.
    calls: Arc<Counter>,
    /// Cancelled when the credential is no longer admitted: ends every session it has.
    cancel: CancellationToken,
    /// Places taken by requests that may make a session, for the service's factory to take.
    pending: Arc<Mutex<VecDeque<(u64, Ticket)>>>,
    services: Mutex<HashMap<SessionAsk, Service>>,
    /// Its last request: a credential with no session is forgotten a while after it.
    last_seen: Mutex<Instant>,
}

/// A session a client named in its URL.
struct Named {
    owner: Key,
    /// Holds the session's ticket (and, for a template session, its copy).
    server: SpearServer,
    service: Service,
    cancel: CancellationToken,
    changes: Option<Arc<dyn Changes>>,
    last_used: Mutex<Instant>,
}

impl Named {
    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }
}

/// Why a request gets no further, as its answer.
type Refused = Response<Body>;

impl Node {
    /// The answer to one request.
    async fn answer(self: &Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let path = request.uri().path().to_owned();
        match path.as_str() {
            METADATA_PATH => respond::json(
                StatusCode::OK,
                &self.gate.metadata(&format!("{}{MCP_PATH}", self.base)),
            ),
            HEALTH_PATH => respond::json(StatusCode::OK, &serde_json::json!({"status": "ok"})),
            // The node's own paths: rmcp checks `Host` and `Origin` on the MCP ones only.
            _ if let Err(refused) = self.guarded(&request) => refused,
            METRICS_PATH => match self.admit(&request) {
                Ok(_) => respond::text(
                    StatusCode::OK,
                    METRICS_CONTENT_TYPE,
                    self.metrics.render(self.metrics.sessions_open()),
                ),
                Err(refused) => refused,
            },
            MCP_PATH => self.mcp(request).await.unwrap_or_else(|r| r),
            SESSIONS_PATH => self.make_named(request).await.unwrap_or_else(|r| r),
            _ => match path
                .strip_prefix(SESSIONS_PATH)
                .and_then(|p| p.strip_prefix('/'))
            {
                Some(rest) => self.named(request, rest).await.unwrap_or_else(|r| r),
                None => respond::error(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    &format!("the MCP endpoint is {MCP_PATH}, and {SESSIONS_PATH} makes sessions"),
                ),
            },
        }
    }

    /// `/mcp`: into the credential's service for the ask in the query.
    async fn mcp(self: &Arc<Self>, request: Request<Incoming>) -> Result<Response<Body>, Refused> {
        let credential = self.admit(&request)?;
        let ask = ask_of_query(request.uri().query())
            .map_err(|why| respond::error(StatusCode::BAD_REQUEST, "invalid_request", &why))?;
        let service = self.service(&credential, &ask)?;
        let (request, slot) = self.call_slot(&credential, request).await?;
        // A POST without a session id may make a session (an `initialize`, or a stateless
        // request, which is served by a session of its own): it takes its place first.
        let makes =
            request.method() == Method::POST && !request.headers().contains_key(SESSION_HEADER);
        let place = if makes {
            let ticket = self.ticket(&credential)?;
            let id = self.next_request.fetch_add(1, Ordering::Relaxed);
            lock(&credential.pending).push_back((id, ticket));
            Some(id)
        } else {
            None
        };
        let response = forward(&service, request).await;
        if let Some(id) = place {
            // Not taken: no session was made (the place is given back).
            lock(&credential.pending).retain(|(i, _)| *i != id);
        }
        Ok(holding(response, slot))
    }

    /// `POST /mcp/sessions`: a session the client names in its URL.
    async fn make_named(
        self: &Arc<Self>,
        request: Request<Incoming>,
    ) -> Result<Response<Body>, Refused> {
        if request.method() != Method::POST {
            return Err(method_not_allowed("POST makes a session here"));
        }
        let credential = self.admit(&request)?;
        let ask = ask_of_body(request).await?;
        let plan = self
            .opener
            .plan(&credential.admission, &ask)
            .map_err(|why| respond::error(StatusCode::FORBIDDEN, "forbidden", &why))?;
        let ticket = self.ticket(&credential)?;
        let opened = tokio::task::spawn_blocking(move || plan())
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r)
            .map_err(|why| {
                respond::error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "session_failed",
                    &format!("the session could not be opened: {why}"),
                )
            })?;
        opened.server.hold(Box::new(ticket));
        let opened = Opened {
            server: opened.server.with_metrics(Arc::clone(&self.metrics)),
            ..opened
        };
        let id = opened.server.session().to_owned();
        let cancel = credential.cancel.child_token();
        let server = opened.server.clone();
        let service = self.new_service(move || Ok(server.clone()), cancel.clone());
        let template = opened.changes.is_some();
        lock(&self.named).insert(
            id.clone(),
            Arc::new(Named {
                owner: credential.key,
                server: opened.server,
                service,
                cancel,
                changes: opened.changes,
                last_used: Mutex::new(Instant::now()),
            }),
        );
        tracing::info!(principal = %credential.admission.principal, session = %id, "a session named in its URL");
        Ok(respond::json(
            StatusCode::CREATED,
            &serde_json::json!({
                "session": id,
                "url": format!("{}{SESSIONS_PATH}/{id}", self.base),
                "workspace": opened.workspace,
                "template": template,
            }),
        ))
    }

    /// `/mcp/sessions/<id>[/patch]`: the session's MCP endpoint, its end, or its patch.
    async fn named(
        self: &Arc<Self>,
        request: Request<Incoming>,
        rest: &str,
    ) -> Result<Response<Body>, Refused> {
        let credential = self.admit(&request)?;
        let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let named = lock(&self.named)
            .get(id)
            .filter(|n| n.owner == credential.key)
            .cloned()
            .ok_or_else(|| {
                respond::error(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    "no such session: it ended, or was never made with this credential; make one \
                     with POST /mcp/sessions",
                )
            })?;
        named.touch();
        let method = request.method().clone();
        match (tail, method) {
            ("", Method::DELETE) if !request.headers().contains_key(SESSION_HEADER) => {
                self.close_named(id, "closed by its client").await;
                Ok(respond::json(
                    StatusCode::OK,
                    &serde_json::json!({"closed": id}),
                ))
            }
            ("", _) => {
                let (request, slot) = self.call_slot(&credential, request).await?;
                Ok(holding(forward(&named.service, request).await, slot))
            }
            ("patch", Method::GET) => {
                let Some(changes) = named.changes.clone() else {
                    return Err(respond::error(
                        StatusCode::CONFLICT,
                        "not_a_template_session",
                        "this session works in a workspace of its own, not in a copy of a \
                         template: it has no patch (git diff in a terminal call shows its changes)",
                    ));
                };
                let patch = tokio::task::spawn_blocking(move || changes.patch())
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|r| r)
                    .map_err(|why| {
                        respond::error(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "patch_failed",
                            &format!("the patch could not be made: {why}"),
                        )
                    })?;
                named.touch();
                Ok(respond::bytes(StatusCode::OK, "text/x-diff", patch))
            }
            ("patch", _) => Err(method_not_allowed("GET returns the patch")),
            _ => Err(respond::error(
                StatusCode::NOT_FOUND,
                "not_found",
                "a session answers on /mcp/sessions/<id>, and its patch on /mcp/sessions/<id>/patch",
            )),
        }
    }

    /// The credential of the request's bearer token, as the gate admits it.
    /// A request to a path rmcp does not serve, refused when its `Host` or `Origin` is not one
    /// the node allows, as rmcp refuses them on `/mcp` (DNS rebinding, a browser page posting).
    fn guarded(&self, request: &Request<Incoming>) -> Result<(), Refused> {
        let path = request.uri().path();
        if path == MCP_PATH {
            return Ok(());
        }
        let header = |name| {
            request
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap_or("\u{fffd}"))
        };
        self.guard
            .admits(header(hyper::header::HOST), header(hyper::header::ORIGIN))
            .map_err(|why| {
                let status = if why == crate::GuardRefusal::NoHost {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::FORBIDDEN
                };
                respond::error(status, "forbidden", &why.to_string())
            })
    }

    fn admit(&self, request: &Request<Incoming>) -> Result<Arc<Credential>, Refused> {
        let bearer = respond::bearer(request.headers());
        let admission = match self.gate.admit(bearer) {
            Ok(admission) => admission,
            Err(Denied::Unauthorized(why)) => return Err(respond::unauthorized(&why, &self.base)),
            Err(Denied::Unavailable(why)) => {
                tracing::error!("no request can be admitted: {why}");
                return Err(respond::error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    &why,
                ));
            }
        };
        // Admitted, so a bearer was there.
        let bearer = bearer.unwrap_or_default().to_owned();
        let key: Key = Sha256::digest(bearer.as_bytes()).into();
        tracing::debug!(principal = %admission.principal, method = %request.method(), "admitted");
        let mut credentials = lock(&self.credentials);
        let credential = credentials.entry(key).or_insert_with(|| {
            let limit = admission
                .grant
                .sessions
                .and_then(|n| usize::try_from(n).ok());
            let calls = admission
                .grant
                .calls
                .and_then(|n| usize::try_from(n).ok())
                .map_or(self.limits.calls_per_credential, |n| {
                    n.min(self.limits.calls_per_credential)
                });
            Arc::new(Credential {
                key,
                admission,
                bearer,
                count: Counter::new(limit),
                calls: Counter::new(Some(calls)),
                cancel: self.stop.child_token(),
                pending: Arc::new(Mutex::new(VecDeque::new())),
                services: Mutex::new(HashMap::new()),
                last_seen: Mutex::new(Instant::now()),
            })
        });
        *lock(&credential.last_seen) = Instant::now();
        Ok(Arc::clone(credential))
    }

    /// A place for one more session of `credential`, or `429` saying which limit is reached.
    fn ticket(&self, credential: &Arc<Credential>) -> Result<Ticket, Refused> {
        // Under the credentials' lock, and in the map: the sweep forgets a credential only
        // under it, so a place is never taken in one it has forgotten (whose sessions it would
        // no longer ask the gate about).
        let mut credentials = lock(&self.credentials);
        credentials
            .entry(credential.key)
            .or_insert_with(|| Arc::clone(credential));
        Ticket::take(&credential.count, &self.open).map_err(|full| {
            let why = match full {
                Full::Credential(n) => format!(
                    "{} may hold {n} session(s) at once, and holds them: end one (DELETE) or let \
                     one idle out",
                    credential.admission.principal
                ),
                Full::Node(n) => format!(
                    "this node holds its most sessions ({n}, --max-sessions): try again later or \
                     another node"
                ),
            };
            respond::too_many("too_many_sessions", &why, "5")
        })
    }

    /// `request` read whole, and the slot its call takes in `credential`'s count: none for
    /// anything but a POST carrying a JSON-RPC request. `413` for a body over the cap, `429`
    /// when the credential has its most calls in flight.
    async fn call_slot(
        &self,
        credential: &Credential,
        request: Request<Incoming>,
    ) -> Result<(Request<http_body_util::Full<Bytes>>, Option<CallSlot>), Refused> {
        let (parts, body) = request.into_parts();
        let too_large = || {
            respond::error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                &format!(
                    "the request's body is over {MAX_BODY_BYTES} bytes, or was cut off: send a \
                     large file in parts"
                ),
            )
        };
        let body = if parts.method == Method::POST {
            // A `Content-Length` over the cap is refused before a byte of the body is read.
            if hyper::body::Body::size_hint(&body).lower() > MAX_BODY_BYTES as u64 {
                return Err(too_large());
            }
            http_body_util::Limited::new(body, MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(|_| too_large())?
                .to_bytes()
        } else {
            Bytes::new()
        };
        let slot = if parts.method == Method::POST && carries_a_request(&body) {
            let slot = CallSlot::take(&credential.calls).map_err(|limit| {
                let why = format!(
                    "{} has its most calls in flight ({limit}): wait for an answer before the \
                     next call",
                    credential.admission.principal
                );
                respond::too_many("too_many_calls", &why, "1")
            })?;
            Some(slot)
        } else {
            None
        };
        Ok((
            Request::from_parts(parts, http_body_util::Full::new(body)),
            slot,
        ))
    }

    /// `credential`'s service for `ask`, made the first time it is asked for (`403` if the
    /// credential does not grant the ask).
    fn service(&self, credential: &Credential, ask: &SessionAsk) -> Result<Service, Refused> {
        let mut services = lock(&credential.services);
        if let Some(service) = services.get(ask) {
            return Ok(service.clone());
        }
        let plan: SessionFactory = self
            .opener
            .plan(&credential.admission, ask)
            .map_err(|why| respond::error(StatusCode::FORBIDDEN, "forbidden", &why))?;
        let pending = Arc::clone(&credential.pending);
        let metrics = Arc::clone(&self.metrics);
        let service = self.new_service(
            move || {
                let (_, ticket) = lock(&pending)
                    .pop_front()
                    .ok_or_else(|| std::io::Error::other("no place was taken for this session"))?;
                let opened = plan().map_err(std::io::Error::other)?;
                opened.server.hold(Box::new(ticket));
                Ok(opened.server.with_metrics(Arc::clone(&metrics)))
            },
            credential.cancel.clone(),
        );
        services.insert(ask.clone(), service.clone());
        Ok(service)
    }

    /// rmcp's service over sessions `make` makes, ended with `cancel`.
    fn new_service(
        &self,
        make: impl Fn() -> Result<SpearServer, std::io::Error> + Send + Sync + 'static,
        cancel: CancellationToken,
    ) -> Service {
        let config = self.guard.apply(
            StreamableHttpServerConfig::default()
                .with_cancellation_token(cancel)
                .with_max_request_body_bytes(MAX_BODY_BYTES),
        );
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(self.limits.session_idle);
        StreamableHttpService::new(make, Arc::new(sessions), config)
    }

    /// Ends the named session `id`: its calls are cancelled, its service stops, and once the
    /// last request on it is answered its router ends (its jobs killed) and what it made goes.
    async fn close_named(&self, id: &str, why: &str) {
        let Some(named) = lock(&self.named).remove(id) else {
            return;
        };
        tracing::info!(session = %id, "a session ends: {why}");
        named.cancel.cancel();
        named.server.cancel_running();
        // The router's end kills its jobs: blocking work.
        if tokio::task::spawn_blocking(move || drop(named))
            .await
            .is_err()
        {
            tracing::error!(session = %id, "ending a session failed");
        }
    }

    /// Once a second: a credential that is no longer admitted has its sessions ended; a
    /// credential with none is forgotten; a named session idle too long ends. Blocking.
    fn sweep(&self) {
        let credentials: Vec<Arc<Credential>> = lock(&self.credentials).values().cloned().collect();
        for credential in credentials {
            if let Err(Denied::Unauthorized(why)) = self.gate.admit(Some(&credential.bearer)) {
                self.revoke(&credential, &why);
            }
        }
        lock(&self.credentials)
            .retain(|_, c| c.count.open() > 0 || lock(&c.last_seen).elapsed() < FORGET_AFTER);
        let now = Instant::now();
        let idle: Vec<(String, Arc<Named>)> = lock(&self.named)
            .iter()
            .filter(|(_, n)| {
                n.server.calls_running() == 0
                    && now.duration_since(*lock(&n.last_used)) >= self.limits.session_idle
            })
            .map(|(id, n)| (id.clone(), Arc::clone(n)))
            .collect();
        for (id, named) in idle {
            lock(&self.named).remove(&id);
            tracing::info!(session = %id, "a session ends: idle for {:?}", self.limits.session_idle);
            named.cancel.cancel();
        }
    }

    /// `credential` is no longer admitted: every session it has ends now.
    fn revoke(&self, credential: &Credential, why: &str) {
        tracing::info!(
            principal = %credential.admission.principal,
            "a credential is no longer admitted ({why}): its sessions end"
        );
        credential.cancel.cancel();
        let gone: Vec<Arc<Named>> = {
            let mut named = lock(&self.named);
            let ids: Vec<String> = named
                .iter()
                .filter(|(_, n)| n.owner == credential.key)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| named.remove(id)).collect()
        };
        for named in &gone {
            named.server.cancel_running();
        }
        drop(gone);
        lock(&self.credentials).remove(&credential.key);
    }

    /// The signal: every session ends. Blocking.
    fn close_all(&self) {
        self.stop.cancel();
        let named: Vec<Arc<Named>> = lock(&self.named).drain().map(|(_, n)| n).collect();
        for n in &named {
            n.server.cancel_running();
        }
        drop(named);
        lock(&self.credentials).clear();
    }
}

/// `response`, holding `slot` until its body is sent or dropped.
fn holding(response: Response<Body>, slot: Option<CallSlot>) -> Response<Body> {
    match slot {
        None => response,
        Some(slot) => response.map(|body| {
            body.map_frame(move |frame| {
                let _held = &slot;
                frame
            })
            .boxed()
        }),
    }
}

/// Whether `body` is (or, in a batch, holds) a JSON-RPC request: a message with a `method` and
/// an `id`, which a call answers. Notifications and responses are not calls; a body that is not
/// JSON is not one either (rmcp refuses it).
fn carries_a_request(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Message {
        id: Option<serde::de::IgnoredAny>,
        method: Option<serde::de::IgnoredAny>,
    }
    impl Message {
        fn is_request(&self) -> bool {
            self.id.is_some() && self.method.is_some()
        }
    }
    // Not serde's untagged enum: it would build the whole document in memory to try each shape.
    if body.trim_ascii_start().starts_with(b"[") {
        serde_json::from_slice::<Vec<Message>>(body)
            .is_ok_and(|b| b.iter().any(Message::is_request))
    } else {
        serde_json::from_slice::<Message>(body).is_ok_and(|m| m.is_request())
    }
}

/// The request, answered by rmcp's service. A session ended by `DELETE` is answered `200`
/// rather than rmcp's `202`: rmcp has closed the session when it answers, nothing is left for
/// later, and the SDKs take any status but `200` and `204` as a failed termination.
async fn forward<B>(service: &Service, request: Request<B>) -> Response<Body>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: std::fmt::Display,
{
    use tower_service::Service as _;
    let deleting = request.method() == Method::DELETE;
    let mut service = service.clone();
    let mut response = match service.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    if deleting && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

/// The ask in `/mcp`'s query (`workspace=DIR`, `template=NAME`), each at most once; another
/// key is refused. Pure: a parser of untrusted input, fuzzed (`fuzz/fuzz_targets/session_ask.rs`).
pub fn ask_of_query(query: Option<&str>) -> Result<SessionAsk, String> {
    let mut ask = SessionAsk::default();
    for (key, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "workspace" if ask.workspace.is_none() => ask.workspace = Some(value.as_ref().into()),
            "template" if ask.template.is_none() => ask.template = Some(value.into_owned()),
            other => {
                return Err(format!(
                    "the query may name a workspace (workspace=DIR) or a template (template=NAME), \
                     each once; `{other}` is not one of them"
                ));
            }
        }
    }
    Ok(ask)
}

/// The ask in `POST /mcp/sessions`'s body: a JSON object (`{"workspace": DIR}`,
/// `{"template": NAME}`, no other key), or nothing but whitespace. Pure: a parser of untrusted
/// input, fuzzed.
pub fn ask_of_json(body: &[u8]) -> Result<SessionAsk, String> {
    let wrong = |e: &dyn std::fmt::Display| {
        format!("the body must be a JSON object with `workspace` or `template`, or nothing: {e}")
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(SessionAsk::default());
    }
    // An object only: serde would also read a struct from an array of its fields in order
    // (`["/w", "repo"]`), a shape nobody documents (found by fuzzing).
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| wrong(&e))?;
    if !value.is_object() {
        return Err(wrong(&"not an object"));
    }
    serde_json::from_value(value).map_err(|e| wrong(&e))
}

/// The ask in `POST /mcp/sessions`'s body, read within [`MAX_ASK_BYTES`].
async fn ask_of_body(request: Request<Incoming>) -> Result<SessionAsk, Refused> {
    let bad = |why: String| respond::error(StatusCode::BAD_REQUEST, "invalid_request", &why);
    let limited = http_body_util::Limited::new(request.into_body(), MAX_ASK_BYTES);
    let body = limited
        .collect()
        .await
        .map_err(|e| {
            bad(format!(
                "the body could not be read (at most {MAX_ASK_BYTES} bytes): {e}"
            ))
        })?
        .to_bytes();
    ask_of_json(&body).map_err(bad)
}

fn method_not_allowed(what: &str) -> Response<Body> {
    respond::error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", what)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (fuzzing, `session_ask`): an array of the fields in order is no ask.
    #[test]
    fn the_body_is_an_object_of_workspace_and_template_or_nothing() {
        let cases: [(&[u8], Result<SessionAsk, &str>); 7] = [
            (b"", Ok(SessionAsk::default())),
            (b" \n", Ok(SessionAsk::default())),
            (b"{}", Ok(SessionAsk::default())),
            (
                br#"{"template": "repo"}"#,
                Ok(SessionAsk {
                    workspace: None,
                    template: Some("repo".into()),
                }),
            ),
            (br#"["",""]"#, Err("not an object")),
            (br#"["/w", "repo"]"#, Err("not an object")),
            (br#"{"mode": "auto"}"#, Err("unknown field")),
        ];
        for (body, want) in cases {
            match (ask_of_json(body), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want),
                (Err(got), Err(want)) => assert!(got.contains(want), "{got}"),
                (got, want) => panic!("{body:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn only_a_request_is_a_call() {
        let cases: &[(&str, bool)] = &[
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
                true,
            ),
            (r#"{"jsonrpc":"2.0","id":"a","method":"initialize"}"#, true),
            (
                r#"  [{"jsonrpc":"2.0","method":"x"},{"id":2,"method":"y"}]"#,
                true,
            ),
            // A notification, a response (an answer to an elicitation), and neither.
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept"}}"#,
                false,
            ),
            (r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#, false),
            (r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#, false),
            ("", false),
            ("{\"jsonrpc\": ", false),
            ("[1, 2]", false),
            ("7", false),
        ];
        for (body, call) in cases {
            assert_eq!(carries_a_request(body.as_bytes()), *call, "{body}");
        }
    }

    #[test]
    fn the_query_names_a_workspace_or_a_template_once() {
        let cases: [(Option<&str>, Result<SessionAsk, &str>); 6] = [
            (None, Ok(SessionAsk::default())),
            (Some(""), Ok(SessionAsk::default())),
            (
                Some("workspace=%2Fsrv%2Frepo"),
                Ok(SessionAsk {
                    workspace: Some("/srv/repo".into()),
                    template: None,
                }),
            ),
            (
                Some("template=repo&workspace=/w"),
                Ok(SessionAsk {
                    workspace: Some("/w".into()),
                    template: Some("repo".into()),
                }),
            ),
            (
                Some("workspace=/a&workspace=/b"),
                Err("`workspace` is not one"),
            ),
            (Some("mode=auto"), Err("`mode` is not one")),
        ];
        for (query, want) in cases {
            match (ask_of_query(query), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{query:?}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{query:?}: {got}"),
                (got, want) => panic!("{query:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
