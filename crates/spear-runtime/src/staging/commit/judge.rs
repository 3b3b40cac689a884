//! Steps 2 and 3 of a commit: every planned operation judged by the caller's [`Judge`] before
//! anything is applied (a removal with everything below it), the askable refusals put to the
//! person in one question, and a git operation's changes kept together.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use spear_core::{ChangeKind, Refusal};
use spear_workspace::{
    EntryKind, EntryMeta, FsError, Location, TreeView, Walk, Workspace, WorkspaceFs,
};

use super::committer::Committer;
use super::layers::{StagedView, open_file_in, staged_entry};
use super::plan::{Op, Planned, change_kind};
use crate::staging::limits::{MAX_COMPARE_BYTES, MAX_STAGED_ENTRIES};
use crate::staging::tracked::in_git_dir;
use crate::staging::upper::Staged;

/// One change proposed to the judge.
#[derive(Clone, Copy)]
pub struct Proposed<'a> {
    /// Where.
    pub loc: &'a Location,
    /// What.
    pub kind: ChangeKind<'a>,
    /// Whether the entry is tracked (not in `.git`, not ignored build output): the rules about
    /// sources apply to tracked entries only.
    pub tracked: bool,
    /// The workspace as the command left it (its layer over the host).
    pub staged: &'a dyn TreeView,
    /// The workspace as it is on the host, before this commit.
    pub host: &'a WorkspaceFs,
    /// The workspace.
    pub ws: &'a Workspace,
}

/// Decides which staged changes may reach the host. The runtime knows nothing of policy: the
/// caller supplies the target policy through this.
pub trait Judge {
    /// `Ok` lets the change through; a refusal drops it and says why. An askable refusal
    /// ([`Refusal::is_askable`]: host-run configuration) goes to [`Judge::approve`] instead.
    fn judge(&self, change: &Proposed<'_>) -> Result<(), Refusal>;

    /// Asked once per commit, after every change was judged and before any is applied, with
    /// the askable refusals of the changes no other rule refused: `Ok` lets them all through,
    /// a refusal (the person declined, nobody could be asked) drops them all and says why. By
    /// default nobody is asked.
    fn approve(&self, asked: &[&Refusal]) -> Result<(), Refusal> {
        let what: Vec<&str> = asked.iter().map(|r| r.subject()).collect();
        Err(Refusal::no_confirmer(what.join(", ")))
    }
}

/// A change judged allowed, for pass 2.
pub(super) struct Judged {
    pub(super) label: String,
    /// The askable refusals (host-run configuration) of the change and of what is below it: it
    /// is applied only if [`Judge::approve`] lets them through.
    pub(super) asked: Vec<Refusal>,
    /// Whether the entry is tracked (named in the result, checkpointed).
    pub(super) tracked: bool,
    /// For a removal: every host entry below it, as the judgement saw them.
    pub(super) below: Vec<Below>,
    /// What applying it does.
    pub(super) action: Action,
}

/// A host entry below a removal.
pub(super) struct Below {
    pub(super) loc: Location,
    pub(super) meta: EntryMeta,
    pub(super) tracked: bool,
}

/// What pass 2 does with a change judged allowed.
pub(super) enum Action {
    /// Apply it.
    Apply,
    /// A file whose content and mode did not change: set its time to this, if that moved.
    Touch(Option<(i64, i64)>),
}

impl Committer<'_> {
    /// Pass 1, before anything is applied (so that every judgement sees the host as it was):
    /// what `p` would do, or `None` when it is refused, below a refusal, or no change at all.
    pub(super) fn judge_one(
        &mut self,
        p: &Planned,
        judge: &dyn Judge,
        view: &StagedView<'_>,
    ) -> Option<Judged> {
        if self.is_blocked(&p.loc) {
            return None;
        }
        let label = self.ws.label(&p.loc);
        if let Op::File = p.op
            && let Some(h) = p.host
            && h.kind == EntryKind::File
            && self.same_file(&p.loc, &h)
        {
            // A copy-up that changed nothing: at most its time.
            let touch = self.staged_mtime(&p.loc).filter(|mtime| {
                (h.mtime_ns / 1_000_000_000, h.mtime_ns % 1_000_000_000)
                    != (i128::from(mtime.0), i128::from(mtime.1))
            });
            return Some(Judged {
                label,
                asked: Vec::new(),
                tracked: false,
                below: Vec::new(),
                action: Action::Touch(touch),
            });
        }
        let kind = change_kind(&p.op);
        // A removal is judged with everything below it, and checked for changes the host made.
        let below = if kind == ChangeKind::Remove {
            match self.tree_below(&p.loc) {
                Ok(entries) => entries,
                Err(e) => {
                    self.report.failures.push(format!("{label}: {e}"));
                    self.blocked.push(p.loc.clone());
                    return None;
                }
            }
        } else {
            Vec::new()
        };
        let tracked = self
            .tracked
            .is_tracked(self.ws, self.fs, &p.loc, p.is_dir());
        let below: Vec<Below> = below
            .into_iter()
            .map(|(loc, meta)| Below {
                tracked: self.tracked.is_tracked(
                    self.ws,
                    self.fs,
                    &loc,
                    meta.kind == EntryKind::Dir,
                ),
                loc,
                meta,
            })
            .collect();
        let mut asked = Vec::new();
        let refused = std::iter::once((&p.loc, kind, tracked))
            .chain(
                below
                    .iter()
                    .map(|b| (&b.loc, ChangeKind::Remove, b.tracked)),
            )
            .find_map(|(loc, kind, tracked)| {
                let verdict = judge.judge(&Proposed {
                    loc,
                    kind,
                    tracked,
                    staged: view,
                    host: self.fs,
                    ws: self.ws,
                });
                match verdict {
                    Ok(()) => None,
                    Err(r) if r.is_askable() => {
                        asked.push(r);
                        None
                    }
                    Err(r) => Some((self.ws.label(loc), r)),
                }
            });
        if let Some((what, refusal)) = refused {
            let shown = if what == label {
                label
            } else {
                format!("{label} (it holds {what})")
            };
            self.report.refused.push((shown, refusal));
            self.blocked.push(p.loc.clone());
            self.refused_at.push(p.loc.clone());
            return None;
        }
        Some(Judged {
            label,
            asked,
            tracked,
            below,
            action: Action::Apply,
        })
    }

    /// Between the passes: the changes whose only refusals are askable go to
    /// [`Judge::approve`] together, in one question; not approved, each is dropped (and what lies
    /// below it), reported as refused, and the answer kept for the result.
    pub(super) fn ask(
        &mut self,
        ops: &[Planned],
        judged: &mut [Option<Judged>],
        judge: &dyn Judge,
    ) {
        let asked: Vec<&Refusal> = judged
            .iter()
            .flatten()
            .flat_map(|j| j.asked.iter())
            .collect();
        if asked.is_empty() {
            return;
        }
        let Err(answer) = judge.approve(&asked) else {
            return;
        };
        for (p, slot) in ops.iter().zip(judged.iter_mut()) {
            if slot.as_ref().is_some_and(|j| !j.asked.is_empty())
                && let Some(j) = slot.take()
                && let Some(first) = j.asked.into_iter().next()
            {
                let shown = if first.subject() == j.label {
                    j.label
                } else {
                    format!("{} (it holds {})", j.label, first.subject())
                };
                self.report.refused.push((shown, first));
                self.blocked.push(p.loc.clone());
                self.refused_at.push(p.loc.clone());
            }
        }
        self.report.unapproved = Some(answer);
    }

    /// Between the passes (step 3 of the module's doc): for every git directory holding a
    /// refused change, drops every other change planned in it and counts them in
    /// [`CommitReport::kept_together`]. A git operation writes its refs, index, logs and
    /// worktree metadata as one: committed in part, it leaves the repository in a state no git
    /// command made (a branch whose worktree was never registered). A change of nothing but a
    /// file's time is left alone. Costs a few lookups per refused change and per planned change
    /// in a git directory, never a walk.
    pub(super) fn keep_git_ops_whole(
        &mut self,
        ops: &[Planned],
        judged: &mut [Option<Judged>],
        view: &StagedView<'_>,
    ) {
        // Each git directory holding a refused change, by root and path: its index in `dirs`.
        let mut dirs: Vec<Location> = Vec::new();
        let mut index: HashMap<(usize, PathBuf), usize> = HashMap::new();
        for loc in &self.refused_at {
            if !in_git_dir(&loc.rel) {
                continue;
            }
            let is_dir = |rel: &Path| {
                let at = Location {
                    root: loc.root,
                    rel: rel.to_path_buf(),
                };
                view.kind(&at) == Some(EntryKind::Dir)
                    || TreeView::kind(self.fs, &at) == Some(EntryKind::Dir)
            };
            if let Some(rel) = git_dir_of(&loc.rel, is_dir) {
                index.entry((loc.root, rel.clone())).or_insert_with(|| {
                    dirs.push(Location {
                        root: loc.root,
                        rel,
                    });
                    dirs.len() - 1
                });
            }
        }
        if dirs.is_empty() {
            return;
        }
        let mut counts = vec![0usize; dirs.len()];
        for (p, slot) in ops.iter().zip(judged.iter_mut()) {
            if !slot
                .as_ref()
                .is_some_and(|j| matches!(j.action, Action::Apply))
            {
                continue;
            }
            if let Some(n) = containing_git_dir(&index, &p.loc) {
                *slot = None;
                counts[n] += 1;
            }
        }
        // Counted once per git directory, across both passes.
        let kept = &mut self.report.kept_together;
        for (dir, n) in dirs.iter().zip(counts) {
            if n == 0 {
                continue;
            }
            let label = self.ws.label(dir);
            match kept.iter_mut().find(|(l, _)| *l == label) {
                Some((_, count)) => *count += n,
                None => kept.push((label, n)),
            }
        }
    }

    /// Every entry below `loc` on the host (not `loc` itself), deepest last.
    fn tree_below(&self, loc: &Location) -> Result<Vec<(Location, EntryMeta)>, FsError> {
        let mut out = Vec::new();
        match self.fs.entry_meta(loc)? {
            Some(m) if m.kind == EntryKind::Dir => {}
            _ => return Ok(out),
        }
        self.fs
            .walk_from(loc, MAX_STAGED_ENTRIES, &mut |rel, meta| {
                out.push((
                    Location {
                        root: loc.root,
                        rel: rel.to_path_buf(),
                    },
                    *meta,
                ));
                Walk::Continue
            })?;
        Ok(out)
    }

    /// The modification time of the file the layer holds at `loc`.
    fn staged_mtime(&self, loc: &Location) -> Option<(i64, i64)> {
        let (tree, _) = self.layers.tree(loc.root)?;
        match staged_entry(tree, &loc.rel)? {
            Staged::File { mtime, .. } => Some(*mtime),
            _ => None,
        }
    }

    /// Whether the staged file at `loc` has the host file's mode and content.
    fn same_file(&self, loc: &Location, host: &EntryMeta) -> bool {
        let Some((tree, _)) = self.layers.tree(loc.root) else {
            return false;
        };
        let Some(Staged::File { mode, size, .. }) = staged_entry(tree, &loc.rel) else {
            return false;
        };
        if *mode != host.mode || *size != host.size || *size > MAX_COMPARE_BYTES {
            return false;
        }
        let Some((dir, name)) = self.layer_parent(loc) else {
            return false;
        };
        let Ok(staged) = open_file_in(&dir, &name) else {
            return false;
        };
        let Ok((host_file, _)) = self.fs.open_file(loc) else {
            return false;
        };
        same_bytes(std::fs::File::from(staged), host_file)
    }
}

/// The git directory `rel` lies in (or is): the path up to and including its first `.git`
/// component that `is_dir` says is a directory (a `.git` file, a linked worktree's pointer, is
/// none). A linked worktree's metadata (`.git/worktrees/NAME`) and a submodule's git directory
/// (`.git/modules/NAME`) belong to it: one git operation writes them with its refs. `None`
/// outside every git directory.
fn git_dir_of(rel: &Path, is_dir: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    let mut prefix = PathBuf::new();
    for c in rel.components() {
        prefix.push(c);
        if matches!(c, Component::Normal(n) if n == ".git") && is_dir(&prefix) {
            return Some(prefix);
        }
    }
    None
}

/// Which of the git directories in `index` (by root and path) holds `loc`, by its index: each of
/// its ancestors ending in a `.git` component is looked up, so the cost is its depth, not the
/// number of git directories.
fn containing_git_dir(index: &HashMap<(usize, PathBuf), usize>, loc: &Location) -> Option<usize> {
    if !in_git_dir(&loc.rel) {
        return None;
    }
    loc.rel
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == ".git"))
        .find_map(|a| index.get(&(loc.root, a.to_path_buf())).copied())
}

/// Whether two readers yield the same bytes.
fn same_bytes(mut left: std::fs::File, mut right: std::fs::File) -> bool {
    let (mut left_buf, mut right_buf) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let Ok(got_left) = read_full(&mut left, &mut left_buf) else {
            return false;
        };
        let Ok(got_right) = read_full(&mut right, &mut right_buf) else {
            return false;
        };
        if got_left != got_right || left_buf[..got_left] != right_buf[..got_right] {
            return false;
        }
        if got_left == 0 {
            return true;
        }
    }
}

/// Reads into `buf` until it is full or the file ends: how many bytes it holds.
fn read_full(r: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each path's git directory, given which of its prefixes are directories.
    #[test]
    fn a_git_directory_is_the_first_dot_git_that_is_a_directory() {
        let dirs = [".git", "sub/.git", "deep/x/.git", "file/.git/inner/.git"];
        let is_dir = |p: &Path| dirs.iter().any(|d| Path::new(d) == p);
        let of = |rel: &str| git_dir_of(Path::new(rel), is_dir);
        for (rel, dir) in [
            (".git", Some(".git")),
            (".git/refs/heads/x", Some(".git")),
            // A linked worktree's metadata and a submodule's git directory are the
            // repository's own.
            (".git/worktrees/wt/gitdir", Some(".git")),
            (".git/modules/m/.git/config", Some(".git")),
            ("sub/.git/index", Some("sub/.git")),
            ("deep/x/.git/logs/HEAD", Some("deep/x/.git")),
            // A `.git` that is not a directory (a linked worktree's pointer file) is none.
            ("wt/.git", None),
            ("file/.git/inner/.git/HEAD", Some("file/.git/inner/.git")),
            ("src/main.rs", None),
            ("a.git/HEAD", None),
            ("", None),
        ] {
            assert_eq!(of(rel), dir.map(PathBuf::from), "{rel}");
        }
    }

    #[test]
    fn a_change_is_found_in_its_git_directory_by_its_ancestors() {
        let mut index = HashMap::new();
        index.insert((0, PathBuf::from(".git")), 0);
        index.insert((1, PathBuf::from("sub/.git")), 1);
        let at = |root, rel: &str| Location {
            root,
            rel: PathBuf::from(rel),
        };
        assert_eq!(
            containing_git_dir(&index, &at(0, ".git/worktrees/wt/HEAD")),
            Some(0)
        );
        assert_eq!(containing_git_dir(&index, &at(0, ".git")), Some(0));
        assert_eq!(
            containing_git_dir(&index, &at(1, "sub/.git/refs/heads/x")),
            Some(1)
        );
        // Another root, another repository, or outside every git directory: none.
        assert_eq!(containing_git_dir(&index, &at(1, ".git/index")), None);
        assert_eq!(containing_git_dir(&index, &at(0, "sub/.git/index")), None);
        assert_eq!(containing_git_dir(&index, &at(0, "src/.gitignore")), None);
        assert_eq!(containing_git_dir(&index, &at(0, "README.md")), None);
    }
}
