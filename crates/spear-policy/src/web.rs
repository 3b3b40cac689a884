//! `[web]` of the operator's configuration: whether the web pair (`fetch_url`, `search_internet`)
//! is offered, the ports and time limits of its fetches, and the search backend.
//!
//! ```toml
//! [web]
//! enabled = true            # the default; false withdraws both tools (so does --no-network)
//! ports = [8080]            # ports fetch_url may use besides 80 and 443
//! connect_timeout = 10      # seconds to connect
//! first_byte_timeout = 20   # seconds from the request to the response, and between reads
//! timeout = 60              # seconds for the whole fetch, redirects included
//!
//! [web.search]              # without it, search_internet is not offered
//! backend = "searxng"       # or "brave", "bing"
//! url = "http://127.0.0.1:8888"  # searxng only: the instance (its JSON format enabled)
//! # endpoint = "https://..."     # brave, bing: another endpoint than the public API
//! # key_env = "BRAVE_SEARCH_API_KEY"  # brave, bing: the variable holding the API key
//! ```
//!
//! Plain data: spear-policy knows nothing of how a fetch is made. [`OperatorWeb::settings`]
//! checks the table and gives [`WebSettings`], which the tool layer turns into its fetcher.

use std::time::Duration;

use serde::Deserialize;

/// The shortest time limit a `[web]` key may set, in seconds.
pub const MIN_TIMEOUT_SECS: f64 = 0.1;

/// The longest time limit a `[web]` key may set, in seconds (an hour: a fetch holds a call).
pub const MAX_TIMEOUT_SECS: f64 = 3600.0;

/// The default variable of the Brave API key.
pub const BRAVE_KEY_ENV: &str = "BRAVE_SEARCH_API_KEY";

/// The default variable of the Bing API key.
pub const BING_KEY_ENV: &str = "BING_SEARCH_API_KEY";

/// `[web]` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorWeb {
    /// Whether the web pair is offered at all (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Ports allowed besides 80 and 443.
    #[serde(default)]
    pub ports: Vec<u16>,
    /// Seconds to connect.
    #[serde(default)]
    pub connect_timeout: Option<f64>,
    /// Seconds from the request to the response's headers, and between two reads of the body.
    #[serde(default)]
    pub first_byte_timeout: Option<f64>,
    /// Seconds for the whole fetch.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// `[web.search]`.
    #[serde(default)]
    pub search: Option<OperatorSearch>,
}

fn yes() -> bool {
    true
}

impl Default for OperatorWeb {
    fn default() -> Self {
        OperatorWeb {
            enabled: true,
            ports: Vec::new(),
            connect_timeout: None,
            first_byte_timeout: None,
            timeout: None,
            search: None,
        }
    }
}

/// `[web.search]` as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorSearch {
    /// Which backend.
    pub backend: BackendName,
    /// The `SearXNG` instance's base URL (searxng only, and required there).
    #[serde(default)]
    pub url: Option<String>,
    /// Another endpoint than the public API's (brave and bing only).
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The environment variable holding the API key (brave and bing only).
    #[serde(default)]
    pub key_env: Option<String>,
}

/// The search backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendName {
    /// A `SearXNG` instance's JSON API.
    Searxng,
    /// The Brave web search API.
    Brave,
    /// The Bing web search API.
    Bing,
}

impl BackendName {
    /// The name as the configuration writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            BackendName::Searxng => "searxng",
            BackendName::Brave => "brave",
            BackendName::Bing => "bing",
        }
    }
}

/// `[web]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSettings {
    /// Whether the web pair is offered.
    pub enabled: bool,
    /// Ports allowed besides 80 and 443.
    pub ports: Vec<u16>,
    /// Time to connect (`None`: the fetcher's default).
    pub connect_timeout: Option<Duration>,
    /// Time to the first byte and between reads (`None`: the fetcher's default).
    pub first_byte_timeout: Option<Duration>,
    /// Time for the whole fetch (`None`: the fetcher's default).
    pub timeout: Option<Duration>,
    /// The search backend, when one is configured.
    pub search: Option<SearchSettings>,
}

impl Default for WebSettings {
    /// What an empty configuration gives: the pair on, no search backend.
    fn default() -> Self {
        WebSettings {
            enabled: true,
            ports: Vec::new(),
            connect_timeout: None,
            first_byte_timeout: None,
            timeout: None,
            search: None,
        }
    }
}

/// `[web.search]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchSettings {
    /// A `SearXNG` instance.
    Searxng {
        /// Its base URL (http or https).
        url: String,
    },
    /// The Brave web search API.
    Brave {
        /// Another endpoint than the public API's.
        endpoint: Option<String>,
        /// The variable holding the key.
        key_env: String,
    },
    /// The Bing web search API.
    Bing {
        /// Another endpoint than the public API's.
        endpoint: Option<String>,
        /// The variable holding the key.
        key_env: String,
    },
}

impl SearchSettings {
    /// The backend's name.
    pub const fn name(&self) -> &'static str {
        match self {
            SearchSettings::Searxng { .. } => "searxng",
            SearchSettings::Brave { .. } => "brave",
            SearchSettings::Bing { .. } => "bing",
        }
    }
}

/// A `[web]` table that cannot be used: the key, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[web] {key}: {why}")]
pub struct WebConfigError {
    /// The key (`timeout`, `search.url`, ...).
    pub key: String,
    /// What is wrong, and what would do.
    pub why: String,
}

fn bad(key: &str, why: impl Into<String>) -> WebConfigError {
    WebConfigError {
        key: key.to_owned(),
        why: why.into(),
    }
}

impl OperatorWeb {
    /// Checks the table: ports are not 0, time limits lie within [`MIN_TIMEOUT_SECS`] and
    /// [`MAX_TIMEOUT_SECS`] and no phase's exceeds the whole fetch's, and the search backend has
    /// the keys it needs and none it does not use (a `url` given to brave would be ignored, and
    /// the operator would believe it used).
    pub fn settings(&self) -> Result<WebSettings, WebConfigError> {
        if self.ports.contains(&0) {
            return Err(bad("ports", "0 is not a port"));
        }
        let secs = |key: &str, value: Option<f64>| -> Result<Option<Duration>, WebConfigError> {
            let Some(v) = value else { return Ok(None) };
            if !v.is_finite() || !(MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS).contains(&v) {
                return Err(bad(
                    key,
                    format!(
                        "{v} is out of bounds; it must be between {MIN_TIMEOUT_SECS} and {MAX_TIMEOUT_SECS} seconds"
                    ),
                ));
            }
            Ok(Some(Duration::from_secs_f64(v)))
        };
        let connect_timeout = secs("connect_timeout", self.connect_timeout)?;
        let first_byte_timeout = secs("first_byte_timeout", self.first_byte_timeout)?;
        let timeout = secs("timeout", self.timeout)?;
        if let Some(total) = timeout {
            for (key, phase) in [
                ("connect_timeout", connect_timeout),
                ("first_byte_timeout", first_byte_timeout),
            ] {
                if phase.is_some_and(|p| p > total) {
                    return Err(bad(
                        key,
                        format!(
                            "it is longer than timeout ({} s), which bounds the whole fetch",
                            total.as_secs_f64()
                        ),
                    ));
                }
            }
        }
        let search = self
            .search
            .as_ref()
            .map(OperatorSearch::settings)
            .transpose()?;
        Ok(WebSettings {
            enabled: self.enabled,
            ports: self.ports.clone(),
            connect_timeout,
            first_byte_timeout,
            timeout,
            search,
        })
    }
}

impl OperatorSearch {
    fn settings(&self) -> Result<SearchSettings, WebConfigError> {
        let name = self.backend.as_str();
        let unused = |key: &str, instead: &str| {
            bad(
                &format!("search.{key}"),
                format!("the {name} backend does not use it; {instead}"),
            )
        };
        match self.backend {
            BackendName::Searxng => {
                if self.endpoint.is_some() {
                    return Err(unused("endpoint", "name the instance with `url`"));
                }
                if self.key_env.is_some() {
                    return Err(unused("key_env", "a SearXNG instance takes no API key"));
                }
                let Some(url) = &self.url else {
                    return Err(bad(
                        "search.url",
                        "the searxng backend needs the instance's base URL, e.g. url = \"http://127.0.0.1:8888\"",
                    ));
                };
                Ok(SearchSettings::Searxng {
                    url: http_url("search.url", url)?,
                })
            }
            BackendName::Brave | BackendName::Bing => {
                if self.url.is_some() {
                    return Err(unused(
                        "url",
                        "`url` is the searxng instance's; another API endpoint is `endpoint`",
                    ));
                }
                let endpoint = self
                    .endpoint
                    .as_deref()
                    .map(|e| http_url("search.endpoint", e))
                    .transpose()?;
                let default_key = if self.backend == BackendName::Brave {
                    BRAVE_KEY_ENV
                } else {
                    BING_KEY_ENV
                };
                let key_env = self.key_env.as_deref().unwrap_or(default_key).to_owned();
                if !is_env_name(&key_env) {
                    return Err(bad(
                        "search.key_env",
                        // Not echoed: a key pasted here by mistake stays off the terminal.
                        "it is not an environment variable's name (letters, digits and `_`, not starting with a digit); it names the variable holding the key, never the key itself",
                    ));
                }
                Ok(if self.backend == BackendName::Brave {
                    SearchSettings::Brave { endpoint, key_env }
                } else {
                    SearchSettings::Bing { endpoint, key_env }
                })
            }
        }
    }
}

/// `text` if it is an http or https URL with a host (the fetcher parses it fully).
fn http_url(key: &str, text: &str) -> Result<String, WebConfigError> {
    let t = text.trim();
    let rest = t
        .strip_prefix("http://")
        .or_else(|| t.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(t.to_owned()),
        _ => Err(bad(
            key,
            format!("`{t}` is not an http:// or https:// URL with a host"),
        )),
    }
}

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::OperatorConfig;
    use std::path::Path;

    fn web(text: &str) -> Result<WebSettings, String> {
        let cfg = OperatorConfig::parse(text, Path::new("c.toml")).map_err(|e| e.to_string())?;
        cfg.web.settings().map_err(|e| e.to_string())
    }

    #[test]
    fn no_table_is_the_pair_on_without_search() {
        assert_eq!(web("").unwrap(), WebSettings::default());
        assert_eq!(web("[web]\n").unwrap(), WebSettings::default());
        assert!(!web("[web]\nenabled = false\n").unwrap().enabled);
    }

    #[test]
    fn every_key_parses() {
        let s = web(concat!(
            "[web]\nenabled = true\nports = [8080, 8443]\nconnect_timeout = 2.5\n",
            "first_byte_timeout = 5\ntimeout = 30\n",
            "[web.search]\nbackend = \"searxng\"\nurl = \"http://127.0.0.1:8888/\"\n",
        ))
        .unwrap();
        assert_eq!(s.ports, vec![8080, 8443]);
        assert_eq!(s.connect_timeout, Some(Duration::from_millis(2500)));
        assert_eq!(s.first_byte_timeout, Some(Duration::from_secs(5)));
        assert_eq!(s.timeout, Some(Duration::from_secs(30)));
        assert_eq!(
            s.search,
            Some(SearchSettings::Searxng {
                url: "http://127.0.0.1:8888/".into()
            })
        );
        let s = web("[web.search]\nbackend = \"brave\"\n").unwrap();
        assert_eq!(
            s.search,
            Some(SearchSettings::Brave {
                endpoint: None,
                key_env: BRAVE_KEY_ENV.into()
            })
        );
        let s = web(
            "[web.search]\nbackend = \"bing\"\nendpoint = \"http://127.0.0.1:9/v7\"\nkey_env = \"MY_KEY\"\n",
        )
        .unwrap();
        assert_eq!(
            s.search,
            Some(SearchSettings::Bing {
                endpoint: Some("http://127.0.0.1:9/v7".into()),
                key_env: "MY_KEY".into()
            })
        );
        assert_eq!(
            web("[web.search]\nbackend = \"bing\"\n").unwrap().search,
            Some(SearchSettings::Bing {
                endpoint: None,
                key_env: BING_KEY_ENV.into()
            })
        );
    }

    #[test]
    fn errors_name_the_key_and_what_would_do() {
        for (text, want) in [
            ("[web]\nport = [8080]\n", "unknown field `port`"),
            ("[web]\nports = [0]\n", "[web] ports: 0 is not a port"),
            ("[web]\nports = [70000]\n", "ports"),
            ("[web]\nenabled = \"yes\"\n", "enabled"),
            ("[web]\ntimeout = 0\n", "[web] timeout: 0 is out of bounds"),
            ("[web]\ntimeout = 1e9\n", "between 0.1 and 3600 seconds"),
            ("[web]\nconnect_timeout = -1\n", "[web] connect_timeout"),
            (
                "[web]\nfirst_byte_timeout = nan\n",
                "[web] first_byte_timeout",
            ),
            (
                "[web]\ntimeout = 5\nconnect_timeout = 10\n",
                "[web] connect_timeout: it is longer than timeout (5 s)",
            ),
            (
                "[web.search]\nbackend = \"google\"\n",
                "unknown variant `google`",
            ),
            (
                "[web.search]\nurl = \"http://x\"\n",
                "missing field `backend`",
            ),
            (
                "[web.search]\nbackend = \"searxng\"\n",
                "[web] search.url: the searxng backend needs the instance's base URL",
            ),
            (
                "[web.search]\nbackend = \"searxng\"\nurl = \"localhost:8888\"\n",
                "is not an http:// or https:// URL",
            ),
            (
                "[web.search]\nbackend = \"searxng\"\nurl = \"http://x\"\nkey_env = \"K\"\n",
                "[web] search.key_env: the searxng backend does not use it",
            ),
            (
                "[web.search]\nbackend = \"searxng\"\nurl = \"http://x\"\nendpoint = \"http://y\"\n",
                "[web] search.endpoint: the searxng backend does not use it",
            ),
            (
                "[web.search]\nbackend = \"brave\"\nurl = \"http://x\"\n",
                "[web] search.url: the brave backend does not use it",
            ),
            (
                "[web.search]\nbackend = \"brave\"\nendpoint = \"ftp://x\"\n",
                "[web] search.endpoint",
            ),
            (
                "[web.search]\nbackend = \"bing\"\nkey_env = \"sk-live-123 456\"\n",
                "is not an environment variable's name",
            ),
            (
                "[web.search]\nbackend = \"bing\"\nkey_env = \"1KEY\"\n",
                "[web] search.key_env",
            ),
        ] {
            let e = web(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(
                !e.contains("sk-live"),
                "a key pasted as key_env is not echoed: {e}"
            );
        }
    }
}
