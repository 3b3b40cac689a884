//! The `*** Begin Patch` envelope (the grammar of `OpenAI` Codex's `apply_patch`):
//!
//! ```text
//! *** Begin Patch
//! *** Add File: <path>        then lines starting with '+'
//! *** Delete File: <path>
//! *** Update File: <path>
//! *** Move to: <path>         (optional)
//! @@ [header]                 (the first hunk may omit it; several stack to narrow the search)
//! ' ' context, '-' removed, '+' added lines (an empty line is an empty context line)
//! *** End of File             (optional: the hunk ends at the end of the file)
//! *** End Patch
//! ```
//!
//! Markers start at the first column; trailing whitespace after them is ignored. Blank lines
//! between file sections are ignored.

use super::error::PatchError;
use super::model::{FilePatch, Hunk, HunkLine, Patch};
use super::syntax::{body_line, check_path, hint_index, parse_range_header, shown};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const EOF: &str = "*** End of File";

/// Parses `lines[start..end]`, whose first line is `*** Begin Patch`.
pub(super) fn parse(lines: &[&str], start: usize, end: usize) -> Result<Patch, PatchError> {
    let mut p = Parser {
        lines,
        pos: start,
        end,
    };
    debug_assert_eq!(lines[start].trim(), BEGIN);
    p.pos += 1;
    let mut files = Vec::new();
    loop {
        let Some(line) = p.peek() else {
            return Err(PatchError::syntax(
                p.pos + 1,
                "the patch ends without '*** End Patch'; add it as the last line",
            ));
        };
        let marker = line.trim_end();
        if marker.trim_start().is_empty() {
            p.pos += 1;
        } else if marker == END {
            p.pos += 1;
            if let Some(i) = (p.pos..p.end).find(|&i| !lines[i].trim().is_empty()) {
                return Err(PatchError::syntax(
                    i + 1,
                    format!(
                        "unexpected text after '*** End Patch': {}; end the patch there",
                        shown(lines[i])
                    ),
                ));
            }
            return Ok(Patch { files });
        } else if let Some(raw) = marker.strip_prefix(ADD) {
            let path = check_path(raw, p.pos + 1, ADD)?;
            p.pos += 1;
            let content = p.add_body(&path)?;
            files.push(FilePatch::Add { path, content });
        } else if let Some(raw) = marker.strip_prefix(DELETE) {
            let path = check_path(raw, p.pos + 1, DELETE)?;
            p.pos += 1;
            files.push(FilePatch::Delete { path });
        } else if let Some(raw) = marker.strip_prefix(UPDATE) {
            files.push(p.update(raw)?);
        } else {
            return Err(PatchError::syntax(
                p.pos + 1,
                format!(
                    "expected '*** Add File: <path>', '*** Update File: <path>', \
                     '*** Delete File: <path>' or '*** End Patch'; found {}",
                    shown(line)
                ),
            ));
        }
    }
}

/// A cursor over the envelope's lines.
struct Parser<'a, 'b> {
    lines: &'b [&'a str],
    /// The index of the next line.
    pos: usize,
    /// One past the last line of the patch proper.
    end: usize,
}

impl<'a> Parser<'a, '_> {
    fn peek(&self) -> Option<&'a str> {
        (self.pos < self.end).then(|| self.lines[self.pos])
    }

    /// True when only empty lines follow line `i` up to a line that is not a body line (a
    /// marker, or the end): such empty lines separate sections, they are no content. (A line
    /// holding a single space is an empty context line, never a separator.)
    fn blank_run_ends_section(&self, i: usize, is_body: impl Fn(&str) -> bool) -> bool {
        (i..self.end)
            .find(|&j| !self.lines[j].is_empty())
            .is_none_or(|j| !is_body(self.lines[j]))
    }

    /// The lines of an `*** Add File:` section, each without its '+', joined with '\n' and ending
    /// with one.
    fn add_body(&mut self, path: &str) -> Result<String, PatchError> {
        let mut content = String::new();
        while let Some(line) = self.peek() {
            if let Some(text) = line.strip_prefix('+') {
                content.push_str(text);
                content.push('\n');
            } else if line.trim().is_empty() {
                let is_add =
                    |l: &str| l.starts_with('+') || (!l.starts_with("***") && l.trim().is_empty());
                if line.is_empty() && self.blank_run_ends_section(self.pos, is_add) {
                    break;
                }
                content.push('\n');
            } else if line.starts_with("***") {
                break;
            } else {
                return Err(PatchError::syntax(
                    self.pos + 1,
                    format!(
                        "every line of '*** Add File: {path}' starts with '+'; found {}",
                        shown(line)
                    ),
                ));
            }
            self.pos += 1;
        }
        Ok(content)
    }

    /// An `*** Update File:` section, from its marker line to the line before the next marker.
    fn update(&mut self, raw: &str) -> Result<FilePatch, PatchError> {
        let header_line = self.pos + 1;
        let path = check_path(raw, header_line, UPDATE)?;
        self.pos += 1;
        let mut move_to = None;
        if let Some(raw) = self.peek().and_then(|l| l.trim_end().strip_prefix(MOVE)) {
            move_to = Some(check_path(raw, self.pos + 1, MOVE)?);
            self.pos += 1;
        }
        let hunks = self.hunks()?;
        if hunks.is_empty() && move_to.is_none() {
            return Err(PatchError::syntax(
                header_line,
                format!(
                    "'*** Update File: {path}' has no hunks: add '@@' hunks with the changes, or \
                     remove the section"
                ),
            ));
        }
        Ok(FilePatch::Update {
            path,
            move_to,
            hunks,
        })
    }

    /// The hunks of an `*** Update File:` section, up to the next marker.
    fn hunks(&mut self) -> Result<Vec<Hunk>, PatchError> {
        let mut hunks: Vec<Hunk> = Vec::new();
        // The hunk being read: open for more body lines until a '@@', an End of File or a marker.
        let mut open: Option<Hunk> = None;
        let mut open_line = self.pos + 1;
        while let Some(line) = self.peek() {
            let trimmed = line.trim_end();
            if let Some(rest) = line.strip_prefix("@@") {
                match open.as_mut() {
                    // Stacked headers ("@@ class A" then "@@ fn f") narrow the same hunk.
                    Some(h) if h.lines.is_empty() => add_header(h, rest),
                    _ => {
                        if let Some(h) = open.take() {
                            hunks.push(h);
                        }
                        let mut h = empty_hunk();
                        add_header(&mut h, rest);
                        open = Some(h);
                        open_line = self.pos + 1;
                    }
                }
            } else if trimmed == EOF {
                match open.take() {
                    Some(mut h) if !h.lines.is_empty() => {
                        h.end_of_file = true;
                        hunks.push(h);
                    }
                    _ => {
                        return Err(PatchError::syntax(
                            self.pos + 1,
                            "'*** End of File' must follow a hunk's lines",
                        ));
                    }
                }
            } else if line.starts_with("***") {
                break;
            } else if let Some(h) = open
                .as_mut()
                .filter(|h| line.starts_with("\\ ") && !h.lines.is_empty())
            {
                no_newline_marker(h);
            } else if let Some(body) = body_line(line, true) {
                if line.is_empty() && self.blank_run_ends_section(self.pos, is_body) {
                    // Blank lines before the next marker separate sections.
                    self.pos += 1;
                    continue;
                }
                let h = match open.as_mut() {
                    Some(h) => h,
                    // The first hunk may come without its '@@'.
                    None if hunks.is_empty() => {
                        open_line = self.pos + 1;
                        open.insert(empty_hunk())
                    }
                    None => {
                        return Err(PatchError::syntax(
                            self.pos + 1,
                            format!(
                                "expected '@@' to start the next hunk (after '*** End of File'); \
                                 found {}",
                                shown(line)
                            ),
                        ));
                    }
                };
                h.lines.push(body);
            } else {
                return Err(PatchError::syntax(
                    self.pos + 1,
                    format!(
                        "expected a hunk line starting with ' ' (context), '-' (remove) or '+' \
                         (add), a '@@' line, or a '*** ' marker; found {}",
                        shown(line)
                    ),
                ));
            }
            self.pos += 1;
        }
        if let Some(h) = open {
            if h.lines.is_empty() {
                return Err(PatchError::syntax(
                    open_line,
                    "this hunk has no lines: add ' ' context, '-' and '+' lines after its '@@'",
                ));
            }
            hunks.push(h);
        }
        Ok(hunks)
    }
}

/// A unified diff's `\ No newline at end of file`, as models carry it over: the hunk ends the
/// file, and whether the file ends with a newline follows from the line before the marker.
fn no_newline_marker(h: &mut Hunk) {
    match h.lines.last() {
        Some(HunkLine::Add(_) | HunkLine::Context(_)) => h.final_newline = Some(false),
        _ if h.final_newline.is_none() => h.final_newline = Some(true),
        _ => {}
    }
    h.end_of_file = true;
}

/// A hunk with nothing in it yet.
fn empty_hunk() -> Hunk {
    Hunk {
        context: Vec::new(),
        line_hint: None,
        lines: Vec::new(),
        end_of_file: false,
        final_newline: None,
    }
}

/// Records what follows a `@@`: nothing, a header line to locate, or (as a model may write in an
/// envelope too) a unified `-l,c +l,c @@` range, kept as a line hint.
fn add_header(h: &mut Hunk, rest: &str) {
    if let Some(range) = parse_range_header(rest) {
        h.line_hint = Some(hint_index(range.old_start, range.old_count));
        return;
    }
    let header = rest.strip_prefix(' ').unwrap_or(rest).trim_end();
    if !header.trim().is_empty() {
        h.context.push(header.to_owned());
    }
}

/// Whether a line is a hunk body line.
fn is_body(line: &str) -> bool {
    body_line(line, true).is_some()
}
