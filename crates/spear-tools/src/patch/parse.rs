//! Telling the two patch formats apart: the text split into numbered lines, the wrapper a model
//! may put around a patch left out, then the envelope's or the unified diff's parser.

use super::error::PatchError;
use super::model::Patch;
use super::syntax::shown;
use super::{envelope, unified};

/// The largest patch text [`parse`] accepts, in bytes (16 MiB).
pub const MAX_PATCH_BYTES: usize = 16 << 20;

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
