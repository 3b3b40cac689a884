//! Redaction of secrets from text bound for the audit log. Pure: text in, text out.
//!
//! [`redact`] replaces every span that looks like a secret with [`REDACTED`]. It finds:
//! - values after a name that says "secret": `X_TOKEN=...`, `password: ...`, `--api-key=...`,
//!   `"client_secret": "..."`, and after a blank for a flag (`--token ...`), a bare `password`
//!   (netrc) or an identifier (`aws_secret_access_key ...`). The name holds `token`, `secret`,
//!   `passw`, `auth` (not `author`), `credential`, `cookie`, `apikey`, or ends in `key`/`pass`,
//!   in any case; `$TOKEN` is a reference and left alone. A value is read as a shell word
//!   (quoted pieces joined) up to a blank or the quote that encloses the assignment;
//! - `Authorization:` (and `Proxy-Authorization:`) headers: the scheme (`Bearer`, `Basic`, ...) is
//!   kept, the whole credential after it is not; `Cookie:` headers whole;
//! - the userinfo of a URL (`https://user:pass@host` becomes `https://[REDACTED]@host`);
//! - tokens by their shape: GitHub (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`),
//!   `OpenAI` and Anthropic (`sk-`, `sk-proj-`, `sk-ant-`), Slack (`xox?-`, `xapp-`), AWS key ids
//!   (`AKIA`, `ASIA`, ...), Google (`AIza`, `ya29.`), Stripe (`sk_live_`, `rk_live_`, ...), npm,
//!   GitLab, Hugging Face, `SendGrid`, `PyPI`, `DigitalOcean`, Shopify, age keys and JWTs;
//! - PEM blocks (`-----BEGIN ...-----` through `-----END ...-----`, over any number of lines; the
//!   armour lines stay, the body goes; a block with no END is redacted to the end of the text);
//! - long random-looking runs wherever they stand: hex of 32+ characters, or 20+ letters and
//!   digits that switch between lower case, upper case and digits as often as base64 does (the
//!   whole run goes, `/`, `.`, `-`, `_`, `+`, `=` included).
//!
//! Attack stopped: a secret reaching the audit log. A secret span is removed whole, so no fragment
//! of it longer than a few characters survives; redaction errs towards removing too much.

use std::borrow::Cow;
use std::ops::Range;

/// What a redacted span becomes.
pub const REDACTED: &str = "[REDACTED]";

/// `text` with every span that looks like a secret replaced by [`REDACTED`]; borrowed when
/// nothing was found.
pub fn redact(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    pem_blocks(b, &mut spans);
    url_userinfo(b, &mut spans);
    named_values(b, &mut spans);
    token_shapes(b, &mut spans);
    high_entropy_runs(b, &mut spans);
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_by_key(|s| (s.start, s.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut current: Option<Range<usize>> = None;
    for span in spans {
        let span = widen_to_chars(text, span);
        match &mut current {
            Some(cur) if span.start <= cur.end => cur.end = cur.end.max(span.end),
            _ => {
                if let Some(cur) = current.take() {
                    out.push_str(&text[at..cur.start]);
                    out.push_str(REDACTED);
                    at = cur.end;
                }
                current = Some(span);
            }
        }
    }
    if let Some(cur) = current {
        out.push_str(&text[at..cur.start]);
        out.push_str(REDACTED);
        at = cur.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// A span widened (never narrowed) to char boundaries, so slicing cannot panic.
fn widen_to_chars(text: &str, span: Range<usize>) -> Range<usize> {
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = span.end.clamp(start, text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

// ---------------------------------------------------------------------------------------------
// PEM blocks

fn pem_blocks(b: &[u8], spans: &mut Vec<Range<usize>>) {
    let mut from = 0;
    while let Some(begin) = find(b, b"-----BEGIN", from) {
        // The body starts after the armour line's closing dashes.
        let label_end = find(b, b"-----", begin + 10);
        let body = match label_end {
            Some(e) if !b[begin + 10..e].contains(&b'\n') => e + 5,
            _ => begin,
        };
        let Some(end) = find(b, b"-----END", body) else {
            if body < b.len() {
                spans.push(body..b.len());
            }
            return;
        };
        if end > body {
            spans.push(body..end);
        }
        from = end + 8;
    }
}

// ---------------------------------------------------------------------------------------------
// URL userinfo

pub(crate) fn url_userinfo(b: &[u8], spans: &mut Vec<Range<usize>>) {
    let mut from = 0;
    while let Some(sep) = find(b, b"://", from) {
        let start = sep + 3;
        let mut end = start;
        while end < b.len() && !is_authority_end(b[end]) {
            end += 1;
        }
        if let Some(at) = b[start..end].iter().rposition(|&c| c == b'@')
            && at > 0
        {
            spans.push(start..start + at);
        }
        from = end.max(start);
    }
}

fn is_authority_end(c: u8) -> bool {
    c.is_ascii_whitespace()
        || matches!(
            c,
            b'/' | b'?' | b'#' | b'\'' | b'"' | b'`' | b'<' | b'>' | b'\\'
        )
}

// ---------------------------------------------------------------------------------------------
// Named values: NAME=value, NAME: value, --name value, "name": "value"

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

fn is_quote(c: u8) -> bool {
    matches!(c, b'\'' | b'"')
}

/// How a name's value is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    /// One word (or one quoted string).
    Word,
    /// A header value: to the end of the line, or to the quote that encloses the header.
    Header,
    /// An `Authorization` header: a known scheme word is kept, then as [`ValueKind::Header`]
    /// (or one word for single-token schemes).
    Authorization,
}

/// Words that make a name a secret's wherever they stand in it.
const SECRET_WORDS: &[&[u8]] = &[
    b"token",
    b"secret",
    b"passw",
    b"apikey",
    b"api_key",
    b"api-key",
    b"accesskey",
    b"access_key",
    b"privatekey",
    b"private_key",
    b"credential",
    b"cookie",
    b"bearer",
];

/// Whether a name (as written, any case, leading dashes allowed) names a secret, and how its
/// value runs.
fn secret_name(name: &[u8]) -> Option<ValueKind> {
    let lower = name.to_ascii_lowercase();
    let trimmed: &[u8] = {
        let start = lower.iter().position(|&c| c != b'-').unwrap_or(lower.len());
        &lower[start..]
    };
    if trimmed.is_empty() {
        return None;
    }
    if trimmed.ends_with(b"authorization") {
        return Some(ValueKind::Authorization);
    }
    if trimmed == b"cookie" || trimmed == b"set-cookie" {
        return Some(ValueKind::Header);
    }
    let contains = |n: &[u8]| trimmed.windows(n.len()).any(|w| w == n);
    if SECRET_WORDS.iter().any(|n| contains(n)) {
        return Some(ValueKind::Word);
    }
    // `auth`, `oauth`, `auth_header`, `authentication` but not `author` or `authority`.
    let auth = trimmed
        .windows(4)
        .enumerate()
        .any(|(i, w)| w == b"auth" && !trimmed[i + 4..].starts_with(b"or"));
    if auth {
        return Some(ValueKind::Word);
    }
    let segments = trimmed
        .split(|&c| matches!(c, b'_' | b'-' | b'.'))
        .collect::<Vec<_>>();
    let segment_secret = segments
        .iter()
        .any(|s| matches!(*s, b"key" | b"keys" | b"pass" | b"pw" | b"pat" | b"dsn"))
        || (segments.len() > 1 && segments.contains(&&b"pwd"[..]));
    if segment_secret
        || trimmed.ends_with(b"key")
        || trimmed.ends_with(b"keys")
        || trimmed.ends_with(b"pass")
    {
        return Some(ValueKind::Word);
    }
    None
}

/// Authorization schemes whose credential is a single word.
const SINGLE_WORD_SCHEMES: &[&[u8]] = &[
    b"bearer", b"basic", b"token", b"bot", b"apikey", b"api-key", b"key", b"oauth", b"sso-key",
    b"splunk", b"jwt", b"pat",
];

/// Authorization schemes whose credential runs to the end of the header.
const LONG_SCHEMES: &[&[u8]] = &[
    b"digest",
    b"negotiate",
    b"ntlm",
    b"hoba",
    b"mutual",
    b"aws4-hmac-sha256",
    b"signature",
];

pub(crate) fn named_values(b: &[u8], spans: &mut Vec<Range<usize>>) {
    let mut i = 0;
    while i < b.len() {
        if !is_name_byte(b[i]) || (i > 0 && is_name_byte(b[i - 1])) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && is_name_byte(b[j]) {
            j += 1;
        }
        // `$TOKEN`, `${TOKEN}`: a reference to a secret, not one.
        let reference = i > 0 && matches!(b[i - 1], b'$' | b'{');
        let next = match secret_name(&b[i..j]).filter(|_| !reference) {
            Some(kind) => {
                let enclosing = (i > 0 && is_quote(b[i - 1])).then(|| b[i - 1]);
                value_after_name(b, i, j, kind, enclosing, spans).unwrap_or(j)
            }
            None => j,
        };
        i = next.max(j);
    }
}

/// Finds the value after the secret name `b[start..name_end]`, pushes its span, and returns where
/// scanning resumes; `None` when no separator follows.
fn value_after_name(
    b: &[u8],
    start: usize,
    name_end: usize,
    kind: ValueKind,
    enclosing: Option<u8>,
    spans: &mut Vec<Range<usize>>,
) -> Option<usize> {
    let mut at = name_end;
    // The closing quote of a quoted name: `"password": ...`, `\"password\": ...`.
    if b.get(at) == Some(&b'\\') && b.get(at + 1).copied().is_some_and(is_quote) {
        at += 2;
    } else if b.get(at).copied().is_some_and(is_quote) {
        at += 1;
    }
    let before_blank = at;
    at = skip_blanks(b, at);
    let value_start = match b.get(at) {
        Some(b'=') if b.get(at + 1) != Some(&b'=') => skip_blanks(b, at + 1),
        Some(b':') if b.get(at + 1) != Some(&b':') => skip_blanks(b, at + 1),
        // `--token VALUE`, `password VALUE` (netrc), `aws_secret_access_key VALUE`: a flag, a
        // bare password keyword or an identifier, followed by a word that is not a flag.
        Some(&next)
            if spaced_value_allowed(&b[start..name_end])
                && at > before_blank
                && at == skip_blanks(b, name_end)
                && next != b'-'
                && !matches!(next, b'\n' | b'\r' | b'|' | b';' | b'&' | b'>' | b'<') =>
        {
            at
        }
        _ => return None,
    };
    if value_start >= b.len() || matches!(b[value_start], b'\n' | b'\r') {
        return Some(value_start);
    }
    // A quoted header value (`"Authorization": "Bearer ..."`): its own quote encloses it.
    let (value_start, enclosing) = match kind {
        ValueKind::Word => (value_start, enclosing),
        ValueKind::Header | ValueKind::Authorization => {
            if b[value_start] == b'\\' && b.get(value_start + 1).copied().is_some_and(is_quote) {
                (value_start + 2, Some(b[value_start + 1]))
            } else if is_quote(b[value_start]) {
                (value_start + 1, Some(b[value_start]))
            } else {
                (value_start, enclosing)
            }
        }
    };
    let (vs, ve) = match kind {
        ValueKind::Word => word_value(b, value_start, enclosing),
        ValueKind::Header => (value_start, header_end(b, value_start, enclosing)),
        ValueKind::Authorization => {
            let mut scheme_end = value_start;
            while scheme_end < b.len()
                && (b[scheme_end].is_ascii_alphanumeric() || b[scheme_end] == b'-')
            {
                scheme_end += 1;
            }
            let scheme = b[value_start..scheme_end].to_ascii_lowercase();
            let has_blank = scheme_end < b.len() && matches!(b[scheme_end], b' ' | b'\t');
            if has_blank && SINGLE_WORD_SCHEMES.contains(&scheme.as_slice()) {
                let cred = skip_blanks(b, scheme_end);
                let (cred_start, cred_end) = word_value(b, cred, enclosing);
                // A single-word credential, and anything else up to the end of the header: a
                // token that someone split with a space must not leave its tail behind.
                let rest = header_end(b, cred_end, enclosing);
                let rest_is_blank = b[cred_end..rest].iter().all(u8::is_ascii_whitespace);
                (cred_start, if rest_is_blank { cred_end } else { rest })
            } else if has_blank && LONG_SCHEMES.contains(&scheme.as_slice()) {
                let cred = skip_blanks(b, scheme_end);
                (cred, header_end(b, cred, enclosing))
            } else {
                (value_start, header_end(b, value_start, enclosing))
            }
        }
    };
    if ve > vs {
        spans.push(vs..ve);
    }
    Some(ve.max(value_start))
}

/// Whether a secret name may take its value after a blank: a flag (`--token`), a bare `password`
/// or `passwd` (netrc), or an identifier with an underscore (`aws_secret_access_key`), which a
/// file name (`tokenizer.rs`) is not.
fn spaced_value_allowed(name: &[u8]) -> bool {
    name.first() == Some(&b'-')
        || name.eq_ignore_ascii_case(b"password")
        || name.eq_ignore_ascii_case(b"passwd")
        || (name.contains(&b'_') && !name.contains(&b'.'))
}

fn skip_blanks(b: &[u8], mut k: usize) -> usize {
    while k < b.len() && matches!(b[k], b' ' | b'\t') {
        k += 1;
    }
    k
}

/// The span of one value starting at `at`, as a shell would read one word: unquoted bytes and
/// quoted segments (`"..."`, `'...'`) run together up to a blank, `&`, a backtick, or the quote
/// that encloses the whole assignment (`'TOKEN=x'`, `"token=x"`). A value that is one quoted
/// string (`"..."`, or `\"...\"` in escaped JSON) gives its contents, so the quotes stay.
fn word_value(b: &[u8], at: usize, enclosing: Option<u8>) -> (usize, usize) {
    if at >= b.len() {
        return (at, at);
    }
    if b[at] == b'\\' && b.get(at + 1).copied().is_some_and(is_quote) {
        // An escaped quoted string (JSON inside JSON): ends at the same escaped quote.
        let quote = b[at + 1];
        let start = at + 2;
        let mut end = start;
        while end < b.len() && !(b[end] == b'\\' && b.get(end + 1) == Some(&quote)) {
            end += 1;
        }
        return (start, end);
    }
    if is_quote(b[at]) {
        let close = quoted_end(b, at);
        // `"abc"def`, `"abc"'def'`: the word goes on; `"abc",` or `"abc" ` ends it.
        let goes_on = b
            .get(close)
            .is_some_and(|&c| is_name_byte(c) || (is_quote(c) && Some(c) != enclosing));
        if !goes_on {
            return (at + 1, close.saturating_sub(1).max(at + 1));
        }
    }
    let mut end = at;
    while end < b.len() {
        let c = b[end];
        if c.is_ascii_whitespace() || matches!(c, b'&' | b'`') || Some(c) == enclosing {
            break;
        }
        if c == b'\\' && enclosing.is_some() && b.get(end + 1) == enclosing.as_ref() {
            // `\"` ends a value inside an escaped JSON string.
            break;
        }
        end = if is_quote(c) {
            quoted_end(b, end)
        } else {
            end + 1
        };
    }
    (at, end)
}

/// The index just past the quoted segment that opens at `b[open]` (backslash escapes count in
/// `"..."`); the end of the text when it is not closed.
fn quoted_end(b: &[u8], open: usize) -> usize {
    let quote = b[open];
    let mut end = open + 1;
    while end < b.len() && b[end] != quote {
        if b[end] == b'\\' && quote == b'"' {
            end += 1;
        }
        end += 1;
    }
    (end + 1).min(b.len())
}

/// Where a header value starting at `k` ends: the end of the line, or the unescaped quote that
/// encloses the header (`-H 'Authorization: ...'`).
fn header_end(b: &[u8], k: usize, enclosing: Option<u8>) -> usize {
    let mut e = k;
    while e < b.len() && !matches!(b[e], b'\n' | b'\r') {
        if let Some(q) = enclosing {
            if b[e] == b'\\' && b.get(e + 1) == Some(&q) {
                // An escaped enclosing quote (`\"` in JSON) ends the header too.
                break;
            }
            if b[e] == q {
                break;
            }
        }
        e += 1;
    }
    e
}

// ---------------------------------------------------------------------------------------------
// Token shapes

/// Which bytes a token's body may hold.
#[derive(Debug, Clone, Copy)]
enum Body {
    /// `[A-Za-z0-9]`
    Alnum,
    /// `[A-Z0-9]`
    UpperAlnum,
    /// `[A-Za-z0-9_-]`
    Url,
    /// `[A-Za-z0-9_.-]`
    UrlDot,
}

impl Body {
    fn allows(self, c: u8) -> bool {
        match self {
            Body::Alnum => c.is_ascii_alphanumeric(),
            Body::UpperAlnum => c.is_ascii_uppercase() || c.is_ascii_digit(),
            Body::Url => c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'),
            Body::UrlDot => c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'),
        }
    }
}

/// Known token prefixes, the bytes of their bodies, and the least body length that counts. The
/// prefixes that could start an ordinary word (`sk-learn`) also need a digit in the body.
const TOKEN_SHAPES: &[(&[u8], Body, usize)] = &[
    (b"ghp_", Body::Alnum, 20),
    (b"gho_", Body::Alnum, 20),
    (b"ghu_", Body::Alnum, 20),
    (b"ghs_", Body::Alnum, 20),
    (b"ghr_", Body::Alnum, 20),
    (b"github_pat_", Body::Url, 20),
    (b"glpat-", Body::Url, 20),
    (b"sk-", Body::Url, 20),
    (b"sk_live_", Body::Alnum, 16),
    (b"sk_test_", Body::Alnum, 16),
    (b"rk_live_", Body::Alnum, 16),
    (b"rk_test_", Body::Alnum, 16),
    (b"pk_live_", Body::Alnum, 16),
    (b"whsec_", Body::Alnum, 20),
    (b"xoxa-", Body::Url, 10),
    (b"xoxb-", Body::Url, 10),
    (b"xoxe-", Body::Url, 10),
    (b"xoxp-", Body::Url, 10),
    (b"xoxr-", Body::Url, 10),
    (b"xoxs-", Body::Url, 10),
    (b"xapp-", Body::Url, 10),
    (b"AKIA", Body::UpperAlnum, 16),
    (b"ASIA", Body::UpperAlnum, 16),
    (b"AGPA", Body::UpperAlnum, 16),
    (b"AIDA", Body::UpperAlnum, 16),
    (b"AROA", Body::UpperAlnum, 16),
    (b"AIPA", Body::UpperAlnum, 16),
    (b"ANPA", Body::UpperAlnum, 16),
    (b"ANVA", Body::UpperAlnum, 16),
    (b"ABIA", Body::UpperAlnum, 16),
    (b"ACCA", Body::UpperAlnum, 16),
    (b"AIza", Body::Url, 30),
    (b"ya29.", Body::UrlDot, 30),
    (b"npm_", Body::Alnum, 30),
    (b"hf_", Body::Alnum, 30),
    (b"SG.", Body::UrlDot, 30),
    (b"pypi-", Body::Url, 30),
    (b"dop_v1_", Body::Alnum, 32),
    (b"doo_v1_", Body::Alnum, 32),
    (b"shpat_", Body::Alnum, 32),
    (b"shpss_", Body::Alnum, 32),
    (b"shpca_", Body::Alnum, 32),
    (b"xai-", Body::Url, 30),
    (b"gsk_", Body::Alnum, 30),
    (b"AGE-SECRET-KEY-1", Body::UpperAlnum, 30),
    // JWTs: base64url JSON header, payload and signature joined by dots.
    (b"eyJ", Body::UrlDot, 20),
];

pub(crate) fn token_shapes(b: &[u8], spans: &mut Vec<Range<usize>>) {
    for i in 0..b.len() {
        if i > 0 && b[i - 1].is_ascii_alphanumeric() {
            continue;
        }
        for &(prefix, body, min) in TOKEN_SHAPES {
            if !b[i..].starts_with(prefix) {
                continue;
            }
            let s = i + prefix.len();
            let mut e = s;
            while e < b.len() && body.allows(b[e]) {
                e += 1;
            }
            let needs_digit = prefix.ends_with(b"-");
            if e - s >= min && (!needs_digit || b[s..e].iter().any(u8::is_ascii_digit)) {
                spans.push(i..e);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// High-entropy runs

fn is_run_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'_' | b'-' | b'.')
}

/// Whether a run of hex digits is a key or a digest: 32 or more, with letters and digits.
fn looks_hex(segment: &[u8]) -> bool {
    segment.len() >= 32
        && segment.iter().all(u8::is_ascii_hexdigit)
        && segment.iter().filter(|c| c.is_ascii_digit()).count() >= 2
        && segment.iter().filter(|c| c.is_ascii_alphabetic()).count() >= 2
}

/// Whether the letters and digits of `run` (20 or more, mixing lower case, upper case and
/// digits) switch class as often as random base64 does: one lower-to-upper or digit boundary per
/// four characters or more. Words, `CamelCase` names and versioned paths switch far less.
pub(crate) fn looks_random(run: &[u8]) -> bool {
    let alnum: Vec<u8> = run
        .iter()
        .copied()
        .filter(u8::is_ascii_alphanumeric)
        .collect();
    if alnum.len() < 20
        || !alnum.iter().any(u8::is_ascii_digit)
        || !alnum.iter().any(u8::is_ascii_lowercase)
        || !alnum.iter().any(u8::is_ascii_uppercase)
    {
        return false;
    }
    let switches = alnum
        .windows(2)
        .filter(|w| {
            (w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
                || (w[0].is_ascii_digit() != w[1].is_ascii_digit())
        })
        .count();
    switches * 4 >= alnum.len()
}

fn high_entropy_runs(b: &[u8], spans: &mut Vec<Range<usize>>) {
    let mut i = 0;
    while i < b.len() {
        if !is_run_byte(b[i]) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && is_run_byte(b[j]) {
            j += 1;
        }
        let run = &b[i..j];
        let random = looks_random(run)
            || run
                .split(|&c| matches!(c, b'/' | b'_' | b'-' | b'.'))
                .any(|segment| looks_hex(segment) || looks_random(segment));
        if random {
            spans.push(i..j);
        }
        i = j;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a table: one case per text, with what redaction leaves of it"
    )]
    fn redacts_table() {
        let cases: &[(&str, &str)] = &[
            ("git status", "git status"),
            ("src/main.rs", "src/main.rs"),
            (
                "crates/spear-policy/src/tokenizer.rs",
                "crates/spear-policy/src/tokenizer.rs",
            ),
            ("cargo test --all", "cargo test --all"),
            ("git log --author=bob", "git log --author=bob"),
            ("X_TOKEN=abc123 make", "X_TOKEN=[REDACTED] make"),
            ("password: hunter2", "password: [REDACTED]"),
            (
                "mysql --password=hunter2 db",
                "mysql --password=[REDACTED] db",
            ),
            ("gh --token abcdefgh repo", "gh --token [REDACTED] repo"),
            (
                "{\"client_secret\": \"s3cr3t\"}",
                "{\"client_secret\": \"[REDACTED]\"}",
            ),
            (
                "curl -H 'Authorization: Bearer abc.def' https://x.test/",
                "curl -H 'Authorization: Bearer [REDACTED]' https://x.test/",
            ),
            (
                "Authorization: Basic dXNlcjpwYXNz",
                "Authorization: Basic [REDACTED]",
            ),
            ("authorization=deadbeef", "authorization=[REDACTED]"),
            (
                "git clone https://user:pass@example.com/r.git",
                "git clone https://[REDACTED]@example.com/r.git",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
                "-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----",
            ),
            ("echo ghp_0123456789abcdefghijklmnop", "echo [REDACTED]"),
            ("id AKIAIOSFODNN7EXAMPLE ok", "id [REDACTED] ok"),
            ("a == b", "a == b"),
            ("X_TOKEN=ab'cd ef'gh next", "X_TOKEN=[REDACTED] next"),
            ("X_TOKEN=\"abc\"def'ghi' next", "X_TOKEN=[REDACTED] next"),
            (
                "{\"password\": \"abc\", \"user\": \"bob\"}",
                "{\"password\": \"[REDACTED]\", \"user\": \"bob\"}",
            ),
            (
                "sh -c 'API_TOKEN=abc123' next",
                "sh -c 'API_TOKEN=[REDACTED]' next",
            ),
            (
                "-H \"X-Api-Key: abc\" https://h.test/",
                "-H \"X-Api-Key: [REDACTED]\" https://h.test/",
            ),
            ("password=\"\"", "password=\"\""),
            ("auth::token", "auth::token"),
            (
                "sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
                "sha [REDACTED]",
            ),
            ("internationalization2024", "internationalization2024"),
            (
                "target/x86_64-unknown-linux-gnu/release",
                "target/x86_64-unknown-linux-gnu/release",
            ),
            ("sk-learn is a package", "sk-learn is a package"),
            (
                r#"{"headers":{"Authorization":"Bearer abcdef123"}}"#,
                r#"{"headers":{"Authorization":"Bearer [REDACTED]"}}"#,
            ),
            (
                "echo $GITHUB_TOKEN ${API_KEY} done",
                "echo $GITHUB_TOKEN ${API_KEY} done",
            ),
            (
                "machine h login bob password n3trcpw",
                "machine h login bob password [REDACTED]",
            ),
            (
                "aws configure set aws_secret_access_key abcd/efgh",
                "aws configure set aws_secret_access_key [REDACTED]",
            ),
            (
                "src/tokenizer.rs src/lexer.rs",
                "src/tokenizer.rs src/lexer.rs",
            ),
            ("HTTPServerRequest2Handler", "HTTPServerRequest2Handler"),
            (
                "550e8400-e29b-41d4-a716-446655440000",
                "550e8400-e29b-41d4-a716-446655440000",
            ),
            ("2024-02-29T12:34:56.789Z", "2024-02-29T12:34:56.789Z"),
            (
                "lib/x86_64-linux-gnu/libQt5WebEngineCore.so.5.15.2",
                "lib/x86_64-linux-gnu/libQt5WebEngineCore.so.5.15.2",
            ),
            (
                "key Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFi end",
                "key [REDACTED] end",
            ),
            (
                "Authorization: Digest a=\"1\", b=\"2\"",
                "Authorization: Digest [REDACTED]",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), *want, "{input}");
        }
    }

    #[test]
    fn nothing_found_borrows() {
        assert!(matches!(redact("git status"), Cow::Borrowed(_)));
        assert!(matches!(redact("TOKEN=x"), Cow::Owned(_)));
    }

    #[test]
    fn multibyte_text_never_panics() {
        for text in [
            "é=ü",
            "passwörd=ñ",
            "token=日本語 ok",
            "ghp_é",
            "https://ü:ö@h/",
            "-----BEGINé",
        ] {
            let _ = redact(text);
        }
        assert_eq!(redact("token=日本語 ok"), "token=[REDACTED] ok");
    }

    #[test]
    fn names_table() {
        let secret = [
            "TOKEN",
            "X_TOKEN",
            "--password",
            "DB_PASS",
            "apiKey",
            "AWS_SECRET_ACCESS_KEY",
            "auth",
            "oauth_code",
            "cookie",
            "SSH_KEY",
            "db_pwd",
            "GITLAB_PAT",
            "SENTRY_DSN",
        ];
        let plain = [
            "author",
            "authority",
            "PWD",
            "OLDPWD",
            "keyboard",
            "name",
            "--all",
            "tokens2",
        ];
        for n in secret {
            assert!(secret_name(n.as_bytes()).is_some(), "{n}");
        }
        for n in plain {
            // `tokens2` holds `token`: a name containing one of the words is a secret name.
            let want = n == "tokens2";
            assert_eq!(secret_name(n.as_bytes()).is_some(), want, "{n}");
        }
    }
}
