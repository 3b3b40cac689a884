//! Telling the two patch formats apart, and what their parsers share: the text split into
//! numbered lines, the wrapper a model may put around a patch, and the checks on paths.

use super::{HunkLine, MAX_PATCH_BYTES, Patch, PatchError, envelope, unified};

/// Parses a patch in either format: a `*** Begin Patch` envelope or a unified diff.
///
/// A Markdown code fence or a shell heredoc (`apply_patch <<'EOF'` ... `EOF`) around the patch is
/// ignored. The result names at least one file, and every path in it is non-empty and holds no NUL
/// byte or line break. Errors name the 1-based patch line and what was expected there.
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    // Attack: a huge patch makes every later step (parse, search, render) slow and large.
    if text.len() > MAX_PATCH_BYTES {
        return Err(PatchError::TooLarge {
            size: text.len(),
            limit: MAX_PATCH_BYTES,
        });
    }
    let lines = split_lines(text);
    let Some((start, end)) = unwrap_body(&lines) else {
        return Err(PatchError::Empty);
    };
    let first = lines[start].trim();
    let patch = if first == "*** Begin Patch" {
        envelope::parse(&lines, start, end)?
    } else if unified::detect(&lines, start, end) {
        unified::parse(&lines, start, end)?
    } else if let Some(i) = (start..end).find(|&i| lines[i].trim() == "*** Begin Patch") {
        return Err(PatchError::syntax(
            start + 1,
            format!(
                "the patch must start with '*** Begin Patch' (line {}); found {} before it: send \
                 only the patch",
                i + 1,
                shown(first)
            ),
        ));
    } else {
        return Err(PatchError::syntax(
            start + 1,
            format!(
                "expected '*** Begin Patch' or a unified diff ('--- a/path' and '+++ b/path' \
                 headers, or 'diff --git'); found {}",
                shown(first)
            ),
        ));
    };
    if patch.files.is_empty() {
        return Err(PatchError::Empty);
    }
    Ok(patch)
}

/// Splits patch text into lines without their endings (a `\r` before the `\n` goes too, so a
/// CRLF patch reads like an LF one). A final line ending does not start another line.
pub(super) fn split_lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() && text.len() <= 1 {
        return Vec::new();
    }
    body.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// The index range of the patch proper: blank lines around it, and a Markdown fence or a shell
/// heredoc wrapped around it, are left out. `None` when nothing but blank lines remain.
fn unwrap_body(lines: &[&str]) -> Option<(usize, usize)> {
    let (mut start, mut end) = trim_blank(lines, 0, lines.len())?;
    let first = lines[start].trim();
    let last = lines[end - 1].trim();
    let fenced = first.starts_with("```") && !first[3..].contains('`');
    let heredoc = is_heredoc_start(first);
    if (fenced && end - start >= 2 && last == "```")
        || (heredoc && end - start >= 2 && heredoc_end(first) == Some(last))
    {
        start += 1;
        end -= 1;
    } else if fenced || heredoc {
        start += 1;
    }
    trim_blank(lines, start, end)
}

/// Narrows `start..end` to its first and last non-blank lines.
fn trim_blank(lines: &[&str], start: usize, end: usize) -> Option<(usize, usize)> {
    let first = (start..end).find(|&i| !lines[i].trim().is_empty())?;
    let last = (first..end).rev().find(|&i| !lines[i].trim().is_empty())?;
    Some((first, last + 1))
}

/// `apply_patch <<'EOF'`, `<<EOF`, `cat <<"PATCH"`...: a line whose last word is a heredoc start.
fn is_heredoc_start(line: &str) -> bool {
    heredoc_end(line).is_some()
}

/// The terminator word a heredoc start line announces.
fn heredoc_end(line: &str) -> Option<&str> {
    let word = line.split_whitespace().last()?;
    let tag = word.strip_prefix("<<")?;
    let tag = tag.strip_prefix('-').unwrap_or(tag);
    let tag = tag
        .strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .or_else(|| tag.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
        .unwrap_or(tag);
    let ok = !tag.is_empty() && tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(tag)
}

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
