//! Computing the new contents of every file a [`Patch`] touches, from their current contents,
//! all or nothing.
//!
//! The patch's operations run in order over a virtual view of the files: each path is read once
//! (through the caller's callback), later operations see earlier ones (an update after an add,
//! an add after a delete), and only the final differences come out. Paths are told apart by a
//! lexical normal form (`./a//b` is `a/b`); the caller resolves them for real.

use super::error::PatchError;
use super::model::{FileChange, FilePatch, Hunk, HunkLine, Patch};
use super::seek::{Anchor, Budget, OutOfBudget, seek};
use super::text::{Eol, TextFile};

/// How many lines of a hunk that does not apply an error shows.
const EXCERPT_LINES: usize = 5;
/// How many characters of each such line.
const EXCERPT_WIDTH: usize = 100;

/// How [`plan`] reads a file: its bytes, `Ok(None)` when it does not exist, or an error message.
pub type ReadFile<'a> = dyn FnMut(&str) -> Result<Option<Vec<u8>>, String> + 'a;

/// Computes the new state of every file from the current contents: `read(path)` returns the
/// bytes of a file, `Ok(None)` for a missing one (an `Err` stops the plan and is reported).
///
/// Returns every change to make (writes first, then deletes; a move is a write of the new path
/// and a delete of the old one), or an error and nothing: the caller then writes nothing. Each
/// path is read at most once and appears at most once in the result, spelled as it first
/// appears in the patch. A file that ends up as it was gives no change.
///
/// Refused: adding a file that exists; updating, moving or deleting one that does not; moving
/// onto an existing file; updating a file that is not UTF-8 text (or holds NUL bytes); a hunk
/// whose lines are not found.
pub fn plan(patch: &Patch, read: &mut ReadFile<'_>) -> Result<Vec<FileChange>, PatchError> {
    plan_noting(patch, read, &mut Vec::new())
}

/// [`plan`], and also the notes the caller should pass on with its result: hunks whose added
/// lines were re-indented with the file's own indentation characters (`reindent`).
pub fn plan_noting(
    patch: &Patch,
    read: &mut ReadFile<'_>,
    notes: &mut Vec<String>,
) -> Result<Vec<FileChange>, PatchError> {
    let mut view = View {
        entries: Vec::new(),
        read,
    };
    let mut budget = Budget::new(Budget::PER_PLAN);
    for file in &patch.files {
        match file {
            FilePatch::Add { path, content } => {
                let e = view.entry(path)?;
                if view.entries[e].current.is_some() {
                    return Err(PatchError::AlreadyExists { path: path.clone() });
                }
                view.entries[e].current = Some(content.as_bytes().to_vec());
            }
            FilePatch::Delete { path } => {
                let e = view.entry(path)?;
                view.existing(e, path)?;
                view.entries[e].current = None;
            }
            FilePatch::Update {
                path,
                move_to,
                hunks,
            } => {
                let e = view.entry(path)?;
                let current = view.existing(e, path)?;
                let new = if hunks.is_empty() {
                    current.to_vec()
                } else {
                    apply_hunks(path, current, hunks, &mut budget, notes)?
                };
                let target = match move_to {
                    Some(to) => {
                        let t = view.entry(to)?;
                        if t != e && view.entries[t].current.is_some() {
                            return Err(PatchError::MoveTargetExists {
                                path: path.clone(),
                                to: to.clone(),
                            });
                        }
                        t
                    }
                    None => e,
                };
                view.entries[e].current = None;
                view.entries[target].current = Some(new);
            }
        }
    }
    Ok(view.changes())
}

/// The files as the patch has left them so far.
struct View<'r> {
    entries: Vec<Entry>,
    read: &'r mut ReadFile<'r>,
}

/// One file of the [`View`].
struct Entry {
    /// The lexical normal form that identifies the file.
    key: String,
    /// The path as first written in the patch.
    path: String,
    /// The content before the patch (`None`: missing).
    original: Option<Vec<u8>>,
    /// The content now (`None`: missing).
    current: Option<Vec<u8>>,
}

impl View<'_> {
    /// The index of `path`'s entry, reading the file the first time it is named.
    fn entry(&mut self, path: &str) -> Result<usize, PatchError> {
        let key = lexical_key(path);
        if let Some(i) = self.entries.iter().position(|e| e.key == key) {
            return Ok(i);
        }
        let original = (self.read)(path).map_err(|message| PatchError::Read {
            path: path.to_owned(),
            message,
        })?;
        self.entries.push(Entry {
            key,
            path: path.to_owned(),
            current: original.clone(),
            original,
        });
        Ok(self.entries.len() - 1)
    }

    /// The current content of entry `e`, which must exist.
    fn existing(&self, e: usize, path: &str) -> Result<&[u8], PatchError> {
        let entry = &self.entries[e];
        entry
            .current
            .as_deref()
            .ok_or_else(|| PatchError::NotFound {
                path: path.to_owned(),
                note: if entry.original.is_some() {
                    " (deleted or moved away earlier in this patch)"
                } else {
                    ""
                },
            })
    }

    /// The differences between the original and the current files: writes, then deletes.
    fn changes(self) -> Vec<FileChange> {
        let mut writes = Vec::new();
        let mut deletes = Vec::new();
        for e in self.entries {
            match (e.original, e.current) {
                (original, Some(content)) if original.as_ref() != Some(&content) => {
                    writes.push(FileChange::Write {
                        path: e.path,
                        content,
                    });
                }
                (Some(_), None) => deletes.push(FileChange::Delete { path: e.path }),
                _ => {}
            }
        }
        writes.extend(deletes);
        writes
    }
}

/// The lexical normal form of a path: empty and `.` components dropped, `..` kept.
fn lexical_key(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let joined = parts.join("/");
    if path.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    }
}

/// Where a hunk goes: replace `len` lines at `start` by what its first `used` body lines say.
struct Placement<'h> {
    /// The 1-based hunk number.
    number: usize,
    start: usize,
    len: usize,
    hunk: &'h Hunk,
    used: usize,
}

/// Applies `hunks` in order to `content`.
fn apply_hunks(
    path: &str,
    content: &[u8],
    hunks: &[Hunk],
    budget: &mut Budget,
    notes: &mut Vec<String>,
) -> Result<Vec<u8>, PatchError> {
    let text = std::str::from_utf8(content).map_err(|_| PatchError::NotText {
        path: path.to_owned(),
        why: "not valid UTF-8",
    })?;
    if text.contains('\0') {
        return Err(PatchError::NotText {
            path: path.to_owned(),
            why: "contains NUL bytes",
        });
    }
    let file = TextFile::split(text);
    let lines = file.texts();
    let mut placements = Vec::with_capacity(hunks.len());
    let mut cursor = 0;
    let mut drift: isize = 0;
    for (n, hunk) in hunks.iter().enumerate() {
        let mut locate = Locate {
            path,
            number: n + 1,
            lines: &lines,
            budget: &mut *budget,
        };
        let p = locate.place(hunk, cursor, drift)?;
        if let Some(hint) = hunk.line_hint {
            drift = p.start.cast_signed() - hint.cast_signed();
        }
        // A hunk appended at the end for want of any anchor leaves the search where it was.
        let appended = p.len == 0 && hunk.context.is_empty() && hunk.line_hint.is_none();
        if !appended {
            cursor = p.start + p.len;
        }
        placements.push(p);
    }
    placements.sort_by_key(|p| p.start);

    // The added lines of each placement, re-indented where the hunk matched only with the
    // file's indentation characters ignored.
    let mut added: Vec<Vec<String>> = Vec::with_capacity(placements.len());
    for p in &placements {
        let body = &p.hunk.lines[..p.used];
        let matched: Vec<&str> = lines[p.start..p.start + p.len].to_vec();
        let reindented = reindent(body, &matched).map_err(|reason| PatchError::Indentation {
            path: path.to_owned(),
            hunk: p.number,
            reason,
        })?;
        if let Some(note) = reindented.note {
            notes.push(format!("{path}, hunk {}: {note}", p.number));
        }
        added.push(reindented.added);
    }

    let mut out: Vec<(&str, Eol)> = Vec::with_capacity(lines.len());
    let mut k = 0;
    for (p, added) in placements.iter().zip(&added) {
        out.extend_from_slice(&file.lines[k..p.start]);
        let mut at = p.start;
        let mut new = added.iter();
        for line in &p.hunk.lines[..p.used] {
            match line {
                HunkLine::Context(_) => {
                    out.push(file.lines[at]);
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(_) => {
                    if let Some(text) = new.next() {
                        out.push((text, Eol::None));
                    }
                }
            }
        }
        k = p.start + p.len;
    }
    out.extend_from_slice(&file.lines[k..]);
    let final_newline = hunks
        .iter()
        .rev()
        .find_map(|h| h.final_newline)
        .unwrap_or(file.final_newline);
    Ok(file.render(&out, final_newline))
}

/// Finds where one hunk goes.
struct Locate<'a, 'b> {
    path: &'a str,
    /// The 1-based hunk number.
    number: usize,
    lines: &'a [&'a str],
    budget: &'b mut Budget,
}

impl<'h> Locate<'_, '_> {
    fn seek(
        &mut self,
        pattern: &[&str],
        from: usize,
        anchor: Anchor,
    ) -> Result<Option<usize>, PatchError> {
        seek(self.lines, pattern, from, anchor, self.budget).map_err(|OutOfBudget| {
            PatchError::TooMuchWork {
                path: self.path.to_owned(),
                hunk: self.number,
            }
        })
    }

    /// Places `hunk`, searching from `cursor` (the end of the previous hunk); `drift` is how far
    /// the previous hunk was from its line hint.
    fn place(
        &mut self,
        hunk: &'h Hunk,
        cursor: usize,
        drift: isize,
    ) -> Result<Placement<'h>, PatchError> {
        let mut from = cursor;
        let mut header_at = None;
        for header in &hunk.context {
            match self.seek(&[header.as_str()], from, Anchor::First)? {
                Some(i) => {
                    header_at = Some(i);
                    from = i + 1;
                }
                None => {
                    return Err(PatchError::ContextNotFound {
                        path: self.path.to_owned(),
                        hunk: self.number,
                        header: header.trim().to_owned(),
                        after: from,
                    });
                }
            }
        }
        let hint = hunk
            .line_hint
            .map(|h| h.saturating_add_signed(drift).min(self.lines.len()));
        let old = old_side(&hunk.lines);
        if old.is_empty() {
            let start = if hunk.end_of_file {
                self.lines.len()
            } else if header_at.is_some() {
                from
            } else if let Some(h) = hint {
                h.max(from)
            } else {
                self.lines.len()
            };
            return Ok(Placement {
                number: self.number,
                start,
                len: 0,
                hunk,
                used: hunk.lines.len(),
            });
        }
        let anchor = match (hunk.end_of_file, hint) {
            (true, _) => Anchor::End,
            (false, Some(h)) => Anchor::Near(h),
            (false, None) => Anchor::First,
        };
        // Without its trailing blank context lines, if it does not fit with them (a model's
        // blank separator line reads as an empty context line).
        let trailing_blank = hunk
            .lines
            .iter()
            .rev()
            .take_while(|l| matches!(l, HunkLine::Context(t) if t.is_empty()))
            .count();
        let mut tries = vec![hunk.lines.len()];
        if trailing_blank > 0 && trailing_blank < hunk.lines.len() {
            tries.push(hunk.lines.len() - trailing_blank);
        }
        for used in tries {
            let pattern = old_side(&hunk.lines[..used]);
            if pattern.is_empty() {
                continue;
            }
            // A model often repeats the `@@` header as the first context line: search from the
            // header itself too.
            let starts = std::iter::once(from).chain(header_at);
            for start in starts {
                if let Some(at) = self.seek(&pattern, start, anchor)? {
                    return Ok(Placement {
                        number: self.number,
                        start: at,
                        len: pattern.len(),
                        hunk,
                        used,
                    });
                }
            }
        }
        Err(self.mismatch(&old, from, cursor, hunk))
    }

    /// The error for a hunk whose old lines were not found from `from`.
    fn mismatch(&mut self, old: &[&str], from: usize, cursor: usize, hunk: &Hunk) -> PatchError {
        let anywhere = if hunk.end_of_file {
            self.seek(old, 0, Anchor::First).ok().flatten()
        } else {
            self.seek(old, 0, Anchor::First)
                .ok()
                .flatten()
                .filter(|&i| i < from)
        };
        let reason = match anywhere {
            Some(i) if hunk.end_of_file && i + old.len() < self.lines.len() => format!(
                "these lines are at line {}, not at the end of the file as the hunk says \
                 ('*** End of File' or '\\ No newline at end of file')",
                i + 1
            ),
            Some(i) if i < cursor => format!(
                "these lines are at line {}, before the previous hunk's lines (hunks must follow \
                 the file's order)",
                i + 1
            ),
            Some(i) => format!(
                "these lines are at line {}, before the '@@' context header line {}",
                i + 1,
                from
            ),
            None if from == 0 => "these lines were not found in the file".to_owned(),
            None => format!("these lines were not found after line {from}"),
        };
        PatchError::HunkMismatch {
            path: self.path.to_owned(),
            hunk: self.number,
            reason,
            excerpt: excerpt(old),
        }
    }
}

/// The hunk's old side: its context and removed lines.
fn old_side(lines: &[HunkLine]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|l| match l {
            HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
            HunkLine::Add(_) => None,
        })
        .collect()
}

/// The first lines looked for, trimmed and cut, indented by two spaces.
fn excerpt(old: &[&str]) -> String {
    let mut out: Vec<String> = old
        .iter()
        .take(EXCERPT_LINES)
        .map(|l| {
            let t = l.trim();
            if t.is_empty() {
                "  (blank line)".to_owned()
            } else if t.chars().count() > EXCERPT_WIDTH {
                format!("  {}...", t.chars().take(EXCERPT_WIDTH).collect::<String>())
            } else {
                format!("  {t}")
            }
        })
        .collect();
    if old.len() > EXCERPT_LINES {
        out.push(format!("  ... and {} more", old.len() - EXCERPT_LINES));
    }
    out.join("\n")
}

/// The leading whitespace of `line`.
fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Which indentation characters `ws` holds: (tabs, spaces).
fn indent_kind(ws: &str) -> (bool, bool) {
    (ws.contains('\t'), ws.contains(' '))
}

/// What [`reindent`] decided for one hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Reindented {
    /// The hunk's added lines, in order, as they are written.
    pub added: Vec<String>,
    /// Said to the caller when lines were re-indented.
    pub note: Option<String>,
}

/// The added lines of a hunk whose old side (`body`'s context and removed lines) matched the
/// file's lines `matched`.
///
/// When every old line matched with the same indentation characters, the added lines are the
/// patch's own. When some matched only with whitespace ignored and the patch indents with other
/// characters than the file there (spaces where a Makefile has a tab), writing the patch's lines
/// as they are would change the file's indentation characters: make then fails with "missing
/// separator", Python with "inconsistent use of tabs". Decision: carry the file's own
/// indentation over and say so, rather than refuse. Why: the lines matched, so the file's
/// indentation is what the patch meant; models rarely see a tab as a tab (a line-numbered read
/// shows it as blank space) and resend spaces, so a refusal would only be repeated; and the note
/// lets the model check the result. Each added line whose indentation starts with the patch's
/// spelling of a matched line's indentation gets the file's spelling instead (the longest such
/// spelling wins; what follows it is kept). Refused, with a reason, when spear cannot tell:
/// one patch spelling stands for two different file spellings, or an added line is indented
/// with the patch's characters and starts with none of its spellings.
pub(super) fn reindent(body: &[HunkLine], matched: &[&str]) -> Result<Reindented, String> {
    let old = body.iter().filter_map(|l| match l {
        HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
        HunkLine::Add(_) => None,
    });
    // (the patch's indentation, the file's), where their characters differ.
    let mut map: Vec<(&str, &str, usize)> = Vec::new();
    for (k, (patch, file)) in old.zip(matched.iter()).enumerate() {
        let (p, f) = (indent(patch), indent(file));
        if patch.trim().is_empty() || indent_kind(p) == indent_kind(f) {
            continue;
        }
        match map.iter().find(|(mp, _, _)| *mp == p) {
            Some((_, mf, _)) if *mf != f => {
                return Err(format!(
                    "its lines are indented with {} where the file's are indented in two different ways, so spear cannot tell which indentation its added lines should have",
                    describe(p)
                ));
            }
            Some(_) => {}
            None => map.push((p, f, k)),
        }
    }
    let added_lines = body.iter().filter_map(|l| match l {
        HunkLine::Add(t) => Some(t.as_str()),
        _ => None,
    });
    if map.is_empty() {
        return Ok(Reindented {
            added: added_lines.map(str::to_owned).collect(),
            note: None,
        });
    }
    // Characters the patch indents with where the file does not.
    let foreign_tab = map
        .iter()
        .any(|(p, f, _)| p.contains('\t') && !f.contains('\t'));
    let foreign_space = map
        .iter()
        .any(|(p, f, _)| p.contains(' ') && !f.contains(' '));
    let mut added = Vec::new();
    let mut changed = 0usize;
    for line in added_lines {
        let ws = indent(line);
        let best = map
            .iter()
            .filter(|(p, _, _)| ws.starts_with(p))
            .max_by_key(|(p, _, _)| p.len());
        match best {
            Some((p, f, _)) if !ws.is_empty() || p.is_empty() => {
                added.push(format!("{f}{}", &line[p.len()..]));
                changed += 1;
            }
            _ if line.trim().is_empty() => added.push(line.to_owned()),
            _ if (foreign_tab && ws.contains('\t')) || (foreign_space && ws.contains(' ')) => {
                return Err(format!(
                    "the added line `{}` is indented with {}, which the file does not use there, and matches none of the patch's other indentations, so spear cannot tell which indentation it should have",
                    line.trim(),
                    describe(ws)
                ));
            }
            _ => added.push(line.to_owned()),
        }
    }
    let (p, f, k) = map[0];
    Ok(Reindented {
        added,
        note: (changed > 0).then(|| {
            format!(
                "the patch indents with {} where the file indents with {} (old line {} of the hunk), so {changed} added line{} {} written with the file's own indentation; check the result",
                describe(p),
                describe(f),
                k + 1,
                if changed == 1 { "" } else { "s" },
                if changed == 1 { "was" } else { "were" },
            )
        }),
    })
}

/// Indentation as words: "4 spaces", "a tab", "2 tabs and 2 spaces", "no indentation".
fn describe(ws: &str) -> String {
    let tabs = ws.matches('\t').count();
    let spaces = ws.matches(' ').count();
    let count = |n: usize, one: &str, many: &str| match n {
        1 => format!("a {one}"),
        n => format!("{n} {many}"),
    };
    match (tabs, spaces) {
        (0, 0) => "no indentation".to_owned(),
        (t, 0) => count(t, "tab", "tabs"),
        (0, s) => count(s, "space", "spaces"),
        (t, s) => format!(
            "{} and {}",
            count(t, "tab", "tabs"),
            count(s, "space", "spaces")
        ),
    }
}
