//! `read_file {path, offset?, limit?}`: a text file, line-numbered, paged to any line.
//!
//! The file is streamed, never loaded whole: a call keeps at most the lines it shows (each cut at
//! [`MAX_LINE_CHARS`], the page at [`crate::ToolLimits::read_max_bytes`] of output), and reads at
//! most [`SKIP_BUDGET`] bytes to reach its first line and [`COUNT_BUDGET`] more to count the
//! lines after the page. Attack: a 20 GB sparse file, or one that never ends, must not exhaust
//! the harness's memory or hold the call for minutes. The answer says "lines a-b of N" and the
//! next offset, or "of at least N" where counting stopped. A binary file is refused with a
//! reason; a fifo, socket or device is refused without blocking (the file layer opens with
//! `O_NONBLOCK` and accepts regular files only). Paths resolve inside the roots, so
//! `/proc/self/environ` (the harness's own secrets) is refused before anything is opened.

use std::fmt::Write as _;
use std::io::{BufRead, Read};

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ToolResult, ToolStatus};

use crate::Effect;
use crate::context::CallContext;
use crate::spec::ALL_MODES;
use crate::tool::{Access, Call, Outcome, Prepared, Resolved, ToolArgs, Typed};
use spear_core::ExecutionMode;

/// Lines shown when the call names no limit.
const DEFAULT_LINES: usize = 2000;

/// Bytes looked at for a NUL byte, to tell a binary file.
const BINARY_PROBE: usize = 8192;

/// Characters of one line shown; the rest is cut with a marker.
const MAX_LINE_CHARS: usize = 2000;

/// Bytes of one line kept while reading it (enough for [`MAX_LINE_CHARS`] of any UTF-8).
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

/// Bytes read at most to reach the first line asked for (about a second of reading).
pub const SKIP_BUDGET: u64 = 1 << 30;

/// Bytes read at most after the page to count the file's remaining lines.
pub const COUNT_BUDGET: u64 = 64 << 20;

/// Arguments of `read_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file, relative to the workspace or absolute under it.
    pub path: String,
    /// The first line to show, counting from 1.
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many lines to show (default 2000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The `read_file` tool.
pub type ReadFile = Typed<ReadFileArgs>;

impl ToolArgs for ReadFileArgs {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a text file of the workspace, with line numbers. `offset` is the first line \
        (from 1) and `limit` the number of lines (default 2000); files of any size page \
        to any line, and the answer names the next offset. Binary files are refused.";
    const EFFECT: Effect = Effect::Read;
    const MODES: &'static [ExecutionMode] = ALL_MODES;
    const IDEMPOTENT: bool = true;
    const QUICK: bool = true;

    fn validate(self) -> Result<Call, String> {
        if self.offset == Some(0) {
            return Err("invalid arguments for read_file: `offset` counts lines from 1".into());
        }
        if self.limit == Some(0) {
            return Err("invalid arguments for read_file: `limit` must be at least 1".into());
        }
        Ok(Call::Tool(Box::new(self)))
    }
}

impl Prepared for ReadFileArgs {
    fn access(&self) -> Access {
        Access {
            reads: vec![self.path.clone()],
            writes: Vec::new(),
            removes: Vec::new(),
        }
    }

    fn target(&self) -> String {
        self.path.clone()
    }

    fn describe(&self) -> String {
        format!("read_file {}", self.path)
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, paths: &Resolved) -> Outcome {
        let Some(path) = paths.reads.first() else {
            return Outcome::of(ToolResult::failed("read_file got no path"));
        };
        let label = cx.workspace.label(&path.target);
        let (mut file, size) = match cx.fs.open_file(&path.target) {
            Ok(f) => f,
            Err(e) => return Outcome::of(super::fs_failure(&e)),
        };
        let io_failure = |e: &std::io::Error| {
            Outcome::of(ToolResult {
                reason: Some(format!("{label} could not be read: {e}")),
                ..ToolResult::new(ToolStatus::Failed)
            })
        };
        let mut probe = Vec::with_capacity(BINARY_PROBE);
        if let Err(e) = (&mut file)
            .take(BINARY_PROBE as u64)
            .read_to_end(&mut probe)
        {
            return io_failure(&e);
        }
        if probe.contains(&0) {
            return Outcome::of(ToolResult {
                reason: Some(format!(
                    "{label} is a binary file ({size} bytes); read_file shows text only. Inspect it with the terminal (`file {label}`, `xxd {label} | head`)"
                )),
                ..ToolResult::new(ToolStatus::Failed)
            });
        }
        let window = Window {
            first: self.offset.unwrap_or(1),
            count: self.limit.unwrap_or(DEFAULT_LINES as u64),
            max_output: usize::try_from(cx.limits.read_max_bytes).unwrap_or(usize::MAX),
            skip_budget: SKIP_BUDGET,
            count_budget: COUNT_BUDGET,
        };
        let page = match read_page(std::io::Cursor::new(probe).chain(file), &window) {
            Ok(p) => p,
            Err(e) => return io_failure(&e),
        };
        let mut result = ToolResult::new(ToolStatus::Ok);
        result.exit_code = Some(0);
        result.truncated = page.more_after();
        result.stdout = page.render(&label, size);
        Outcome::of(result)
    }
}

/// Which lines to show, and the bounds of one call.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The first line, from 1.
    pub first: u64,
    /// Lines to show at most.
    pub count: u64,
    /// Bytes of shown text at most.
    pub max_output: usize,
    /// Bytes read at most to reach `first`.
    pub skip_budget: u64,
    /// Bytes read at most after the page, to count the rest.
    pub count_budget: u64,
}

/// How many lines the file has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Total {
    /// Counted to the end.
    Exact(u64),
    /// Counting stopped at the budget: at least this many.
    AtLeast(u64),
}

/// One page of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The shown lines, numbered.
    pub text: String,
    /// The first line asked for.
    pub first: u64,
    /// How many lines are shown.
    pub shown: u64,
    /// The file's lines.
    pub total: Total,
    /// The first line was not reached within the skip budget (`total` is then how far it got).
    pub unreached: bool,
}

impl Page {
    /// Whether lines follow the page.
    pub fn more_after(&self) -> bool {
        let end = self.first + self.shown;
        match self.total {
            _ if self.unreached => true,
            Total::Exact(n) => self.shown > 0 && end <= n,
            // Counting stopped with bytes left: a line follows.
            Total::AtLeast(_) => self.shown > 0,
        }
    }

    /// The page as the model reads it: the lines, then one bracketed line saying where it is.
    pub fn render(&self, label: &str, size: u64) -> String {
        let mut out = self.text.clone();
        let of = match self.total {
            Total::Exact(n) => format!("{n}"),
            Total::AtLeast(n) => format!(
                "at least {n} (counting stopped after {} MiB more of this {size}-byte file)",
                COUNT_BUDGET >> 20
            ),
        };
        let last = self.first + self.shown.saturating_sub(1);
        if self.unreached {
            let reached = match self.total {
                Total::Exact(n) | Total::AtLeast(n) => n,
            };
            let _ = writeln!(
                out,
                "[offset {} is beyond the first {} MiB of {label} ({size} bytes, {reached} lines in them), which is as far as one call reads; read further with the terminal (`sed -n '{},{}p' {label}`)]",
                self.first,
                SKIP_BUDGET >> 20,
                self.first,
                self.first.saturating_add(99),
            );
        } else if self.shown == 0 {
            let n = match self.total {
                Total::Exact(n) | Total::AtLeast(n) => n,
            };
            if n == 0 {
                let _ = writeln!(out, "[{label} is empty]");
            } else {
                let _ = writeln!(
                    out,
                    "[{label} has {n} lines; offset {} is past its end]",
                    self.first
                );
            }
        } else if self.more_after() {
            let _ = writeln!(
                out,
                "[lines {}-{last} of {of}; next offset {}]",
                self.first,
                last + 1
            );
        } else if self.first > 1 {
            let _ = writeln!(out, "[lines {}-{last} of {of}; end of file]", self.first);
        }
        // A whole file, shown from its first line to its last, needs no word about where it is.
        out
    }
}

/// Reads the lines `window` asks for from `reader`, streaming: memory stays bounded by the page,
/// reading by the window's budgets.
pub fn read_page(reader: impl Read, window: &Window) -> std::io::Result<Page> {
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, reader);
    // The number of the line that starts at the reader's position.
    let mut line_no: u64 = 1;
    // Whether bytes of line `line_no` were read (a last line without a newline still counts).
    let mut partial = false;
    let mut scanned: u64 = 0;
    let first = window.first.max(1);

    // Skip to the first line.
    while line_no < first {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            let total = line_no - 1 + u64::from(partial);
            return Ok(Page {
                text: String::new(),
                first,
                shown: 0,
                total: Total::Exact(total),
                unreached: false,
            });
        }
        if scanned >= window.skip_budget {
            return Ok(Page {
                text: String::new(),
                first,
                shown: 0,
                total: Total::AtLeast(line_no - 1),
                unreached: true,
            });
        }
        let n = buf.len();
        let need = first - line_no;
        let mut used = n;
        let mut seen = 0u64;
        for (i, _) in buf.iter().enumerate().filter(|(_, b)| **b == b'\n') {
            seen += 1;
            if seen == need {
                used = i + 1;
                break;
            }
        }
        line_no += seen;
        partial = buf[used - 1] != b'\n';
        reader.consume(used);
        scanned += used as u64;
    }
    partial = false;

    // Show.
    let mut text = String::new();
    let mut shown: u64 = 0;
    let mut line: Vec<u8> = Vec::new();
    let mut line_cut = false;
    let mut eof = false;
    while shown < window.count && text.len() < window.max_output {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            eof = true;
            if partial {
                emit_line(&mut text, line_no, &line, line_cut);
                shown += 1;
                line_no += 1;
                partial = false;
            }
            break;
        }
        let (piece, ends) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        line_cut |= piece.len() > room;
        let used = ends.unwrap_or(buf.len());
        reader.consume(used);
        partial = true;
        if ends.is_some() {
            emit_line(&mut text, line_no, &line, line_cut);
            shown += 1;
            line_no += 1;
            line.clear();
            line_cut = false;
            partial = false;
        }
    }
    // Count the rest.
    let total = if eof {
        Total::Exact(line_no - 1)
    } else {
        count_rest(&mut reader, line_no, partial, window.count_budget)?
    };
    Ok(Page {
        text,
        first,
        shown,
        total,
        unreached: false,
    })
}

/// Writes line `n` of the page: its number, then its text without a final `\r`, cut at
/// [`MAX_LINE_CHARS`] (or where reading it was cut, `cut`).
fn emit_line(text: &mut String, n: u64, line: &[u8], cut: bool) {
    let mut bytes = line;
    if bytes.last() == Some(&b'\r') {
        bytes = &bytes[..bytes.len() - 1];
    }
    let s = String::from_utf8_lossy(bytes);
    let _ = write!(text, "{n:>6}\t");
    if cut || s.chars().count() > MAX_LINE_CHARS {
        text.extend(s.chars().take(MAX_LINE_CHARS));
        text.push_str(" [... line cut]");
    } else {
        text.push_str(&s);
    }
    text.push('\n');
}

/// Counts the lines after the page, reading at most `budget` bytes: the exact total when the end
/// is reached, a lower bound otherwise. `line_no` is the number of the line at the reader's
/// position, `partial` whether bytes of it were read.
fn count_rest(
    reader: &mut impl BufRead,
    mut line_no: u64,
    mut partial: bool,
    budget: u64,
) -> std::io::Result<Total> {
    let mut counted: u64 = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(Total::Exact(line_no - 1 + u64::from(partial)));
        }
        if counted >= budget {
            return Ok(Total::AtLeast(line_no - 1 + u64::from(partial)));
        }
        let n = buf.len();
        #[allow(
            clippy::naive_bytecount,
            reason = "the compiler vectorises this loop; no byte-counting crate is a dependency"
        )]
        let newlines = buf.iter().filter(|b| **b == b'\n').count() as u64;
        line_no += newlines;
        partial = buf.last() != Some(&b'\n');
        reader.consume(n);
        counted += n as u64;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn window(first: u64, count: u64) -> Window {
        Window {
            first,
            count,
            max_output: 1 << 20,
            skip_budget: SKIP_BUDGET,
            count_budget: COUNT_BUDGET,
        }
    }

    fn page(text: &[u8], w: &Window) -> Page {
        read_page(text, w).unwrap()
    }

    #[test]
    fn page_table() {
        // (file, first, count, shown text, shown, total, footer)
        type Case<'a> = (&'a [u8], u64, u64, &'a str, u64, Total, &'a str);
        let cases: &[Case<'_>] = &[
            (b"", 1, 10, "", 0, Total::Exact(0), "[f is empty]"),
            (b"a\n", 1, 10, "     1\ta\n", 1, Total::Exact(1), ""),
            (b"a", 1, 10, "     1\ta\n", 1, Total::Exact(1), ""),
            (
                b"a\nb\nc\n",
                2,
                1,
                "     2\tb\n",
                1,
                Total::Exact(3),
                "[lines 2-2 of 3; next offset 3]",
            ),
            (
                b"a\nb\nc",
                3,
                5,
                "     3\tc\n",
                1,
                Total::Exact(3),
                "[lines 3-3 of 3; end of file]",
            ),
            (
                b"a\r\nb\r\n",
                1,
                5,
                "     1\ta\n     2\tb\n",
                2,
                Total::Exact(2),
                "",
            ),
            (
                b"a\nb\n",
                3,
                5,
                "",
                0,
                Total::Exact(2),
                "[f has 2 lines; offset 3 is past its end]",
            ),
            (
                b"a\nb",
                9,
                5,
                "",
                0,
                Total::Exact(2),
                "[f has 2 lines; offset 9 is past its end]",
            ),
            (
                b"\n\n\n",
                2,
                1,
                "     2\t\n",
                1,
                Total::Exact(3),
                "[lines 2-2 of 3; next offset 3]",
            ),
        ];
        for (file, first, count, text, shown, total, footer) in cases {
            let p = page(file, &window(*first, *count));
            assert_eq!(&p.text, text, "{file:?} {first}");
            assert_eq!(p.shown, *shown, "{file:?} {first}");
            assert_eq!(p.total, *total, "{file:?} {first}");
            let rendered = p.render("f", file.len() as u64);
            if footer.is_empty() {
                assert_eq!(&rendered, text, "a whole file has no footer");
            } else {
                assert!(rendered.ends_with(&format!("{footer}\n")), "{rendered}");
            }
        }
    }

    #[test]
    fn pages_past_the_first_mebibyte_of_a_large_file() {
        // About 6 MB: every line is found, numbered as in the file.
        let mut file = Vec::new();
        for i in 1..=100_000u32 {
            file.extend_from_slice(format!("line {i:06} {}\n", "x".repeat(50)).as_bytes());
        }
        assert!(file.len() > 6_000_000);
        let p = page(&file, &window(99_998, 2));
        assert_eq!(
            p.text,
            format!(
                " 99998\tline 099998 {x}\n 99999\tline 099999 {x}\n",
                x = "x".repeat(50)
            )
        );
        assert_eq!(p.total, Total::Exact(100_000));
        assert!(
            p.render("big", file.len() as u64)
                .ends_with("[lines 99998-99999 of 100000; next offset 100000]\n")
        );
        let last = page(&file, &window(100_000, 2000));
        assert_eq!(last.shown, 1);
        assert!(!last.more_after());
    }

    #[test]
    fn budgets_make_the_count_honest_and_the_skip_bounded() {
        // Budgets are checked per buffer (64 KiB): a file of several buffers.
        let file = "l\n".repeat(200_000);
        let mut w = window(1, 3);
        w.count_budget = 100;
        let p = page(file.as_bytes(), &w);
        assert_eq!(p.shown, 3);
        assert!(
            matches!(p.total, Total::AtLeast(n) if (3..200_000).contains(&n)),
            "{p:?}"
        );
        let text = p.render("f", 400_000);
        assert!(text.contains("[lines 1-3 of at least"), "{text}");
        assert!(text.contains("next offset 4]"), "{text}");
        // Control: with the default budget the same file is counted to the end.
        let p = page(file.as_bytes(), &window(1, 3));
        assert_eq!(p.total, Total::Exact(200_000));
        let mut w = window(150_000, 3);
        w.skip_budget = 1000;
        let p = page(file.as_bytes(), &w);
        assert!(p.unreached);
        assert_eq!(p.shown, 0);
        let text = p.render("f", 400_000);
        assert!(text.contains("offset 150000 is beyond the first"), "{text}");
        assert!(text.contains("sed -n '150000,150099p' f"), "{text}");
        // Control: with the default budget the same offset is reached.
        let p = page(file.as_bytes(), &window(150_000, 3));
        assert_eq!(p.shown, 3);
        assert!(!p.unreached);
    }

    #[test]
    fn long_lines_are_cut_and_the_output_is_bounded() {
        let long = "é".repeat(MAX_LINE_CHARS * 10);
        let file = format!("{long}\nshort\n");
        let p = page(file.as_bytes(), &window(1, 5));
        assert_eq!(p.shown, 2);
        assert!(
            p.text.contains(" [... line cut]\n     2\tshort\n"),
            "{}",
            &p.text[p.text.len() - 40..]
        );
        assert_eq!(p.total, Total::Exact(2));
        let many = "0123456789\n".repeat(1000);
        let mut w = window(1, 1000);
        w.max_output = 100;
        let p = page(many.as_bytes(), &w);
        assert!(p.shown < 10 && p.text.len() < 200, "{p:?}");
        assert!(p.more_after());
        assert!(
            p.render("f", 1)
                .contains(&format!("next offset {}", p.shown + 1))
        );
    }
}
