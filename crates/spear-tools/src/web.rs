//! A session's web pair: the one [`Fetcher`] and search backend its `fetch_url` and
//! `search_internet` calls use, built from the operator's `[web]`, and what they answer with
//! besides text.
//!
//! The pair runs in spear's own process, outside the sandbox: its boundary is spear-web's URL guard
//! and address policy, which every fetch (and every redirect) passes. This module decides whether
//! a session has the pair, turns the operator's plain settings into spear-web's types, words
//! results and audit records, and guards every request the pair sends against the secrets spear
//! holds ([`SecretGuard`]).
//!
//! Attack stopped (issue 31): a model sending spear's own credentials off the host in a request
//! spear makes for it. The known secrets are the secret-looking variables of spear's environment
//! and the search backend's key ([`spear_core::known_secrets`]); a request whose URL or headers
//! carry one (as it is, percent-encoded, base64, hex), the first or a redirect, is never sent
//! without a person's approval, and results and the audit log show it redacted.

use std::ffi::OsString;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use spear_core::known_secrets::{KnownSecrets, Origin};
use spear_core::{Refusal, ToolResult, ToolStatus};
use spear_policy::web::{SearchSettings, WebSettings};
use spear_runtime::{WebAudit, WebHop};
use spear_web::search::{BING_ENDPOINT, BRAVE_ENDPOINT, Backend};
use spear_web::{
    FetchError, Fetched, Fetcher, Outgoing, RequestGuard, TargetError, Timeouts, WebConfig,
};

use crate::exposure::{PairState, WebExposure};

/// A session's web pair: its fetcher (or why it has none) and its search backend. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WebPair {
    state: State,
    backend: Option<Backend>,
    /// A backend that was configured but cannot be used (its URL does not parse).
    backend_problem: Option<String>,
    /// The secrets no request of the pair carries without a person's approval.
    known: Arc<KnownSecrets>,
}

#[derive(Debug, Clone)]
enum State {
    Off,
    Unavailable(String),
    On(Arc<Fetcher>),
}

impl Default for WebPair {
    /// [`WebPair::off`].
    fn default() -> Self {
        WebPair::off()
    }
}

impl WebPair {
    /// No web pair: both tools withdrawn.
    pub fn off() -> Self {
        WebPair {
            state: State::Off,
            backend: None,
            backend_problem: None,
            known: Arc::new(KnownSecrets::new()),
        }
    }

    /// The pair `settings` describe: off when `[web] enabled = false`; else one [`Fetcher`] for
    /// the session, with the operator's ports and time limits, guarded against the secrets of
    /// this process's environment and the backend's key ([`WebPair::with_environment`] adds a
    /// caller's). A fetcher that cannot be set up leaves the pair unavailable with the reason
    /// (the session itself still opens; `spear doctor` shows it). A backend whose URL is not one
    /// a fetch can ask for is left out, with the reason.
    pub fn from_settings(settings: &WebSettings) -> Self {
        if !settings.enabled {
            return WebPair::off();
        }
        let defaults = Timeouts::default();
        let config = WebConfig {
            extra_ports: settings.ports.clone(),
            timeouts: Timeouts {
                connect: settings.connect_timeout.unwrap_or(defaults.connect),
                first_byte: settings.first_byte_timeout.unwrap_or(defaults.first_byte),
                total: settings.timeout.unwrap_or(defaults.total),
            },
            ..WebConfig::default()
        };
        let state = match Fetcher::new(config) {
            Ok(f) => State::On(Arc::new(f)),
            Err(e) => State::Unavailable(e.to_string()),
        };
        let (backend, backend_problem) = match settings.search.as_ref().map(backend_of) {
            None => (None, None),
            Some(Ok(b)) => (Some(b), None),
            Some(Err(e)) => (None, Some(e)),
        };
        let process: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        WebPair {
            state,
            backend,
            backend_problem,
            known: Arc::new(KnownSecrets::new()),
        }
        .with_environment(&process)
    }

    /// The same pair with `backend` as its search backend (tests, and callers that build their
    /// own); its key becomes a known secret (the operator's).
    #[must_use]
    pub fn with_backend(mut self, backend: Option<Backend>) -> Self {
        self.backend = backend;
        self.backend_problem = None;
        self.with_environment(&[])
    }

    /// The same pair, also knowing the secrets of `env` (the environment of the caller a
    /// session serves, besides spear's own), and the backend's key as the operator's: every
    /// request the pair sends is guarded against all of them.
    #[must_use]
    pub fn with_environment(mut self, env: &[(OsString, OsString)]) -> Self {
        let mut known = (*self.known).clone();
        for (name, value) in env {
            let (name, value) = (name.to_string_lossy(), value.to_string_lossy());
            if spear_core::known_secrets::is_known_secret(&name, &value) {
                known.add(
                    &format!("the environment variable {name}"),
                    &value,
                    Origin::Environment,
                );
            }
        }
        // The backend's URL may carry a credential of its own (`?token=...` of a SearXNG behind
        // a proxy): a secret-looking query value is the operator's too.
        let endpoint = match &self.backend {
            Some(Backend::Searxng { url }) => Some(url),
            Some(Backend::Brave { endpoint, .. } | Backend::Bing { endpoint, .. }) => {
                Some(endpoint)
            }
            None => None,
        };
        if let Some(url) = endpoint.and_then(|e| url::Url::parse(e).ok()) {
            for (name, value) in url.query_pairs() {
                if spear_core::known_secrets::is_known_secret(&name, &value) {
                    known.add(
                        &format!("the search backend's URL (its {name})"),
                        &value,
                        Origin::Operator,
                    );
                }
            }
        }
        if let Some(Backend::Brave { key_env, .. } | Backend::Bing { key_env, .. }) = &self.backend
            && let Some(key) = std::env::var_os(key_env)
        {
            known.add(
                &format!("the search backend's key ({key_env})"),
                &key.to_string_lossy(),
                Origin::Operator,
            );
        }
        self.known = Arc::new(known);
        if let State::On(fetcher) = &self.state {
            let guard = SecretGuard {
                all: Arc::clone(&self.known),
                foreign: self.known.without_operator(),
            };
            self.state = State::On(Arc::new((**fetcher).clone().with_guard(Arc::new(guard))));
        }
        self
    }

    /// The secrets no request of the pair carries without a person's approval.
    pub fn known_secrets(&self) -> &KnownSecrets {
        &self.known
    }

    /// `text` as results and the audit log show it: every known secret in it redacted.
    pub fn scrub(&self, text: &str) -> String {
        self.known.redact(text).into_owned()
    }

    /// The fetcher, when the pair is on.
    pub fn fetcher(&self) -> Option<&Fetcher> {
        match &self.state {
            State::On(f) => Some(f),
            State::Off | State::Unavailable(_) => None,
        }
    }

    /// The search backend, when one is configured and usable.
    pub fn backend(&self) -> Option<&Backend> {
        self.backend.as_ref()
    }

    /// Why the fetcher could not be set up, when it could not.
    pub fn unavailable(&self) -> Option<&str> {
        match &self.state {
            State::Unavailable(why) => Some(why),
            State::Off | State::On(_) => None,
        }
    }

    /// What the exposure policy sees of this pair in a session with `--no-network` when
    /// `no_network`.
    pub fn exposure(&self, no_network: bool) -> WebExposure {
        WebExposure {
            no_network,
            pair: match self.state {
                State::Off => PairState::Off,
                State::Unavailable(_) => PairState::Unavailable,
                State::On(_) => PairState::On,
            },
            search: self.backend.is_some(),
        }
    }

    /// The pair as `spear doctor` reports it.
    pub fn report(&self, no_network: bool) -> WebReport {
        let (state, detail) = match (&self.state, no_network) {
            (_, true) => (
                "off",
                "--no-network withdraws fetch_url and search_internet".to_owned(),
            ),
            (State::Off, false) => (
                "off",
                "[web] enabled = false: fetch_url and search_internet are not offered".to_owned(),
            ),
            (State::Unavailable(why), false) => (
                "unavailable",
                format!("fetch_url and search_internet are not offered: {why}"),
            ),
            (State::On(f), false) => (
                "on",
                if f.trusted_roots() == 0 {
                    "fetch_url is offered in every mode, but no trusted certificate was loaded: every https fetch fails (install the system's CA certificates, or set SSL_CERT_FILE)".to_owned()
                } else {
                    "fetch_url is offered in every mode (reading needs no capability; save_as writes as write_file does)".to_owned()
                },
            ),
        };
        let fetcher = self.fetcher();
        let search = self.backend.as_ref().map(|b| {
            let (endpoint, key_env) = match b {
                Backend::Searxng { url } => (url.as_str(), None),
                Backend::Brave { endpoint, key_env } | Backend::Bing { endpoint, key_env } => {
                    (endpoint.as_str(), Some(key_env.clone()))
                }
            };
            SearchReport {
                backend: b.name(),
                endpoint: redact_url(endpoint),
                key_set: key_env.as_deref().map(|var| {
                    std::env::var_os(var).is_some_and(|v| !v.to_string_lossy().trim().is_empty())
                }),
                key_env,
            }
        });
        WebReport {
            state,
            detail,
            trusted_certificates: fetcher.map(Fetcher::trusted_roots),
            ports: fetcher
                .map(|f| f.config().extra_ports.clone())
                .unwrap_or_default(),
            add_search: (search.is_none() && matches!(self.state, State::On(_)))
                .then_some(ADD_SEARCH),
            search_problem: self.backend_problem.clone(),
            search,
        }
    }
}

/// The guard of the pair's fetcher: a request (the first, or a redirect) whose URL or headers
/// carry a known secret in any form is refused before its name is resolved. An operator's own
/// endpoint is checked against every secret but its own credential, which its requests carry by
/// design.
#[derive(Debug)]
struct SecretGuard {
    all: Arc<KnownSecrets>,
    foreign: KnownSecrets,
}

impl RequestGuard for SecretGuard {
    fn check(&self, request: &Outgoing<'_>) -> Result<(), String> {
        let known = if request.operator {
            &self.foreign
        } else {
            &*self.all
        };
        let whose = if request.redirect {
            "a redirect's URL"
        } else {
            "the URL"
        };
        if let Some(leak) = known.find(request.url.as_str()) {
            return Err(format!("{whose} holds {}", leak.describe()));
        }
        for (name, value) in request.headers {
            if let Some(leak) = known.find(value) {
                return Err(format!("its {name} header holds {}", leak.describe()));
            }
        }
        Ok(())
    }
}

/// How an operator adds a search backend, as `spear doctor` shows it.
pub const ADD_SEARCH: &str = "[web.search]\nbackend = \"searxng\"            # or \"brave\" / \"bing\" (the key in BRAVE_SEARCH_API_KEY / BING_SEARCH_API_KEY)\nurl = \"http://127.0.0.1:8888\"  # the SearXNG instance, its JSON format enabled";

/// The web pair as `spear doctor` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebReport {
    /// `on`, `off` or `unavailable`.
    pub state: &'static str,
    /// What that means, or why.
    pub detail: String,
    /// Trusted certificates loaded (the system's store, or `SSL_CERT_FILE` / `SSL_CERT_DIR`), when
    /// the fetcher was set up.
    pub trusted_certificates: Option<usize>,
    /// Ports fetched besides 80 and 443.
    pub ports: Vec<u16>,
    /// The search backend, when one is configured.
    pub search: Option<SearchReport>,
    /// Why the configured backend is not used, when it cannot be.
    pub search_problem: Option<String>,
    /// With no backend: the configuration that adds one.
    pub add_search: Option<&'static str>,
}

/// A configured search backend, as `spear doctor` reports it (never its key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchReport {
    /// `searxng`, `brave` or `bing`.
    pub backend: &'static str,
    /// The URL asked (query values redacted).
    pub endpoint: String,
    /// The variable holding the API key (brave, bing).
    pub key_env: Option<String>,
    /// Whether that variable is set in spear's environment (its value is never shown).
    pub key_set: Option<bool>,
}

/// The backend `settings` name, its URL checked as a fetch would parse it.
fn backend_of(settings: &SearchSettings) -> Result<Backend, String> {
    let backend = match settings {
        SearchSettings::Searxng { url } => Backend::Searxng { url: url.clone() },
        SearchSettings::Brave { endpoint, key_env } => Backend::Brave {
            endpoint: endpoint
                .clone()
                .unwrap_or_else(|| BRAVE_ENDPOINT.to_owned()),
            key_env: key_env.clone(),
        },
        SearchSettings::Bing { endpoint, key_env } => Backend::Bing {
            endpoint: endpoint.clone().unwrap_or_else(|| BING_ENDPOINT.to_owned()),
            key_env: key_env.clone(),
        },
    };
    let url = match &backend {
        Backend::Searxng { url } => url,
        Backend::Brave { endpoint, .. } | Backend::Bing { endpoint, .. } => endpoint,
    };
    spear_web::Target::parse_operator(url).map_err(|e| {
        format!(
            "the {} backend's URL cannot be used, so search_internet is not offered: {e}",
            settings.name()
        )
    })?;
    Ok(backend)
}

/// `text` as results and the audit log write a URL: the query values redacted, the fragment and
/// any user name or password dropped (spear-web's one redaction).
pub use spear_web::target::redact_text as redact_url;

/// What a call of the web pair gives the client besides its text: the envelope's `web`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WebDetail {
    /// A `fetch_url` that got an answer.
    Fetch {
        /// The URL that answered, after redirects (query values redacted).
        url: String,
        /// Its HTTP status.
        http_status: u16,
        /// Its `Content-Type`, as sent.
        content_type: Option<String>,
        /// Bytes of the body read (after decompression).
        bytes: u64,
        /// What to pass to `fetch_url` (with the same `url`) to read on, when more remains:
        /// `{"offset": N}` or `{"pages": "N-M"}`.
        next: Option<NextSlice>,
        /// For `save_as`: the file written (its workspace label).
        saved_as: Option<String>,
    },
    /// A `search_internet`'s results.
    Search {
        /// The backend asked (`searxng`, `brave`, `bing`).
        backend: String,
        /// The results, best first.
        hits: Vec<SearchHit>,
    },
}

impl WebDetail {
    /// Every text it carries, for [`crate::ToolResultEnvelope::escape_controls`].
    pub(crate) fn texts_mut(&mut self) -> Vec<&mut String> {
        match self {
            WebDetail::Fetch {
                url,
                content_type,
                next,
                saved_as,
                ..
            } => {
                let mut out = vec![url];
                out.extend(content_type.as_mut());
                out.extend(saved_as.as_mut());
                if let Some(NextSlice::Pages(pages)) = next {
                    out.push(pages);
                }
                out
            }
            WebDetail::Search { backend, hits } => {
                let mut out = vec![backend];
                for hit in hits {
                    out.extend([&mut hit.title, &mut hit.url, &mut hit.snippet]);
                }
                out
            }
        }
    }

    /// Whether any text it carries holds a control character.
    pub(crate) fn has_controls(&self) -> bool {
        use spear_core::visible::has_controls as has;
        match self {
            WebDetail::Fetch {
                url,
                content_type,
                next,
                saved_as,
                ..
            } => {
                has(url)
                    || content_type.as_deref().is_some_and(has)
                    || saved_as.as_deref().is_some_and(has)
                    || matches!(next, Some(NextSlice::Pages(p)) if has(p))
            }
            WebDetail::Search { backend, hits } => {
                has(backend)
                    || hits
                        .iter()
                        .any(|h| has(&h.title) || has(&h.url) || has(&h.snippet))
            }
        }
    }
}

/// The argument that continues a slice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NextSlice {
    /// Text: the character offset to pass as `offset`.
    Offset(usize),
    /// A PDF: the range to pass as `pages` (`"13-41"`).
    Pages(String),
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SearchHit {
    /// The page's title.
    pub title: String,
    /// Its URL: read it with `fetch_url`.
    pub url: String,
    /// The backend's snippet, as plain text.
    pub snippet: String,
}

/// The audit record of a fetch that got an answer.
pub(crate) fn fetched_audit(asked: &str, fetched: &Fetched) -> WebAudit {
    WebAudit {
        url: asked.to_owned(),
        final_url: Some(fetched.target.redacted()),
        connected: Some(fetched.connected.to_string()),
        http_status: Some(fetched.status),
        bytes: Some(fetched.body.len() as u64),
        cut: fetched.cut,
        hops: fetched
            .hops
            .iter()
            .map(|h| WebHop {
                url: h.url.clone(),
                status: h.status,
                connected: h.connected.to_string(),
            })
            .collect(),
        ..WebAudit::default()
    }
}

/// The result and the audit record of a fetch that got no answer. A refusal by the URL guard or
/// the address policy is `denied` ([`Refusal::WebRefused`], naming the rule and the address,
/// and so counted by the repeated-refusal tracker: a model probing the host's networks is
/// stopped); a timeout is `timeout`; anything else (resolution, connection, TLS, a broken
/// answer) is `failed`.
pub(crate) fn fetch_failure(web: &WebPair, asked: &str, e: &FetchError) -> (ToolResult, WebAudit) {
    let asked = web.scrub(asked);
    let asked = asked.as_str();
    let mut audit = WebAudit {
        url: asked.to_owned(),
        ..WebAudit::default()
    };
    let message = web.scrub(&e.to_string());
    let refused = match e {
        FetchError::Target(TargetError::Scheme(_)) => Some("scheme"),
        FetchError::Target(TargetError::Userinfo) => Some("userinfo"),
        FetchError::Target(TargetError::Port { .. }) => Some("port"),
        FetchError::Downgrade { .. } => Some("downgrade"),
        FetchError::Refused { refused, .. } => {
            audit.address = Some(refused.addr.to_string());
            Some(refused.why.as_str())
        }
        _ => None,
    };
    let result = if let FetchError::Guarded { why } = e {
        audit.refused = Some("known_secret".to_owned());
        ToolResult::denied(&Refusal::secret_in_request(
            format!("fetch_url {asked}"),
            why,
        ))
    } else if let Some(rule) = refused {
        audit.refused = Some(rule.to_owned());
        ToolResult::denied(&Refusal::web_refused(asked, message))
    } else {
        let status = if matches!(e, FetchError::Timeout { .. }) {
            ToolStatus::Timeout
        } else {
            ToolStatus::Failed
        };
        ToolResult {
            reason: Some(message),
            ..ToolResult::new(status)
        }
    };
    (result, audit)
}

/// Runs `work` on a thread of its own and waits for it, giving up when `cancel` is cancelled (the
/// thread then finishes on its own, within the fetch's time limit, and its answer is dropped:
/// nothing is written from it). Without a token, runs it here.
pub(crate) fn cancellable<T: Send + 'static>(
    cancel: Option<&spear_sandbox::CancelToken>,
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let Some(cancel) = cancel else {
        return Some(work());
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("spear-fetch".into())
        .spawn(move || {
            let _ = tx.send(work());
        });
    if spawned.is_err() {
        return None;
    }
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(value) => return Some(value),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if !cancel.is_cancelled() => {}
            Err(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn urls_lose_their_query_values_and_userinfo() {
        assert_eq!(
            redact_url("https://u:pw@api.example/v1?key=s3cret#x"),
            "https://api.example/v1?key=REDACTED"
        );
        assert_eq!(redact_url("not a url?token=s3cret"), "not a url?REDACTED");
        assert_eq!(redact_url("ftp://x@y/z"), "ftp://y/z");
    }

    #[test]
    fn settings_become_a_pair() {
        let off = WebPair::from_settings(&WebSettings {
            enabled: false,
            ..WebSettings::default()
        });
        assert_eq!(off.exposure(false).pair, PairState::Off);
        let on = WebPair::from_settings(&WebSettings::default());
        let e = on.exposure(false);
        assert_eq!(
            (e.pair, e.search, e.no_network),
            (PairState::On, false, false)
        );
        assert!(on.exposure(true).no_network);
        let report = on.report(false);
        assert_eq!(report.state, "on");
        assert_eq!(report.add_search, Some(ADD_SEARCH));
        assert_eq!(on.report(true).state, "off");
        let searx = WebPair::from_settings(&WebSettings {
            search: Some(SearchSettings::Searxng {
                url: "http://127.0.0.1:8888/?token=s3cret".into(),
            }),
            ports: vec![8080],
            ..WebSettings::default()
        });
        assert!(searx.exposure(false).search);
        let report = searx.report(false);
        assert_eq!(report.ports, vec![8080]);
        let search = report.search.unwrap();
        assert_eq!(search.backend, "searxng");
        assert!(!search.endpoint.contains("s3cret"), "{}", search.endpoint);
        assert_eq!(report.add_search, None);
        // A backend whose URL a fetch could not ask for is left out, and says why.
        let bad = WebPair::from_settings(&WebSettings {
            search: Some(SearchSettings::Brave {
                endpoint: Some("http://u@x.example/".into()),
                key_env: "K".into(),
            }),
            ..WebSettings::default()
        });
        assert!(!bad.exposure(false).search);
        assert!(
            bad.report(false)
                .search_problem
                .unwrap()
                .contains("user name"),
        );
    }

    /// Each row: a request, and what the guard says of it. A known secret anywhere in the URL or
    /// a header is refused, and named (never shown); the operator's own key is expected in its
    /// endpoint's request and refused anywhere else. Positive controls: the same requests
    /// without a known value pass.
    #[test]
    fn the_guard_refuses_known_secrets_but_the_operators_key_at_its_endpoint() {
        let token = "ghp_Sp34rT3stT0k3nV4lu3AbCdEf0123456789";
        let key = "brave-k3y-0001";
        let mut known = KnownSecrets::from_environment([("GITHUB_TOKEN", token)]);
        known.add("the search backend's key (K)", key, Origin::Operator);
        let guard = SecretGuard {
            foreign: known.without_operator(),
            all: Arc::new(known),
        };
        let header = |v: &str| vec![("x-subscription-token", v.to_owned())];
        for (url, headers, redirect, operator, refused) in [
            (
                format!("https://e.example/?k={token}"),
                vec![],
                false,
                false,
                Some("the URL holds the value of the environment variable GITHUB_TOKEN"),
            ),
            (
                format!("https://e.example/{token}"),
                vec![],
                true,
                false,
                Some("a redirect's URL holds"),
            ),
            (
                format!("https://e.example/?q={key}"),
                vec![],
                false,
                false,
                Some("the search backend's key (K)"),
            ),
            (
                "https://api.example/search?q=x".to_owned(),
                header(key),
                false,
                true,
                None,
            ),
            (
                "https://api.example/search?q=x".to_owned(),
                header(token),
                false,
                true,
                Some("its x-subscription-token header holds"),
            ),
            (
                format!("https://api.example/search?q={token}"),
                header(key),
                false,
                true,
                Some("GITHUB_TOKEN"),
            ),
            (
                "https://e.example/?k=ghp_other".to_owned(),
                vec![],
                false,
                false,
                None,
            ),
            (
                "https://api.example/search?q=x".to_owned(),
                header("other-key-1"),
                false,
                true,
                None,
            ),
        ] {
            let url = url::Url::parse(&url).unwrap();
            let got = guard.check(&Outgoing {
                url: &url,
                headers: &headers,
                redirect,
                operator,
            });
            match (refused, got) {
                (None, Ok(())) => {}
                (Some(want), Err(why)) => {
                    assert!(why.contains(want), "{url}: {why}");
                    assert!(!why.contains(token) && !why.contains(key), "{why}");
                }
                (want, got) => panic!("{url}: expected {want:?}, got {got:?}"),
            }
        }
    }

    /// A secret-looking query value of the backend's configured URL is the operator's
    /// credential: refused in any request but its endpoint's.
    #[test]
    fn a_token_in_the_backends_url_is_a_known_secret() {
        let searx = WebPair::from_settings(&WebSettings {
            search: Some(SearchSettings::Searxng {
                url: "http://127.0.0.1:8888/?token=Zq8Xv2LpR9sKd3WmZ8tNc4Yb&format=json".into(),
            }),
            ..WebSettings::default()
        });
        assert_eq!(
            searx
                .known_secrets()
                .find("https://e.example/?t=Zq8Xv2LpR9sKd3WmZ8tNc4Yb")
                .map(|l| l.source),
            Some("the search backend's URL (its token)".to_owned())
        );
        assert!(
            searx
                .known_secrets()
                .without_operator()
                .find("Zq8Xv2LpR9sKd3WmZ8tNc4Yb")
                .is_none(),
            "the operator's, expected at its endpoint"
        );
    }

    #[test]
    fn a_key_is_reported_set_or_not_never_shown() {
        let pair = WebPair::from_settings(&WebSettings {
            search: Some(SearchSettings::Bing {
                endpoint: None,
                // PATH is set wherever tests run: it stands in for a key.
                key_env: "PATH".into(),
            }),
            ..WebSettings::default()
        });
        let report = pair.report(false);
        let search = report.search.unwrap();
        assert_eq!(search.key_set, Some(true));
        let path = std::env::var("PATH").unwrap();
        let json = serde_json::to_string(&pair.report(false)).unwrap();
        assert!(!json.contains(&path), "{json}");
    }
}
