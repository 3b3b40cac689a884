//! `[serve]` of the operator's configuration: whom a listening spear (`spear mcp --listen`)
//! admits besides the holders of the operator's tokens.
//!
//! ```toml
//! [serve.oauth]
//! issuer = "https://auth.example.com"          # the `iss` a token must carry
//! audience = "https://node.example.com/mcp"    # this server's resource URL: the `aud` a token must carry
//! jwks_file = "/etc/spear/jwks.json"           # or jwks_url = "https://auth.example.com/.well-known/jwks.json"
//! algorithms = ["RS256", "ES256"]              # optional; the default; never "none", never HS*
//! leeway_secs = 30                             # optional clock skew (the default; at most 300)
//!
//! [serve.oauth.scopes]                         # scope -> what it grants (an operator token's shape)
//! "spear:read" = { mode = "safe" }
//! "spear:run" = { mode = "auto", workspaces = ["/srv/repo"], no_network = true, sessions = 4 }
//! "spear:rollout" = { mode = "auto", templates = ["/srv/templates/repo"] }
//! ```
//!
//! Plain data, checked as it is read: a file that does not say what the operator meant is refused
//! before the server starts, naming the key and what to write instead. spear-policy knows nothing
//! of how a token is verified (spear-mcp's `oauth` module does that).
//!
//! Only the operator's file has `[serve]`: the workspace's policy file has no such table and
//! refuses it as an unknown key (attack stopped: a repository granting remote clients access to
//! itself, or to anything else).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use spear_core::ExecutionMode;

/// The clock skew allowed by default when `leeway_secs` is absent.
pub const DEFAULT_LEEWAY_SECS: u64 = 30;

/// The most clock skew `leeway_secs` may allow (five minutes): more keeps an expired token alive.
pub const MAX_LEEWAY_SECS: u64 = 300;

/// `[serve]` of the operator's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorServe {
    /// `[serve.oauth]`: OAuth 2.1 access tokens (JWTs) of an authorization server the operator
    /// trusts, accepted besides the operator's tokens. `None`: only the operator's tokens.
    #[serde(default)]
    pub oauth: Option<OAuthConfig>,
}

/// `[serve.oauth]`, checked: every value here was validated as it was read (see the module's
/// documentation), so a verifier built from it trusts exactly one issuer, for exactly one
/// audience, with asymmetric algorithms only.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawOAuth")]
pub struct OAuthConfig {
    /// The `iss` every token must carry, exactly (the authorization server's issuer identifier).
    pub issuer: String,
    /// This server's resource URL: the value a token's `aud` (a string or an array) must hold
    /// (RFC 8707, RFC 9068).
    pub audience: String,
    /// Where the authorization server's public keys are.
    pub jwks: JwksSource,
    /// The signature algorithms a token may use: never empty, never `none`, never an HMAC.
    pub algorithms: Vec<JwsAlgorithm>,
    /// The clock skew allowed on `exp` and `nbf` (at most [`MAX_LEEWAY_SECS`]).
    pub leeway: Duration,
    /// What each scope grants: never empty; the names are RFC 6749 scope tokens.
    pub scopes: BTreeMap<String, ScopeGrant>,
}

/// Where the authorization server's key set (JWKS, RFC 7517) is read from: exactly one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// `jwks_file`: an absolute path.
    File(PathBuf),
    /// `jwks_url`: an `https` URL, or `http` to a loopback host (`127.0.0.1`, `[::1]`,
    /// `localhost`).
    Url(String),
}

/// The JWS signature algorithms a token may be signed with (RFC 7518): asymmetric ones only, so
/// there is no variant for `none` nor for `HS256`/`HS384`/`HS512`. Attacks stopped: an unsigned
/// token (`none`), and algorithm confusion, a token signed by HMAC with the public key as the
/// HMAC secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JwsAlgorithm {
    /// `RS256`: RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// `RS384`: RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
    /// `RS512`: RSASSA-PKCS1-v1_5 with SHA-512.
    Rs512,
    /// `PS256`: RSASSA-PSS with SHA-256.
    Ps256,
    /// `PS384`: RSASSA-PSS with SHA-384.
    Ps384,
    /// `PS512`: RSASSA-PSS with SHA-512.
    Ps512,
    /// `ES256`: ECDSA on P-256 with SHA-256.
    Es256,
    /// `ES384`: ECDSA on P-384 with SHA-384.
    Es384,
    /// `EdDSA`: Ed25519.
    EdDsa,
}

impl JwsAlgorithm {
    /// Every algorithm spear verifies.
    pub const ALL: [JwsAlgorithm; 9] = [
        JwsAlgorithm::Rs256,
        JwsAlgorithm::Rs384,
        JwsAlgorithm::Rs512,
        JwsAlgorithm::Ps256,
        JwsAlgorithm::Ps384,
        JwsAlgorithm::Ps512,
        JwsAlgorithm::Es256,
        JwsAlgorithm::Es384,
        JwsAlgorithm::EdDsa,
    ];

    /// The default of `algorithms`.
    pub const DEFAULT: [JwsAlgorithm; 2] = [JwsAlgorithm::Rs256, JwsAlgorithm::Es256];

    /// Its name in a JWS header (`alg`) and in the configuration.
    pub const fn name(self) -> &'static str {
        match self {
            JwsAlgorithm::Rs256 => "RS256",
            JwsAlgorithm::Rs384 => "RS384",
            JwsAlgorithm::Rs512 => "RS512",
            JwsAlgorithm::Ps256 => "PS256",
            JwsAlgorithm::Ps384 => "PS384",
            JwsAlgorithm::Ps512 => "PS512",
            JwsAlgorithm::Es256 => "ES256",
            JwsAlgorithm::Es384 => "ES384",
            JwsAlgorithm::EdDsa => "EdDSA",
        }
    }

    /// The algorithm `name` names exactly (case matters, as in a JWS header); `None` for every
    /// other name, `none` and the HMACs included.
    pub fn from_name(name: &str) -> Option<JwsAlgorithm> {
        JwsAlgorithm::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// What one scope grants: the shape of an operator token's grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeGrant {
    /// The workspaces its sessions may open, absolute (none: those the server serves).
    pub workspaces: Vec<PathBuf>,
    /// The templates its sessions may take a copy of, absolute.
    pub templates: Vec<PathBuf>,
    /// The most its sessions may run in (none: the server's own mode).
    pub mode: Option<ExecutionMode>,
    /// Its sessions have no network.
    pub no_network: bool,
    /// How many sessions it may hold open at once, at least 1 (none: the server's limit).
    pub sessions: Option<u32>,
}

/// Why `[serve.oauth]` was refused, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthConfigError {
    /// `issuer` or `audience` is empty or has blanks around it.
    #[error(
        "[serve.oauth] {key} {value:?} cannot be matched: write the exact {what}, without blanks \
         around it"
    )]
    Blank {
        /// `issuer` or `audience`.
        key: &'static str,
        /// The value as written.
        value: String,
        /// What it names.
        what: &'static str,
    },
    /// Neither or both of `jwks_file` and `jwks_url`.
    #[error(
        "[serve.oauth] needs exactly one of jwks_file and jwks_url (it has {0}): name where the \
         authorization server's public keys are"
    )]
    JwksSource(&'static str),
    /// `jwks_file` is relative.
    #[error("[serve.oauth] jwks_file {0:?} is relative: write its absolute path")]
    RelativeJwksFile(PathBuf),
    /// `jwks_url` is not `https` (or `http` to this host).
    #[error(
        "[serve.oauth] jwks_url {url:?} {why}: the keys decide who gets in, so they come over \
         https (http only from 127.0.0.1, [::1] or localhost)"
    )]
    JwksUrl {
        /// The URL as written.
        url: String,
        /// What is wrong.
        why: &'static str,
    },
    /// An algorithm that is not an asymmetric signature, or unknown.
    #[error("[serve.oauth] algorithms: {name:?} {why}")]
    Algorithm {
        /// The name as written.
        name: String,
        /// Why, and the names allowed.
        why: String,
    },
    /// `algorithms = []`.
    #[error(
        "[serve.oauth] algorithms is empty, so no token could be accepted: name the algorithms \
         the authorization server signs with, or remove the key for RS256 and ES256"
    )]
    NoAlgorithms,
    /// `leeway_secs` over the most.
    #[error(
        "[serve.oauth] leeway_secs = {0} is more than {MAX_LEEWAY_SECS}: a clock skew that large \
         keeps expired tokens alive; fix the clocks instead"
    )]
    Leeway(u64),
    /// No scope is mapped.
    #[error(
        "[serve.oauth.scopes] maps no scope, so every token would be refused: map at least one \
         scope to what it grants"
    )]
    NoScopes,
    /// A scope name that a token could not carry.
    #[error(
        "[serve.oauth.scopes] {0:?} is not a scope: a scope is one or more printable ASCII \
         characters without spaces, `\"` or `\\`"
    )]
    ScopeName(String),
    /// A workspace or template path is relative.
    #[error(
        "[serve.oauth.scopes] {scope:?}: the {what} {path:?} is relative: write its absolute path"
    )]
    RelativePath {
        /// The scope.
        scope: String,
        /// `workspace` or `template`.
        what: &'static str,
        /// The path as written.
        path: PathBuf,
    },
    /// `sessions = 0`.
    #[error(
        "[serve.oauth.scopes] {0:?}: sessions = 0 would let no session open: write at least 1, or \
         remove the key for the server's limit"
    )]
    NoSessions(String),
}

/// `[serve.oauth]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOAuth {
    issuer: String,
    audience: String,
    #[serde(default)]
    jwks_file: Option<PathBuf>,
    #[serde(default)]
    jwks_url: Option<String>,
    #[serde(default)]
    algorithms: Option<Vec<String>>,
    #[serde(default)]
    leeway_secs: Option<u64>,
    scopes: BTreeMap<String, RawGrant>,
}

/// A scope's grant as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrant {
    #[serde(default)]
    workspaces: Vec<PathBuf>,
    #[serde(default)]
    templates: Vec<PathBuf>,
    #[serde(default)]
    mode: Option<ExecutionMode>,
    #[serde(default)]
    no_network: bool,
    #[serde(default)]
    sessions: Option<u32>,
}

impl TryFrom<RawOAuth> for OAuthConfig {
    type Error = OAuthConfigError;

    fn try_from(raw: RawOAuth) -> Result<Self, Self::Error> {
        let issuer = exact(
            "issuer",
            raw.issuer,
            "issuer identifier the tokens carry in `iss`",
        )?;
        let audience = exact("audience", raw.audience, "resource URL of this server")?;
        let jwks = jwks_source(raw.jwks_file, raw.jwks_url)?;
        let algorithms = match raw.algorithms {
            None => JwsAlgorithm::DEFAULT.to_vec(),
            Some(names) => algorithms(&names)?,
        };
        let leeway_secs = raw.leeway_secs.unwrap_or(DEFAULT_LEEWAY_SECS);
        if leeway_secs > MAX_LEEWAY_SECS {
            return Err(OAuthConfigError::Leeway(leeway_secs));
        }
        if raw.scopes.is_empty() {
            return Err(OAuthConfigError::NoScopes);
        }
        let mut scopes = BTreeMap::new();
        for (name, grant) in raw.scopes {
            let grant = scope_grant(&name, grant)?;
            scopes.insert(name, grant);
        }
        Ok(OAuthConfig {
            issuer,
            audience,
            jwks,
            algorithms,
            leeway: Duration::from_secs(leeway_secs),
            scopes,
        })
    }
}

/// `value`, refused when empty or with blanks around it (it is compared exactly).
fn exact(key: &'static str, value: String, what: &'static str) -> Result<String, OAuthConfigError> {
    if value.is_empty() || value.trim() != value {
        return Err(OAuthConfigError::Blank { key, value, what });
    }
    Ok(value)
}

/// Exactly one of the two sources, each checked.
fn jwks_source(file: Option<PathBuf>, url: Option<String>) -> Result<JwksSource, OAuthConfigError> {
    match (file, url) {
        (Some(file), None) if file.is_absolute() => Ok(JwksSource::File(file)),
        (Some(file), None) => Err(OAuthConfigError::RelativeJwksFile(file)),
        (None, Some(url)) => match jwks_url_problem(&url) {
            None => Ok(JwksSource::Url(url)),
            Some(why) => Err(OAuthConfigError::JwksUrl { url, why }),
        },
        (None, None) => Err(OAuthConfigError::JwksSource("neither")),
        (Some(_), Some(_)) => Err(OAuthConfigError::JwksSource("both")),
    }
}

/// What is wrong with `url` as the place of the keys, if anything: it must be `https`, or `http`
/// to a loopback host, with a host and no user information. Attack stopped: the key set fetched
/// in clear over a network, where anyone on the path substitutes keys of their own and mints
/// tokens.
pub fn jwks_url_problem(url: &str) -> Option<&'static str> {
    let (secure, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        return Some("is not an https URL");
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Some("carries user information");
    }
    let host = if authority.starts_with('[') {
        authority.split_inclusive(']').next().unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    if host.is_empty() {
        return Some("names no host");
    }
    if !secure && !matches!(host, "127.0.0.1" | "[::1]" | "localhost") {
        return Some("is plain http to another host");
    }
    None
}

/// The algorithms named, each an asymmetric signature spear verifies; duplicates dropped.
fn algorithms(names: &[String]) -> Result<Vec<JwsAlgorithm>, OAuthConfigError> {
    if names.is_empty() {
        return Err(OAuthConfigError::NoAlgorithms);
    }
    let mut out = Vec::new();
    for name in names {
        let Some(alg) = JwsAlgorithm::from_name(name) else {
            let why = if name.eq_ignore_ascii_case("none") {
                "is no signature at all: anyone could write a token".to_owned()
            } else if name.to_ascii_uppercase().starts_with("HS") {
                "is a shared-secret MAC, never accepted: with a public key set anyone holding a \
                 public key could sign (algorithm confusion)"
                    .to_owned()
            } else {
                let known: Vec<&str> = JwsAlgorithm::ALL.iter().map(|a| a.name()).collect();
                format!(
                    "is not an algorithm spear verifies: name some of {}",
                    known.join(", ")
                )
            };
            return Err(OAuthConfigError::Algorithm {
                name: name.clone(),
                why,
            });
        };
        if !out.contains(&alg) {
            out.push(alg);
        }
    }
    Ok(out)
}

/// Whether `name` is a scope token (RFC 6749, 3.3: `%x21 / %x23-5B / %x5D-7E`, at least one).
pub fn is_scope_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
}

/// One scope's grant, checked.
fn scope_grant(name: &str, raw: RawGrant) -> Result<ScopeGrant, OAuthConfigError> {
    if !is_scope_token(name) {
        return Err(OAuthConfigError::ScopeName(name.to_owned()));
    }
    for (what, paths) in [("workspace", &raw.workspaces), ("template", &raw.templates)] {
        if let Some(path) = paths.iter().find(|p| !p.is_absolute()) {
            return Err(OAuthConfigError::RelativePath {
                scope: name.to_owned(),
                what,
                path: path.clone(),
            });
        }
    }
    if raw.sessions == Some(0) {
        return Err(OAuthConfigError::NoSessions(name.to_owned()));
    }
    Ok(ScopeGrant {
        workspaces: raw.workspaces,
        templates: raw.templates,
        mode: raw.mode,
        no_network: raw.no_network,
        sessions: raw.sessions,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::{OperatorConfig, WorkspacePolicyFile};

    const HEAD: &str = "[serve.oauth]\nissuer = \"https://auth.example.com\"\n\
                        audience = \"https://node.example.com/mcp\"\n";
    const JWKS: &str = "jwks_file = \"/etc/spear/jwks.json\"\n";
    const SCOPES: &str = "[serve.oauth.scopes]\n\"spear:read\" = { mode = \"safe\" }\n";

    fn parse(text: &str) -> Result<OperatorConfig, String> {
        OperatorConfig::parse(text, Path::new("config.toml")).map_err(|e| e.to_string())
    }

    /// The brief's example, whole.
    #[test]
    fn serve_config_the_example_parses_into_checked_values() {
        let text = "[serve.oauth]\n\
            issuer = \"https://auth.example.com\"\n\
            audience = \"https://node.example.com/mcp\"\n\
            jwks_url = \"https://auth.example.com/.well-known/jwks.json\"\n\
            algorithms = [\"RS256\", \"ES256\", \"RS256\"]\n\
            leeway_secs = 30\n\
            [serve.oauth.scopes]\n\
            \"spear:read\" = { mode = \"safe\" }\n\
            \"spear:run\" = { mode = \"auto\", workspaces = [\"/srv/repo\"], no_network = true, sessions = 4 }\n\
            \"spear:rollout\" = { mode = \"auto\", templates = [\"/srv/templates/repo\"] }\n";
        let oauth = parse(text).unwrap().serve.oauth.unwrap();
        assert_eq!(oauth.issuer, "https://auth.example.com");
        assert_eq!(oauth.audience, "https://node.example.com/mcp");
        assert_eq!(
            oauth.jwks,
            JwksSource::Url("https://auth.example.com/.well-known/jwks.json".into())
        );
        assert_eq!(
            oauth.algorithms,
            vec![JwsAlgorithm::Rs256, JwsAlgorithm::Es256]
        );
        assert_eq!(oauth.leeway, Duration::from_secs(30));
        assert_eq!(
            oauth.scopes["spear:read"],
            ScopeGrant {
                mode: Some(ExecutionMode::Safe),
                ..ScopeGrant::default()
            }
        );
        assert_eq!(
            oauth.scopes["spear:run"],
            ScopeGrant {
                workspaces: vec![PathBuf::from("/srv/repo")],
                templates: vec![],
                mode: Some(ExecutionMode::Auto),
                no_network: true,
                sessions: Some(4),
            }
        );
        assert_eq!(
            oauth.scopes["spear:rollout"].templates,
            vec![PathBuf::from("/srv/templates/repo")]
        );
    }

    #[test]
    fn serve_config_defaults_and_absence() {
        assert_eq!(parse("").unwrap().serve, OperatorServe::default());
        assert_eq!(parse("[serve]\n").unwrap().serve.oauth, None);
        let oauth = parse(&format!("{HEAD}{JWKS}{SCOPES}"))
            .unwrap()
            .serve
            .oauth
            .unwrap();
        assert_eq!(oauth.algorithms, JwsAlgorithm::DEFAULT.to_vec());
        assert_eq!(oauth.leeway, Duration::from_secs(DEFAULT_LEEWAY_SECS));
        assert_eq!(oauth.jwks, JwksSource::File("/etc/spear/jwks.json".into()));
    }

    /// Each refusal says what is wrong; each has a positive control (the same file with that
    /// one thing right parses).
    #[test]
    fn serve_config_refusals_name_the_fix() {
        let ok_scopes = SCOPES;
        #[rustfmt::skip]
        let cases: &[(&str, String, String, &str)] = &[
            // (what, refused file, the same file right, the message says)
            ("unknown key in [serve]",
             format!("[serve]\nlisten = 1\n{HEAD}{JWKS}{ok_scopes}"),
             format!("[serve]\n{HEAD}{JWKS}{ok_scopes}"), "unknown field `listen`"),
            ("unknown key in [serve.oauth]",
             format!("{HEAD}{JWKS}audiences = [\"x\"]\n{ok_scopes}"),
             format!("{HEAD}{JWKS}{ok_scopes}"), "unknown field `audiences`"),
            ("unknown key in a grant",
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ gpu = \"all\" }}\n"),
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ }}\n"), "unknown field `gpu`"),
            ("no issuer",
             format!("[serve.oauth]\naudience = \"https://n/mcp\"\n{JWKS}{ok_scopes}"),
             format!("[serve.oauth]\naudience = \"https://n/mcp\"\nissuer = \"i\"\n{JWKS}{ok_scopes}"),
             "missing field `issuer`"),
            ("no audience",
             format!("[serve.oauth]\nissuer = \"https://i\"\n{JWKS}{ok_scopes}"),
             format!("[serve.oauth]\nissuer = \"https://i\"\naudience = \"a\"\n{JWKS}{ok_scopes}"),
             "missing field `audience`"),
            ("blank issuer",
             format!("[serve.oauth]\nissuer = \" https://i\"\naudience = \"a\"\n{JWKS}{ok_scopes}"),
             format!("[serve.oauth]\nissuer = \"https://i\"\naudience = \"a\"\n{JWKS}{ok_scopes}"),
             "without blanks"),
            ("empty audience",
             format!("[serve.oauth]\nissuer = \"https://i\"\naudience = \"\"\n{JWKS}{ok_scopes}"),
             format!("[serve.oauth]\nissuer = \"https://i\"\naudience = \"a\"\n{JWKS}{ok_scopes}"),
             "audience"),
            ("no key set",
             format!("{HEAD}{ok_scopes}"),
             format!("{HEAD}{JWKS}{ok_scopes}"), "exactly one of jwks_file and jwks_url (it has neither)"),
            ("both key sets",
             format!("{HEAD}{JWKS}jwks_url = \"https://a/j\"\n{ok_scopes}"),
             format!("{HEAD}jwks_url = \"https://a/j\"\n{ok_scopes}"), "(it has both)"),
            ("relative jwks_file",
             format!("{HEAD}jwks_file = \"jwks.json\"\n{ok_scopes}"),
             format!("{HEAD}jwks_file = \"/jwks.json\"\n{ok_scopes}"), "absolute path"),
            ("http jwks_url to another host",
             format!("{HEAD}jwks_url = \"http://auth.example.com/jwks\"\n{ok_scopes}"),
             format!("{HEAD}jwks_url = \"http://127.0.0.1:8080/jwks\"\n{ok_scopes}"), "plain http"),
            ("jwks_url with user information",
             format!("{HEAD}jwks_url = \"https://u:p@auth.example.com/jwks\"\n{ok_scopes}"),
             format!("{HEAD}jwks_url = \"https://auth.example.com/jwks\"\n{ok_scopes}"), "user information"),
            ("jwks_url of another scheme",
             format!("{HEAD}jwks_url = \"file:///etc/jwks\"\n{ok_scopes}"),
             format!("{HEAD}jwks_url = \"https://[::1]:8443/jwks\"\n{ok_scopes}"), "not an https URL"),
            ("alg none",
             format!("{HEAD}{JWKS}algorithms = [\"RS256\", \"none\"]\n{ok_scopes}"),
             format!("{HEAD}{JWKS}algorithms = [\"RS256\"]\n{ok_scopes}"), "no signature at all"),
            ("HS256",
             format!("{HEAD}{JWKS}algorithms = [\"HS256\"]\n{ok_scopes}"),
             format!("{HEAD}{JWKS}algorithms = [\"PS256\"]\n{ok_scopes}"), "algorithm confusion"),
            ("unknown algorithm",
             format!("{HEAD}{JWKS}algorithms = [\"rs256\"]\n{ok_scopes}"),
             format!("{HEAD}{JWKS}algorithms = [\"EdDSA\", \"ES384\"]\n{ok_scopes}"), "RS256, RS384"),
            ("no algorithm",
             format!("{HEAD}{JWKS}algorithms = []\n{ok_scopes}"),
             format!("{HEAD}{JWKS}{ok_scopes}"), "algorithms is empty"),
            ("leeway over five minutes",
             format!("{HEAD}{JWKS}leeway_secs = 301\n{ok_scopes}"),
             format!("{HEAD}{JWKS}leeway_secs = 300\n{ok_scopes}"), "more than 300"),
            ("no scopes table",
             format!("{HEAD}{JWKS}"),
             format!("{HEAD}{JWKS}{ok_scopes}"), "missing field `scopes`"),
            ("no scope mapped",
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n"),
             format!("{HEAD}{JWKS}{ok_scopes}"), "maps no scope"),
            ("a scope with a space",
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"spear run\" = {{}}\n"),
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"spear:run\" = {{}}\n"), "is not a scope"),
            ("an unknown mode",
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ mode = \"yolo\" }}\n"),
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ mode = \"ask\" }}\n"), "`safe`, `ask`, `auto`"),
            ("a relative workspace",
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ workspaces = [\"srv\"] }}\n"),
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ workspaces = [\"/srv\"] }}\n"), "the workspace \"srv\" is relative"),
            ("a relative template",
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ templates = [\"t\"] }}\n"),
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ templates = [\"/t\"] }}\n"), "the template \"t\" is relative"),
            ("no_network not a bool",
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ no_network = \"yes\" }}\n"),
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ no_network = false }}\n"), "invalid type"),
            ("zero sessions",
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ sessions = 0 }}\n"),
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ sessions = 1 }}\n"), "sessions = 0"),
            ("negative sessions",
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ sessions = -1 }}\n"),
             format!("{HEAD}{JWKS}[serve.oauth.scopes]\n\"a\" = {{ sessions = 2 }}\n"), "sessions"),
        ];
        for (what, bad, good, says) in cases {
            let e = parse(bad).expect_err(what);
            assert!(e.contains(says), "{what}: {e}");
            if let Err(e) = parse(good) {
                panic!("{what}: the positive control is refused: {e}");
            }
        }
    }

    /// `[serve]` is the operator's alone: a workspace's policy file naming it is refused (it would
    /// let a repository admit remote clients to itself), the operator's is read.
    #[test]
    fn serve_config_is_the_operator_s_alone() {
        let text = format!("{HEAD}{JWKS}{SCOPES}");
        assert!(parse(&text).unwrap().serve.oauth.is_some());
        let e = WorkspacePolicyFile::parse(&text, Path::new("p"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("serve"), "{e}");
    }

    #[test]
    fn serve_config_jwks_url_table() {
        for (url, problem) in [
            ("https://auth.example.com/jwks", None),
            ("https://auth.example.com", None),
            ("https://auth.example.com:8443?x", None),
            ("http://127.0.0.1:9000/jwks", None),
            ("http://localhost/jwks", None),
            ("http://[::1]:80/jwks", None),
            (
                "http://127.0.0.1.example.com/jwks",
                Some("is plain http to another host"),
            ),
            (
                "http://localhost.evil/jwks",
                Some("is plain http to another host"),
            ),
            ("http://[::2]/jwks", Some("is plain http to another host")),
            ("https://", Some("names no host")),
            ("https:///jwks", Some("names no host")),
            ("https://a@b/jwks", Some("carries user information")),
            ("HTTPS://a/jwks", Some("is not an https URL")),
            ("ftp://a/jwks", Some("is not an https URL")),
            ("/etc/jwks", Some("is not an https URL")),
        ] {
            assert_eq!(jwks_url_problem(url), problem, "{url}");
        }
    }

    #[test]
    fn serve_config_scope_tokens_and_algorithm_names() {
        for (name, ok) in [
            ("spear:read", true),
            ("a", true),
            ("!#[]~", true),
            ("", false),
            ("a b", false),
            ("a\"b", false),
            ("a\\b", false),
            ("é", false),
        ] {
            assert_eq!(is_scope_token(name), ok, "{name:?}");
        }
        for alg in JwsAlgorithm::ALL {
            assert_eq!(JwsAlgorithm::from_name(alg.name()), Some(alg));
        }
        for name in ["none", "HS256", "HS384", "HS512", "rs256", "RSA-OAEP", ""] {
            assert_eq!(JwsAlgorithm::from_name(name), None, "{name}");
        }
    }
}
