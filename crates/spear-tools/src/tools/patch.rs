//! `patch {patch}`: the `*** Begin Patch` envelope or a unified diff, applied all or nothing.
//!
//! Every path the patch names is resolved and checked against the target policy by the router
//! before anything is read. The new contents of every file are computed first ([`plan`], pure);
//! only then are they written, each through `WorkspaceFs` (a temporary file renamed over the
//! entry). If a write fails half-way, every file already changed is put back as it was, so a
//! patch never leaves the workspace half-applied.

use std::collections::HashMap;
use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ToolResult, ToolStatus};
use spear_workspace::{EntryKind, FsError, Location, Node, ResolvedPath};

use crate::Effect;
use crate::context::CallContext;
use crate::patch::{FileChange, FilePatch, Patch, parse, plan_noting};
use crate::spec::WRITING_MODES;
use crate::tool::{Access, Call, Outcome, Prepared, Resolved, ToolArgs, Typed};
use spear_core::ExecutionMode;

/// The largest file a patch may change.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// Arguments of `patch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchArgs {
    /// The patch: a `*** Begin Patch` ... `*** End Patch` envelope (Add File, Delete File, Update
    /// File with `@@` hunks, Move to) or a unified diff (`git diff`, `diff -u`).
    pub patch: String,
}

/// The `patch` tool.
pub type PatchTool = Typed<PatchArgs>;

/// A parsed patch waiting for the router's gates.
struct PatchCall {
    text: String,
    patch: Patch,
}

impl ToolArgs for PatchArgs {
    const NAME: &'static str = "patch";
    const DESCRIPTION: &'static str = "Change files with a patch, all or nothing: either the envelope \
        `*** Begin Patch` / `*** Add File: p` / `*** Delete File: p` / `*** Update File: \
        p` (optionally `*** Move to: q`) with `@@` hunks of ` ` context, `-` removed and \
        `+` added lines / `*** End Patch`, or a unified diff. Hunks are located by their \
        context lines.";
    const EFFECT: Effect = Effect::Write;
    const MODES: &'static [ExecutionMode] = WRITING_MODES;

    fn validate(self) -> Result<Call, String> {
        let patch = parse(&self.patch).map_err(|e| format!("the patch cannot be read: {e}"))?;
        Ok(Call::Tool(Box::new(PatchCall {
            text: self.patch,
            patch,
        })))
    }
}

impl Prepared for PatchCall {
    fn access(&self) -> Access {
        Access {
            reads: Vec::new(),
            writes: self.patch.paths().into_iter().map(str::to_owned).collect(),
            removes: Vec::new(),
        }
    }

    fn target(&self) -> String {
        self.patch.paths().join(", ")
    }

    fn describe(&self) -> String {
        format!("patch:\n{}", self.text)
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, paths: &Resolved) -> Outcome {
        // Every path the patch names, as written, to where the router resolved and checked it.
        let spelled: Vec<&str> = self.patch.paths();
        let by_spelling = match by_spelling(&spelled, paths) {
            Ok(by_spelling) => by_spelling,
            Err(refused) => return Outcome::of(refused),
        };
        let locate = |path: &str| -> Result<ResolvedPath, String> {
            if let Some(r) = by_spelling.get(path) {
                return Ok((*r).clone());
            }
            // Another spelling of a checked path (`./a` for `a`): it must land on one of them.
            let r = cx.workspace.resolve(path).map_err(|e| e.to_string())?;
            if paths.writes.iter().any(|w| w.entry == r.entry) {
                Ok(r)
            } else {
                Err(format!(
                    "{path} was not among the paths checked before the patch ran"
                ))
            }
        };

        let mut originals: HashMap<Location, Original> = HashMap::new();
        let mut notes: Vec<String> = Vec::new();
        let planned = {
            let mut read = |path: &str| -> Result<Option<Vec<u8>>, String> {
                let r = locate(path)?;
                match cx.fs.read(&r, MAX_FILE_BYTES) {
                    Ok(out) if out.truncated => Err(format!(
                        "{path} is larger than {} MiB; change it with the terminal",
                        MAX_FILE_BYTES >> 20
                    )),
                    Ok(out) => Ok(Some(out.bytes)),
                    Err(FsError::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e.to_string()),
                }
            };
            plan_noting(&self.patch, &mut read, &mut notes)
        };
        let changes = match planned {
            Ok(c) => c,
            Err(e) => {
                return Outcome::of(ToolResult {
                    reason: Some(format!(
                        "the patch does not apply, so nothing was changed: {e}"
                    )),
                    ..ToolResult::new(ToolStatus::Failed)
                });
            }
        };

        let mut steps = Vec::with_capacity(changes.len());
        for change in &changes {
            let r = match locate(change.path()) {
                Ok(r) => r,
                Err(e) => return Outcome::of(ToolResult::failed(e)),
            };
            if let std::collections::hash_map::Entry::Vacant(slot) =
                originals.entry(r.entry.clone())
            {
                match original(cx, &r.entry) {
                    Ok(o) => {
                        slot.insert(o);
                    }
                    Err(e) => {
                        return Outcome::of(ToolResult::failed(format!(
                            "{} cannot be read before the patch changes it, so nothing was changed: {e}",
                            cx.workspace.label(&r.entry)
                        )));
                    }
                }
            }
            steps.push((change, r));
        }

        if let Err(failure) = apply_all(cx.fs, &steps, &originals) {
            return Outcome::of(failure_result(cx, &failure));
        }

        let mut result = ToolResult::new(ToolStatus::Ok);
        result.exit_code = Some(0);
        result.stdout = summary(&self.patch);
        let mut labels: Vec<String> = Vec::new();
        for (_, r) in &steps {
            let label = cx.workspace.label(&r.entry);
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        if labels.is_empty() {
            result.stdout.push_str("(the patch changes nothing)\n");
        }
        for note in &notes {
            let _ = writeln!(result.stdout, "warning: {note}");
        }
        result.changed_paths = labels;
        Outcome::of(result)
    }
}

/// Every path the patch names, as written (`spelled`, in the order of `paths.writes`), to where
/// the router resolved and checked it; a patch that names one file under two spellings is
/// refused.
fn by_spelling<'p>(
    spelled: &[&'p str],
    paths: &'p Resolved,
) -> Result<HashMap<&'p str, &'p ResolvedPath>, ToolResult> {
    let mut by_spelling: HashMap<&str, &ResolvedPath> = HashMap::new();
    let mut by_entry: HashMap<&Location, &str> = HashMap::new();
    for (s, r) in spelled.iter().zip(&paths.writes) {
        // Attack (and accident): two spellings of one file (`a.txt`, `/workspace/a.txt`, a
        // link) would be patched as two files, the second silently undoing the first.
        if let Some(first) = by_entry.insert(&r.entry, s) {
            return Err(ToolResult::failed(format!(
                "the patch names one file twice, as `{first}` and as `{s}`; name it once, with one spelling"
            )));
        }
        by_spelling.insert(s, r);
    }
    Ok(by_spelling)
}

/// The result of a patch that failed part way: where and why, and which files could not be put
/// back (those are reported as changed).
fn failure_result(cx: &CallContext<'_>, failure: &Failure) -> ToolResult {
    let label = cx.workspace.label(&failure.at);
    let reason = if failure.stuck.is_empty() {
        format!(
            "the patch could not be applied at {label} ({}); every file it had changed was put back, so nothing was changed",
            failure.error
        )
    } else {
        format!(
            "the patch could not be applied at {label} ({}), and these files could not be put back: {}",
            failure.error,
            failure.stuck.join("; ")
        )
    };
    let mut result = ToolResult::failed(reason);
    if !failure.stuck.is_empty() {
        result.changed_paths = failure.done.iter().map(|l| cx.workspace.label(l)).collect();
    }
    result
}

/// What an entry held before the patch.
enum Original {
    /// Nothing; the directories on the way to it that did not exist either, nearest first.
    Absent { missing_parents: Vec<Location> },
    /// A file.
    File { mode: u32, bytes: Vec<u8> },
}

fn original(cx: &CallContext<'_>, loc: &Location) -> Result<Original, String> {
    match cx.fs.entry_kind(loc).map_err(|e| e.to_string())? {
        None => Ok(Original::Absent {
            missing_parents: cx.fs.missing_parents(loc).map_err(|e| e.to_string())?,
        }),
        Some((EntryKind::File, mode)) => {
            let bytes = cx
                .fs
                .read_head(loc, usize::try_from(MAX_FILE_BYTES).unwrap_or(usize::MAX))
                .map_err(|e| e.to_string())?;
            Ok(Original::File { mode, bytes })
        }
        Some((kind, _)) => Err(format!("it is a {kind:?}, not a file").to_lowercase()),
    }
}

/// The file operations a patch makes: `WorkspaceFs` itself, and in tests one that fails on cue.
trait Effects {
    fn write(&self, r: &ResolvedPath, bytes: &[u8]) -> Result<(), FsError>;
    fn delete(&self, r: &ResolvedPath) -> Result<(), FsError>;
    fn restore(&self, loc: &Location, node: &Node) -> Result<(), FsError>;
    fn remove_tree(&self, loc: &Location) -> Result<(), FsError>;
    fn remove_empty_dir(&self, loc: &Location) -> Result<bool, FsError>;
}

impl Effects for spear_workspace::WorkspaceFs {
    fn write(&self, r: &ResolvedPath, bytes: &[u8]) -> Result<(), FsError> {
        spear_workspace::WorkspaceFs::write(self, r, bytes).map(|_| ())
    }

    fn delete(&self, r: &ResolvedPath) -> Result<(), FsError> {
        spear_workspace::WorkspaceFs::delete(self, r)
    }

    fn restore(&self, loc: &Location, node: &Node) -> Result<(), FsError> {
        spear_workspace::WorkspaceFs::restore(self, loc, node)
    }

    fn remove_tree(&self, loc: &Location) -> Result<(), FsError> {
        spear_workspace::WorkspaceFs::remove_tree(self, loc)
    }

    fn remove_empty_dir(&self, loc: &Location) -> Result<bool, FsError> {
        spear_workspace::WorkspaceFs::remove_empty_dir(self, loc)
    }
}

/// Why [`apply_all`] stopped.
struct Failure {
    at: Location,
    error: FsError,
    done: Vec<Location>,
    stuck: Vec<String>,
}

/// Applies every step in order; on the first failure puts back every entry already changed (as
/// `originals` has it) and says what could not be put back.
fn apply_all(
    fx: &dyn Effects,
    steps: &[(&FileChange, ResolvedPath)],
    originals: &HashMap<Location, Original>,
) -> Result<(), Box<Failure>> {
    let mut done: Vec<Location> = Vec::new();
    for (change, r) in steps {
        let applied = match change {
            FileChange::Write { content, .. } => fx.write(r, content),
            FileChange::Delete { .. } => fx.delete(r),
        };
        if let Err(error) = applied {
            let stuck = roll_back(fx, &done, originals);
            return Err(Box::new(Failure {
                at: r.entry.clone(),
                error,
                done,
                stuck,
            }));
        }
        done.push(r.entry.clone());
    }
    Ok(())
}

/// Puts every entry in `done` back as `originals` has it, last first; returns what could not be.
fn roll_back(
    fx: &dyn Effects,
    done: &[Location],
    originals: &HashMap<Location, Original>,
) -> Vec<String> {
    let mut stuck = Vec::new();
    for loc in done.iter().rev() {
        let put_back = match originals.get(loc) {
            Some(Original::File { mode, bytes }) => fx.restore(
                loc,
                &Node::File {
                    mode: *mode,
                    bytes: bytes.clone(),
                },
            ),
            Some(Original::Absent { missing_parents }) => match fx.remove_tree(loc) {
                Ok(()) | Err(FsError::NotFound { .. }) => {
                    // The directories the write made, while they are empty.
                    for parent in missing_parents {
                        if !matches!(fx.remove_empty_dir(parent), Ok(true)) {
                            break;
                        }
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            },
            None => Ok(()),
        };
        if let Err(e) = put_back {
            stuck.push(format!("{}: {e}", loc.rel.display()));
        }
    }
    stuck
}

/// One line per file operation, as `git status --short` would show it.
fn summary(patch: &Patch) -> String {
    let mut out = String::new();
    for f in &patch.files {
        let _ = match f {
            FilePatch::Add { path, .. } => writeln!(out, "A {path}"),
            FilePatch::Delete { path } => writeln!(out, "D {path}"),
            FilePatch::Update {
                path,
                move_to: Some(to),
                ..
            } => writeln!(out, "R {path} -> {to}"),
            FilePatch::Update { path, .. } => writeln!(out, "M {path}"),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::cell::Cell;
    use std::os::unix::fs::PermissionsExt;

    use spear_workspace::{Workspace, WorkspaceConfig, WorkspaceFs};

    use super::*;

    /// `WorkspaceFs`, but the `fail_at`-th write or delete fails (after the earlier ones really
    /// happened).
    struct FailingAt<'a> {
        fs: &'a WorkspaceFs,
        fail_at: usize,
        seen: Cell<usize>,
    }

    impl Effects for FailingAt<'_> {
        fn write(&self, r: &ResolvedPath, bytes: &[u8]) -> Result<(), FsError> {
            self.seen.set(self.seen.get() + 1);
            if self.seen.get() == self.fail_at {
                return Err(FsError::Io {
                    label: r.as_written.clone(),
                    source: std::io::Error::other("injected failure"),
                });
            }
            Effects::write(self.fs, r, bytes)
        }

        fn delete(&self, r: &ResolvedPath) -> Result<(), FsError> {
            self.seen.set(self.seen.get() + 1);
            if self.seen.get() == self.fail_at {
                return Err(FsError::Io {
                    label: r.as_written.clone(),
                    source: std::io::Error::other("injected failure"),
                });
            }
            Effects::delete(self.fs, r)
        }

        fn restore(&self, loc: &Location, node: &Node) -> Result<(), FsError> {
            Effects::restore(self.fs, loc, node)
        }

        fn remove_tree(&self, loc: &Location) -> Result<(), FsError> {
            Effects::remove_tree(self.fs, loc)
        }

        fn remove_empty_dir(&self, loc: &Location) -> Result<bool, FsError> {
            Effects::remove_empty_dir(self.fs, loc)
        }
    }

    /// A failure after some files changed puts every one of them back, byte for byte and mode
    /// for mode, and removes what was created.
    #[test]
    fn a_failure_half_way_puts_everything_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "a one\r\na two\n").unwrap();
        std::fs::set_permissions(root.join("a.txt"), std::fs::Permissions::from_mode(0o750))
            .unwrap();
        std::fs::write(root.join("gone.txt"), "to delete\n").unwrap();
        std::fs::write(root.join("z.txt"), "z\n").unwrap();
        let ws = Workspace::open(&WorkspaceConfig::new(&root)).unwrap();
        let fs = ws.fs().unwrap();
        let patch = parse(
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-a one\n+A ONE\n*** Add File: new/b.txt\n+b\n*** Delete File: gone.txt\n*** Update File: z.txt\n@@\n-z\n+Z\n*** End Patch\n",
        )
        .unwrap();
        let changes =
            crate::patch::plan(&patch, &mut |p: &str| match std::fs::read(root.join(p)) {
                Ok(b) => Ok(Some(b)),
                Err(_) => Ok(None),
            })
            .unwrap();
        let before = snapshot(&root);
        for fail_at in 1..=changes.len() {
            let mut originals = HashMap::new();
            let steps: Vec<(&FileChange, ResolvedPath)> = changes
                .iter()
                .map(|c| {
                    let r = ws.resolve(c.path()).unwrap();
                    let o = match fs.entry_kind(&r.entry).unwrap() {
                        None => Original::Absent {
                            missing_parents: fs.missing_parents(&r.entry).unwrap(),
                        },
                        Some((_, mode)) => Original::File {
                            mode,
                            bytes: fs.read_head(&r.entry, 1 << 20).unwrap(),
                        },
                    };
                    originals.insert(r.entry.clone(), o);
                    (c, r)
                })
                .collect();
            let fx = FailingAt {
                fs: &fs,
                fail_at,
                seen: Cell::new(0),
            };
            let failure = apply_all(&fx, &steps, &originals).err().unwrap();
            assert_eq!(failure.done.len(), fail_at - 1);
            assert!(failure.stuck.is_empty(), "{:?}", failure.stuck);
            assert_eq!(snapshot(&root), before, "failing at step {fail_at}");
        }
        // Positive control: without a failure every change lands.
        let fx = FailingAt {
            fs: &fs,
            fail_at: usize::MAX,
            seen: Cell::new(0),
        };
        let steps: Vec<(&FileChange, ResolvedPath)> = changes
            .iter()
            .map(|c| (c, ws.resolve(c.path()).unwrap()))
            .collect();
        assert!(apply_all(&fx, &steps, &HashMap::new()).is_ok());
        assert_ne!(snapshot(&root), before);
        assert!(
            std::fs::read_to_string(root.join("a.txt"))
                .unwrap()
                .starts_with("A ONE")
        );
    }

    fn snapshot(root: &std::path::Path) -> Vec<(String, Vec<u8>, u32)> {
        let mut out: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let meta = e.metadata().unwrap();
                let bytes = if meta.is_file() {
                    std::fs::read(e.path()).unwrap()
                } else {
                    Vec::new()
                };
                (
                    e.file_name().to_string_lossy().into_owned(),
                    bytes,
                    meta.permissions().mode() & 0o777,
                )
            })
            .collect();
        out.sort();
        out
    }
}
