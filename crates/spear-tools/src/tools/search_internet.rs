//! `search_internet {query, max_results?}`: asks the operator's search backend (`SearXNG`, Brave
//! or Bing) and returns its results: title, url and snippet, as text and in the envelope's `web`.
//!
//! The backend is the operator's, reached by the session's [`spear_web::Fetcher`] without the
//! address check (a `SearXNG` on this host is the usual setup) but with everything else a fetch
//! keeps; an API key goes in a header from the environment and never into a result or the audit
//! log. The results are text: a url in them is read, if at all, only with `fetch_url` and its
//! checks (Attack: a result pointing at `http://169.254.169.254/` gets no special path).

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ExecutionMode, ToolResult, ToolStatus};
use spear_runtime::WebAudit;
use spear_web::FetchError;
use spear_web::search::{Backend, MAX_QUERY_CHARS, MAX_RESULTS, SearchError};

use crate::Effect;
use crate::context::CallContext;
use crate::spec::ALL_MODES;
use crate::tool::{Access, Call, Outcome, Prepared, Resolved, ToolArgs, Typed};
use crate::web::{SearchHit, WebDetail, cancellable, redact_url};

/// Results asked for when the call names no `max_results`.
pub const DEFAULT_RESULTS: usize = 8;

/// Arguments of `search_internet`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInternetArgs {
    /// What to search for (at most 400 characters).
    pub query: String,
    /// How many results (default 8, at most 20).
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// The `search_internet` tool.
pub type SearchInternet = Typed<SearchInternetArgs>;

impl ToolArgs for SearchInternetArgs {
    const NAME: &'static str = "search_internet";
    const DESCRIPTION: &'static str = "Search the web. Returns each result's title, url and snippet; read a result's page \
        with fetch_url.";
    const EFFECT: Effect = Effect::Read;
    const MODES: &'static [ExecutionMode] = ALL_MODES;
    const IDEMPOTENT: bool = true;
    const OPEN_WORLD: bool = true;
    const WEB: Option<crate::WebTool> = Some(crate::WebTool::Search);

    fn validate(self) -> Result<Call, String> {
        let bad = |why: String| Err(format!("invalid arguments for search_internet: {why}"));
        let query = self.query.trim().to_owned();
        if query.is_empty() {
            return bad("`query` is empty".into());
        }
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return bad(format!(
                "`query` has {chars} characters; at most {MAX_QUERY_CHARS} are sent"
            ));
        }
        let max_results = self.max_results.unwrap_or(DEFAULT_RESULTS);
        if !(1..=MAX_RESULTS).contains(&max_results) {
            return bad(format!(
                "`max_results` must be between 1 and {MAX_RESULTS}, not {max_results}"
            ));
        }
        Ok(Call::Tool(Box::new(SearchCall { query, max_results })))
    }
}

/// A `search_internet` call whose arguments are valid.
struct SearchCall {
    query: String,
    max_results: usize,
}

impl SearchCall {
    fn chars(&self) -> usize {
        self.query.chars().count()
    }
}

impl Prepared for SearchCall {
    fn access(&self) -> Access {
        Access::default()
    }

    /// The audit log's target: the query's length, never the query (metadata only).
    fn target(&self) -> String {
        format!("a query of {} characters", self.chars())
    }

    fn describe(&self) -> String {
        format!("search_internet {:?}\n", self.query)
    }

    fn outgoing(&self) -> Vec<String> {
        vec![self.query.clone()]
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, _paths: &Resolved) -> Outcome {
        let (Some(fetcher), Some(backend)) = (cx.web.fetcher(), cx.web.backend()) else {
            return Outcome::of(ToolResult::failed(
                "search_internet has no search backend in this session",
            ));
        };
        let mut audit = WebAudit {
            url: endpoint(backend),
            query_chars: Some(self.chars() as u64),
            ..WebAudit::default()
        };
        let found = {
            // A query a person approved, known secret and all, goes out as approved.
            let fetcher = if cx.send_approved {
                fetcher.approved_as_asked()
            } else {
                fetcher.clone()
            };
            let backend = backend.clone();
            let (query, max) = (self.query.clone(), self.max_results);
            cancellable(cx.cancel.as_ref(), move || {
                spear_web::search::search(&fetcher, &backend, &query, max)
            })
        };
        let hits = match found {
            None => {
                let mut result = ToolResult::new(ToolStatus::Cancelled);
                result.reason = Some("cancelled while searching".into());
                return Outcome::of(result);
            }
            Some(Err(SearchError::Fetch {
                error: FetchError::Guarded { why },
                ..
            })) => {
                audit.refused = Some("known_secret".to_owned());
                return Outcome {
                    web_audit: Some(audit),
                    ..Outcome::of(ToolResult::denied(&spear_core::Refusal::secret_in_request(
                        self.target(),
                        why,
                    )))
                };
            }
            Some(Err(e)) => {
                let status = match &e {
                    SearchError::Fetch {
                        error: FetchError::Timeout { .. },
                        ..
                    } => ToolStatus::Timeout,
                    _ => ToolStatus::Failed,
                };
                return Outcome {
                    web_audit: Some(audit),
                    ..Outcome::of(ToolResult {
                        reason: Some(e.to_string()),
                        ..ToolResult::new(status)
                    })
                };
            }
            Some(Ok(hits)) => hits,
        };
        audit.results = Some(hits.len() as u64);
        let hits: Vec<SearchHit> = hits
            .into_iter()
            .map(|h| SearchHit {
                title: h.title,
                url: h.url,
                snippet: h.snippet,
            })
            .collect();
        let mut result = ToolResult::new(ToolStatus::Ok);
        result.exit_code = Some(0);
        result.stdout = render(backend.name(), &hits);
        Outcome {
            web: Some(WebDetail::Search {
                backend: backend.name().to_owned(),
                hits,
            }),
            web_audit: Some(audit),
            ..Outcome::of(result)
        }
    }
}

/// The results as the model reads them.
fn render(backend: &str, hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return format!("no results from {backend}; try other words\n");
    }
    let mut text = format!(
        "{} results from {backend}; read a page with fetch_url {{\"url\": \"...\"}}\n",
        hits.len()
    );
    for (i, h) in hits.iter().enumerate() {
        let _ = write!(text, "\n{}. {}\n   {}\n", i + 1, h.title, h.url);
        if !h.snippet.is_empty() {
            let _ = writeln!(text, "   {}", h.snippet);
        }
    }
    text
}

/// The endpoint the audit log names for `backend` (query values redacted; never the key, which
/// travels in a header).
fn endpoint(backend: &Backend) -> String {
    match backend {
        Backend::Searxng { url } => redact_url(&format!("{}/search", url.trim_end_matches('/'))),
        Backend::Brave { endpoint, .. } | Backend::Bing { endpoint, .. } => redact_url(endpoint),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::Tool as _;

    #[test]
    fn arguments_are_checked() {
        let tool = SearchInternet::new();
        assert!(
            tool.prepare(serde_json::json!({"query": "rust serde"}))
                .is_ok()
        );
        let long = "x".repeat(MAX_QUERY_CHARS + 1);
        for (args, want) in [
            (serde_json::json!({"query": "  "}), "`query` is empty"),
            (serde_json::json!({"query": long}), "at most 400 are sent"),
            (
                serde_json::json!({"query": "q", "max_results": 0}),
                "between 1 and 20, not 0",
            ),
            (
                serde_json::json!({"query": "q", "max_results": 21}),
                "not 21",
            ),
            (serde_json::json!({"q": "x"}), "unknown field `q`"),
        ] {
            let e = tool.prepare(args.clone()).err().unwrap();
            assert!(e.contains(want), "{args}: {e}");
        }
        let call = tool
            .prepare(serde_json::json!({"query": "my secret project name"}))
            .unwrap();
        assert_eq!(call.target(), "a query of 22 characters");
        let spec = tool.spec();
        assert!(spec.annotations.read_only && spec.annotations.open_world);
        assert!(!spec.annotations.destructive);
    }

    #[test]
    fn results_read_as_text() {
        let hits = vec![SearchHit {
            title: "Serde".into(),
            url: "https://serde.rs/".into(),
            snippet: "A framework".into(),
        }];
        let text = render("searxng", &hits);
        assert!(text.starts_with("1 results from searxng; read a page with fetch_url"));
        assert!(text.contains("\n1. Serde\n   https://serde.rs/\n   A framework\n"));
        assert!(render("brave", &[]).contains("no results from brave"));
        assert_eq!(
            endpoint(&Backend::Searxng {
                url: "http://127.0.0.1:8888/".into()
            }),
            "http://127.0.0.1:8888/search"
        );
    }
}
