//! OAuth 2.1 access tokens (JWTs, RFC 9068) from the authorization server the operator names in
//! `[serve.oauth]`: a listening spear is their resource server, besides the operator's tokens.
//!
//! [`OAuthVerifier::new`] loads the server's key set (JWKS, RFC 7517) from a file or a URL, and
//! refuses to start when it cannot; [`OAuthVerifier::verify`] turns a bearer token into what it
//! grants ([`OAuthGrant`]) or says why not ([`OAuthRefusal`], in words for the client's `401`;
//! [`OAuthRefusal::JwksUnavailable`] is the operator's to fix, a `503`). A token is accepted only
//! when every check holds, in this order:
//!
//! 1. it is a compact JWS of at most [`MAX_TOKEN_BYTES`] with no critical extension (`crit`),
//!    and its `typ`, if any, is an access token's (`at+jwt`, or the generic `JWT`);
//! 2. its `alg` is one the operator allows (never `none`, never an HMAC: [`JwsAlgorithm`] has no
//!    such variant) and fits the type of the key it names (attack stopped: algorithm confusion);
//! 3. the key is the one its `kid` names in the key set (or the only key, when it names none); a
//!    key named in the token's header itself (`jwk`, `jku`, `x5u`, `x5c`) is never used (attack
//!    stopped: a token carrying the key that signs it);
//! 4. its signature verifies with that key (ring, the provider rustls already uses here; RSA
//!    keys of 2048 to 8192 bits);
//! 5. `iss` is the configured issuer, exactly (attack stopped: a token of another authorization
//!    server);
//! 6. `aud` (a string or an array) holds the configured audience (attack stopped: a token minted
//!    for another resource replayed here, RFC 8707);
//! 7. `exp` is present, a number, and later than now less the leeway; `nbf`, if present, a number
//!    no later than now plus the leeway (attack stopped: a stolen token used forever, and a
//!    mistyped claim skipping its check, as `"nbf": "9999999999"` did in other libraries);
//! 8. it is not bound to its holder's key (`cnf`, which a bearer server cannot check), it has a
//!    subject (`sub`, else `client_id`), and at least one of its scopes (`scope`, a
//!    space-separated string, or `scp`, an array or a string) is mapped by the operator.
//!
//! An unknown `kid` makes the verifier read the key set again (the issuer rotated its keys), at
//! most once every [`REFETCH_EVERY`], so a flood of tokens naming made-up keys costs one read
//! per period. A fetch is bounded ([`JWKS_TIMEOUT`], [`MAX_JWKS_BYTES`], no redirects); keys
//! already loaded keep working while the key set cannot be read again.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};
use spear_core::ExecutionMode;
use spear_policy::serve::{JwksSource, JwsAlgorithm, OAuthConfig, ScopeGrant};

use crate::http::Denied;

/// The longest bearer token read (16 KiB); a longer one is refused unread.
pub const MAX_TOKEN_BYTES: usize = 16 << 10;

/// The largest key set read, from a file or a URL (1 MiB).
pub const MAX_JWKS_BYTES: u64 = 1 << 20;

/// How long a fetch of the key set may take, connection included.
pub const JWKS_TIMEOUT: Duration = Duration::from_secs(10);

/// The key set is read again for an unknown `kid` at most once in this period.
pub const REFETCH_EVERY: Duration = Duration::from_secs(30);

/// What an accepted token grants: the union of the grants of its mapped scopes.
///
/// A dimension a scope leaves to the server (no `workspaces`, no `mode`, no `sessions`) stays
/// the server's only when every mapped scope leaves it so; otherwise it is what the scopes that
/// name it name (the union of workspaces, the widest mode, the most sessions). So a scope that
/// names nothing never lifts another's bounds; the union can still pair one scope's mode with
/// another's workspaces, so scopes meant to be held together should be nested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthGrant {
    /// Who the token was issued to (`sub`, else `client_id`).
    pub subject: String,
    /// Its scopes that the operator maps, in the token's order.
    pub scopes: Vec<String>,
    /// The workspaces its sessions may open (none: those the server serves).
    pub workspaces: Vec<PathBuf>,
    /// The templates its sessions may take a copy of.
    pub templates: Vec<PathBuf>,
    /// The most its sessions may run in (none: the server's own mode).
    pub mode: Option<ExecutionMode>,
    /// Its sessions have no network (every mapped scope says so).
    pub no_network: bool,
    /// How many sessions it may hold open at once (none: the server's limit).
    pub sessions: Option<u32>,
    /// When the token expires (`exp`); the leeway is not added.
    pub expires: SystemTime,
}

/// Why the verifier could not be made: the server refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// `jwks_url` is not a URL spear fetches keys from.
    #[error("[serve.oauth] jwks_url {url:?} cannot be used: {why}")]
    Url {
        /// The URL as configured.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// The key set could not be read, or holds no key spear can verify with.
    #[error(
        "the authorization server's key set ({from}) cannot be loaded: {why}; fix [serve.oauth] \
         jwks_file or jwks_url, or the authorization server, before serving with OAuth"
    )]
    Jwks {
        /// The file or URL.
        from: String,
        /// Why.
        why: String,
    },
}

/// Why a bearer token is not accepted, in words for the client (the token itself is never
/// repeated). Every variant but [`OAuthRefusal::JwksUnavailable`] is the client's: `401`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthRefusal {
    /// Not a compact JWS this server reads, or a claim of the wrong type or missing.
    #[error("the bearer token is not an access token this server can read: {0}")]
    Malformed(String),
    /// `alg` is not one the server accepts.
    #[error(
        "the token is signed with {alg:?}, which this server does not accept (it accepts {allowed}; \
         never none nor an HMAC)"
    )]
    AlgorithmNotAllowed {
        /// The token's `alg`.
        alg: String,
        /// The algorithms accepted, comma-separated.
        allowed: String,
    },
    /// `alg` does not fit the key the token names.
    #[error(
        "the token's algorithm {alg} does not fit the key {kid} it names: a token is verified \
         only with its key's own algorithm"
    )]
    KeyMismatch {
        /// The token's `alg`.
        alg: String,
        /// The key's `kid` (or `(none)`).
        kid: String,
    },
    /// The key the token names is not in the key set.
    #[error("{0}; get a new token from the authorization server")]
    UnknownKey(String),
    /// The signature does not verify.
    #[error(
        "the token's signature does not verify with the authorization server's key: it was not \
         issued by that server, or it was changed"
    )]
    BadSignature,
    /// `iss` is not the configured issuer.
    #[error(
        "the token was issued by {found}, not by {expected}, the authorization server this server trusts"
    )]
    Issuer {
        /// The token's `iss` (or `no issuer`).
        found: String,
        /// The configured issuer.
        expected: String,
    },
    /// `aud` does not hold the configured audience.
    #[error(
        "the token is not for this server: its audience ({found}) does not hold {expected}; ask \
         the authorization server for a token with resource={expected}"
    )]
    Audience {
        /// The token's audiences (or `none`).
        found: String,
        /// This server's resource URL.
        expected: String,
    },
    /// `exp` has passed.
    #[error("the token expired at {0}; get a new one")]
    Expired(String),
    /// `nbf` has not come.
    #[error("the token is not valid before {0}; use it then, or check the clocks")]
    NotYetValid(String),
    /// None of its scopes is mapped.
    #[error(
        "the token grants none of the scopes this server accepts ({accepted}); its scopes: \
         {found}; ask for one of them"
    )]
    NoScope {
        /// The token's scopes, space-separated (or `none`).
        found: String,
        /// The scopes mapped, space-separated.
        accepted: String,
    },
    /// The key set could not be read again for a key it did not hold: the operator's to fix.
    #[error("the authorization server's key set cannot be loaded now: {0}")]
    JwksUnavailable(String),
}

impl OAuthRefusal {
    /// Whether the server, not the client, is at fault (`503` rather than `401`).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, OAuthRefusal::JwksUnavailable(_))
    }
}

impl From<OAuthRefusal> for Denied {
    /// `503` ([`Denied::Unavailable`]) for a key set that cannot be loaded, `401`
    /// ([`Denied::Unauthorized`]) for every other refusal; the words are the refusal's.
    fn from(refusal: OAuthRefusal) -> Denied {
        if refusal.is_unavailable() {
            Denied::Unavailable(refusal.to_string())
        } else {
            Denied::Unauthorized(refusal.to_string())
        }
    }
}

/// The Protected Resource Metadata document (RFC 9728) of the resource at `resource` (its URL,
/// the audience tokens must carry): `authorization_servers` lists `issuer` when OAuth is
/// configured (empty otherwise: only the operator's tokens), `scopes_supported` the scopes
/// mapped (absent when none). Pure: the HTTP server serves what it returns.
pub fn resource_metadata(
    resource: &str,
    issuer: Option<&str>,
    scopes_supported: &[String],
) -> Value {
    let mut doc = serde_json::json!({
        "resource": resource,
        "authorization_servers": issuer.into_iter().collect::<Vec<_>>(),
        "bearer_methods_supported": ["header"],
    });
    if !scopes_supported.is_empty()
        && let Some(map) = doc.as_object_mut()
    {
        map.insert("scopes_supported".into(), scopes_supported.into());
    }
    doc
}

/// The verifier of one authorization server's access tokens, for one audience. Shared by every
/// request (`Send + Sync`); its key set is replaced whole when read again.
pub struct OAuthVerifier {
    issuer: String,
    audience: String,
    algorithms: Vec<JwsAlgorithm>,
    leeway: Duration,
    scopes: BTreeMap<String, ScopeGrant>,
    source: Source,
    keys: RwLock<Arc<KeySet>>,
    refresh: Mutex<Refresh>,
    refetch_every: Duration,
}

impl std::fmt::Debug for OAuthVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("source", &self.source.describe())
            .finish_non_exhaustive()
    }
}

/// Where the key set is read from.
enum Source {
    File(PathBuf),
    Url {
        url: reqwest::Url,
        tls: Arc<rustls::ClientConfig>,
    },
}

impl Source {
    fn describe(&self) -> String {
        match self {
            Source::File(path) => path.display().to_string(),
            Source::Url { url, .. } => url.to_string(),
        }
    }
}

/// When the key set was last read, and why that failed, if it did.
struct Refresh {
    last: Instant,
    failed: Option<String>,
}

impl OAuthVerifier {
    /// The verifier of `config`'s tokens, its key set loaded now: a key set that cannot be read,
    /// or holds no key spear can verify with, is an error (the server does not start without
    /// one).
    pub fn new(config: &OAuthConfig) -> Result<OAuthVerifier, OAuthError> {
        let source = match &config.jwks {
            JwksSource::File(path) => Source::File(path.clone()),
            JwksSource::Url(text) => {
                let url_error = |why: String| OAuthError::Url {
                    url: text.clone(),
                    why,
                };
                if let Some(why) = spear_policy::serve::jwks_url_problem(text) {
                    return Err(url_error(why.to_owned()));
                }
                let url = reqwest::Url::parse(text).map_err(|e| url_error(e.to_string()))?;
                // The configuration's check again, on the URL as it will be fetched.
                if url.scheme() != "https"
                    && !(url.scheme() == "http"
                        && matches!(url.host_str(), Some("127.0.0.1" | "[::1]" | "localhost")))
                {
                    return Err(url_error("is not https, nor http to this host".into()));
                }
                Source::Url {
                    url,
                    tls: tls_config().map_err(url_error)?,
                }
            }
        };
        let keys = load(&source).map_err(|why| OAuthError::Jwks {
            from: source.describe(),
            why,
        })?;
        Ok(OAuthVerifier {
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            algorithms: config.algorithms.clone(),
            leeway: config.leeway,
            scopes: config.scopes.clone(),
            source,
            keys: RwLock::new(Arc::new(keys)),
            refresh: Mutex::new(Refresh {
                last: Instant::now(),
                failed: None,
            }),
            refetch_every: REFETCH_EVERY,
        })
    }

    /// The issuer whose tokens it accepts (for `authorization_servers`).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audience its tokens must carry: this server's resource URL.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The scopes it maps (for `scopes_supported`), sorted.
    pub fn scopes_supported(&self) -> Vec<String> {
        self.scopes.keys().cloned().collect()
    }

    /// What `bearer` grants at `now`, or why it grants nothing (see the module's documentation
    /// for every check and the attack each stops). Never blocks longer than one bounded read of
    /// the key set, and that only for a `kid` it does not know, once per [`REFETCH_EVERY`].
    pub fn verify(&self, bearer: &str, now: SystemTime) -> Result<OAuthGrant, OAuthRefusal> {
        let jws = split_jws(bearer)?;
        let alg = JwsAlgorithm::from_name(&jws.alg)
            .filter(|a| self.algorithms.contains(a))
            .ok_or_else(|| OAuthRefusal::AlgorithmNotAllowed {
                alg: jws.alg.clone(),
                allowed: self
                    .algorithms
                    .iter()
                    .map(|a| a.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let key = self.key_for(jws.kid.as_deref(), alg)?;
        if !signature_holds(alg, &key, jws.signing_input.as_bytes(), &jws.signature) {
            return Err(OAuthRefusal::BadSignature);
        }
        let claims: Map<String, Value> = serde_json::from_slice(&jws.payload)
            .map_err(|_| OAuthRefusal::Malformed("its claims are not a JSON object".into()))?;
        let rules = ClaimRules {
            issuer: &self.issuer,
            audience: &self.audience,
            leeway: self.leeway,
        };
        let checked = check_claims(&claims, &rules, now)?;
        let Some((scopes, grant)) = union_of(&checked.scopes, &self.scopes) else {
            return Err(OAuthRefusal::NoScope {
                found: or_none(&checked.scopes.join(" ")),
                accepted: self.scopes_supported().join(" "),
            });
        };
        Ok(OAuthGrant {
            subject: checked.subject,
            scopes,
            workspaces: grant.workspaces,
            templates: grant.templates,
            mode: grant.mode,
            no_network: grant.no_network,
            sessions: grant.sessions,
            expires: checked.expires,
        })
    }

    /// The key `kid` names for `alg`, reading the key set again (at most once a period) when it
    /// does not hold `kid`.
    fn key_for(&self, kid: Option<&str>, alg: JwsAlgorithm) -> Result<KeyMaterial, OAuthRefusal> {
        let first = select(&self.current(), kid, alg);
        let Err(OAuthRefusal::UnknownKey(_)) = &first else {
            return first;
        };
        if kid.is_none() {
            return first;
        }
        self.reload()?;
        select(&self.current(), kid, alg)
    }

    fn current(&self) -> Arc<KeySet> {
        Arc::clone(&self.keys.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Reads the key set again unless it was read less than a period ago (then: the outcome of
    /// that read). A failure keeps the keys loaded before.
    fn reload(&self) -> Result<(), OAuthRefusal> {
        let mut state = self.refresh.lock().unwrap_or_else(PoisonError::into_inner);
        if state.last.elapsed() < self.refetch_every {
            return match &state.failed {
                Some(why) => Err(OAuthRefusal::JwksUnavailable(why.clone())),
                None => Ok(()),
            };
        }
        state.last = Instant::now();
        match load(&self.source) {
            Ok(keys) => {
                *self.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(keys);
                state.failed = None;
                Ok(())
            }
            Err(why) => {
                let why = format!("{}: {why}", self.source.describe());
                tracing::error!("the authorization server's key set: {why}");
                state.failed = Some(why.clone());
                Err(OAuthRefusal::JwksUnavailable(why))
            }
        }
    }
}

/// `text`, or `none` when empty.
fn or_none(text: &str) -> String {
    if text.is_empty() {
        "none".into()
    } else {
        text.into()
    }
}

/// A compact JWS, split and decoded; its claims not yet read.
#[derive(Debug)]
struct Jws<'a> {
    alg: String,
    kid: Option<String>,
    signing_input: &'a str,
    payload: Vec<u8>,
    signature: Vec<u8>,
}

/// Splits and decodes a compact JWS (RFC 7515, 7.1): three base64url parts without padding, a
/// header that is a JSON object with a string `alg`, a string `kid` if any, no `crit` (an
/// extension this verifier does not implement must not be ignored), and a `typ`, if any, of an
/// access token ([`is_access_token_type`]). Pure.
fn split_jws(bearer: &str) -> Result<Jws<'_>, OAuthRefusal> {
    let malformed = |why: &str| Err(OAuthRefusal::Malformed(why.to_owned()));
    if bearer.len() > MAX_TOKEN_BYTES {
        return malformed(&format!("it is longer than {MAX_TOKEN_BYTES} bytes"));
    }
    let parts: Vec<&str> = bearer.split('.').collect();
    let [header, payload, signature] = parts[..] else {
        return malformed(&format!(
            "a signed JWT has three parts separated by dots; this has {} (encrypted tokens are not \
             accepted)",
            parts.len()
        ));
    };
    let decode = |part: &str, what: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| OAuthRefusal::Malformed(format!("its {what} is not base64url")))
    };
    let header: Map<String, Value> = serde_json::from_slice(&decode(header, "header")?)
        .map_err(|_| OAuthRefusal::Malformed("its header is not a JSON object".into()))?;
    let Some(Value::String(alg)) = header.get("alg") else {
        return malformed("its header names no algorithm (alg)");
    };
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.clone()),
        Some(_) => return malformed("its key id (kid) is not a string"),
    };
    if header.contains_key("crit") {
        return malformed(
            "its header names critical extensions (crit), which this server does not implement",
        );
    }
    match header.get("typ") {
        None => {}
        Some(Value::String(typ)) if is_access_token_type(typ) => {}
        Some(typ) => {
            return malformed(&format!(
                "its type (typ) is {typ}, not an access token (at+jwt)"
            ));
        }
    }
    let signing_input = bearer.rsplit_once('.').map_or(bearer, |(input, _)| input);
    Ok(Jws {
        alg: alg.clone(),
        kid,
        signing_input,
        payload: decode(payload, "payload")?,
        signature: decode(signature, "signature")?,
    })
}

/// Whether a header's `typ` may be an access token's: `at+jwt` (RFC 9068), its media type, or
/// the generic `JWT` many authorization servers write. Attack stopped: another kind of JWT of the
/// same issuer (a logout token, a security event, a `DPoP` proof) presented as an access token.
fn is_access_token_type(typ: &str) -> bool {
    ["at+jwt", "application/at+jwt", "JWT", "application/jwt"]
        .iter()
        .any(|t| t.eq_ignore_ascii_case(typ))
}

/// What the claims must say.
struct ClaimRules<'a> {
    issuer: &'a str,
    audience: &'a str,
    leeway: Duration,
}

/// The claims that passed, as the grant needs them.
#[derive(Debug, PartialEq, Eq)]
struct Checked {
    subject: String,
    scopes: Vec<String>,
    expires: SystemTime,
}

/// Checks `iss`, `aud`, `exp`, `nbf`, the subject and the scopes' shape at `now` (the module's
/// checks 5 to 8, but the mapping), and refuses a token bound to its holder's key (`cnf`:
/// `DPoP` or mutual TLS), whose binding this server cannot check (attack stopped: a stolen
/// sender-constrained token used as a plain bearer token). Pure. A claim of the wrong type is a refusal, never a claim
/// left unchecked.
fn check_claims(
    claims: &Map<String, Value>,
    rules: &ClaimRules<'_>,
    now: SystemTime,
) -> Result<Checked, OAuthRefusal> {
    let malformed = |why: &str| OAuthRefusal::Malformed(why.to_owned());
    match claims.get("iss") {
        Some(Value::String(iss)) if iss == rules.issuer => {}
        found => {
            return Err(OAuthRefusal::Issuer {
                found: match found {
                    Some(Value::String(iss)) => iss.clone(),
                    Some(_) => "an issuer that is not a string".into(),
                    None => "no issuer".into(),
                },
                expected: rules.issuer.to_owned(),
            });
        }
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        None => Vec::new(),
        Some(Value::String(aud)) => vec![aud.as_str()],
        Some(Value::Array(auds)) => auds
            .iter()
            .map(|a| {
                a.as_str()
                    .ok_or_else(|| malformed("an audience (aud) is not a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(malformed("its audience (aud) is not a string or an array")),
    };
    if !audiences.contains(&rules.audience) {
        return Err(OAuthRefusal::Audience {
            found: or_none(&audiences.join(", ")),
            expected: rules.audience.to_owned(),
        });
    }
    let now_secs = now
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let leeway = rules.leeway.as_secs_f64();
    let exp = numeric_date(claims, "exp")?.ok_or_else(|| malformed("it has no expiry (exp)"))?;
    if now_secs >= exp + leeway {
        return Err(OAuthRefusal::Expired(when(exp)));
    }
    if let Some(nbf) = numeric_date(claims, "nbf")?
        && now_secs + leeway < nbf
    {
        return Err(OAuthRefusal::NotYetValid(when(nbf)));
    }
    if claims.contains_key("cnf") {
        return Err(malformed(
            "it is bound to a key of its holder (cnf), which this server cannot check: it accepts \
             bearer tokens only",
        ));
    }
    let subject = ["sub", "client_id"]
        .iter()
        .find_map(|k| {
            claims
                .get(*k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .ok_or_else(|| malformed("it names no subject (sub)"))?
        .to_owned();
    let mut scopes: Vec<String> = Vec::new();
    let mut add = |s: &str| {
        if !scopes.iter().any(|have| have == s) {
            scopes.push(s.to_owned());
        }
    };
    match claims.get("scope") {
        None => {}
        Some(Value::String(text)) => text.split_ascii_whitespace().for_each(&mut add),
        Some(_) => return Err(malformed("its scope is not a space-separated string")),
    }
    match claims.get("scp") {
        None => {}
        Some(Value::String(text)) => text.split_ascii_whitespace().for_each(&mut add),
        Some(Value::Array(items)) => {
            for item in items {
                add(item
                    .as_str()
                    .ok_or_else(|| malformed("a scope (scp) is not a string"))?);
            }
        }
        Some(_) => return Err(malformed("its scp is not an array of strings")),
    }
    Ok(Checked {
        subject,
        scopes,
        expires: UNIX_EPOCH
            .checked_add(
                Duration::try_from_secs_f64(exp).map_err(|_| malformed("its exp is not a time"))?,
            )
            .ok_or_else(|| malformed("its exp is not a time"))?,
    })
}

/// The `NumericDate` claim `name` (seconds since the epoch, finite, not negative), if present.
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<f64>, OAuthRefusal> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(secs) if secs.is_finite() && secs >= 0.0 => Ok(Some(secs)),
            _ => Err(OAuthRefusal::Malformed(format!("its {name} is not a time"))),
        },
        Some(_) => Err(OAuthRefusal::Malformed(format!(
            "its {name} is not a number of seconds"
        ))),
    }
}

/// A `NumericDate` in words (RFC 3339, to the second).
fn when(secs: f64) -> String {
    Duration::try_from_secs_f64(secs)
        .ok()
        .and_then(|d| UNIX_EPOCH.checked_add(d))
        .map_or_else(
            || format!("{secs} s after 1970"),
            spear_runtime::rfc3339_seconds,
        )
}

/// The union of the grants of the scopes of `scopes` that `map` maps, with those scopes (in
/// `scopes`' order); `None` when it maps none. Pure. See [`OAuthGrant`] for the rule on what a
/// scope leaves to the server.
fn union_of(
    scopes: &[String],
    map: &BTreeMap<String, ScopeGrant>,
) -> Option<(Vec<String>, ScopeGrant)> {
    let mapped: Vec<(&String, &ScopeGrant)> = scopes
        .iter()
        .filter_map(|s| map.get(s).map(|g| (s, g)))
        .collect();
    if mapped.is_empty() {
        return None;
    }
    let mut union = ScopeGrant {
        no_network: true,
        ..ScopeGrant::default()
    };
    for (_, grant) in &mapped {
        for w in &grant.workspaces {
            if !union.workspaces.contains(w) {
                union.workspaces.push(w.clone());
            }
        }
        for t in &grant.templates {
            if !union.templates.contains(t) {
                union.templates.push(t.clone());
            }
        }
        union.mode = union.mode.max(grant.mode);
        union.no_network &= grant.no_network;
        union.sessions = union.sessions.max(grant.sessions);
    }
    let names = mapped.into_iter().map(|(s, _)| s.clone()).collect();
    Some((names, union))
}

/// A verification key of the key set.
#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyMaterial {
    /// RSA: the modulus and exponent, big-endian, without leading zeros.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// P-256: the uncompressed point.
    P256(Vec<u8>),
    /// P-384: the uncompressed point.
    P384(Vec<u8>),
    /// Ed25519: the public key.
    Ed25519(Vec<u8>),
}

/// One key of the key set, with what the set says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Jwk {
    kid: Option<String>,
    /// The `alg` the set pins the key to, if it does.
    alg: Option<JwsAlgorithm>,
    material: KeyMaterial,
}

/// The keys of a key set that spear can verify with.
#[derive(Debug, Default, PartialEq, Eq)]
struct KeySet {
    keys: Vec<Jwk>,
}

/// Whether `alg` is the algorithm of a key like `key`: RSA keys for RS* and PS*, each curve for
/// its own ECDSA, Ed25519 for `EdDSA`. Attack stopped: a token verified with a key of another
/// kind than its algorithm's.
fn fits(alg: JwsAlgorithm, key: &KeyMaterial) -> bool {
    use JwsAlgorithm as A;
    match key {
        KeyMaterial::Rsa { .. } => matches!(
            alg,
            A::Rs256 | A::Rs384 | A::Rs512 | A::Ps256 | A::Ps384 | A::Ps512
        ),
        KeyMaterial::P256(_) => alg == A::Es256,
        KeyMaterial::P384(_) => alg == A::Es384,
        KeyMaterial::Ed25519(_) => alg == A::EdDsa,
    }
}

/// The key a token with `kid` and `alg` is verified with: the key of that `kid` (or the only
/// key, when the token names none) of a type that fits `alg` and, if the set pins its `alg`, of
/// that `alg`. Pure.
fn select(set: &KeySet, kid: Option<&str>, alg: JwsAlgorithm) -> Result<KeyMaterial, OAuthRefusal> {
    let named: Vec<&Jwk> = match kid {
        Some(kid) => set
            .keys
            .iter()
            .filter(|k| k.kid.as_deref() == Some(kid))
            .collect(),
        None if set.keys.len() == 1 => set.keys.iter().collect(),
        None => {
            return Err(OAuthRefusal::UnknownKey(format!(
                "the token names no key (kid) and the authorization server's key set holds {}",
                set.keys.len()
            )));
        }
    };
    if named.is_empty() {
        return Err(OAuthRefusal::UnknownKey(format!(
            "the token names a key ({}) that the authorization server's key set does not hold",
            kid.unwrap_or_default()
        )));
    }
    named
        .into_iter()
        .find(|k| fits(alg, &k.material) && k.alg.is_none_or(|pinned| pinned == alg))
        .map(|k| k.material.clone())
        .ok_or_else(|| OAuthRefusal::KeyMismatch {
            alg: alg.name().to_owned(),
            kid: kid.unwrap_or("(none)").to_owned(),
        })
}

/// Whether `signature` is `key`'s signature of `message` under `alg` (ring). Pure.
fn signature_holds(alg: JwsAlgorithm, key: &KeyMaterial, message: &[u8], signature: &[u8]) -> bool {
    use JwsAlgorithm as A;
    use ring::signature as s;
    let rsa = |params: &'static s::RsaParameters| match key {
        KeyMaterial::Rsa { n, e } => s::RsaPublicKeyComponents { n, e }
            .verify(params, message, signature)
            .is_ok(),
        _ => false,
    };
    let point = |algorithm: &'static dyn s::VerificationAlgorithm, key: &[u8]| {
        s::UnparsedPublicKey::new(algorithm, key)
            .verify(message, signature)
            .is_ok()
    };
    match (alg, key) {
        (A::Rs256, _) => rsa(&s::RSA_PKCS1_2048_8192_SHA256),
        (A::Rs384, _) => rsa(&s::RSA_PKCS1_2048_8192_SHA384),
        (A::Rs512, _) => rsa(&s::RSA_PKCS1_2048_8192_SHA512),
        (A::Ps256, _) => rsa(&s::RSA_PSS_2048_8192_SHA256),
        (A::Ps384, _) => rsa(&s::RSA_PSS_2048_8192_SHA384),
        (A::Ps512, _) => rsa(&s::RSA_PSS_2048_8192_SHA512),
        (A::Es256, KeyMaterial::P256(pt)) => point(&s::ECDSA_P256_SHA256_FIXED, pt),
        (A::Es384, KeyMaterial::P384(pt)) => point(&s::ECDSA_P384_SHA384_FIXED, pt),
        (A::EdDsa, KeyMaterial::Ed25519(pk)) => point(&s::ED25519, pk),
        _ => false,
    }
}

/// The keys of a JWKS document that can verify signatures: `kty` RSA, EC (P-256, P-384) or OKP
/// (Ed25519), not marked for another `use` than `sig` nor pinned to an algorithm spear does not
/// verify. Any other key (a symmetric `oct` key included: attack stopped, a shared secret
/// published beside the public keys) is left out; a set left with none is an error. Pure.
fn parse_jwks(bytes: &[u8]) -> Result<KeySet, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("it is not JSON: {e}"))?;
    let Some(Value::Array(entries)) = doc.get("keys") else {
        return Err("it is not a JWKS: no \"keys\" array".into());
    };
    let mut set = KeySet::default();
    let mut left_out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        match parse_jwk(entry) {
            Ok(jwk) => set.keys.push(jwk),
            Err(why) => left_out.push(format!("key {i}: {why}")),
        }
    }
    if set.keys.is_empty() {
        return Err(format!(
            "it holds no key spear can verify signatures with (RSA, EC P-256/P-384, Ed25519){}",
            if left_out.is_empty() {
                String::new()
            } else {
                format!(" ({})", left_out.join("; "))
            }
        ));
    }
    Ok(set)
}

/// One JWK, or why it is left out.
fn parse_jwk(entry: &Value) -> Result<Jwk, String> {
    let field = |name: &str| entry.get(name).and_then(Value::as_str);
    let bytes = |name: &str| {
        field(name)
            .ok_or_else(|| format!("no {name}"))
            .and_then(|v| {
                URL_SAFE_NO_PAD
                    .decode(v)
                    .map_err(|_| format!("{name} is not base64url"))
            })
    };
    if let Some(usage) = field("use")
        && usage != "sig"
    {
        return Err(format!("its use is {usage:?}, not sig"));
    }
    let alg = match field("alg") {
        None => None,
        Some(name) => Some(
            JwsAlgorithm::from_name(name)
                .ok_or_else(|| format!("its alg {name:?} is not a signature spear verifies"))?,
        ),
    };
    let sized = |name: &str, len: usize| {
        bytes(name).and_then(|b| {
            if b.len() == len {
                Ok(b)
            } else {
                Err(format!("{name} is not {len} bytes"))
            }
        })
    };
    let material = match (field("kty"), field("crv")) {
        (Some("RSA"), _) => KeyMaterial::Rsa {
            n: without_leading_zeros(bytes("n")?),
            e: without_leading_zeros(bytes("e")?),
        },
        (Some("EC"), Some("P-256")) => {
            KeyMaterial::P256([vec![4], sized("x", 32)?, sized("y", 32)?].concat())
        }
        (Some("EC"), Some("P-384")) => {
            KeyMaterial::P384([vec![4], sized("x", 48)?, sized("y", 48)?].concat())
        }
        (Some("OKP"), Some("Ed25519")) => KeyMaterial::Ed25519(sized("x", 32)?),
        (kty, crv) => {
            return Err(format!(
                "kty {} crv {} is not a key spear verifies with",
                kty.unwrap_or("(none)"),
                crv.unwrap_or("(none)")
            ));
        }
    };
    if let Some(alg) = alg
        && !fits(alg, &material)
    {
        return Err(format!("its alg {} does not fit its key type", alg.name()));
    }
    Ok(Jwk {
        kid: field("kid").map(str::to_owned),
        alg,
        material,
    })
}

fn without_leading_zeros(mut bytes: Vec<u8>) -> Vec<u8> {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    bytes.drain(..zeros);
    bytes
}

/// Reads and parses the key set.
fn load(source: &Source) -> Result<KeySet, String> {
    let bytes = match source {
        Source::File(path) => read_file(path)?,
        Source::Url { url, tls } => fetch(url, tls)?,
    };
    parse_jwks(&bytes)
}

/// The key set file, at most [`MAX_JWKS_BYTES`]; refused when others may write it (attack
/// stopped: another user of the host planting a key of their own).
fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::PermissionsExt as _;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.permissions().mode() & 0o002 != 0 {
        return Err("any user may write it: chmod o-w it".into());
    }
    let mut bytes = Vec::new();
    file.take(MAX_JWKS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_JWKS_BYTES {
        return Err(format!("it is larger than {MAX_JWKS_BYTES} bytes"));
    }
    Ok(bytes)
}

/// TLS for a key set URL: rustls with ring, trusting the system's store (or `SSL_CERT_FILE` /
/// `SSL_CERT_DIR`), as spear's web fetches do.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    let loaded = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(loaded.certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(tls))
}

/// The body of `url` (status 200, at most [`MAX_JWKS_BYTES`], within [`JWKS_TIMEOUT`], no
/// redirects), fetched on a thread of its own so that it can be called from any context, an
/// async runtime's worker included.
fn fetch(url: &reqwest::Url, tls: &Arc<rustls::ClientConfig>) -> Result<Vec<u8>, String> {
    let (url, tls) = (url.clone(), Arc::clone(tls));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("spear-jwks".into())
        .spawn(move || {
            let result = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))
                .and_then(|rt| rt.block_on(fetch_async(url, &tls)));
            // The receiver gave up waiting: nothing to tell.
            let _ = tx.send(result);
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    rx.recv_timeout(JWKS_TIMEOUT + Duration::from_secs(2))
        .map_err(|_| format!("no answer within {} s", JWKS_TIMEOUT.as_secs()))?
}

async fn fetch_async(url: reqwest::Url, tls: &rustls::ClientConfig) -> Result<Vec<u8>, String> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .http1_only()
        .connect_timeout(JWKS_TIMEOUT)
        .timeout(JWKS_TIMEOUT)
        .tls_backend_preconfigured(tls.clone());
    if matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")) {
        builder = builder.no_proxy();
    }
    let client = builder
        .build()
        .map_err(|e| format!("the HTTP client: {e}"))?;
    let mut response = client
        .get(url)
        .header(
            reqwest::header::ACCEPT,
            "application/jwk-set+json, application/json",
        )
        .send()
        .await
        .map_err(|e| format!("the request failed: {e}"))?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(format!("it answered {}", response.status()));
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_JWKS_BYTES)
    {
        return Err(format!("it is larger than {MAX_JWKS_BYTES} bytes"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading the answer failed: {e}"))?
    {
        body.extend_from_slice(&chunk);
        if body.len() as u64 > MAX_JWKS_BYTES {
            return Err(format!("it is larger than {MAX_JWKS_BYTES} bytes"));
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::net::TcpListener;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use ring::rand::SystemRandom;
    use ring::signature::{self as s, KeyPair as _};
    use serde_json::json;
    use spear_policy::serve::OAuthConfig;

    use super::*;

    /// Whether a refusal is the one a case expects.
    type Is = fn(&OAuthRefusal) -> bool;

    const ISS: &str = "https://issuer.test";
    const AUD: &str = "https://node.test/mcp";
    /// The tests' now: 2027-01-15.
    const NOW: u64 = 1_800_000_000;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(NOW)
    }

    /// A signing key of the tests' issuer.
    enum Signer {
        Rsa(s::RsaKeyPair),
        P256(s::EcdsaKeyPair),
    }

    /// An RSA key pair made by `openssl genpkey` (ring verifies RSA but does not make keys).
    fn rsa_key() -> s::RsaKeyPair {
        let out = std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-outform",
                "DER",
            ])
            .output()
            .expect("openssl genpkey runs (the tests make their RSA keys with it)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // `-outform DER` writes the PKCS#1 RSAPrivateKey.
        s::RsaKeyPair::from_der(&out.stdout).unwrap()
    }

    fn p256_key() -> s::EcdsaKeyPair {
        let rng = SystemRandom::new();
        let alg = &s::ECDSA_P256_SHA256_FIXED_SIGNING;
        let der = s::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        s::EcdsaKeyPair::from_pkcs8(alg, der.as_ref(), &rng).unwrap()
    }

    struct Keys {
        /// The issuer's RSA key, kid "rsa-1".
        rsa: Signer,
        /// Another RSA key, of no one the server trusts (and the rotated-in key, kid "rsa-2").
        other: Signer,
        /// The issuer's P-256 key, kid "ec-1".
        ec: Signer,
    }

    fn keys() -> &'static Keys {
        static KEYS: OnceLock<Keys> = OnceLock::new();
        KEYS.get_or_init(|| Keys {
            rsa: Signer::Rsa(rsa_key()),
            other: Signer::Rsa(rsa_key()),
            ec: Signer::P256(p256_key()),
        })
    }

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The JWK of `signer`'s public key, as `kid`.
    fn jwk(signer: &Signer, kid: &str) -> Value {
        match signer {
            Signer::Rsa(k) => {
                let public = s::RsaPublicKeyComponents::<Vec<u8>>::from(k.public());
                json!({
                    "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                    "n": b64(&public.n), "e": b64(&public.e),
                })
            }
            Signer::P256(k) => {
                let point = k.public_key().as_ref();
                json!({
                    "kty": "EC", "kid": kid, "crv": "P-256",
                    "x": b64(&point[1..33]), "y": b64(&point[33..65]),
                })
            }
        }
    }

    fn jwks(keys: &[Value]) -> Vec<u8> {
        serde_json::to_vec(&json!({ "keys": keys })).unwrap()
    }

    /// The issuer's key set: its RSA and P-256 keys.
    fn issuer_jwks() -> Vec<u8> {
        jwks(&[jwk(&keys().rsa, "rsa-1"), jwk(&keys().ec, "ec-1")])
    }

    /// `header.claims` signed by `signer` with `alg` (RS256/RS384 for RSA, ES256 for P-256).
    fn sign(signer: &Signer, alg: &str, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64(&serde_json::to_vec(header).unwrap()),
            b64(&serde_json::to_vec(claims).unwrap())
        );
        let rng = SystemRandom::new();
        let signature = match signer {
            Signer::Rsa(k) => {
                let padding: &dyn s::RsaEncoding = match alg {
                    "RS384" => &s::RSA_PKCS1_SHA384,
                    "PS256" => &s::RSA_PSS_SHA256,
                    _ => &s::RSA_PKCS1_SHA256,
                };
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(padding, &rng, input.as_bytes(), &mut sig).unwrap();
                sig
            }
            Signer::P256(k) => k.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec(),
        };
        format!("{input}.{}", b64(&signature))
    }

    fn claims() -> Value {
        json!({
            "iss": ISS, "aud": AUD, "sub": "alice", "client_id": "agent-7",
            "iat": NOW - 60, "exp": NOW + 600, "scope": "openid spear:run",
        })
    }

    fn rs256(claims: &Value) -> String {
        sign(
            &keys().rsa,
            "RS256",
            &json!({"alg": "RS256", "kid": "rsa-1", "typ": "at+jwt"}),
            claims,
        )
    }

    fn with(mut v: Value, key: &str, value: Value) -> Value {
        v[key] = value;
        v
    }

    fn without(mut v: Value, key: &str) -> Value {
        v.as_object_mut().unwrap().remove(key);
        v
    }

    fn config_text(jwks_line: &str) -> String {
        format!(
            "[serve.oauth]\nissuer = \"{ISS}\"\naudience = \"{AUD}\"\n{jwks_line}\n\
             [serve.oauth.scopes]\n\
             \"spear:read\" = {{ mode = \"safe\" }}\n\
             \"spear:run\" = {{ mode = \"auto\", workspaces = [\"/srv/repo\"], no_network = true, sessions = 4 }}\n\
             \"spear:rollout\" = {{ mode = \"auto\", templates = [\"/srv/templates/repo\"] }}\n"
        )
    }

    fn config(jwks_line: &str) -> OAuthConfig {
        spear_policy::OperatorConfig::parse(&config_text(jwks_line), Path::new("config.toml"))
            .unwrap()
            .serve
            .oauth
            .unwrap()
    }

    /// A verifier reading the issuer's key set from a file.
    fn file_verifier(dir: &tempfile::TempDir, set: &[u8]) -> OAuthVerifier {
        let path = dir.path().join("jwks.json");
        std::fs::write(&path, set).unwrap();
        OAuthVerifier::new(&config(&format!("jwks_file = \"{}\"", path.display()))).unwrap()
    }

    #[test]
    fn oauth_a_valid_token_grants_its_scopes() {
        let dir = tempfile::tempdir().unwrap();
        let v = file_verifier(&dir, &issuer_jwks());
        let grant = v.verify(&rs256(&claims()), now()).unwrap();
        assert_eq!(
            grant,
            OAuthGrant {
                subject: "alice".into(),
                scopes: vec!["spear:run".into()],
                workspaces: vec![PathBuf::from("/srv/repo")],
                templates: vec![],
                mode: Some(ExecutionMode::Auto),
                no_network: true,
                sessions: Some(4),
                expires: UNIX_EPOCH + Duration::from_secs(NOW + 600),
            }
        );
        // ES256 with the P-256 key; `scp` as an array; no `sub`: the client's id.
        let es = sign(
            &keys().ec,
            "ES256",
            &json!({"alg": "ES256", "kid": "ec-1"}),
            &without(
                with(
                    without(claims(), "scope"),
                    "scp",
                    json!(["spear:read", "spear:rollout", "email"]),
                ),
                "sub",
            ),
        );
        let grant = v.verify(&es, now()).unwrap();
        assert_eq!(grant.subject, "agent-7");
        assert_eq!(grant.scopes, vec!["spear:read", "spear:rollout"]);
        assert_eq!(grant.mode, Some(ExecutionMode::Auto));
        assert_eq!(grant.workspaces, Vec::<PathBuf>::new());
        assert_eq!(grant.templates, vec![PathBuf::from("/srv/templates/repo")]);
        assert!(!grant.no_network);
        assert_eq!(grant.sessions, None);
    }

    /// Every refusal, each with its positive control: the same token with that one thing right
    /// is accepted.
    #[test]
    #[allow(clippy::too_many_lines)]
    fn oauth_refusals_and_their_positive_controls() {
        let dir = tempfile::tempdir().unwrap();
        let v = file_verifier(&dir, &issuer_jwks());
        let k = keys();
        let rs_header = json!({"alg": "RS256", "kid": "rsa-1"});
        let good = rs256(&claims());
        let (header_part, payload_part, _) = {
            let p: Vec<&str> = good.split('.').collect();
            (p[0].to_owned(), p[1].to_owned(), p[2].to_owned())
        };
        // HS256 with the issuer's public key set (what anyone can download) as the secret.
        let hs_input = format!(
            "{}.{}",
            b64(br#"{"alg":"HS256","kid":"rsa-1"}"#),
            payload_part
        );
        let hs_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &issuer_jwks());
        let hs256 = format!(
            "{hs_input}.{}",
            b64(ring::hmac::sign(&hs_key, hs_input.as_bytes()).as_ref())
        );
        let none = format!("{}.{payload_part}.", b64(br#"{"alg":"none"}"#));
        // Claims that are not an object, signed properly.
        let array_claims = {
            let input = format!("{header_part}.{}", b64(b"[\"iss\"]"));
            let Signer::Rsa(kp) = &k.rsa else {
                unreachable!()
            };
            let mut sig = vec![0; kp.public().modulus_len()];
            kp.sign(
                &s::RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                input.as_bytes(),
                &mut sig,
            )
            .unwrap();
            format!("{input}.{}", b64(&sig))
        };
        #[rustfmt::skip]
        let cases: &[(&str, String, String, Is)] = &[
            ("wrong audience",
             rs256(&with(claims(), "aud", json!("https://other.test/mcp"))),
             rs256(&with(claims(), "aud", json!(["https://other.test/mcp", AUD]))),
             |r| matches!(r, OAuthRefusal::Audience { .. })),
            ("audience array without ours",
             rs256(&with(claims(), "aud", json!(["https://other.test/mcp"]))),
             rs256(&with(claims(), "aud", json!([AUD]))),
             |r| matches!(r, OAuthRefusal::Audience { .. })),
            ("no audience",
             rs256(&without(claims(), "aud")), good.clone(),
             |r| matches!(r, OAuthRefusal::Audience { .. })),
            ("wrong issuer",
             rs256(&with(claims(), "iss", json!("https://issuer.test/"))), good.clone(),
             |r| matches!(r, OAuthRefusal::Issuer { .. })),
            ("signed by another key",
             sign(&k.other, "RS256", &rs_header, &claims()), good.clone(),
             |r| *r == OAuthRefusal::BadSignature),
            ("claims changed after signing",
             format!("{header_part}.{}.{}",
                     b64(&serde_json::to_vec(&with(claims(), "scope", json!("spear:read spear:run"))).unwrap()),
                     good.rsplit('.').next().unwrap()),
             good.clone(),
             |r| *r == OAuthRefusal::BadSignature),
            ("expired (beyond the leeway)",
             rs256(&with(claims(), "exp", json!(NOW - 31))),
             rs256(&with(claims(), "exp", json!(NOW - 29))),
             |r| matches!(r, OAuthRefusal::Expired(_))),
            ("no expiry",
             rs256(&without(claims(), "exp")), good.clone(),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("exp"))),
            ("expiry as a string",
             rs256(&with(claims(), "exp", json!((NOW + 600).to_string()))), good.clone(),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("exp"))),
            ("not yet valid (beyond the leeway)",
             rs256(&with(claims(), "nbf", json!(NOW + 31))),
             rs256(&with(claims(), "nbf", json!(NOW + 29))),
             |r| matches!(r, OAuthRefusal::NotYetValid(_))),
            ("nbf as a string (CVE-2026-25537's shape)",
             rs256(&with(claims(), "nbf", json!("99999999999"))),
             rs256(&with(claims(), "nbf", json!(NOW - 1))),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("nbf"))),
            ("alg none",
             none, good.clone(),
             |r| matches!(r, OAuthRefusal::AlgorithmNotAllowed { alg, .. } if alg == "none")),
            ("HS256 with the public key set as the secret",
             hs256, good.clone(),
             |r| matches!(r, OAuthRefusal::AlgorithmNotAllowed { alg, .. } if alg == "HS256")),
            ("an algorithm not configured (RS384)",
             sign(&k.rsa, "RS384", &json!({"alg": "RS384", "kid": "rsa-1"}), &claims()), good.clone(),
             |r| matches!(r, OAuthRefusal::AlgorithmNotAllowed { alg, .. } if alg == "RS384")),
            ("ES256 naming the RSA key",
             sign(&k.ec, "ES256", &json!({"alg": "ES256", "kid": "rsa-1"}), &claims()),
             sign(&k.ec, "ES256", &json!({"alg": "ES256", "kid": "ec-1"}), &claims()),
             |r| matches!(r, OAuthRefusal::KeyMismatch { .. })),
            ("an unknown kid",
             sign(&k.rsa, "RS256", &json!({"alg": "RS256", "kid": "rsa-9"}), &claims()), good.clone(),
             |r| matches!(r, OAuthRefusal::UnknownKey(w) if w.contains("rsa-9"))),
            ("no kid, two keys in the set",
             sign(&k.rsa, "RS256", &json!({"alg": "RS256"}), &claims()), good.clone(),
             |r| matches!(r, OAuthRefusal::UnknownKey(w) if w.contains("holds 2"))),
            ("a key in the header itself",
             sign(&k.other, "RS256", &json!({"alg": "RS256", "kid": "rsa-1", "jwk": jwk(&k.other, "rsa-1")}), &claims()),
             good.clone(),
             |r| *r == OAuthRefusal::BadSignature),
            ("no mapped scope",
             rs256(&with(claims(), "scope", json!("openid profile"))),
             rs256(&with(claims(), "scope", json!("openid profile spear:read"))),
             |r| matches!(r, OAuthRefusal::NoScope { found, .. } if found == "openid profile")),
            ("no scope at all",
             rs256(&without(claims(), "scope")),
             rs256(&with(without(claims(), "scope"), "scp", json!("spear:read"))),
             |r| matches!(r, OAuthRefusal::NoScope { found, .. } if found == "none")),
            ("no subject",
             rs256(&without(without(claims(), "sub"), "client_id")),
             rs256(&without(claims(), "sub")),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("subject"))),
            ("another kind of JWT (typ)",
             sign(&k.rsa, "RS256", &json!({"alg": "RS256", "kid": "rsa-1", "typ": "logout+jwt"}), &claims()),
             sign(&k.rsa, "RS256", &json!({"alg": "RS256", "kid": "rsa-1", "typ": "JWT"}), &claims()),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("logout+jwt"))),
            ("bound to its holder's key (cnf)",
             rs256(&with(claims(), "cnf", json!({"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}))),
             good.clone(),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("cnf"))),
            ("critical extensions",
             sign(&k.rsa, "RS256", &json!({"alg": "RS256", "kid": "rsa-1", "crit": ["exp"], "exp": 1}), &claims()),
             good.clone(),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("crit"))),
            ("malformed: not a JWT",
             "spear_notajwt".into(), good.clone(),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("three parts"))),
            ("malformed: five parts (a JWE)",
             format!("{good}.a.b"), good.clone(),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("has 5"))),
            ("malformed: padded base64",
             format!("{header_part}=.{payload_part}.x"), good.clone(),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("base64url"))),
            ("malformed: header not JSON",
             format!("{}.{payload_part}.AAAA", b64(b"alg=RS256")), good.clone(),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("header"))),
            ("malformed: claims not an object",
             array_claims, good.clone(),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("claims"))),
            ("malformed: too long",
             rs256(&with(claims(), "pad", json!("x".repeat(MAX_TOKEN_BYTES)))),
             rs256(&with(claims(), "pad", json!("x".repeat(1000)))),
             |r| matches!(r, OAuthRefusal::Malformed(w) if w.contains("longer"))),
        ];
        for (what, bad, right, is) in cases {
            match v.verify(bad, now()) {
                Ok(g) => panic!("{what}: accepted: {g:?}"),
                Err(refusal) => {
                    assert!(is(&refusal), "{what}: {refusal:?}");
                    assert!(
                        !refusal.is_unavailable(),
                        "{what}: the client's fault, a 401"
                    );
                    let words = refusal.to_string();
                    assert!(
                        !words.contains(bad.as_str()) || bad.len() < 20,
                        "{what}: echoes the token"
                    );
                }
            }
            if let Err(e) = v.verify(right, now()) {
                panic!("{what}: the positive control is refused: {e}");
            }
        }
        // No kid with a one-key set: the only key.
        let one = tempfile::tempdir().unwrap();
        let single = file_verifier(&one, &jwks(&[jwk(&k.rsa, "rsa-1")]));
        let no_kid = sign(&k.rsa, "RS256", &json!({"alg": "RS256"}), &claims());
        assert_eq!(single.verify(&no_kid, now()).unwrap().subject, "alice");
    }

    #[test]
    fn oauth_refusals_say_why_without_the_token() {
        let token = rs256(&with(claims(), "aud", json!("https://other.test/mcp")));
        let dir = tempfile::tempdir().unwrap();
        let refusal = file_verifier(&dir, &issuer_jwks())
            .verify(&token, now())
            .unwrap_err();
        let words = refusal.to_string();
        assert!(
            words.contains(AUD) && words.contains("resource="),
            "{words}"
        );
        assert!(!words.contains(token.split('.').nth(2).unwrap()), "{words}");
        assert_eq!(Denied::from(refusal), Denied::Unauthorized(words), "a 401");
        let unavailable = OAuthRefusal::JwksUnavailable("down".into());
        assert!(matches!(Denied::from(unavailable), Denied::Unavailable(w) if w.contains("down")));
    }

    /// The union of the scopes' grants (pure). A dimension left to the server stays so only
    /// when every mapped scope leaves it.
    #[test]
    fn oauth_grant_union_table() {
        let grant = |ws: &[&str], t: &[&str], mode, no_network, sessions| ScopeGrant {
            workspaces: ws.iter().map(PathBuf::from).collect(),
            templates: t.iter().map(PathBuf::from).collect(),
            mode,
            no_network,
            sessions,
        };
        let map: BTreeMap<String, ScopeGrant> = [
            (
                "read",
                grant(&[], &[], Some(ExecutionMode::Safe), false, None),
            ),
            (
                "run",
                grant(&["/a"], &[], Some(ExecutionMode::Auto), true, Some(4)),
            ),
            (
                "ask",
                grant(
                    &["/b", "/a"],
                    &["/t"],
                    Some(ExecutionMode::Ask),
                    true,
                    Some(2),
                ),
            ),
            ("open", grant(&[], &[], None, true, None)),
        ]
        .into_iter()
        .map(|(k, g)| (k.to_owned(), g))
        .collect();
        let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        #[rustfmt::skip]
        let cases: &[(&[&str], &[&str], Option<ScopeGrant>)] = &[
            (&[], &[], None),
            (&["openid", "email"], &[], None),
            (&["read"], &["read"], Some(map["read"].clone())),
            (&["openid", "run"], &["run"], Some(map["run"].clone())),
            (&["run", "ask"], &["run", "ask"],
             Some(grant(&["/a", "/b"], &["/t"], Some(ExecutionMode::Auto), true, Some(4)))),
            (&["ask", "run"], &["ask", "run"],
             Some(grant(&["/b", "/a"], &["/t"], Some(ExecutionMode::Auto), true, Some(4)))),
            // `read` names no workspace nor sessions: it does not lift run's bounds; its network
            // does count (not every scope takes it away).
            (&["read", "run"], &["read", "run"],
             Some(grant(&["/a"], &[], Some(ExecutionMode::Auto), false, Some(4)))),
            // Every scope leaves the mode to the server: so does the union.
            (&["open"], &["open"], Some(grant(&[], &[], None, true, None))),
            (&["open", "read"], &["open", "read"],
             Some(grant(&[], &[], Some(ExecutionMode::Safe), false, None))),
        ];
        for (scopes, names, want) in cases {
            let got = union_of(&s(scopes), &map);
            let want = want.clone().map(|g| (s(names), g));
            assert_eq!(got, want, "{scopes:?}");
        }
    }

    /// The key set's keys (pure): what can verify is kept, anything else left out.
    #[test]
    fn oauth_jwks_parse_table() {
        let rsa = jwk(&keys().rsa, "r");
        let ec = jwk(&keys().ec, "e");
        let cases: &[(Value, Result<usize, &str>)] = &[
            (json!({"keys": [rsa, ec]}), Ok(2)),
            (
                json!({"keys": [rsa, {"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}),
                Ok(1),
            ),
            (
                json!({"keys": [with(rsa.clone(), "use", json!("enc"))]}),
                Err("not sig"),
            ),
            (
                json!({"keys": [with(rsa.clone(), "alg", json!("HS256"))]}),
                Err("HS256"),
            ),
            (
                json!({"keys": [with(rsa.clone(), "alg", json!("ES256"))]}),
                Err("does not fit"),
            ),
            (
                json!({"keys": [with(ec.clone(), "x", json!("AAAA"))]}),
                Err("not 32 bytes"),
            ),
            (
                json!({"keys": [with(ec.clone(), "crv", json!("secp256k1"))]}),
                Err("secp256k1"),
            ),
            (json!({"keys": [without(rsa.clone(), "n")]}), Err("no n")),
            (
                json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}),
                Err("oct"),
            ),
            (json!({"keys": []}), Err("no key")),
            (json!({"key": [rsa]}), Err("no \"keys\" array")),
            (json!([1]), Err("no \"keys\" array")),
        ];
        for (doc, want) in cases {
            let got = parse_jwks(&serde_json::to_vec(doc).unwrap());
            match (got, want) {
                (Ok(set), Ok(n)) => assert_eq!(set.keys.len(), *n, "{doc}"),
                (Err(e), Err(says)) => assert!(e.contains(says), "{doc}: {e}"),
                (got, want) => panic!("{doc}: {got:?}, wanted {want:?}"),
            }
        }
        assert!(parse_jwks(b"not json").unwrap_err().contains("not JSON"));
    }

    /// A key set file: read at start (a server without one does not start), read again for an
    /// unknown kid at most once a period.
    #[test]
    fn oauth_jwks_file_rotation_and_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jwks.json");
        let line = format!("jwks_file = \"{}\"", path.display());
        let e = OAuthVerifier::new(&config(&line)).unwrap_err().to_string();
        assert!(
            e.contains("cannot be loaded") && e.contains("jwks.json"),
            "{e}"
        );
        std::fs::write(&path, jwks(&[json!({"kty": "oct", "k": "c2VjcmV0"})])).unwrap();
        let e = OAuthVerifier::new(&config(&line)).unwrap_err().to_string();
        assert!(e.contains("no key spear can verify"), "{e}");
        std::fs::write(
            &path,
            vec![b' '; usize::try_from(MAX_JWKS_BYTES).unwrap() + 1],
        )
        .unwrap();
        let e = OAuthVerifier::new(&config(&line)).unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
        std::fs::write(&path, issuer_jwks()).unwrap();
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
            let e = OAuthVerifier::new(&config(&line)).unwrap_err().to_string();
            assert!(e.contains("any user may write it"), "{e}");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let mut v = OAuthVerifier::new(&config(&line)).unwrap();
        // The issuer rotates in a new key: within the period it is not looked for...
        std::fs::write(&path, jwks(&[jwk(&keys().other, "rsa-2")])).unwrap();
        let rotated = sign(
            &keys().other,
            "RS256",
            &json!({"alg": "RS256", "kid": "rsa-2"}),
            &claims(),
        );
        assert!(matches!(
            v.verify(&rotated, now()),
            Err(OAuthRefusal::UnknownKey(_))
        ));
        // ...after it, it is.
        v.refetch_every = Duration::ZERO;
        assert_eq!(v.verify(&rotated, now()).unwrap().subject, "alice");
        // The old key went with the old set.
        assert!(matches!(
            v.verify(&rs256(&claims()), now()),
            Err(OAuthRefusal::UnknownKey(_))
        ));
        // The file gone: an unknown kid is the operator's problem (503); a known one still works.
        std::fs::remove_file(&path).unwrap();
        let unknown = sign(
            &keys().rsa,
            "RS256",
            &json!({"alg": "RS256", "kid": "rsa-3"}),
            &claims(),
        );
        let refusal = v.verify(&unknown, now()).unwrap_err();
        assert!(refusal.is_unavailable(), "{refusal:?}");
        assert_eq!(v.verify(&rotated, now()).unwrap().subject, "alice");
    }

    /// A key set served over HTTP on 127.0.0.1, counting its requests.
    struct JwksServer {
        url: String,
        answer: Arc<Mutex<(u16, Vec<u8>)>>,
        hits: Arc<AtomicUsize>,
    }

    fn serve_jwks(body: Vec<u8>) -> JwksServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://{}/.well-known/jwks.json",
            listener.local_addr().unwrap()
        );
        let answer = Arc::new(Mutex::new((200, body)));
        let hits = Arc::new(AtomicUsize::new(0));
        let (a, h) = (Arc::clone(&answer), Arc::clone(&hits));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                h.fetch_add(1, Ordering::SeqCst);
                let (status, body) = a.lock().unwrap().clone();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(&body);
            }
        });
        JwksServer { url, answer, hits }
    }

    #[test]
    fn oauth_jwks_url_fetch_rotation_and_outage() {
        let server = serve_jwks(issuer_jwks());
        let line = format!("jwks_url = \"{}\"", server.url);
        let mut v = OAuthVerifier::new(&config(&line)).unwrap();
        assert_eq!(server.hits.load(Ordering::SeqCst), 1, "fetched at start");
        assert_eq!(v.verify(&rs256(&claims()), now()).unwrap().subject, "alice");
        assert_eq!(
            server.hits.load(Ordering::SeqCst),
            1,
            "a known kid fetches nothing"
        );

        // Rotation: the issuer serves a new key; a token naming it makes the verifier refetch
        // once the period is over, and no sooner.
        server.answer.lock().unwrap().1 =
            jwks(&[jwk(&keys().other, "rsa-2"), jwk(&keys().ec, "ec-1")]);
        let rotated = sign(
            &keys().other,
            "RS256",
            &json!({"alg": "RS256", "kid": "rsa-2"}),
            &claims(),
        );
        assert!(matches!(
            v.verify(&rotated, now()),
            Err(OAuthRefusal::UnknownKey(_))
        ));
        assert_eq!(
            server.hits.load(Ordering::SeqCst),
            1,
            "not within the period"
        );
        v.refetch_every = Duration::ZERO;
        assert_eq!(v.verify(&rotated, now()).unwrap().subject, "alice");
        assert_eq!(
            server.hits.load(Ordering::SeqCst),
            2,
            "refetched for the unknown kid"
        );
        assert_eq!(v.verify(&rotated, now()).unwrap().subject, "alice");
        assert_eq!(server.hits.load(Ordering::SeqCst), 2, "and then known");

        // An outage: an unknown kid is a 503, not the client's fault; known keys keep working;
        // within the period the failure is remembered without asking again.
        server.answer.lock().unwrap().0 = 500;
        let unknown = sign(
            &keys().rsa,
            "RS256",
            &json!({"alg": "RS256", "kid": "rsa-3"}),
            &claims(),
        );
        let refusal = v.verify(&unknown, now()).unwrap_err();
        assert!(refusal.is_unavailable(), "{refusal:?}");
        assert!(refusal.to_string().contains("500"), "{refusal}");
        assert_eq!(v.verify(&rotated, now()).unwrap().subject, "alice");
        v.refetch_every = REFETCH_EVERY;
        let hits = server.hits.load(Ordering::SeqCst);
        assert!(v.verify(&unknown, now()).unwrap_err().is_unavailable());
        assert_eq!(
            server.hits.load(Ordering::SeqCst),
            hits,
            "remembered, not refetched"
        );

        // Recovery after the period.
        server.answer.lock().unwrap().0 = 200;
        v.refetch_every = Duration::ZERO;
        assert!(matches!(
            v.verify(&unknown, now()),
            Err(OAuthRefusal::UnknownKey(_))
        ));
    }

    #[test]
    fn oauth_jwks_url_at_start() {
        // Nothing listening: the server does not start.
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let e = OAuthVerifier::new(&config(&format!("jwks_url = \"http://{addr}/jwks\"")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot be loaded") && e.contains("request failed"),
            "{e}"
        );
        // Too large, an error status, not a key set.
        let server = serve_jwks(vec![b' '; usize::try_from(MAX_JWKS_BYTES).unwrap() + 1]);
        let line = format!("jwks_url = \"{}\"", server.url);
        let e = OAuthVerifier::new(&config(&line)).unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
        *server.answer.lock().unwrap() = (404, b"{}".to_vec());
        let e = OAuthVerifier::new(&config(&line)).unwrap_err().to_string();
        assert!(e.contains("404"), "{e}");
        *server.answer.lock().unwrap() = (200, b"<html>".to_vec());
        let e = OAuthVerifier::new(&config(&line)).unwrap_err().to_string();
        assert!(e.contains("not JSON"), "{e}");
        // Positive control.
        *server.answer.lock().unwrap() = (200, issuer_jwks());
        assert!(OAuthVerifier::new(&config(&line)).is_ok());
    }

    #[test]
    fn oauth_resource_metadata_names_the_issuer() {
        let doc = resource_metadata(AUD, Some(ISS), &["spear:read".into(), "spear:run".into()]);
        assert_eq!(
            doc,
            json!({
                "resource": AUD,
                "authorization_servers": [ISS],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["spear:read", "spear:run"],
            })
        );
        let doc = resource_metadata("http://127.0.0.1:4711/mcp", None, &[]);
        assert_eq!(
            doc,
            json!({
                "resource": "http://127.0.0.1:4711/mcp",
                "authorization_servers": [],
                "bearer_methods_supported": ["header"],
            })
        );
        let dir = tempfile::tempdir().unwrap();
        let v = file_verifier(&dir, &issuer_jwks());
        assert_eq!(
            resource_metadata(v.audience(), Some(v.issuer()), &v.scopes_supported())["scopes_supported"],
            json!(["spear:read", "spear:rollout", "spear:run"])
        );
    }
}
