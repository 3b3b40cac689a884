//! `fetch_url {url, save_as?, pages?, offset?, max_chars?}`: reads a web page, a text or JSON
//! document or a PDF as text, one slice at a time, or saves what a URL answers into the
//! workspace.
//!
//! The fetch runs in spear's own process through the session's [`spear_web::Fetcher`]: the URL
//! guard and the address policy judge the URL and every address of every hop before anything
//! connects (Attack: server-side request forgery against the host, its networks or a metadata
//! service), proxies are ignored, time and bytes are capped. Reading needs no capability, so it
//! works in every mode.
//!
//! `save_as` names a workspace path ([`Access::writes`]): the router gates that call as it gates
//! `write_file` (request scope, the target policy, SAFE's refusal, ASK's question, checkpoint,
//! undo), all before anything is fetched. Once authorised the body is fetched (at most
//! [`spear_web::SAVE_CAP`]; a larger one is refused and nothing is written) before the session's
//! write lock is taken ([`Prepared::before_writing`]), so a slow server holds up no other write;
//! then it is checkpointed and written with the same atomic replace `write_file` uses.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ExecutionMode, ToolResult, ToolStatus};
use spear_web::extract::{Continuation, Document, PageRange, Slice, TextKind};
use spear_web::{Fetched, READ_CAP, SAVE_CAP};

use crate::Effect;
use crate::context::CallContext;
use crate::spec::ALL_MODES;
use crate::tool::{Access, Call, Outcome, Prepared, Resolved, ToolArgs, Typed};
use crate::web::{NextSlice, WebDetail, cancellable, fetch_failure, fetched_audit, redact_url};

/// Characters of a slice when the call names no `max_chars`.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

/// The smallest `max_chars` a call may ask for.
pub const MIN_MAX_CHARS: usize = 100;

/// The largest `max_chars` a call may ask for (below the router's preview, so a slice is never
/// cut in the middle by it).
pub const MAX_MAX_CHARS: usize = 40_000;

/// Characters of an error page's text shown with a failed status.
const ERROR_PAGE_CHARS: usize = 2_000;

/// Arguments of `fetch_url`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchUrlArgs {
    /// The http or https URL.
    pub url: String,
    /// Save the body to this workspace path instead of reading it (any content type, at most
    /// 64 MiB). Writes a file, so it is refused in SAFE and confirmed in ASK, like `write_file`.
    #[serde(default)]
    pub save_as: Option<String>,
    /// For a PDF: the pages to read, "N-M" (or "N"), from 1. The answer names the next range.
    #[serde(default)]
    pub pages: Option<String>,
    /// For text (HTML, plain text, JSON): the character to start at, from 0. The answer names
    /// the next offset.
    #[serde(default)]
    pub offset: Option<usize>,
    /// The most characters to return (default 20000, 100 to 40000).
    #[serde(default)]
    pub max_chars: Option<usize>,
}

/// The `fetch_url` tool.
pub type FetchUrl = Typed<FetchUrlArgs>;

impl ToolArgs for FetchUrlArgs {
    const NAME: &'static str = "fetch_url";
    const DESCRIPTION: &'static str = "Read a web page (HTML as readable text, plain text, JSON, or a PDF as text by pages) \
        from a public http or https URL. Long documents come in slices of `max_chars`; each answer \
        says exactly what to pass next (`offset` for text, `pages: \"N-M\"` for a PDF). With \
        `save_as`, the body is saved to that workspace path instead (any type; a file write, \
        refused in SAFE mode). Addresses of this host, its private networks and cloud metadata \
        services are refused.";
    const EFFECT: Effect = Effect::Read;
    const MODES: &'static [ExecutionMode] = ALL_MODES;
    const IDEMPOTENT: bool = true;
    const OPEN_WORLD: bool = true;
    const WRITES_WHEN_ASKED: bool = true;
    const WEB: Option<crate::WebTool> = Some(crate::WebTool::Fetch);

    fn validate(self) -> Result<Call, String> {
        let bad = |why: &str| Err(format!("invalid arguments for fetch_url: {why}"));
        if self.url.trim().is_empty() {
            return bad("`url` is empty");
        }
        let pages = match self.pages.as_deref().map(str::parse::<PageRange>) {
            None => None,
            Some(Ok(range)) => Some(range),
            Some(Err(e)) => return bad(&format!("`pages`: {e}")),
        };
        if pages.is_some() && self.offset.is_some() {
            return bad(
                "give `pages` (for a PDF) or `offset` (for text), not both: a document is one or the other",
            );
        }
        let max_chars = self.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
        if !(MIN_MAX_CHARS..=MAX_MAX_CHARS).contains(&max_chars) {
            return bad(&format!(
                "`max_chars` must be between {MIN_MAX_CHARS} and {MAX_MAX_CHARS}, not {max_chars}"
            ));
        }
        if let Some(path) = &self.save_as {
            if path.trim().is_empty() {
                return bad("`save_as` is empty");
            }
            if pages.is_some() || self.offset.is_some() || self.max_chars.is_some() {
                return bad(
                    "`save_as` saves the whole body; `pages`, `offset` and `max_chars` are for reading it",
                );
            }
        }
        Ok(Call::Tool(Box::new(FetchCall {
            url: self.url.trim().to_owned(),
            save_as: self.save_as,
            pages,
            offset: self.offset,
            max_chars,
            downloaded: None,
        })))
    }
}

/// A `fetch_url` call whose arguments are valid.
struct FetchCall {
    url: String,
    save_as: Option<String>,
    pages: Option<PageRange>,
    offset: Option<usize>,
    max_chars: usize,
    /// A `save_as` download made before the write lock ([`Prepared::before_writing`]).
    downloaded: Option<Download>,
}

impl Prepared for FetchCall {
    fn access(&self) -> Access {
        Access {
            reads: Vec::new(),
            writes: self.save_as.iter().cloned().collect(),
            removes: Vec::new(),
        }
    }

    fn target(&self) -> String {
        redact_url(&self.url)
    }

    fn outgoing(&self) -> Vec<String> {
        vec![self.url.clone()]
    }

    fn describe(&self) -> String {
        match &self.save_as {
            // The person asked sees the URL exactly as it will be fetched, and where it goes.
            Some(path) => format!(
                "fetch_url {} -> save_as {path}\n  downloads what the URL answers (at most {} MiB, any type) and writes it to {path}, replacing what is there\n",
                self.url,
                SAVE_CAP >> 20
            ),
            None => format!("fetch_url {}\n", self.url),
        }
    }

    fn before_writing(&mut self, cx: &CallContext<'_>) {
        if self.save_as.is_some() && self.downloaded.is_none() && cx.web.fetcher().is_some() {
            self.downloaded = Some(self.download(cx));
        }
    }

    fn run(mut self: Box<Self>, cx: &CallContext<'_>, paths: &Resolved) -> Outcome {
        let asked = cx.web.scrub(&self.target());
        if cx.web.fetcher().is_none() {
            return Outcome::of(ToolResult::failed(
                "fetch_url has no fetcher in this session",
            ));
        }
        let answer = match self.downloaded.take() {
            Some(answer) => answer,
            None => self.download(cx),
        };
        let answer = match answer {
            Download::Cancelled => None,
            Download::Done(answer) => Some(*answer),
        };
        let fetched = match answer {
            None => {
                let mut result = ToolResult::new(ToolStatus::Cancelled);
                result.reason = Some("cancelled while fetching; nothing was written".into());
                return Outcome::of(result);
            }
            Some(Err(e)) => {
                let (result, audit) = fetch_failure(cx.web, &asked, &e);
                return Outcome {
                    web_audit: Some(audit),
                    ..Outcome::of(result)
                };
            }
            Some(Ok(f)) => f,
        };
        let audit = fetched_audit(&asked, &fetched);
        let (result, detail) = match paths.writes.first() {
            Some(path) if self.save_as.is_some() => save(cx, path, &fetched),
            _ => self.read(&fetched),
        };
        Outcome {
            web: Some(detail),
            web_audit: Some(audit),
            ..Outcome::of(result)
        }
    }
}

/// What a fetch came to.
enum Download {
    /// The call was cancelled while it ran.
    Cancelled,
    /// Its answer.
    Done(Box<Result<Fetched, spear_web::FetchError>>),
}

impl FetchCall {
    /// The fetch (at most [`SAVE_CAP`] for `save_as`, [`READ_CAP`] to read).
    fn download(&self, cx: &CallContext<'_>) -> Download {
        let Some(client) = cx.web.fetcher().map(|f| {
            // A person approved this URL as it is, known secret and all: its first request is
            // sent; every redirect is still guarded.
            if cx.send_approved {
                f.approved_as_asked()
            } else {
                f.clone()
            }
        }) else {
            return Download::Done(Box::new(Err(spear_web::FetchError::Setup(
                "this session has no fetcher".into(),
            ))));
        };
        let cap = if self.save_as.is_some() {
            SAVE_CAP
        } else {
            READ_CAP
        };
        let url = self.url.clone();
        match cancellable(cx.cancel.as_ref(), move || client.fetch(&url, cap)) {
            Some(answer) => Download::Done(Box::new(answer)),
            None => Download::Cancelled,
        }
    }
}

/// The first lines of a result: where the answer came from and what it is.
fn header(f: &Fetched) -> String {
    let mut text = format!(
        "{} (HTTP {}, {}, {} bytes)\n",
        f.target.redacted(),
        f.status,
        f.content_type.as_deref().unwrap_or("no content type"),
        f.body.len()
    );
    if !f.hops.is_empty() {
        let hops: Vec<String> = f
            .hops
            .iter()
            .map(|h| format!("{} ({})", h.url, h.status))
            .collect();
        let _ = writeln!(text, "redirected from: {}", hops.join(" -> "));
    }
    text
}

fn detail(f: &Fetched, next: Option<NextSlice>, saved_as: Option<String>) -> WebDetail {
    WebDetail::Fetch {
        url: f.target.redacted(),
        http_status: f.status,
        content_type: f.content_type.clone(),
        bytes: f.body.len() as u64,
        next,
        saved_as,
    }
}

fn failed(reason: String, stdout: String) -> ToolResult {
    ToolResult {
        reason: Some(reason),
        stdout,
        ..ToolResult::new(ToolStatus::Failed)
    }
}

impl FetchCall {
    /// The slice asked for, or why there is none.
    fn read(&self, f: &Fetched) -> (ToolResult, WebDetail) {
        let mut text = header(f);
        if f.cut {
            let _ = writeln!(
                text,
                "[the body is larger than {} MiB: only its first {} MiB were read]",
                READ_CAP >> 20,
                READ_CAP >> 20
            );
        }
        // Relative links are shown resolved against the URL that answered (after redirects), so
        // that a model can fetch a link as it is shown.
        let doc = spear_web::extract::extract_with_base(
            f.content_type.as_deref(),
            &f.body,
            Some(f.target.url()),
        );
        if !(200..300).contains(&f.status) {
            // An error page often says what went wrong: a short slice of it comes along.
            if let Ok(Document::Text { text: page, .. }) = &doc {
                let shown: String = page.chars().take(ERROR_PAGE_CHARS).collect();
                if !shown.trim().is_empty() {
                    text.push('\n');
                    text.push_str(shown.trim_end());
                    text.push('\n');
                }
            }
            let reason = format!(
                "{} answered HTTP {}{}; no page was read",
                f.target.redacted(),
                f.status,
                status_phrase(f.status)
            );
            return (failed(reason, text), detail(f, None, None));
        }
        let doc = match doc {
            Ok(doc) => doc,
            Err(e) => {
                let mut reason = e.to_string();
                if f.cut {
                    let _ = write!(
                        reason,
                        " (only the first {} MiB were read: save it with `save_as` to have it whole)",
                        READ_CAP >> 20
                    );
                }
                return (failed(reason, text), detail(f, None, None));
            }
        };
        let sliced = match &doc {
            Document::Text { text: body, kind } => self.text_slice(body, *kind),
            Document::Pdf { pages } => self.pdf_slice(pages),
        };
        let (slice, position) = match sliced {
            Ok(done) => done,
            Err(reason) => return (failed(reason, text), detail(f, None, None)),
        };
        let _ = writeln!(text, "[{position}]\n");
        text.push_str(&slice.text);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let next = slice.continuation.map(|c| match c {
            Continuation::Offset(n) => NextSlice::Offset(n),
            Continuation::Pages(r) => NextSlice::Pages(r.to_string()),
        });
        match &next {
            Some(NextSlice::Offset(n)) => {
                let _ = writeln!(
                    text,
                    "\n[more follows: to read on, call fetch_url again with the same url and `offset: {n}`]"
                );
            }
            Some(NextSlice::Pages(r)) => {
                let _ = writeln!(
                    text,
                    "\n[more follows: to read on, call fetch_url again with the same url and `pages: \"{r}\"`]"
                );
            }
            None => {}
        }
        let mut result = ToolResult::new(ToolStatus::Ok);
        result.exit_code = Some(0);
        result.stdout = text;
        result.truncated = next.is_some() || f.cut;
        (result, detail(f, next, None))
    }
}

impl FetchCall {
    /// The slice of a text document asked for, and where it lies ("characters a-b of n"), or why
    /// there is none.
    fn text_slice(&self, body: &str, kind: TextKind) -> Result<(Slice, String), String> {
        if let Some(range) = self.pages {
            return Err(format!(
                "`pages: \"{range}\"` is for PDFs, and this is {}: read it with `offset` (characters, from 0)",
                kind_name(kind)
            ));
        }
        let total = body.chars().count();
        let offset = self.offset.unwrap_or(0);
        if offset > 0 && offset >= total {
            return Err(format!(
                "`offset` {offset} is past the end: the text has {total} characters"
            ));
        }
        let slice = spear_web::extract::slice::slice_text(body, offset, self.max_chars);
        let end = match slice.continuation {
            Some(Continuation::Offset(next)) => next,
            _ => total,
        };
        Ok((slice, format!("characters {offset}-{end} of {total}")))
    }

    /// The slice of a PDF asked for, and where it lies ("pages a-b of n"), or why there is none.
    fn pdf_slice(&self, pages: &[String]) -> Result<(Slice, String), String> {
        if let Some(offset) = self.offset {
            return Err(format!(
                "`offset: {offset}` is for text, and this is a PDF of {} pages: read it with `pages` (\"N-M\", from 1)",
                pages.len()
            ));
        }
        let slice = spear_web::extract::slice::slice_pages(pages, self.pages, self.max_chars)
            .map_err(|e| e.to_string())?;
        let count = u32::try_from(pages.len()).unwrap_or(u32::MAX);
        let first = self.pages.map_or(1, |r| r.first);
        let last = match slice.continuation {
            Some(Continuation::Pages(next)) if next.first > first => next.first - 1,
            Some(_) => first,
            None => self.pages.map_or(count, |r| r.last.min(count)),
        };
        Ok((slice, format!("pages {first}-{last} of {count}")))
    }
}

/// Writes the body to `path` (the router gated, authorised and checkpointed it), or says why not.
fn save(
    cx: &CallContext<'_>,
    path: &spear_workspace::ResolvedPath,
    f: &Fetched,
) -> (ToolResult, WebDetail) {
    let label = cx.workspace.label(&path.entry);
    let text = header(f);
    if f.cut {
        return (
            failed(
                format!(
                    "the body is larger than {} MiB, the most save_as writes; nothing was written to {label}",
                    SAVE_CAP >> 20
                ),
                text,
            ),
            detail(f, None, None),
        );
    }
    if !(200..300).contains(&f.status) {
        return (
            failed(
                format!(
                    "{} answered HTTP {}{}; nothing was written to {label}",
                    f.target.redacted(),
                    f.status,
                    status_phrase(f.status)
                ),
                text,
            ),
            detail(f, None, None),
        );
    }
    match cx.fs.write(path, &f.body) {
        Ok(done) => {
            let mut result = ToolResult::new(ToolStatus::Ok);
            result.exit_code = Some(0);
            result.stdout = format!(
                "{text}{} {label} ({} bytes, {})\n",
                if done.created { "created" } else { "wrote" },
                f.body.len(),
                f.content_type.as_deref().unwrap_or("no content type"),
            );
            result.changed_paths = vec![label.clone()];
            (result, detail(f, None, Some(label)))
        }
        Err(e) => (super::fs_failure(&e), detail(f, None, None)),
    }
}

fn kind_name(kind: TextKind) -> &'static str {
    match kind {
        TextKind::Html => "an HTML page",
        TextKind::Plain => "plain text",
        TextKind::Json => "JSON",
    }
}

/// The usual phrase of an HTTP status, in parentheses, for the common ones.
fn status_phrase(status: u16) -> &'static str {
    match status {
        400 => " (Bad Request)",
        401 => " (Unauthorized)",
        403 => " (Forbidden)",
        404 => " (Not Found)",
        405 => " (Method Not Allowed)",
        410 => " (Gone)",
        429 => " (Too Many Requests)",
        500 => " (Internal Server Error)",
        502 => " (Bad Gateway)",
        503 => " (Service Unavailable)",
        504 => " (Gateway Timeout)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::Tool as _;

    fn prepare(args: serde_json::Value) -> Result<Call, String> {
        FetchUrl::new().prepare(args)
    }

    #[test]
    fn arguments_are_checked_before_anything_is_fetched() {
        let ok = serde_json::json!({"url": "https://docs.rs/serde"});
        assert!(prepare(ok).is_ok());
        for (args, want) in [
            (serde_json::json!({"url": " "}), "`url` is empty"),
            (serde_json::json!({}), "missing field `url`"),
            (
                serde_json::json!({"url": "https://x.example", "pages": "0-3"}),
                "`pages`: `0-3` is not a page range",
            ),
            (
                serde_json::json!({"url": "https://x.example", "pages": "5-2"}),
                "`pages`: `5-2` is not a page range",
            ),
            (
                serde_json::json!({"url": "https://x.example", "pages": "x"}),
                "not a page range",
            ),
            (
                serde_json::json!({"url": "https://x.example", "pages": 3}),
                "`pages`: invalid type",
            ),
            (
                serde_json::json!({"url": "https://x.example", "pages": "1-2", "offset": 5}),
                "not both",
            ),
            (
                serde_json::json!({"url": "https://x.example", "max_chars": 99}),
                "`max_chars` must be between 100 and 40000, not 99",
            ),
            (
                serde_json::json!({"url": "https://x.example", "max_chars": 40_001}),
                "not 40001",
            ),
            (
                serde_json::json!({"url": "https://x.example", "offset": -1}),
                "`offset`: invalid value",
            ),
            (
                serde_json::json!({"url": "https://x.example", "save_as": ""}),
                "`save_as` is empty",
            ),
            (
                serde_json::json!({"url": "https://x.example", "save_as": "a.pdf", "pages": "1-2"}),
                "`save_as` saves the whole body",
            ),
            (
                serde_json::json!({"url": "https://x.example", "save_as": "a.pdf", "max_chars": 500}),
                "`save_as` saves the whole body",
            ),
            (
                serde_json::json!({"url": "https://x.example", "method": "POST"}),
                "unknown field `method`",
            ),
        ] {
            let e = prepare(args.clone()).err().unwrap();
            assert!(e.contains(want), "{args}: {e}");
            assert!(e.starts_with("invalid arguments for fetch_url"), "{e}");
        }
        for max in [MIN_MAX_CHARS, MAX_MAX_CHARS] {
            assert!(
                prepare(serde_json::json!({"url": "https://x.example", "max_chars": max})).is_ok()
            );
        }
        assert!(
            prepare(serde_json::json!({"url": "https://x.example", "pages": "7"})).is_ok(),
            "a single page"
        );
    }

    #[test]
    fn only_save_as_writes_and_the_target_is_redacted() {
        let read = prepare(serde_json::json!({"url": "https://x.example/a?token=s3cret"})).unwrap();
        assert_eq!(read.access(), Access::default());
        assert_eq!(read.target(), "https://x.example/a?token=REDACTED");
        let save = prepare(
            serde_json::json!({"url": "https://x.example/a.pdf?token=s3cret", "save_as": "docs/a.pdf"}),
        )
        .unwrap();
        assert_eq!(save.access().writes, vec!["docs/a.pdf".to_owned()]);
        assert!(!save.target().contains("s3cret"));
        // The person asked sees the URL as it will be fetched, and the file it goes to.
        let asked = save.describe();
        assert!(
            asked.starts_with(
                "fetch_url https://x.example/a.pdf?token=s3cret -> save_as docs/a.pdf"
            ),
            "{asked}"
        );
    }

    #[test]
    fn the_spec_is_open_world_and_not_read_only() {
        let tool = FetchUrl::new();
        let spec = tool.spec();
        assert_eq!(spec.effect, Effect::Read);
        assert!(spec.annotations.open_world);
        assert!(!spec.annotations.read_only);
        assert!(spec.annotations.destructive);
        assert_eq!(spec.web, Some(crate::WebTool::Fetch));
        assert_eq!(spec.modes, ALL_MODES);
    }
}
