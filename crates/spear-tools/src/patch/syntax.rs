//! The syntax both patch formats share: a hunk body line, a path and its checks, a unified
//! `@@ -l,c +l,c @@` range and the line it points at, and a patch line quoted for an error.

use super::error::PatchError;
use super::model::HunkLine;

/// Checks a path taken from patch line `line` (1-based) and returns it trimmed.
pub(super) fn check_path(raw: &str, line: usize, after: &str) -> Result<String, PatchError> {
    let path = raw.trim();
    if path.is_empty() {
        return Err(PatchError::syntax(
            line,
            format!("expected a path after '{after}'; the path is empty"),
        ));
    }
    // Attack: a NUL byte cuts the path short where it meets the OS, so the write would land on
    // another file than the one every check looked at.
    if path.contains('\0') {
        return Err(PatchError::syntax(
            line,
            format!(
                "the path after '{after}' contains a NUL byte; name the file without control \
                 characters"
            ),
        ));
    }
    // A line break can only come from git's quoted-path escapes; no tool can name such a file
    // reliably, and it would forge lines in any listing of paths.
    if path.contains(['\n', '\r']) {
        return Err(PatchError::syntax(
            line,
            format!(
                "the path after '{after}' contains a line break; name the file without control \
                 characters"
            ),
        ));
    }
    Ok(path.to_owned())
}

/// A patch line quoted for an error message, cut to a readable length.
pub(super) fn shown(line: &str) -> String {
    const MAX: usize = 80;
    if line.chars().count() <= MAX {
        format!("{line:?}")
    } else {
        let cut: String = line.chars().take(MAX).collect();
        format!("{cut:?}...")
    }
}

/// A hunk body line: ' ' context, '-' removed, '+' added. An empty line is an empty context line
/// (editors and models strip the lone space); with `blank_is_context`, so is a line of spaces
/// alone (the envelope's leniency; a unified diff's line count decides instead).
pub(super) fn body_line(line: &str, blank_is_context: bool) -> Option<HunkLine> {
    let mut chars = line.chars();
    match chars.next() {
        None => Some(HunkLine::Context(String::new())),
        Some(' ') => Some(HunkLine::Context(chars.as_str().to_owned())),
        Some('-') => Some(HunkLine::Remove(chars.as_str().to_owned())),
        Some('+') => Some(HunkLine::Add(chars.as_str().to_owned())),
        Some(_) if blank_is_context && line.trim().is_empty() => {
            Some(HunkLine::Context(String::new()))
        }
        Some(_) => None,
    }
}

/// The 0-based index a unified range `-start,count` points at: the first old line, or for an
/// empty old side the line after which the new lines go.
pub(super) fn hint_index(old_start: usize, old_count: usize) -> usize {
    if old_count == 0 {
        old_start
    } else {
        old_start.saturating_sub(1)
    }
}

/// The ranges of a unified hunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Range {
    /// The 1-based first old line (0 for an empty old side at the start).
    pub old_start: usize,
    /// How many old lines the hunk has.
    pub old_count: usize,
    /// How many new lines the hunk has.
    pub new_count: usize,
}

/// Parses what follows `@@` in ` -l[,c] +l[,c] @@[ text]`; a count left out is 1.
pub(super) fn parse_range_header(rest: &str) -> Option<Range> {
    let rest = rest.trim_start().strip_prefix('-')?;
    let (old, rest) = rest.split_once(' ')?;
    let rest = rest.trim_start().strip_prefix('+')?;
    let (new, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    if !(rest.trim_start().starts_with("@@") || rest.trim().is_empty()) {
        return None;
    }
    let (old_start, old_count) = parse_range(old)?;
    let (_, new_count) = parse_range(new)?;
    Some(Range {
        old_start,
        old_count,
        new_count,
    })
}

/// `l` or `l,c`.
fn parse_range(s: &str) -> Option<(usize, usize)> {
    let (start, count) = s.split_once(',').unwrap_or((s, "1"));
    Some((start.parse().ok()?, count.parse().ok()?))
}
