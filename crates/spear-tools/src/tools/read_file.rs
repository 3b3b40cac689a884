//! `read_file {path, offset?, limit?}`: a text file, line-numbered.
//!
//! Bounded: at most [`crate::ToolLimits::read_max_bytes`] of the file are read (Attack: a 20 GB
//! sparse file, or one that never ends, must not exhaust the harness's memory), and the answer
//! says when the file was cut. A binary file is refused with a reason; a fifo, socket or device
//! is refused without blocking (the file layer opens with `O_NONBLOCK` and accepts regular files
//! only). Paths resolve inside the roots, so `/proc/self/environ` (the harness's own secrets) is
//! refused before anything is opened.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ToolResult, ToolStatus};

use crate::Effect;
use crate::spec::ALL_MODES;
use crate::tool::{Access, CallContext, Outcome, Prepared, Resolved, ToolArgs, Typed};
use spear_core::ExecutionMode;

/// Lines shown when the call names no limit.
const DEFAULT_LINES: usize = 2000;

/// Bytes looked at for a NUL byte, to tell a binary file.
const BINARY_PROBE: usize = 8192;

/// Characters of one line shown; the rest is cut with a marker.
const MAX_LINE_CHARS: usize = 2000;

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
        (from 1) and `limit` the number of lines (default 2000). Files are read up to 1 \
        MiB; binary files are refused.";
    const EFFECT: Effect = Effect::Read;
    const MODES: &'static [ExecutionMode] = ALL_MODES;
    const IDEMPOTENT: bool = true;

    fn validate(self) -> Result<Box<dyn Prepared>, String> {
        if self.offset == Some(0) {
            return Err("invalid arguments for read_file: `offset` counts lines from 1".into());
        }
        if self.limit == Some(0) {
            return Err("invalid arguments for read_file: `limit` must be at least 1".into());
        }
        Ok(Box::new(self))
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
            return Outcome::of(crate::router::failed("read_file got no path".into()));
        };
        let label = cx.workspace.label(&path.target);
        let read = match cx.fs.read(path, cx.limits.read_max_bytes) {
            Ok(r) => r,
            Err(e) => return Outcome::of(super::fs_failure(&e)),
        };
        if read.bytes[..read.bytes.len().min(BINARY_PROBE)].contains(&0) {
            return Outcome::of(ToolResult {
                reason: Some(format!(
                    "{label} is a binary file ({} bytes); read_file shows text only. Inspect it with the terminal (`file {label}`, `xxd {label} | head`)",
                    read.size
                )),
                ..ToolResult::new(ToolStatus::Failed)
            });
        }
        let text = String::from_utf8_lossy(&read.bytes);
        let first = usize::try_from(self.offset.unwrap_or(1)).unwrap_or(usize::MAX);
        let count = self
            .limit
            .map_or(DEFAULT_LINES, |l| usize::try_from(l).unwrap_or(usize::MAX));
        let mut out = String::new();
        let mut total_lines = 0usize;
        let mut shown = 0usize;
        for (i, line) in text.lines().enumerate() {
            total_lines = i + 1;
            if total_lines < first || shown >= count {
                continue;
            }
            shown += 1;
            let _ = write!(out, "{total_lines:>6}\t");
            if line.chars().count() > MAX_LINE_CHARS {
                out.extend(line.chars().take(MAX_LINE_CHARS));
                out.push_str(" [... line cut]");
            } else {
                out.push_str(line);
            }
            out.push('\n');
        }
        let mut result = ToolResult::new(ToolStatus::Ok);
        result.exit_code = Some(0);
        if read.truncated {
            result.truncated = true;
            let _ = writeln!(
                out,
                "[spear read only the first {} bytes of {label}, which has {} bytes; read other parts with the terminal (`sed -n 'A,Bp' {label}`) or search it with search_files]",
                read.bytes.len(),
                read.size
            );
        } else if first > total_lines.max(1) {
            let _ = writeln!(
                out,
                "[{label} has {total_lines} lines; offset {first} is past its end]"
            );
        } else if first + shown <= total_lines {
            result.truncated = true;
            let _ = writeln!(
                out,
                "[showing lines {first}-{} of {total_lines}; ask for more with offset {}]",
                first + shown - 1,
                first + shown
            );
        }
        result.stdout = out;
        Outcome::of(result)
    }
}
