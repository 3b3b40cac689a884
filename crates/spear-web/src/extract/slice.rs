//! Slices of a long text or PDF, each naming what continues it: a model told only that an answer
//! was cut fetches the same url again and reads the same start.

use std::fmt;
use std::str::FromStr;

/// One slice of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The slice's text.
    pub text: String,
    /// What to ask for next, when the document goes on.
    pub continuation: Option<Continuation>,
}

/// Where the next slice starts.
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
