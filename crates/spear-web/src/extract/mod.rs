//! A fetched body as text a model can read, and slices of it.
//!
//! [`extract`] is a pure function of the `Content-Type` header and the body's bytes:
//!
//! - `%PDF-` at the start of the body means a PDF whatever the type says (servers often send
//!   PDFs as `application/octet-stream`): [`Document::Pdf`], one string per page.
//! - `text/html`, `application/xhtml+xml`: [`Document::Text`] of kind [`TextKind::Html`], made by
//!   html5ever's parse (the tree a browser builds) and a walk of it (see [`html`]).
//! - other `text/*`, XML, YAML, TOML and JavaScript types: the text as it is ([`TextKind::Plain`]).
//! - `application/json`, `*+json`, NDJSON: the text as it is ([`TextKind::Json`]).
//! - no type at all (or an empty one): sniffed (PDF magic, then `<!doctype html` / `<html`, then
//!   text that is valid UTF-8 with no NUL or other binary control bytes).
//! - anything else, `application/octet-stream` without the PDF magic included:
//!   [`ExtractError::Unsupported`], naming the type.
//!
//! Charsets: a byte-order mark wins, then the `Content-Type` charset, then (HTML only) a
//! `<meta charset>` or `<meta http-equiv=content-type>` in the first 4 KiB; the default is
//! UTF-8. Decoding is lossy (bytes that do not decode become U+FFFD), never an error. JSON is
//! UTF-8 by its RFC (a BOM is honoured, a charset parameter is not).
//!
//! Nothing here does I/O; the work is linear in the body (the HTML tree's depth is capped at 512,
//! as browsers cap it, since tree building is quadratic in the depth; the walk is iterative, so
//! a deeply nested page cannot overflow the stack).

pub mod html;
mod parse;
pub mod pdf;
pub mod slice;

pub use slice::{Continuation, PageError, PageRange, Slice, slice_pages, slice_text};

use encoding_rs::{Encoding, UTF_8};

/// A body turned into text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Document {
    /// HTML as readable text, plain text, or JSON as it is.
    Text {
        /// The text.
        text: String,
        /// What it was.
        kind: TextKind,
    },
    /// A PDF, one string per page (page 1 first).
    Pdf {
        /// The pages' text.
        pages: Vec<String>,
    },
}

/// What a [`Document::Text`] was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// An HTML page, turned into readable text.
    Html,
    /// Plain text (`text/*` other than HTML).
    Plain,
    /// JSON, as it is.
    Json,
}

/// Why a body could not be made into text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    /// A content type `fetch_url` does not read.
    #[error(
        "the content type `{content_type}` is not one fetch_url reads (HTML, text, JSON, PDF); save it with `save_as` instead"
    )]
    Unsupported {
        /// The type, as the server named it (its essence, without parameters, at most
        /// [`MAX_NAMED_TYPE`] characters and with control characters replaced), or `unknown`.
        content_type: String,
    },
    /// A PDF that could not be read.
    #[error("the PDF could not be read: {0}")]
    Pdf(String),
}

/// The longest content type an [`ExtractError::Unsupported`] repeats; a longer one is cut and
/// ends in `...`. Stops a server from putting a page of its own text into the refusal the model
/// reads.
pub const MAX_NAMED_TYPE: usize = 100;

/// How far into an HTML body a `<meta charset>` is looked for.
const META_PRESCAN: usize = 4096;

/// What a body is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    Html,
    Plain,
    Json,
    Pdf,
}

/// A body as text: see the module documentation for what each content type becomes.
///
/// Guarantees: never panics on any input (PDF parsing is isolated, see [`pdf`]); a type it does
/// not read is refused by name rather than shown as mojibake; the output is valid UTF-8 whatever
/// the bytes were. Relative links in HTML stay as written (see [`extract_with_base`]).
pub fn extract(content_type: Option<&str>, body: &[u8]) -> Result<Document, ExtractError> {
    extract_with_base(content_type, body, None)
}

/// [`extract`], with relative links in an HTML page resolved against `base` (the page's final
/// URL) unless the page names its own `<base href>`. Only `http`, `https` and `mailto` links are
/// shown; `javascript:`, `data:` and fragment-only links are dropped.
pub fn extract_with_base(
    content_type: Option<&str>,
    body: &[u8],
    base: Option<&url::Url>,
) -> Result<Document, ExtractError> {
    let media = content_type
        .map(MediaType::parse)
        .filter(|m| !m.essence.is_empty());
    match reading(media.as_ref(), body)? {
        Reading::Pdf => pdf::pages(body).map(|pages| Document::Pdf { pages }),
        Reading::Html => {
            let declared = media.as_ref().and_then(MediaType::encoding);
            let encoding = declared
                .or_else(|| html::meta_charset(&body[..body.len().min(META_PRESCAN)]))
                .unwrap_or(UTF_8);
            let (text, _, _) = encoding.decode(body);
            Ok(Document::Text {
                text: html::to_text(&text, base),
                kind: TextKind::Html,
            })
        }
        Reading::Plain => {
            let encoding = media
                .as_ref()
                .and_then(MediaType::encoding)
                .unwrap_or(UTF_8);
            let (text, _, _) = encoding.decode(body);
            Ok(Document::Text {
                text: text.into_owned(),
                kind: TextKind::Plain,
            })
        }
        Reading::Json => {
            let (text, _, _) = UTF_8.decode(body);
            Ok(Document::Text {
                text: text.into_owned(),
                kind: TextKind::Json,
            })
        }
    }
}

/// Decides how a body is read, from its type and (for PDFs and untyped bodies) its first bytes.
fn reading(media: Option<&MediaType>, body: &[u8]) -> Result<Reading, ExtractError> {
    if is_pdf(body) {
        return Ok(Reading::Pdf);
    }
    let Some(media) = media else {
        return sniff(body).ok_or_else(|| ExtractError::Unsupported {
            content_type: "unknown".to_owned(),
        });
    };
    let essence = media.essence.as_str();
    let (top, sub) = essence.split_once('/').unwrap_or((essence, ""));
    let read = match (top, sub) {
        ("text", "html") | ("application", "xhtml+xml") => Some(Reading::Html),
        ("application", "pdf" | "x-pdf") => Some(Reading::Pdf),
        ("application", "json" | "x-ndjson" | "ndjson" | "jsonl")
        | ("text", "json" | "x-ndjson") => Some(Reading::Json),
        (_, s) if s.ends_with("+json") => Some(Reading::Json),
        ("text", _)
        | (
            "application",
            "xml" | "javascript" | "ecmascript" | "x-javascript" | "yaml" | "x-yaml" | "toml"
            | "x-sh" | "x-tex" | "sql",
        ) => Some(Reading::Plain),
        (_, s) if s.ends_with("+xml") => Some(Reading::Plain),
        _ => None,
    };
    read.ok_or_else(|| ExtractError::Unsupported {
        content_type: named_type(&media.written),
    })
}

/// `%PDF-` at the start, after at most a few bytes of whitespace.
fn is_pdf(body: &[u8]) -> bool {
    let start = body
        .iter()
        .take(16)
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    body[start..].starts_with(b"%PDF-")
}

/// What an untyped body looks like: HTML when it opens like a document, plain text when it is
/// UTF-8 without binary control bytes, else nothing (refused as `unknown`).
fn sniff(body: &[u8]) -> Option<Reading> {
    let head = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let start = head.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let head = &head[start..head.len().min(start + 64)];
    let opens = |tag: &[u8]| {
        head.len() >= tag.len()
            && head[..tag.len()].eq_ignore_ascii_case(tag)
            && head
                .get(tag.len())
                .is_none_or(|b| b.is_ascii_whitespace() || *b == b'>')
    };
    if opens(b"<!doctype html") || opens(b"<html") || opens(b"<head") || opens(b"<body") {
        return Some(Reading::Html);
    }
    let text = std::str::from_utf8(body).ok()?;
    let binary = text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c'));
    (!binary).then_some(Reading::Plain)
}

/// The type as a refusal repeats it: cut to [`MAX_NAMED_TYPE`] characters, control characters
/// replaced (stops a server from writing lines of its own into the message the model reads).
fn named_type(written: &str) -> String {
    let mut out: String = written
        .chars()
        .take(MAX_NAMED_TYPE)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if written.chars().nth(MAX_NAMED_TYPE).is_some() {
        out.push_str("...");
    }
    out
}

/// A `Content-Type` value: its essence (`type/subtype`, lowercased) and its charset parameter.
struct MediaType {
    /// The essence as written (trimmed), for messages.
    written: String,
    /// The essence, lowercased.
    essence: String,
    /// The `charset` parameter, unquoted.
    charset: Option<String>,
}

impl MediaType {
    fn parse(value: &str) -> MediaType {
        let mut parts = value.split(';');
        let written = parts.next().unwrap_or("").trim().to_owned();
        let charset = parts.find_map(|param| {
            let (name, value) = param.split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| value.trim().trim_matches('"').to_owned())
        });
        MediaType {
            essence: written.to_ascii_lowercase(),
            written,
            charset,
        }
    }

    /// The charset, when it names a WHATWG encoding.
    fn encoding(&self) -> Option<&'static Encoding> {
        self.charset
            .as_deref()
            .and_then(|label| Encoding::for_label(label.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn media_type_parameters() {
        let m = MediaType::parse(" Text/HTML ; foo=bar; Charset=\"ISO-8859-1\"");
        assert_eq!(m.essence, "text/html");
        assert_eq!(m.written, "Text/HTML");
        assert_eq!(m.encoding().unwrap().name(), "windows-1252");
    }

    #[test]
    fn named_types_are_bounded() {
        let long = format!("application/{}", "x".repeat(300));
        let named = named_type(&long);
        assert_eq!(named.chars().count(), MAX_NAMED_TYPE + 3);
        assert_eq!(named_type("a/b\nc"), "a/b?c");
    }
}
