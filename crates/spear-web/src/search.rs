//! `search_internet`'s backends: a `SearXNG` instance's JSON API, or the Brave or Bing web search
//! API with a key from the environment.
//!
//! The backend is the operator's choice, so its endpoint is fetched without the address check (a
//! `SearXNG` on this host is the usual setup) but with everything else a fetch keeps: no proxy,
//! pinned resolution, no redirects, time and byte caps ([`Fetcher::fetch_operator_endpoint`]).
//! The results are text for the model: each url is fetched, if at all, only through `fetch_url`
//! and its checks. Results whose url is not an http or https URL a fetch could ask for are
//! dropped (a `javascript:` or `file:` link has nothing to offer a model).

use serde::Deserialize;

use crate::fetch::{FetchError, Fetcher};
use crate::target::Target;

/// Bytes of a backend's answer read at most.
pub const ANSWER_CAP: u64 = 2 << 20;

/// Longest query sent (characters).
pub const MAX_QUERY_CHARS: usize = 400;

/// Most results asked for in one call.
pub const MAX_RESULTS: usize = 20;

/// Brave's web search endpoint.
pub const BRAVE_ENDPOINT: &str = "https://api.search.brave.com/res/v1/web/search";

/// Bing's web search endpoint.
pub const BING_ENDPOINT: &str = "https://api.bing.microsoft.com/v7.0/search";

/// A search backend, as the operator configured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A `SearXNG` instance (its base URL; `/search?format=json` is asked for), which must have
    /// the JSON format enabled.
    Searxng {
        /// The instance's base URL.
        url: String,
    },
    /// The Brave web search API.
    Brave {
        /// The endpoint ([`BRAVE_ENDPOINT`] unless the operator names another).
        endpoint: String,
        /// The environment variable holding the API key.
        key_env: String,
    },
    /// The Bing web search API.
    Bing {
        /// The endpoint ([`BING_ENDPOINT`] unless the operator names another).
        endpoint: String,
        /// The environment variable holding the API key.
        key_env: String,
    },
}

impl Backend {
    /// The backend's name (`searxng`, `brave`, `bing`).
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Searxng { .. } => "searxng",
            Backend::Brave { .. } => "brave",
            Backend::Bing { .. } => "bing",
        }
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hit {
    /// The page's title.
    pub title: String,
    /// Its URL (http or https).
    pub url: String,
    /// The backend's snippet, as plain text.
    pub snippet: String,
}

/// Why a search gave no results.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// An empty query.
    #[error("the query is empty")]
    EmptyQuery,
    /// The API key's variable is not set.
    #[error(
        "the {backend} search backend needs an API key in the environment variable {var}, which is not set in spear's environment"
    )]
    NoKey {
        /// The backend.
        backend: &'static str,
        /// The variable.
        var: String,
    },
    /// The backend could not be reached.
    #[error("the {backend} search backend could not be reached: {error}")]
    Fetch {
        /// The backend.
        backend: &'static str,
        /// The fetch's error.
        error: FetchError,
    },
    /// The backend answered with an error status.
    #[error("the {backend} search backend answered HTTP {status}{hint}")]
    Status {
        /// The backend.
        backend: &'static str,
        /// The status.
        status: u16,
        /// What it likely means.
        hint: &'static str,
    },
    /// The answer was not the backend's JSON.
    #[error("the {backend} search backend's answer could not be read: {why}")]
    Answer {
        /// The backend.
        backend: &'static str,
        /// Why.
        why: String,
    },
}

/// Searches `backend` for `query`, returning at most `max_results` (capped at [`MAX_RESULTS`]).
/// Blocks, as [`Fetcher::fetch`] does.
pub fn search(
    fetcher: &Fetcher,
    backend: &Backend,
    query: &str,
    max_results: usize,
) -> Result<Vec<Hit>, SearchError> {
    let query: String = query.trim().chars().take(MAX_QUERY_CHARS).collect();
    if query.is_empty() {
        return Err(SearchError::EmptyQuery);
    }
    let max_results = max_results.clamp(1, MAX_RESULTS);
    let name = backend.name();
    let (url, headers) = request(backend, &query, max_results)?;
    let answer = fetcher
        .fetch_operator_endpoint(&url, &headers, ANSWER_CAP)
        .map_err(|error| SearchError::Fetch {
            backend: name,
            error,
        })?;
    if !(200..300).contains(&answer.status) {
        let hint = match answer.status {
            401 | 403 => " (the API key was refused)",
            429 => " (rate limited: try again later)",
            _ => "",
        };
        return Err(SearchError::Status {
            backend: name,
            status: answer.status,
            hint,
        });
    }
    if answer.cut {
        return Err(SearchError::Answer {
            backend: name,
            why: format!("it is larger than {ANSWER_CAP} bytes"),
        });
    }
    let mut hits = parse(backend, &answer.body)?;
    hits.retain(|h| Target::parse(&h.url, &[]).is_ok());
    hits.truncate(max_results);
    Ok(hits)
}

/// A request's headers.
type Headers = Vec<(&'static str, String)>;

/// The request for `query`: its URL and headers (the key goes in a header, never the URL, so the
/// audit log's URL carries no secret).
fn request(
    backend: &Backend,
    query: &str,
    max_results: usize,
) -> Result<(String, Headers), SearchError> {
    let with_query = |base: &str, pairs: &[(&str, &str)]| {
        let mut url = url::Url::parse(base).map_err(|e| SearchError::Answer {
            backend: backend.name(),
            why: format!("the configured endpoint `{base}` is not a URL: {e}"),
        })?;
        url.query_pairs_mut().extend_pairs(pairs);
        Ok::<_, SearchError>(url.to_string())
    };
    let key = |var: &str| {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| SearchError::NoKey {
                backend: backend.name(),
                var: var.to_owned(),
            })
    };
    let count = max_results.to_string();
    match backend {
        Backend::Searxng { url } => {
            let base = format!("{}/search", url.trim_end_matches('/'));
            let url = with_query(&base, &[("q", query), ("format", "json")])?;
            Ok((url, vec![("accept", "application/json".to_owned())]))
        }
        Backend::Brave { endpoint, key_env } => {
            let url = with_query(endpoint, &[("q", query), ("count", &count)])?;
            Ok((
                url,
                vec![
                    ("accept", "application/json".to_owned()),
                    ("x-subscription-token", key(key_env)?),
                ],
            ))
        }
        Backend::Bing { endpoint, key_env } => {
            let url = with_query(endpoint, &[("q", query), ("count", &count)])?;
            Ok((
                url,
                vec![
                    ("accept", "application/json".to_owned()),
                    ("ocp-apim-subscription-key", key(key_env)?),
                ],
            ))
        }
    }
}

#[derive(Deserialize)]
struct SearxngAnswer {
    #[serde(default)]
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: String,
}

#[derive(Deserialize)]
struct BraveAnswer {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: String,
}

#[derive(Deserialize)]
struct BingAnswer {
    #[serde(default, rename = "webPages")]
    web_pages: Option<BingPages>,
}

#[derive(Deserialize)]
struct BingPages {
    #[serde(default)]
    value: Vec<BingResult>,
}

#[derive(Deserialize)]
struct BingResult {
    #[serde(default)]
    name: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    snippet: String,
}

/// The hits of a backend's JSON answer.
fn parse(backend: &Backend, body: &[u8]) -> Result<Vec<Hit>, SearchError> {
    let bad = |e: serde_json::Error| SearchError::Answer {
        backend: backend.name(),
        why: e.to_string(),
    };
    let hit = |title: String, url: String, snippet: String| Hit {
        title: plain(&title),
        url: url.trim().to_owned(),
        snippet: plain(&snippet),
    };
    Ok(match backend {
        Backend::Searxng { .. } => serde_json::from_slice::<SearxngAnswer>(body)
            .map_err(bad)?
            .results
            .into_iter()
            .map(|r| hit(r.title, r.url, r.content))
            .collect(),
        Backend::Brave { .. } => serde_json::from_slice::<BraveAnswer>(body)
            .map_err(bad)?
            .web
            .map(|w| w.results)
            .unwrap_or_default()
            .into_iter()
            .map(|r| hit(r.title, r.url, r.description))
            .collect(),
        Backend::Bing { .. } => serde_json::from_slice::<BingAnswer>(body)
            .map_err(bad)?
            .web_pages
            .map(|w| w.value)
            .unwrap_or_default()
            .into_iter()
            .map(|r| hit(r.name, r.url, r.snippet))
            .collect(),
    })
}

/// A snippet as plain text: the markup backends put in (`<strong>`, `&amp;`) taken out, the
/// whitespace collapsed. Snippets are short inline fragments, not pages, so tags are dropped
/// without a parser; the text between them is kept.
fn plain(snippet: &str) -> String {
    let mut text = String::with_capacity(snippet.len());
    let mut in_tag = false;
    for c in snippet.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn searxng() -> Backend {
        Backend::Searxng {
            url: "http://127.0.0.1:8888/".into(),
        }
    }

    #[test]
    fn each_backend_is_asked_its_own_way_with_the_key_in_a_header() {
        let (url, headers) = request(&searxng(), "rust serde & more", 5).unwrap();
        assert_eq!(
            url,
            "http://127.0.0.1:8888/search?q=rust+serde+%26+more&format=json"
        );
        assert_eq!(headers, vec![("accept", "application/json".to_owned())]);
        // PATH is set in every test environment: it stands in for a key variable.
        let brave = Backend::Brave {
            endpoint: BRAVE_ENDPOINT.into(),
            key_env: "PATH".into(),
        };
        let (url, headers) = request(&brave, "q", 3).unwrap();
        assert_eq!(url, format!("{BRAVE_ENDPOINT}?q=q&count=3"));
        assert_eq!(headers[1].0, "x-subscription-token");
        assert!(!url.contains(&headers[1].1));
        let bing = Backend::Bing {
            endpoint: BING_ENDPOINT.into(),
            key_env: "SPEAR_TEST_SURELY_UNSET_KEY".into(),
        };
        assert!(matches!(
            request(&bing, "q", 3),
            Err(SearchError::NoKey { var, .. }) if var == "SPEAR_TEST_SURELY_UNSET_KEY"
        ));
    }

    #[test]
    fn answers_become_plain_hits() {
        let searx = br#"{"query":"x","results":[
            {"title":"Serde <b>docs</b>","url":"https://serde.rs/","content":"Serde is a framework &amp; more"},
            {"title":"No url"},
            {"title":"Local","url":"file:///etc/passwd","content":"x"}]}"#;
        let hits = parse(&searxng(), searx).unwrap();
        assert_eq!(hits[0].title, "Serde docs");
        assert_eq!(hits[0].snippet, "Serde is a framework & more");
        assert_eq!(hits.len(), 3);
        let brave = br#"{"web":{"results":[{"title":"T","url":"https://a.example/","description":"<strong>d</strong>  e"}]}}"#;
        let b = Backend::Brave {
            endpoint: BRAVE_ENDPOINT.into(),
            key_env: "K".into(),
        };
        assert_eq!(
            parse(&b, brave).unwrap(),
            vec![Hit {
                title: "T".into(),
                url: "https://a.example/".into(),
                snippet: "d e".into()
            }]
        );
        let bing =
            br#"{"webPages":{"value":[{"name":"N","url":"http://b.example/x","snippet":"s"}]}}"#;
        let g = Backend::Bing {
            endpoint: BING_ENDPOINT.into(),
            key_env: "K".into(),
        };
        assert_eq!(parse(&g, bing).unwrap()[0].title, "N");
        // No results at all is an empty list, not an error; garbage is an error.
        assert!(parse(&b, b"{}").unwrap().is_empty());
        assert!(matches!(
            parse(&g, b"<html>"),
            Err(SearchError::Answer { .. })
        ));
    }
}
