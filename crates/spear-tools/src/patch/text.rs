//! A text file as lines that keep their own endings, and back to bytes.
//!
//! Lines are split at `\n`; a `\r` before it belongs to the ending, so a CRLF file and an LF
//! patch compare equal. A UTF-8 byte order mark is set aside and put back.

const BOM: &str = "\u{feff}";

/// How a line ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Eol {
    /// `\n`.
    Lf,
    /// `\r\n`.
    CrLf,
    /// No ending: the last line of a file without a final newline, or (in output) a new line
    /// that takes the file's dominant ending.
    None,
}

impl Eol {
    fn as_str(self) -> &'static str {
        match self {
            Self::Lf => "\n",
            Self::CrLf => "\r\n",
            Self::None => "",
        }
    }
}

/// A text file split into lines.
#[derive(Debug)]
pub(super) struct TextFile<'a> {
    /// Whether it starts with a UTF-8 byte order mark (not part of the first line).
    pub bom: bool,
    /// Each line's text (without ending) and ending.
    pub lines: Vec<(&'a str, Eol)>,
    /// Whether the file ends with a line ending (true for an empty file).
    pub final_newline: bool,
    /// The ending new lines take: CRLF when most lines end so, else LF.
    pub dominant: Eol,
}

impl<'a> TextFile<'a> {
    /// Splits `content` into lines.
    pub fn split(content: &'a str) -> Self {
        let (bom, body) = match content.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, content),
        };
        let mut lines = Vec::new();
        let (mut lf, mut crlf) = (0usize, 0usize);
        for piece in body.split_inclusive('\n') {
            if let Some(text) = piece.strip_suffix("\r\n") {
                crlf += 1;
                lines.push((text, Eol::CrLf));
            } else if let Some(text) = piece.strip_suffix('\n') {
                lf += 1;
                lines.push((text, Eol::Lf));
            } else {
                lines.push((piece, Eol::None));
            }
        }
        Self {
            bom,
            lines,
            final_newline: body.is_empty() || body.ends_with('\n'),
            dominant: if crlf > lf { Eol::CrLf } else { Eol::Lf },
        }
    }

    /// The lines' texts.
    pub fn texts(&self) -> Vec<&'a str> {
        self.lines.iter().map(|(t, _)| *t).collect()
    }

    /// Renders `lines` as this file would: every line but the last ends with its own ending or
    /// the dominant one; the last ends so only when `final_newline`.
    pub fn render(&self, lines: &[(&str, Eol)], final_newline: bool) -> Vec<u8> {
        let mut out = String::new();
        if self.bom {
            out.push_str(BOM);
        }
        let last = lines.len().saturating_sub(1);
        for (i, &(text, eol)) in lines.iter().enumerate() {
            out.push_str(text);
            let eol = match eol {
                _ if i == last && !final_newline => Eol::None,
                Eol::None => self.dominant,
                own => own,
            };
            out.push_str(eol.as_str());
        }
        out.into_bytes()
    }
}
