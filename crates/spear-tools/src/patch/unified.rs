//! Unified diffs, as `git diff` and `diff -u` write them and as models imitate them.
//!
//! A file section starts at `diff --git` (then git's extended header lines) or at a `--- ` line
//! followed by `+++ `. Text outside file sections (a commit message, `Index:` lines, a mail
//! signature) is skipped. Hunk line counts are honoured when they fit; a model's wrong counts
//! are tolerated: a hunk ends early at a line that cannot be a body line, and goes on past its
//! count while the next line is still a body line (never across a file header or a blank line).

use super::error::PatchError;
use super::model::{FilePatch, Hunk, HunkLine, Patch};
use super::syntax::{body_line, check_path, hint_index, parse_range_header, shown};

const DEV_NULL: &str = "/dev/null";

/// Whether `lines[start..end]` holds a unified diff file header.
pub(super) fn detect(lines: &[&str], start: usize, end: usize) -> bool {
    (start..end).any(|i| lines[i].starts_with("diff --git ") || is_file_header(lines, i, end))
}

/// Parses `lines[start..end]` as a unified diff.
pub(super) fn parse(lines: &[&str], start: usize, end: usize) -> Result<Patch, PatchError> {
    let mut pos = start;
    let mut files = Vec::new();
    while pos < end {
        let line = lines[pos];
        if line.starts_with("diff --git ") || is_file_header(lines, pos, end) {
            let (file, next) = section(lines, pos, end)?;
            files.extend(file);
            pos = next;
        } else if line.starts_with("@@") {
            return Err(PatchError::syntax(
                pos + 1,
                "a hunk outside any file section: put '--- a/<path>' and '+++ b/<path>' lines \
                 before the file's first '@@'",
            ));
        } else {
            // A commit message, `Index:` and `====` lines, a mail signature: not part of a file.
            pos += 1;
        }
    }
    Ok(Patch { files })
}

/// A `--- ` line followed by a `+++ ` line.
fn is_file_header(lines: &[&str], i: usize, end: usize) -> bool {
    i + 1 < end && lines[i].starts_with("--- ") && lines[i + 1].starts_with("+++ ")
}

/// What a file section's headers say.
#[derive(Default)]
struct Section {
    /// The names of the `diff --git a/X b/Y` line, prefixes removed.
    git_names: Option<(String, String)>,
    /// The `---` name (`None` when absent or `/dev/null`).
    minus: Option<String>,
    /// The `+++` name (`None` when absent or `/dev/null`).
    plus: Option<String>,
    /// `new file mode`, or `--- /dev/null`.
    creates: bool,
    /// `deleted file mode`, or `+++ /dev/null`.
    deletes: bool,
    rename_from: Option<String>,
    rename_to: Option<String>,
}

/// Reads one file section starting at `pos`; returns its operation (none for a section that
/// changes nothing a patch can express, such as a mode change) and the index after it.
fn section(
    lines: &[&str],
    mut pos: usize,
    end: usize,
) -> Result<(Option<FilePatch>, usize), PatchError> {
    let first_line = pos + 1;
    let mut s = Section::default();
    let git = lines[pos].starts_with("diff --git ");
    if let Some(rest) = lines[pos].strip_prefix("diff --git ") {
        // Only a fallback for the names (the `---`/`+++` and `rename` lines say them better),
        // so a name that fails the path checks is dropped rather than refused.
        let check = |p: &str| check_path(p, first_line, "diff --git").ok();
        s.git_names = split_git_names(rest).and_then(|(a, b)| Some((check(&a)?, check(&b)?)));
        pos += 1;
        while pos < end && !is_file_header(lines, pos, end) {
            let line = lines[pos];
            if let Some(rest) = line.strip_prefix("rename from ") {
                s.rename_from = Some(git_path(rest, pos + 1, "rename from")?);
            } else if let Some(rest) = line.strip_prefix("rename to ") {
                s.rename_to = Some(git_path(rest, pos + 1, "rename to")?);
            } else if line.starts_with("new file mode ") {
                s.creates = true;
            } else if line.starts_with("deleted file mode ") {
                s.deletes = true;
            } else if line.starts_with("copy from ") || line.starts_with("copy to ") {
                return Err(PatchError::syntax(
                    pos + 1,
                    "git copies are not supported: add the new file with its whole content \
                     instead ('new file mode' with '--- /dev/null')",
                ));
            } else if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
                return Err(PatchError::syntax(
                    pos + 1,
                    "binary diffs are not supported: a patch only changes text files",
                ));
            } else if ![
                "old mode ",
                "new mode ",
                "index ",
                "similarity index ",
                "dissimilarity index ",
            ]
            .iter()
            .any(|p| line.starts_with(p))
            {
                break;
            }
            pos += 1;
        }
    }
    if is_file_header(lines, pos, end) {
        let minus = header_path(&lines[pos][4..], pos + 1, "---")?;
        let plus = header_path(&lines[pos + 1][4..], pos + 2, "+++")?;
        s.creates |= minus.is_none();
        s.deletes |= plus.is_none();
        (s.minus, s.plus) = strip_prefixes(minus, plus, git);
        pos += 2;
    }
    let mut hunks = Vec::new();
    loop {
        if pos < end && lines[pos].starts_with("@@") {
            let (hunk, next) = read_hunk(lines, pos, end)?;
            hunks.push(hunk);
            pos = next;
            continue;
        }
        // Blank lines between two hunks of one file.
        let next = (pos..end).find(|&i| !lines[i].trim().is_empty());
        match next {
            Some(i) if i > pos && lines[i].starts_with("@@") => pos = i,
            _ => break,
        }
    }
    let file = build(s, hunks, first_line)?;
    Ok((file, pos))
}

/// Turns a section's headers and hunks into a file operation.
fn build(s: Section, hunks: Vec<Hunk>, line: usize) -> Result<Option<FilePatch>, PatchError> {
    let (git_old, git_new) = s.git_names.unzip();
    let (adds, deletes) = (s.creates, s.deletes);
    let old = s.rename_from.or(s.minus).or(git_old);
    let new = s.rename_to.clone().or(s.plus).or(git_new);
    if adds && deletes {
        return Err(PatchError::syntax(
            line,
            "this file section both creates and deletes its file ('/dev/null' on both sides)",
        ));
    }
    let missing_name = || {
        PatchError::syntax(
            line,
            "cannot tell which file this section changes: give '--- a/<path>' and '+++ b/<path>' \
             lines",
        )
    };
    if adds {
        let path = new.ok_or_else(missing_name)?;
        let content = added_content(&hunks, &path, line)?;
        return Ok(Some(FilePatch::Add { path, content }));
    }
    if deletes {
        let path = old.ok_or_else(missing_name)?;
        return Ok(Some(FilePatch::Delete { path }));
    }
    let move_to = match (&s.rename_to, &old) {
        (Some(to), Some(from)) if to != from => Some(to.clone()),
        _ => None,
    };
    // Without a rename, the `+++` name is the file to change (`diff -u file.orig file`).
    let path = if move_to.is_some() { old } else { new.or(old) }.ok_or_else(missing_name)?;
    if hunks.is_empty() && move_to.is_none() {
        // A mode change or an empty section: nothing for a text patch to do.
        return Ok(None);
    }
    Ok(Some(FilePatch::Update {
        path,
        move_to,
        hunks,
    }))
}

/// The content of an added file: the added lines of its hunks.
fn added_content(hunks: &[Hunk], path: &str, line: usize) -> Result<String, PatchError> {
    let mut content = String::new();
    let mut final_newline = true;
    for h in hunks {
        for l in &h.lines {
            match l {
                HunkLine::Add(text) => {
                    content.push_str(text);
                    content.push('\n');
                }
                HunkLine::Context(_) | HunkLine::Remove(_) => {
                    return Err(PatchError::syntax(
                        line,
                        format!(
                            "{path} is a new file ('/dev/null' or 'new file mode'), so its hunks \
                             may only add lines ('+')"
                        ),
                    ));
                }
            }
        }
        if let Some(nl) = h.final_newline {
            final_newline = nl;
        }
    }
    if !final_newline && content.ends_with('\n') {
        content.pop();
    }
    Ok(content)
}

/// The path of a `---`/`+++` line (after the marker): a timestamp after a tab is dropped, a
/// git-quoted path unquoted; `None` for `/dev/null`.
fn header_path(raw: &str, line: usize, marker: &str) -> Result<Option<String>, PatchError> {
    let name = raw.split('\t').next().unwrap_or(raw).trim();
    if name == DEV_NULL {
        return Ok(None);
    }
    git_path(name, line, marker).map(Some)
}

/// A path as git writes it: possibly in C-style quotes.
fn git_path(raw: &str, line: usize, after: &str) -> Result<String, PatchError> {
    let raw = raw.trim();
    if raw.starts_with('"') {
        let (path, rest) = unquote(raw).ok_or_else(|| {
            PatchError::syntax(line, format!("malformed quoted path after '{after}'"))
        })?;
        if !rest.trim().is_empty() {
            return Err(PatchError::syntax(
                line,
                format!("unexpected text after the quoted path after '{after}'"),
            ));
        }
        return check_path(&path, line, after);
    }
    check_path(raw, line, after)
}

/// Removes git's `a/` and `b/` prefixes: always in a `diff --git` section, and in a plain one
/// when both names carry them (or the other side is `/dev/null`).
fn strip_prefixes(
    minus: Option<String>,
    plus: Option<String>,
    git: bool,
) -> (Option<String>, Option<String>) {
    let has = |p: &Option<String>, pre: &str| {
        p.as_deref()
            .is_none_or(|p| p.starts_with(pre) && p.len() > pre.len())
    };
    let strip =
        git || (has(&minus, "a/") && has(&plus, "b/") && (minus.is_some() || plus.is_some()));
    if !strip {
        return (minus, plus);
    }
    let cut = |p: Option<String>, pre: &str| {
        p.map(|p| match p.strip_prefix(pre) {
            Some(rest) if !rest.is_empty() => rest.to_owned(),
            _ => p,
        })
    };
    (cut(minus, "a/"), cut(plus, "b/"))
}

/// The two names of `diff --git a/X b/Y`, prefixes removed; `None` when they cannot be told
/// apart (the `---`/`+++` or `rename` lines then name the file).
fn split_git_names(rest: &str) -> Option<(String, String)> {
    let rest = rest.trim_end();
    let (a, b) = if rest.starts_with('"') {
        let (a, tail) = unquote(rest)?;
        let tail = tail.trim_start();
        let b = if tail.starts_with('"') {
            unquote(tail)?.0
        } else {
            tail.to_owned()
        };
        (a, b)
    } else if let Some(i) = same_name_split(rest) {
        (rest[..i].to_owned(), rest[i + 1..].to_owned())
    } else {
        let i = rest.find(" b/")?;
        let b = &rest[i + 1..];
        let b = if b.starts_with('"') {
            unquote(b)?.0
        } else {
            b.to_owned()
        };
        (rest[..i].to_owned(), b)
    };
    Some((
        a.strip_prefix("a/")?.to_owned(),
        b.strip_prefix("b/")?.to_owned(),
    ))
}

/// For `a/P b/P` (the same name twice, which may hold spaces), the index of the separating space.
fn same_name_split(rest: &str) -> Option<usize> {
    let len = rest.len();
    if len < 5 || len.is_multiple_of(2) {
        return None;
    }
    let mid = len / 2;
    let (a, b) = (rest.get(..mid)?, rest.get(mid + 1..)?);
    (rest.as_bytes()[mid] == b' ' && a.strip_prefix("a/")? == b.strip_prefix("b/")?).then_some(mid)
}

/// Decodes a C-style quoted string at the start of `s` (git's quoting of unusual paths): returns
/// it and the text after the closing quote.
fn unquote(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let bytes = body.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let text = String::from_utf8(out).ok()?;
                return Some((text, &body[i + 1..]));
            }
            b'\\' => {
                let c = *bytes.get(i + 1)?;
                i += 2;
                let byte = match c {
                    b'a' => 7,
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 11,
                    b'f' => 12,
                    b'r' => b'\r',
                    b'"' | b'\\' => c,
                    b'0'..=b'3' => {
                        let d1 = *bytes.get(i)?;
                        let d2 = *bytes.get(i + 1)?;
                        if !(b'0'..=b'7').contains(&d1) || !(b'0'..=b'7').contains(&d2) {
                            return None;
                        }
                        i += 2;
                        (c - b'0') * 64 + (d1 - b'0') * 8 + (d2 - b'0')
                    }
                    _ => return None,
                };
                out.push(byte);
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

/// Reads the hunk whose `@@` line is at `pos`; returns it and the index after it.
fn read_hunk(lines: &[&str], pos: usize, end: usize) -> Result<(Hunk, usize), PatchError> {
    let range = parse_range_header(&lines[pos][2..]);
    let mut hunk = Hunk {
        context: Vec::new(),
        line_hint: range.map(|r| hint_index(r.old_start, r.old_count)),
        lines: Vec::new(),
        end_of_file: false,
        final_newline: None,
    };
    let (mut old_left, mut new_left) = range.map_or((0, 0), |r| (r.old_count, r.new_count));
    let (mut old_no_newline, mut new_no_newline) = (false, false);
    let mut i = pos + 1;
    while i < end {
        let line = lines[i];
        if line.starts_with('\\') {
            // `\ No newline at end of file`, about the line before it.
            match hunk.lines.last() {
                Some(HunkLine::Context(_)) => (old_no_newline, new_no_newline) = (true, true),
                Some(HunkLine::Remove(_)) => old_no_newline = true,
                Some(HunkLine::Add(_)) => new_no_newline = true,
                None => {
                    return Err(PatchError::syntax(
                        i + 1,
                        "'\\ No newline at end of file' must follow a hunk line",
                    ));
                }
            }
            i += 1;
            continue;
        }
        let counted = old_left > 0 || new_left > 0;
        let body = if counted {
            // When a model's count is too large, the next file's header ends the hunk. A removed
            // "-- x" and an added "++ y" read like one, but then they are the hunk's last lines
            // (nothing but a '@@' follows a file header) and the count expects exactly them.
            if is_file_header(lines, i, end)
                && lines.get(i + 2).is_some_and(|l| l.starts_with("@@"))
                && !(old_left == 1 && new_left == 1)
            {
                break;
            }
            body_line(line, false)
        } else if continues(lines, i, end, range.is_some()) {
            body_line(line, false)
        } else {
            None
        };
        let Some(body) = body else { break };
        match &body {
            HunkLine::Context(_) => {
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
            }
            HunkLine::Remove(_) => old_left = old_left.saturating_sub(1),
            HunkLine::Add(_) => new_left = new_left.saturating_sub(1),
        }
        hunk.lines.push(body);
        i += 1;
    }
    if hunk.lines.is_empty() {
        return Err(PatchError::syntax(
            pos + 1,
            format!(
                "this hunk has no lines: after {} give ' ' context, '-' and '+' lines",
                shown(lines[pos])
            ),
        ));
    }
    if new_no_newline {
        hunk.final_newline = Some(false);
    } else if old_no_newline {
        hunk.final_newline = Some(true);
    }
    // Either side lacking its final newline puts the hunk's end at the end of the file.
    hunk.end_of_file = old_no_newline || new_no_newline;
    Ok((hunk, i))
}

/// Whether line `i`, past the hunk's count (or in a hunk without counts), still belongs to it:
/// a body line that is not a file header or a mail signature. Blank lines count only in a hunk
/// without counts, and only when a body line follows them.
fn continues(lines: &[&str], i: usize, end: usize, counted: bool) -> bool {
    let line = lines[i];
    if line.trim().is_empty() {
        if counted {
            return false;
        }
        return (i..end)
            .find(|&j| !lines[j].trim().is_empty())
            .is_some_and(|j| continues(lines, j, end, counted));
    }
    if is_file_header(lines, i, end) || line.trim_end() == "--" {
        return false;
    }
    matches!(line.as_bytes()[0], b' ' | b'-' | b'+')
}
