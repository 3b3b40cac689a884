//! The server over MCP's streamable HTTP transport (`spear mcp --listen ADDR`): rmcp's
//! [`StreamableHttpService`] behind spear's door ([`Gatekeeper`]), served by hyper over HTTP/1.1
//! on a loopback address, until a signal.
//!
//! - **Who may connect.** Every request to an MCP path must carry `Authorization: Bearer
//!   <token>` that the [`Gatekeeper`] admits, with what it grants ([`Admission`]); any other gets
//!   `401` with `WWW-Authenticate: Bearer` naming the Protected Resource Metadata document (RFC
//!   9728) at `/.well-known/oauth-protected-resource`, which answers without credentials, as
//!   MCP's authorization section asks of a resource server. Attack stopped: any local process
//!   (another user's included) reaching a loopback port and running commands as spear's user.
//! - **One session, one spear session**, opened by the [`Opener`] for the credential that asked,
//!   narrowed to what it grants: its own router, workspace view, turns, jobs, scratch and stored
//!   outputs. Two ways to have one ([`node`]): an MCP session on `/mcp` (2025-11-25:
//!   `initialize`, then `Mcp-Session-Id`; `DELETE` ends it), or a session the client makes with
//!   `POST /mcp/sessions` and names in its URL, `/mcp/sessions/<id>`, which is how the stateless
//!   2026-07-28 generation keeps jobs, turns and undo from one request to the next. A session is
//!   reachable only with the credential that made it: another's requests get `404`, as an
//!   unknown session would.
//! - **Limits.** Sessions per credential and per node ([`tickets`]): over either, `429` saying
//!   which. A session idle for the idle time ends; a credential that is revoked or expires has
//!   its sessions ended within a second or two; on SIGTERM every session ends, and with it its
//!   jobs and what it made.
//! - `/healthz` answers `{"status":"ok"}` without credentials and says nothing else.
//! - **Where** ([`crate::listener`]): TCP or a unix socket; anywhere but loopback or a unix
//!   socket only with TLS or `--insecure-http`; `Host` and `Origin` checked against allow-lists
//!   (DNS rebinding, a web page posting to the port). Request bodies are capped
//!   ([`MAX_BODY_BYTES`]), headers must come within seconds, connections are capped.
//! - `GET /metrics` (admitted like `/mcp`): Prometheus's text format ([`crate::Metrics`]).

mod node;

#[cfg(feature = "fuzzing")]
pub use node::{ask_of_json, ask_of_query};
mod respond;
mod tickets;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spear_core::ExecutionMode;

use crate::ServeError;
use crate::listener::{ListenAddr, Listener, TlsFiles, WebGuard};
use crate::server::SpearServer;

/// The largest request body spear reads (4 MiB): a tool call's arguments, a file written whole.
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// The path the MCP endpoint answers on.
pub const MCP_PATH: &str = "/mcp";

/// Where a client makes a session it names in its URL (`POST`), and under which each such
/// session answers (`/mcp/sessions/<id>`).
pub const SESSIONS_PATH: &str = "/mcp/sessions";

/// The path of the Protected Resource Metadata document (RFC 9728).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The path that answers whether the server is up, without credentials, and says nothing else.
pub const HEALTH_PATH: &str = "/healthz";

/// The path of the Prometheus metrics, admitted like the MCP endpoint.
pub const METRICS_PATH: &str = "/metrics";

/// Who may use the server: the verdict on a request's bearer token.
pub trait Gatekeeper: Send + Sync + 'static {
    /// Who `bearer` is and what it grants, or why it is not admitted. `None`: the request
    /// carried no bearer token. Asked at every request, and again every second or so for each
    /// credential with sessions open, so that a revocation or an expiry ends them.
    fn admit(&self, bearer: Option<&str>) -> Result<Admission, Denied>;

    /// The Protected Resource Metadata document (RFC 9728) of the MCP endpoint `resource`: the
    /// authorization servers whose tokens this gate admits, and their scopes. By default none
    /// (the operator's own tokens only).
    fn metadata(&self, resource: &str) -> serde_json::Value {
        crate::oauth::resource_metadata(resource, None, &[])
    }
}

/// An admitted credential: who it is and what its sessions may have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// Its name as the logs and the audit record show it (`token:NAME`), never its value.
    pub principal: String,
    /// What its sessions may have.
    pub grant: Grant,
}

/// What a credential grants its sessions, within what the server itself gives: each part can
/// only narrow the server's own flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// The workspaces its sessions may open (empty: the server's own).
    pub workspaces: Vec<PathBuf>,
    /// The templates its sessions may take a copy of.
    pub templates: Vec<PathBuf>,
    /// The most its sessions may run in (none: the server's mode).
    pub mode: Option<ExecutionMode>,
    /// Its sessions have no network.
    pub no_network: bool,
    /// How many sessions it may hold open at once (none: only the node's limit).
    pub sessions: Option<u32>,
    /// How many of its calls may be in flight at once over all its sessions (none, or more than
    /// the node's [`NodeLimits::calls_per_credential`]: the node's).
    pub calls: Option<u32>,
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

/// What a client asks of a new session: the query of `/mcp?workspace=DIR`, or the JSON body of
/// `POST /mcp/sessions`. Nothing asked: the credential's first workspace, or the server's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionAsk {
    /// One of the workspaces the credential grants.
    pub workspace: Option<PathBuf>,
    /// One of the templates the credential grants (its path, or its directory's name): the
    /// session works in a copy of it of its own.
    pub template: Option<String>,
}

/// A session the [`Opener`] made.
pub struct Opened {
    /// The MCP server over its router.
    pub server: SpearServer,
    /// Its workspace's first root, as the client is told.
    pub workspace: String,
    /// For a session on a template: its changes against the template.
    pub changes: Option<Arc<dyn Changes>>,
}

/// A template session's changes.
pub trait Changes: Send + Sync {
    /// Everything the session changed against its template, as a binary-safe `git diff`-style
    /// patch that `git apply` takes on a fresh copy of the template.
    fn patch(&self) -> Result<Vec<u8>, String>;
}

/// Makes a session for one credential's ask; may be called many times, each call a fresh
/// session.
pub type SessionFactory = Arc<dyn Fn() -> Result<Opened, String> + Send + Sync>;

/// What opens sessions: the caller's, which knows how a spear session is made.
pub trait Opener: Send + Sync + 'static {
    /// How a session for `who` asking `ask` is made, or why `who` may not have it (answered
    /// `403`, before anything is made). Pure but for reading what the ask names.
    fn plan(&self, who: &Admission, ask: &SessionAsk) -> Result<SessionFactory, String>;
}

/// How many sessions a node holds, for how long an idle one, and how many calls one credential
/// may have in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    /// The most sessions open at once, over every credential (`--max-sessions`).
    pub max_sessions: usize,
    /// The most JSON-RPC requests one credential may have in flight at once, over all its
    /// sessions (`--max-calls-per-token`); one more is answered `429`.
    pub calls_per_credential: usize,
    /// A session with no request for this long ends (`--session-idle`).
    pub session_idle: Duration,
}

/// Where and how the server listens (`--listen`, `--tls-cert`/`--tls-key`, `--insecure-http`,
/// `--public-host`, `--allow-origin`).
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The address: TCP or a unix socket.
    pub addr: ListenAddr,
    /// The certificate and key, for TLS.
    pub tls: Option<TlsFiles>,
    /// The operator accepts tokens in clear on a network.
    pub insecure_http: bool,
    /// The names clients reach the server by, besides loopback's and the address bound.
    pub public_hosts: Vec<String>,
    /// The browser origins allowed to post to it.
    pub allow_origins: Vec<String>,
}

/// A bound listener, the runtime it is served on and the signals that stop it.
pub struct Http {
    runtime: tokio::runtime::Runtime,
    listener: Listener,
    guard: WebGuard,
    base: String,
}

impl Http {
    /// Binds as `config` says ([`Listener::bind`]: anything but loopback or a unix socket only
    /// with TLS or `--insecure-http`) and builds the runtime.
    pub fn bind(config: &HttpConfig) -> Result<Http, ServeError> {
        let setup = |e: crate::listener::ListenError| ServeError::Setup(std::io::Error::other(e));
        let listener = Listener::bind(&config.addr, config.tls.as_ref(), config.insecure_http)
            .map_err(setup)?;
        let guard =
            crate::listener::web_guard(&config.addr, &config.public_hosts, &config.allow_origins)
                .map_err(setup)?;
        let base = public_base(&listener, &config.public_hosts);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        Ok(Http {
            runtime,
            listener,
            guard,
            base,
        })
    }

    /// The server's base URL, without a path (`http://127.0.0.1:PORT`, the port picked with
    /// port 0; `https://NAME:PORT` for a server bound to every address with a public name).
    pub fn url(&self) -> &str {
        &self.base
    }

    /// Serves until SIGTERM, SIGINT or SIGHUP: every request passes `gate` first, each session
    /// is made by `opener` for the credential that asks, within `limits`. On the signal every
    /// session is ended, and so its calls and jobs.
    pub fn run(
        self,
        opener: Arc<dyn Opener>,
        gate: Arc<dyn Gatekeeper>,
        limits: NodeLimits,
    ) -> Result<(), ServeError> {
        let Http {
            runtime,
            listener,
            guard,
            base,
        } = self;
        runtime.block_on(node::serve(
            node::Site {
                listener,
                guard,
                base,
            },
            opener,
            gate,
            limits,
        ))
    }
}

/// The base URL clients reach `listener` by: its own, unless it is bound to every address
/// (`0.0.0.0`, `::`), which no client can reach, and a public name is given: then the first one
/// (with the port bound, unless the name carries its own).
fn public_base(listener: &Listener, public_hosts: &[String]) -> String {
    let local = listener.local_url();
    match (listener.local_addr(), public_hosts.first()) {
        (Some(addr), Some(host)) if addr.ip().is_unspecified() => {
            let scheme = if listener.is_tls() { "https" } else { "http" };
            if host.contains(':') {
                format!("{scheme}://{host}")
            } else {
                format!("{scheme}://{host}:{}", addr.port())
            }
        }
        _ => local.to_owned(),
    }
}
