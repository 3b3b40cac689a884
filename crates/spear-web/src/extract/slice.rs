//! Slices of a long text or PDF, each naming what continues it: a model told only that an answer
//! was cut fetches the same url again and reads the same start.
//!
//! The promise both functions keep: following the continuations from the start reads the whole
//! document once, in order, with no gap and no overlap (every character of a text; every page of
//! a PDF, a page longer than a slice being cut, and saying so). Every slice makes progress, so
//! the chain ends. Sizes are counted in characters (Unicode scalar values), never bytes, and a
//! character is never split.

use std::fmt::{self, Write as _};
use std::str::FromStr;

/// One slice of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The slice's text.
    pub text: String,
    /// What to ask for next, when the document goes on.
    pub continuation: Option<Continuation>,
}

/// Where the next slice starts. Written (by `Display`) as the argument to pass: `offset N` or
/// `pages N-M`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuation {
    /// Text: the character offset to pass as `offset`.
    Offset(usize),
    /// A PDF: the pages to pass as `pages`.
    Pages(PageRange),
}

/// A range of PDF pages, both ends included, counted from 1: written `N-M` (or `N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRange {
    /// The first page.
    pub first: u32,
    /// The last page.
    pub last: u32,
}

impl fmt::Display for Continuation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Continuation::Offset(n) => write!(f, "offset {n}"),
            Continuation::Pages(range) => write!(f, "pages {range}"),
        }
    }
}

impl fmt::Display for PageRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// A `pages` argument that is not `N-M` or `N` with 1 <= N <= M.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a page range: write `N-M` (pages N to M, from 1) or `N`")]
pub struct BadPageRange(pub String);

impl FromStr for PageRange {
    type Err = BadPageRange;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadPageRange(s.to_owned());
        let page = |t: &str| t.trim().parse::<u32>().ok().filter(|n| *n >= 1);
        let (first, last) = if let Some((a, b)) = s.split_once('-') {
            (page(a).ok_or_else(bad)?, page(b).ok_or_else(bad)?)
        } else {
            let n = page(s).ok_or_else(bad)?;
            (n, n)
        };
        if first > last {
            return Err(bad());
        }
        Ok(PageRange { first, last })
    }
}

/// The smallest slice that [`slice_text`] and [`slice_pages`] make: a `max_chars` below it counts
/// as it (a slice of nothing would make no progress).
pub const MIN_CHARS: usize = 1;

/// How far back from a slice's end [`slice_text`] looks for a line or word boundary: a quarter
/// of the slice, at most this many characters.
const BOUNDARY_WINDOW: usize = 2000;

/// At most `max_chars` characters of `text`, from the character `offset` on.
///
/// Guarantees:
/// - the slice ends after a line break when one is in the last quarter of it (at most
///   2000 characters back), else after whitespace found there, else at exactly `max_chars`;
///   it is never empty while text remains (progress);
/// - `continuation` is `Some(Continuation::Offset(next))` exactly when text remains, `next` being
///   the character just after the slice, so the slices of a chain concatenate to `text`;
/// - an `offset` at or past the end gives an empty text and no continuation (the caller, which
///   knows the text's length, words the answer);
/// - `max_chars` below [`MIN_CHARS`] counts as [`MIN_CHARS`].
///
/// Costs `O(offset + max_chars)`.
pub fn slice_text(text: &str, offset: usize, max_chars: usize) -> Slice {
    let max_chars = max_chars.max(MIN_CHARS);
    let empty = Slice {
        text: String::new(),
        continuation: None,
    };
    let Some((start, _)) = text.char_indices().nth(offset) else {
        return empty;
    };
    let rest = &text[start..];
    let Some((hard_end, _)) = rest.char_indices().nth(max_chars) else {
        return Slice {
            text: rest.to_owned(),
            continuation: None,
        };
    };
    let window = (max_chars / 4).clamp(1, BOUNDARY_WINDOW);
    let mut after_space = None;
    let mut cut = hard_end;
    for (i, c) in rest[..hard_end].char_indices().rev().take(window) {
        if c == '\n' {
            cut = i + 1;
            after_space = None;
            break;
        }
        if after_space.is_none() && c.is_whitespace() {
            after_space = Some(i + c.len_utf8());
        }
    }
    if let Some(after) = after_space {
        cut = after;
    }
    let taken = &rest[..cut];
    let next = offset + taken.chars().count();
    Slice {
        text: taken.to_owned(),
        continuation: Some(Continuation::Offset(next)),
    }
}

/// A `pages` request that [`slice_pages`] cannot answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// The document has no pages at all.
    #[error("the PDF has no pages")]
    NoPages,
    /// The range starts after the last page.
    #[error("there is no page {}: the PDF has {total} page{}, 1-{total}", .requested.first, plural(*.total))]
    OutOfRange {
        /// The range as asked.
        requested: PageRange,
        /// How many pages there are.
        total: u32,
    },
    /// A range no parse would give: page 0, or its first page after its last.
    #[error("`{0}` is not a page range: pages count from 1, and N-M needs N <= M")]
    Invalid(PageRange),
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Whole pages of a PDF from `range.first` (page 1 without a range), as many as fit in
/// `max_chars` characters, each under a header line `--- page N of TOTAL ---`.
///
/// Guarantees:
/// - pages are never split between slices: a page that does not fit whole starts the next slice;
/// - the one exception is a page that alone is longer than `max_chars`: it is returned alone, cut
///   (at a line or word boundary, as [`slice_text`] cuts), followed by a line saying so and what
///   `max_chars` would read it whole; the continuation moves on to the next page, so the chain
///   still ends and no page is read twice;
/// - a page with no text says so (`(no text on this page ...)`) rather than showing nothing;
/// - `continuation` is `Some(Continuation::Pages(next..=last))` while pages of the request
///   remain, where `last` is the range's own last page when one was asked for (a model that
///   asked for `pages 1-40` and got 1-12 is told `pages 13-40`), else the document's last page
///   (`pages 13-41`); when the request is done there is none, and the headers' `of TOTAL` still
///   tell the model whether the document goes on;
/// - a range whose last page is past the end is read up to the end; one whose first page is past
///   the end is [`PageError::OutOfRange`] naming how many pages there are; page 0 or a reversed
///   range (possible only by building a `PageRange` by hand) is [`PageError::Invalid`]; an
///   empty document is [`PageError::NoPages`].
pub fn slice_pages(
    pages: &[String],
    range: Option<PageRange>,
    max_chars: usize,
) -> Result<Slice, PageError> {
    let max_chars = max_chars.max(MIN_CHARS);
    let total = u32::try_from(pages.len()).unwrap_or(u32::MAX);
    if total == 0 {
        return Err(PageError::NoPages);
    }
    let requested = range.unwrap_or(PageRange {
        first: 1,
        last: total,
    });
    if requested.first == 0 || requested.first > requested.last {
        return Err(PageError::Invalid(requested));
    }
    if requested.first > total {
        return Err(PageError::OutOfRange { requested, total });
    }
    let last = requested.last.min(total);
    let mut out = String::new();
    let mut used = 0usize;
    let mut number = requested.first;
    while number <= last {
        let index = usize::try_from(number - 1).unwrap_or(usize::MAX);
        let page = pages.get(index).map_or("", |p| p.trim());
        let header = format!("--- page {number} of {total} ---\n");
        let body = if page.is_empty() {
            "(no text on this page: it may be a scanned image)"
        } else {
            page
        };
        let header_chars = header.chars().count();
        let body_chars = body.chars().count();
        // The header, the text, and the blank line that parts it from the next page.
        let piece = header_chars + body_chars + 2;
        if used + piece <= max_chars {
            out.push_str(&header);
            out.push_str(body);
            out.push_str("\n\n");
            used += piece;
            number += 1;
            continue;
        }
        if used == 0 {
            // Alone and too long: cut, marked, and passed.
            let whole = piece;
            let note_estimate = 160;
            let room = max_chars
                .saturating_sub(header_chars + note_estimate)
                .max(MIN_CHARS);
            let cut = slice_text(body, 0, room).text;
            let shown = cut.chars().count();
            out.push_str(&header);
            out.push_str(cut.trim_end());
            let _ = write!(
                out,
                "\n[page {number} is cut here: {shown} of its {body_chars} characters are shown; \
                 ask for `pages {number}` with max_chars of at least {whole} to read it whole]\n\n"
            );
            number += 1;
        }
        break;
    }
    let end = out.trim_end().len();
    out.truncate(end);
    let continuation = (number <= last).then_some(Continuation::Pages(PageRange {
        first: number,
        last,
    }));
    Ok(Slice {
        text: out,
        continuation,
    })
}
