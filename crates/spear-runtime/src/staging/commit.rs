//! Committing what a command staged: every change judged first, then the allowed ones put into
//! the workspace through [`WorkspaceFs`], the refused ones dropped and reported.
//!
//! 1. Plan: the upper layer of each root is compared with the host, entry by entry, into a list of
//!    operations in tree order (parents before children, a removal before what replaces it).
//!    A file whose content and mode did not change is no change (a copy-up by an open for
//!    writing, a `touch`): at most its modification time is set.
//! 2. Judge: every operation goes to the caller's [`Judge`] with a view of the workspace as the
//!    command left it (the layer over the host). A removal is judged as a unit with everything
//!    below it: one protected entry inside keeps the whole tree (a nested repository moved away
//!    keeps its `.git/config` and hooks where they are). What is below a refused directory or
//!    removal is dropped with it.
//! 3. Together: a git operation's changes (refs, index, logs, a linked worktree's metadata in
//!    `.git/worktrees/NAME`) are committed all or none. When a change inside a repository's git
//!    directory (the path up to its first `.git` component that is a directory, on the host or in
//!    the command's view) is refused, every other change planned in that git directory is dropped
//!    with it and counted ([`CommitReport::kept_together`]); changes outside it are independent
//!    and still applied. Done before host-run configuration is put to the person (nobody is asked
//!    about a change that is dropped anyway) and again after, for what was not approved. Attack
//!    stopped: `git worktree add -b x ../wt` answered as done while its `gitdir` was kept out,
//!    leaving a branch, half a worktree's metadata and an agent told it worked.
//! 4. Conflicts: an entry the host changed while the command ran (its ctime is later than the
//!    command's start) is not overwritten or removed; the staged version is kept aside and named.
//!    Attack stopped: two spear processes on one workspace undoing each other's changes.
//! 5. Apply: removals, directories, modes, files (renamed out of the layer, or copied when it is
//!    on another filesystem), links, times. The state before of every tracked entry, and of
//!    everything a removal takes (ignored files and a git directory's too, within
//!    [`MAX_UNTRACKED_KEPT`]), is read just before it changes, for the checkpoint; every removal
//!    is named in the result. Nothing is applied when the plan could not be made (the layer
//!    unreadable or over its bound): all or nothing at that step.
//!
//! A command any part of whose changes was kept out (refused, or host-run configuration not
//! approved) did not do what it did in its own view: its result is `denied`, never `ok`, and a
//! 0 exit code becomes [`spear_core::exit_code::REFUSED`] ([`CommitReport::apply_to`]).
//!
//! What the plan removes is what the command's view lost, never what metadata the command could
//! set says: a whiteout (overlayfs makes one only for an entry removed in the merged view), or an
//! opaque directory marked with the mount's own attribute, which overlayfs never lets a command
//! set ([`spear_sandbox::opaque_xattr`]). A removal of a repository's core is refused by the
//! judge whatever made it ([`Judge`]; spear-policy's `git_core`).

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use spear_core::{ChangeKind, Refusal, ToolResult, ToolStatus, exit_code};
use spear_workspace::{
    EntryKind, EntryMeta, FsError, Location, TreeView, Walk, Workspace, WorkspaceFs,
};

use super::area::{Staging, clock_now};
use super::tracked::TrackedRules;
use super::upper::{Staged, UpperError, open_layer_dir, read_layer};
use crate::checkpoint::{CheckpointError, CheckpointStore, EntryState};

/// Entries a layer may hold before the commit fails closed.
pub const MAX_STAGED_ENTRIES: usize = 2_000_000;

/// The most changes one command's commit takes by default: past them it commits none of them
/// and says so, in bounded time. Judging, applying and recording a change for the checkpoint
/// cost tens of microseconds (a debug build: about 75), so 250,000 changes are answered in
/// seconds, not minutes, and a command that writes millions of files is answered as soon as
/// its layer has shown more than the limit. An operator may set another (`[limits] changes`).
pub const MAX_COMMITTED_CHANGES: usize = 250_000;

/// How many entries a result's or a reason's list names; the rest are counted ("... and N
/// more").
pub const MAX_LISTED: usize = 1_000;

/// Bytes of removed untracked files (ignored files, a git directory's) one commit keeps for
/// undo: enough for the configuration, data and secrets a project keeps out of git, not for a
/// removed build tree (which its build makes again). Past it, removed untracked files are named
/// as not kept.
pub const MAX_UNTRACKED_KEPT: u64 = 16 << 20;

/// Files larger than this are never compared byte by byte (they count as changed).
const MAX_COMPARE_BYTES: u64 = 64 << 20;

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

/// What a commit did.
#[derive(Debug, Default)]
pub struct CommitReport {
    /// The state before of every tracked entry that changed and of every entry removed, for
    /// the turn's checkpoint.
    pub captured: Vec<(Location, EntryState)>,
    /// Labels of the tracked entries that changed (files and links, and directories that
    /// appeared or vanished) and of every removal, tracked or not.
    pub changed: Vec<String>,
    /// Changes refused, with why (one per refused entry or removed tree).
    pub refused: Vec<(String, Refusal)>,
    /// Git directories in which a change was refused, each with how many of its other changes
    /// were kept out with it: a git operation's changes are committed together or not at all.
    pub kept_together: Vec<(String, usize)>,
    /// Entries the host changed while the command ran, left as the host has them.
    pub conflicts: Vec<String>,
    /// Where the staged versions of conflicting entries were kept.
    pub kept_at: Option<PathBuf>,
    /// Tracked entries whose earlier content was not kept (too large), so undo cannot restore
    /// them.
    pub not_kept: Vec<String>,
    /// Removed untracked files past [`MAX_UNTRACKED_KEPT`], so undo cannot restore them.
    pub not_kept_untracked: Vec<String>,
    /// Fifos, sockets and devices the command left, which are never committed.
    pub special: Vec<String>,
    /// Changes that could not be applied.
    pub failures: Vec<String>,
    /// Whether the plan could not be made at all (nothing was committed).
    pub unreadable: Option<String>,
    /// Changes to untracked entries (`.git`, ignored build output) that were committed.
    pub untracked: usize,
    /// The command left more changes than the commit takes: none was committed.
    pub over_limit: Option<OverLimit>,
    /// The call was cancelled before anything was applied: none was committed.
    pub stopped: Option<usize>,
    /// Why the askable changes (host-run configuration, listed in `refused`) were not let
    /// through: the person declined, or nobody could be asked.
    pub unapproved: Option<Refusal>,
}

/// What a commit over its limit saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverLimit {
    /// The limit.
    pub max: usize,
    /// The changes planned, when planning got that far (otherwise the layer alone held more
    /// entries than the limit).
    pub planned: Option<usize>,
}

/// `items` joined with `sep`, at most [`MAX_LISTED`] of them, the rest counted.
pub fn listed(items: &[String], sep: &str) -> String {
    let shown = items.get(..MAX_LISTED).unwrap_or(items);
    let text = shown.join(sep);
    if items.len() > shown.len() {
        format!("{text}{sep}... and {} more", items.len() - shown.len())
    } else {
        text
    }
}

impl CommitReport {
    /// Adds what the commit did to the command's result: changed paths, and reasons for what
    /// was refused, kept aside or could not be applied (which also fail the result).
    ///
    /// A result with any change refused is `denied`, not `ok` (a `failed`, `cancelled` or
    /// `timeout` one keeps its status): the workspace is not as the command left it. Its exit
    /// code stays the command's own when that was not 0; a 0 becomes
    /// [`exit_code::REFUSED`], and the reason says that the command itself exited 0.
    pub fn apply_to(&self, result: &mut ToolResult) {
        // A set, not `Vec::contains`: a command that changed 200,000 paths must not cost their
        // square here.
        let mut seen: std::collections::HashSet<String> =
            result.changed_paths.iter().cloned().collect();
        for label in &self.changed {
            if seen.insert(label.clone()) {
                result.changed_paths.push(label.clone());
            }
        }
        if let Some(over) = &self.over_limit {
            result.status = ToolStatus::Failed;
            let counted = over.planned.map_or_else(
                || format!("its staged writes hold more than {} entries", over.max),
                |n| format!("it made {n} changes"),
            );
            result.append_reason(&format!(
                    "the command changed more of the workspace than spear commits from one command \
                     ({counted}; the limit is {max}), so none of its changes were committed: all or \
                     nothing, the workspace is as it was before the command. Split the work into \
                     smaller commands, or write bulk output outside the workspace (/tmp)",
                    max = over.max
                ),
            );
        }
        if let Some(planned) = self.stopped {
            result.status = ToolStatus::Cancelled;
            result.append_reason(&format!(
                "the call was cancelled while spear judged the command's {planned} changes; \
                     none of them were committed: the workspace is as it was before the command"
            ));
        }
        if let Some(why) = &self.unreadable {
            result.status = ToolStatus::Failed;
            result.append_reason(&format!(
                "{why}; the workspace is as it was before the command"
            ));
        }
        self.deny_partial(result);
        if let Some(answer) = &self.unapproved {
            let rest = if self.kept_together.is_empty() {
                "the rest was committed"
            } else {
                "the rest was committed, but for the git operations they belong to"
            };
            result.append_reason(&format!(
                "the command wrote host-run configuration, which reaches the workspace only \
                     with the user's approval; it was not approved, so those writes were kept \
                     out (listed below) and {rest}: {}",
                answer.message()
            ));
        }
        if let Some(refused) = self.refused_reason() {
            result.append_reason(&refused);
        }
        if !self.conflicts.is_empty() {
            let kept = self
                .kept_at
                .as_ref()
                .map(|p| format!("; this command's versions are kept in {}", p.display()))
                .unwrap_or_default();
            result.append_reason(&format!(
                "changed on the host while the command ran, so left as the host has them: {}{kept}",
                listed(&self.conflicts, ", ")
            ));
        }
        self.append_not_kept(result);
        if !self.failures.is_empty() {
            result.status = ToolStatus::Failed;
            result.append_reason(&format!(
                "some changes could not be put into the workspace: {}",
                listed(&self.failures, "; ")
            ));
        }
    }
}

impl CommitReport {
    /// A command some of whose changes were kept out did not do what it did in its own view: an
    /// `ok` result becomes `denied`, and an exit code of 0 becomes [`exit_code::REFUSED`], said
    /// in the reason (a client reading only the exit code must not take it for success). A
    /// result already `failed`, `cancelled` or `timeout` keeps its status and its code.
    fn deny_partial(&self, result: &mut ToolResult) {
        if self.refused.is_empty() || !matches!(result.status, ToolStatus::Ok | ToolStatus::Denied)
        {
            return;
        }
        result.status = ToolStatus::Denied;
        if result.exit_code == Some(0) {
            result.exit_code = Some(exit_code::REFUSED);
            result.append_reason(&format!(
                "the command itself exited 0, but spear kept out part of what it changed, so \
                     the workspace is not as the command left it (exit code {} says so; what was \
                     kept out and why is listed below)",
                exit_code::REFUSED
            ));
        }
    }

    /// What the result says of what the commit did not keep: fifos, sockets and devices, and the
    /// earlier content of what undo cannot restore.
    fn append_not_kept(&self, result: &mut ToolResult) {
        if !self.special.is_empty() {
            result.append_reason(&format!(
                "fifos, sockets and devices are not kept: {}",
                listed(&self.special, ", ")
            ));
        }
        if !self.not_kept.is_empty() {
            result.append_reason(&format!(
                    "the earlier content of {} was not kept (too large), so `spear undo` cannot restore it",
                    listed(&self.not_kept, ", ")
                ),
            );
        }
        if !self.not_kept_untracked.is_empty() {
            result.append_reason(&format!(
                "the command removed ignored files or files of a git directory; past the \
                     first {} MiB of them, their content was not kept, so `spear undo` cannot \
                     restore {}",
                MAX_UNTRACKED_KEPT >> 20,
                listed(&self.not_kept_untracked, ", ")
            ));
        }
    }

    /// What the result says of the refused changes, if any: each with its rule's reason (a
    /// host-run one shortly, with what runs it; the answer that kept it out is said once).
    fn refused_reason(&self) -> Option<String> {
        if self.refused.is_empty() {
            return None;
        }
        let list: Vec<String> = self
            .refused
            .iter()
            .map(|(label, r)| match r {
                Refusal::HostRunConfig { entry, why, .. } => {
                    format!("{label} (host-run configuration `{entry}`: {why})")
                }
                _ => format!("{label} ({})", r.message()),
            })
            .collect();
        let mut text = format!(
            "spear did not let these changes reach the workspace (the command saw them; nothing else did): {}",
            listed(&list, "; ")
        );
        if !self.kept_together.is_empty() {
            let dirs: Vec<String> = self
                .kept_together
                .iter()
                .map(|(dir, n)| format!("{dir} ({n})"))
                .collect();
            text = format!(
                "{text}; the rest of the changes to {} were kept out with them: a git \
                 operation's changes are committed together or not at all",
                listed(&dirs, ", ")
            );
        }
        Some(text)
    }
}

/// One planned operation.
#[derive(Debug)]
enum Op {
    /// Remove the host entry and everything below it.
    Remove,
    /// Make a directory with this mode.
    Dir(u32),
    /// Give the host entry this mode.
    Mode(u32),
    /// Install the staged file.
    File,
    /// Install a link to this target.
    Symlink(OsString),
}

/// An operation at a place.
#[derive(Debug)]
struct Planned {
    loc: Location,
    op: Op,
    /// The host entry there when planned.
    host: Option<EntryMeta>,
}

impl Planned {
    /// Whether the entry is (or becomes) a directory.
    fn is_dir(&self) -> bool {
        matches!(self.op, Op::Dir(_)) || self.host.is_some_and(|h| h.kind == EntryKind::Dir)
    }
}

/// The layers of a commit, read.
struct Layers {
    trees: Vec<(usize, Staged, OwnedFd)>,
}

impl Layers {
    fn tree(&self, root: usize) -> Option<(&Staged, &OwnedFd)> {
        self.trees
            .iter()
            .find(|(r, _, _)| *r == root)
            .map(|(_, t, fd)| (t, fd))
    }
}

/// The workspace as a command left it: its layer over the host.
struct StagedView<'a> {
    layers: &'a Layers,
    host: &'a WorkspaceFs,
}

/// What the layer says of a place.
enum Layered<'t> {
    /// The layer holds this entry there.
    Staged(&'t Staged),
    /// The layer removed what was there (a whiteout, or an opaque directory on the way).
    Removed,
    /// The layer says nothing: the host's entry shows.
    Host,
}

/// What the layer says of `rel`.
fn staged_at<'t>(tree: &'t Staged, rel: &Path) -> Layered<'t> {
    let mut here = tree;
    for c in rel.components() {
        let std::path::Component::Normal(name) = c else {
            return Layered::Removed;
        };
        match here {
            Staged::Dir {
                children, opaque, ..
            } => match children.get(name) {
                Some(Staged::Whiteout) => return Layered::Removed,
                Some(next) => here = next,
                None if *opaque => return Layered::Removed,
                None => return Layered::Host,
            },
            // A file or link on the way: nothing below it.
            _ => return Layered::Removed,
        }
    }
    Layered::Staged(here)
}

/// The entry the layer holds at `rel`, if it holds one.
fn staged_entry<'t>(tree: &'t Staged, rel: &Path) -> Option<&'t Staged> {
    match staged_at(tree, rel) {
        Layered::Staged(entry) => Some(entry),
        Layered::Removed | Layered::Host => None,
    }
}

impl TreeView for StagedView<'_> {
    fn kind(&self, loc: &Location) -> Option<EntryKind> {
        let Some((tree, _)) = self.layers.tree(loc.root) else {
            return self.host.kind(loc);
        };
        match staged_at(tree, &loc.rel) {
            Layered::Host => self.host.kind(loc),
            Layered::Removed => None,
            Layered::Staged(s) => match s {
                Staged::Dir { .. } => Some(EntryKind::Dir),
                Staged::File { .. } => Some(EntryKind::File),
                Staged::Symlink { .. } => Some(EntryKind::Symlink),
                Staged::Special => Some(EntryKind::Other),
                Staged::Whiteout => None,
            },
        }
    }

    fn link_target(&self, loc: &Location) -> Option<OsString> {
        let Some((tree, _)) = self.layers.tree(loc.root) else {
            return self.host.link_target(loc);
        };
        match staged_at(tree, &loc.rel) {
            Layered::Host => self.host.link_target(loc),
            Layered::Staged(Staged::Symlink { target }) => Some(target.clone()),
            _ => None,
        }
    }

    fn read_head(&self, loc: &Location, limit: usize) -> Option<Vec<u8>> {
        let Some((tree, fd)) = self.layers.tree(loc.root) else {
            return TreeView::read_head(self.host, loc, limit);
        };
        match staged_at(tree, &loc.rel) {
            Layered::Host => TreeView::read_head(self.host, loc, limit),
            Layered::Staged(Staged::File { .. }) => {
                let (parent, name) = (loc.rel.parent()?, loc.rel.file_name()?);
                let dir = open_layer_dir(fd.as_fd(), parent).ok()?;
                let file = open_file_in(&dir, name).ok()?;
                let mut bytes = Vec::new();
                std::fs::File::from(file)
                    .take(limit as u64)
                    .read_to_end(&mut bytes)
                    .ok()?;
                Some(bytes)
            }
            _ => None,
        }
    }
}

fn open_file_in(dir: &OwnedFd, name: &OsStr) -> Result<OwnedFd, rustix::io::Errno> {
    rustix::fs::openat2(
        dir,
        Path::new(name),
        rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::NONBLOCK
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
        rustix::fs::ResolveFlags::BENEATH | rustix::fs::ResolveFlags::NO_SYMLINKS,
    )
}

impl Staging {
    /// Judges and commits what the command staged (see the module's doc). `store`, when given,
    /// receives the earlier content of every tracked entry that changes; `tracked` says which
    /// entries those are.
    ///
    /// Bounded: a layer holding more entries than the staging's limit, or more changes planned
    /// than it, commits nothing ([`CommitReport::over_limit`]); `stop` is asked while the
    /// changes are judged, and when it says so nothing is committed either
    /// ([`CommitReport::stopped`]). Once the first change is applied, the rest are (applying is
    /// the short part: renames).
    // One step after another, each short; split, it would only pass its state around.
    #[allow(clippy::too_many_lines)]
    pub fn commit(
        &self,
        ws: &Workspace,
        fs: &WorkspaceFs,
        judge: &dyn Judge,
        store: Option<&CheckpointStore>,
        tracked: &TrackedRules,
        stop: &dyn Fn() -> bool,
    ) -> CommitReport {
        let mut report = CommitReport::default();
        // Attack: a report shared by two readers (a job's end) committed twice.
        if self
            .committed
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return report;
        }
        let layers = match self.read_layers() {
            Ok(l) => l,
            Err(UpperError::Limit(_)) => {
                report.over_limit = Some(OverLimit {
                    max: self.max_changes,
                    planned: None,
                });
                return report;
            }
            Err(e) => {
                report.unreadable = Some(e.to_string());
                return report;
            }
        };
        let started = std::time::Instant::now();
        let mut ops = Vec::new();
        for (root, tree, _) in &layers.trees {
            if let Staged::Dir {
                children, opaque, ..
            } = tree
            {
                let mut planner = Planner {
                    fs,
                    ws,
                    out: &mut ops,
                    special: &mut report.special,
                    failures: &mut report.failures,
                };
                planner.dir(*root, Path::new(""), children, *opaque, true);
            }
        }
        if ops.len() > self.max_changes {
            report.over_limit = Some(OverLimit {
                max: self.max_changes,
                planned: Some(ops.len()),
            });
            return report;
        }
        let view = StagedView {
            layers: &layers,
            host: fs,
        };
        let mut applier = Applier {
            ws,
            fs,
            store,
            tracked,
            layers: &layers,
            started: self.started,
            report,
            blocked: Vec::new(),
            refused_at: Vec::new(),
            conflict_dir: None,
            staging: self,
            to_sync: Vec::new(),
            untracked_budget: MAX_UNTRACKED_KEPT,
        };
        let planned = started.elapsed();
        let mut judged: Vec<Option<Judged>> = Vec::with_capacity(ops.len());
        for (n, p) in ops.iter().enumerate() {
            if n % 1024 == 0 && stop() {
                let mut report = applier.report;
                report.stopped = Some(ops.len());
                return report;
            }
            judged.push(applier.judge_one(p, judge, &view));
        }
        if stop() {
            let mut report = applier.report;
            report.stopped = Some(ops.len());
            return report;
        }
        // Nobody is asked about a change dropped with its git operation anyway; what is not
        // approved takes the rest of its git operation with it.
        applier.keep_git_ops_whole(&ops, &mut judged, &view);
        applier.ask(&ops, &mut judged, judge);
        applier.keep_git_ops_whole(&ops, &mut judged, &view);
        let judged_at = started.elapsed();
        let mut i = 0;
        while i < ops.len() {
            // A directory new to the host, everything in it allowed: one rename for the tree.
            if let Some(end) = applier.movable_tree(&ops, &judged, i)
                && applier.move_tree(&ops[i..end], &judged[i..end])
            {
                i = end;
                continue;
            }
            if let Some(j) = judged[i].take() {
                applier.apply_one(&ops[i], j);
            }
            i += 1;
        }
        applier.sync();
        tracing::debug!(
            changes = ops.len(),
            plan_ms = planned.as_millis(),
            judge_ms = judged_at.saturating_sub(planned).as_millis(),
            apply_ms = started.elapsed().saturating_sub(judged_at).as_millis(),
            "staged changes committed"
        );
        applier.report
    }

    fn read_layers(&self) -> Result<Layers, UpperError> {
        let mut trees = Vec::new();
        for layer in &self.layers {
            let fd = self
                .open_upper(layer.root)
                .map_err(|source| UpperError::Os {
                    rel: PathBuf::new(),
                    source,
                })?;
            // A layer with more entries than the commit takes is not read whole: its size is
            // bounded by the limit, not by what the command wrote.
            let bound = self.max_changes.min(MAX_STAGED_ENTRIES);
            let tree = read_layer(fd.as_fd(), bound, self.opaque_xattr)?;
            trees.push((layer.root, tree, fd));
        }
        Ok(Layers { trees })
    }
}

/// Compares a layer with the host into operations.
struct Planner<'a> {
    fs: &'a WorkspaceFs,
    ws: &'a Workspace,
    out: &'a mut Vec<Planned>,
    special: &'a mut Vec<String>,
    /// Host entries that could not be looked at: nothing is planned for them (or below them).
    failures: &'a mut Vec<String>,
}

impl Planner<'_> {
    /// The children of the staged directory at `rel`. `host_dir`: the host has a directory there
    /// (otherwise no host entry below can exist, and none is looked up).
    fn dir(
        &mut self,
        root: usize,
        rel: &Path,
        children: &BTreeMap<OsString, Staged>,
        opaque: bool,
        host_dir: bool,
    ) {
        if opaque && host_dir {
            self.removed_by_opaque(root, rel, children);
        }
        for (name, staged) in children {
            let loc = Location {
                root,
                rel: rel.join(name),
            };
            let host = if host_dir {
                match self.host_meta(&loc) {
                    Ok(host) => host,
                    Err(()) => continue,
                }
            } else {
                None
            };
            self.entry(root, loc, host, staged);
        }
    }

    /// What an opaque staged directory removed: the host's entries at `rel` the layer does not
    /// hold.
    fn removed_by_opaque(
        &mut self,
        root: usize,
        rel: &Path,
        children: &BTreeMap<OsString, Staged>,
    ) {
        // What the host holds there and the layer does not was removed.
        let loc = Location {
            root,
            rel: rel.to_path_buf(),
        };
        for name in self.host_names(&loc) {
            if children.contains_key(&name) {
                continue;
            }
            let gone = Location {
                root,
                rel: rel.join(&name),
            };
            if let Ok(host) = self.host_meta(&gone) {
                self.out.push(Planned {
                    loc: gone,
                    op: Op::Remove,
                    host,
                });
            }
        }
    }

    /// The changes for one staged entry at `loc` over what the host holds there (`host`), one arm
    /// per kind of staged entry; a staged directory's children are planned below it.
    fn entry(&mut self, root: usize, loc: Location, host: Option<EntryMeta>, staged: &Staged) {
        let host_kind = host.map(|m| m.kind);
        match staged {
            Staged::Whiteout => {
                if host.is_some() {
                    self.out.push(Planned {
                        loc,
                        op: Op::Remove,
                        host,
                    });
                }
            }
            Staged::Special => self.special.push(self.ws.label(&loc)),
            Staged::File { .. } => {
                if host_kind == Some(EntryKind::Dir) {
                    self.out.push(Planned {
                        loc: loc.clone(),
                        op: Op::Remove,
                        host,
                    });
                    self.out.push(Planned {
                        loc,
                        op: Op::File,
                        host: None,
                    });
                } else {
                    self.out.push(Planned {
                        loc,
                        op: Op::File,
                        host,
                    });
                }
            }
            Staged::Symlink { target } => {
                let same = host_kind == Some(EntryKind::Symlink)
                    && self.fs.link_target(&loc).as_deref() == Some(target.as_os_str());
                if same {
                    return;
                }
                if host_kind == Some(EntryKind::Dir) {
                    self.out.push(Planned {
                        loc: loc.clone(),
                        op: Op::Remove,
                        host,
                    });
                }
                self.out.push(Planned {
                    loc,
                    op: Op::Symlink(target.clone()),
                    host: host.filter(|h| h.kind != EntryKind::Dir),
                });
            }
            Staged::Dir {
                mode,
                opaque,
                children,
            } => {
                let child_rel = loc.rel.clone();
                match host_kind {
                    Some(EntryKind::Dir) => {
                        if host.is_some_and(|h| h.mode != *mode) {
                            self.out.push(Planned {
                                loc,
                                op: Op::Mode(*mode),
                                host,
                            });
                        }
                        self.dir(root, &child_rel, children, *opaque, true);
                    }
                    Some(_) => {
                        self.out.push(Planned {
                            loc: loc.clone(),
                            op: Op::Remove,
                            host,
                        });
                        self.out.push(Planned {
                            loc,
                            op: Op::Dir(*mode),
                            host: None,
                        });
                        self.dir(root, &child_rel, children, *opaque, false);
                    }
                    None => {
                        self.out.push(Planned {
                            loc,
                            op: Op::Dir(*mode),
                            host: None,
                        });
                        self.dir(root, &child_rel, children, *opaque, false);
                    }
                }
            }
        }
    }

    /// What the host holds at `loc`; an error (and a failure named) when it cannot be looked
    /// at: a change planned blind could overwrite what it never saw.
    fn host_meta(&mut self, loc: &Location) -> Result<Option<EntryMeta>, ()> {
        self.fs.entry_meta(loc).map_err(|e| {
            self.failures.push(format!("{}: {e}", self.ws.label(loc)));
        })
    }

    /// The names in the host directory at `loc` (a directory the layer replaced). One that
    /// cannot be listed is a failure: what it holds stays.
    fn host_names(&mut self, loc: &Location) -> Vec<OsString> {
        let mut names = Vec::new();
        let listed = self.fs.walk_from(loc, usize::MAX, &mut |rel, _| {
            if let Some(name) = rel.file_name() {
                names.push(name.to_os_string());
            }
            Walk::Skip
        });
        if let Err(e) = listed {
            self.failures.push(format!(
                "{}: what it held could not be removed: {e}",
                self.ws.label(loc)
            ));
        }
        names
    }
}

/// A change judged allowed, for pass 2.
struct Judged {
    label: String,
    /// The askable refusals (host-run configuration) of the change and of what is below it: it
    /// is applied only if [`Judge::approve`] lets them through.
    asked: Vec<Refusal>,
    /// Whether the entry is tracked (named in the result, checkpointed).
    tracked: bool,
    /// For a removal: every host entry below it, as the judgement saw them.
    below: Vec<Below>,
    /// What applying it does.
    action: Action,
}

/// A host entry below a removal.
struct Below {
    loc: Location,
    meta: EntryMeta,
    tracked: bool,
}

/// What pass 2 does with a change judged allowed.
enum Action {
    /// Apply it.
    Apply,
    /// A file whose content and mode did not change: set its time to this, if that moved.
    Touch(Option<(i64, i64)>),
}

fn change_kind(op: &Op) -> ChangeKind<'_> {
    match op {
        Op::Remove => ChangeKind::Remove,
        Op::Dir(_) => ChangeKind::Dir,
        Op::Mode(_) => ChangeKind::Mode,
        Op::File => ChangeKind::File,
        Op::Symlink(t) => ChangeKind::Symlink { target: t },
    }
}

/// Judges planned operations (all of them first), then applies the allowed ones in order.
struct Applier<'a> {
    ws: &'a Workspace,
    fs: &'a WorkspaceFs,
    store: Option<&'a CheckpointStore>,
    tracked: &'a TrackedRules,
    layers: &'a Layers,
    started: (i64, i64),
    report: CommitReport,
    /// Places under which nothing more is applied (a refused removal or directory).
    blocked: Vec<Location>,
    /// Where each refused change lies (for [`Applier::keep_git_ops_whole`]).
    refused_at: Vec<Location>,
    conflict_dir: Option<PathBuf>,
    staging: &'a Staging,
    /// Files installed in a `.git` directory, and their directories: synced at the end.
    to_sync: Vec<Location>,
    /// Bytes of removed untracked files the checkpoint may still keep.
    untracked_budget: u64,
}

impl Applier<'_> {
    /// Pass 1, before anything is applied (so that every judgement sees the host as it was):
    /// what `p` would do, or `None` when it is refused, below a refusal, or no change at all.
    fn judge_one(
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
    fn ask(&mut self, ops: &[Planned], judged: &mut [Option<Judged>], judge: &dyn Judge) {
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
    fn keep_git_ops_whole(
        &mut self,
        ops: &[Planned],
        judged: &mut [Option<Judged>],
        view: &StagedView<'_>,
    ) {
        // Each git directory holding a refused change, by root and path: its index in `dirs`.
        let mut dirs: Vec<Location> = Vec::new();
        let mut index: HashMap<(usize, PathBuf), usize> = HashMap::new();
        for loc in &self.refused_at {
            if !super::tracked::in_git_dir(&loc.rel) {
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

    fn is_blocked(&self, loc: &Location) -> bool {
        self.blocked
            .iter()
            .any(|b| b.root == loc.root && loc.rel.starts_with(&b.rel))
    }

    /// Pass 2: applies a change judged allowed, unless the host changed it meanwhile or what it
    /// lies in could not be applied.
    fn apply_one(&mut self, p: &Planned, judged: Judged) {
        let Judged {
            label,
            tracked,
            below,
            action,
            ..
        } = judged;
        if self.is_blocked(&p.loc) {
            return;
        }
        if let Action::Touch(touch) = action {
            if let Some(mtime) = touch {
                let _ = self.fs.set_mtime(&p.loc, mtime.0, mtime.1);
            }
            return;
        }
        let kind = change_kind(&p.op);
        // Attack: another writer changed this entry (or, for a removal, anything below it) while
        // the command ran; overwriting or removing it would lose that change. A directory's own
        // time moves with every entry in it, so only a removal looks at it.
        let changed_meanwhile = p.host.is_some_and(|h| {
            (h.kind != EntryKind::Dir || kind == ChangeKind::Remove) && self.after_start(&h)
        }) || below.iter().any(|b| self.after_start(&b.meta));
        let appeared_meanwhile = p.host.is_none()
            && matches!(p.op, Op::File | Op::Symlink(_))
            && self.fs.entry_meta(&p.loc).ok().flatten().is_some();
        if changed_meanwhile || appeared_meanwhile {
            if let Op::File = p.op {
                self.keep_conflict(&p.loc);
            }
            self.report.conflicts.push(label);
            self.blocked.push(p.loc.clone());
            return;
        }
        // A removal is kept whole, untracked entries too (ignored files, a git directory's): what
        // the command removed, undo puts back.
        let removal = matches!(p.op, Op::Remove);
        if tracked || removal {
            self.capture(&p.loc, p.host.as_ref(), tracked, &below, removal);
        }
        if !tracked {
            self.report.untracked += 1;
        }
        let applied = match &p.op {
            Op::Remove => match self.fs.remove_tree(&p.loc) {
                Ok(()) | Err(FsError::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            },
            Op::Dir(mode) => self.fs.install_dir(&p.loc, *mode),
            Op::Mode(mode) => self.fs.set_mode(&p.loc, *mode),
            Op::File => self.install_file(&p.loc),
            Op::Symlink(target) => self.fs.install_symlink(&p.loc, target),
        };
        if let Err(e) = applied {
            self.report.failures.push(e.to_string());
            self.blocked.push(p.loc.clone());
            return;
        }
        if matches!(p.op, Op::File) && super::tracked::in_git_dir(&p.loc.rel) {
            self.to_sync.push(p.loc.clone());
        }
        // Named in the result: files and links, and directories that appeared or vanished; every
        // removal, tracked or not (a removed tree by its top, and its tracked files one by one).
        let named = !matches!(p.op, Op::Mode(_)) || !p.is_dir();
        if (tracked && named) || removal {
            self.report.changed.push(label);
        }
        for b in &below {
            if b.tracked && b.meta.kind != EntryKind::Dir {
                self.report.changed.push(self.ws.label(&b.loc));
            }
        }
    }

    /// Flushes what git wrote (objects, refs, the index): git syncs them itself, and inside the
    /// command its syncs reached only the (volatile) layer. Each file, then each directory once.
    fn sync(&mut self) {
        let mut dirs: Vec<Location> = Vec::new();
        for loc in std::mem::take(&mut self.to_sync) {
            if let Err(e) = self.fs.sync(&loc) {
                tracing::warn!("could not sync {}: {e}", self.ws.label(&loc));
            }
            if let Some(parent) = loc.rel.parent() {
                let dir = Location {
                    root: loc.root,
                    rel: parent.to_path_buf(),
                };
                if !dirs.contains(&dir) {
                    dirs.push(dir);
                }
            }
        }
        for dir in dirs {
            let _ = self.fs.sync(&dir);
        }
    }

    /// Whether the host changed `meta`'s entry after the command started.
    fn after_start(&self, meta: &EntryMeta) -> bool {
        let started = i128::from(self.started.0) * 1_000_000_000 + i128::from(self.started.1);
        meta.ctime_ns > started
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

    /// When `ops[i]` makes a directory the host does not have and every operation below it was
    /// judged allowed (no fifo, socket or device, no set-user-ID bit in it), the end of its
    /// operations: the tree can be moved whole.
    fn movable_tree(&self, ops: &[Planned], judged: &[Option<Judged>], i: usize) -> Option<usize> {
        let root = &ops[i];
        if !matches!(root.op, Op::Dir(mode) if mode & 0o6000 == 0) || root.host.is_some() {
            return None;
        }
        judged[i].as_ref()?;
        let (tree, _) = self.layers.tree(root.loc.root)?;
        if !plain_tree(staged_entry(tree, &root.loc.rel)?) {
            return None;
        }
        let mut end = i + 1;
        while end < ops.len()
            && ops[end].loc.root == root.loc.root
            && ops[end].loc.rel.starts_with(&root.loc.rel)
        {
            if judged[end].is_none()
                || !matches!(ops[end].op, Op::Dir(_) | Op::File | Op::Symlink(_))
            {
                return None;
            }
            end += 1;
        }
        Some(end)
    }

    /// Moves the new tree planned as `ops` (its directory first) into the workspace in one
    /// rename; its directories lose overlayfs's attributes (a file moved in from elsewhere in
    /// the workspace keeps its inert `overlay.origin`). `false` when it could not (the layer on
    /// another filesystem, or the place taken meanwhile): the caller applies the operations one
    /// by one.
    fn move_tree(&mut self, ops: &[Planned], judged: &[Option<Judged>]) -> bool {
        let top = &ops[0].loc;
        let Some((dir, name)) = self.layer_parent(top) else {
            return false;
        };
        match self.fs.install_tree(top, dir.as_fd(), &name) {
            Ok(true) => {}
            Ok(false) | Err(_) => return false,
        }
        for (p, j) in ops.iter().zip(judged) {
            if matches!(p.op, Op::Dir(_)) {
                self.fs.strip_layer_attrs(&p.loc);
            }
            if j.as_ref().is_some_and(|j| j.tracked) {
                if self.store.is_some() {
                    self.report
                        .captured
                        .push((p.loc.clone(), EntryState::Absent));
                }
                self.report.changed.push(self.ws.label(&p.loc));
            } else {
                self.report.untracked += 1;
            }
            if matches!(p.op, Op::File) && super::tracked::in_git_dir(&p.loc.rel) {
                self.to_sync.push(p.loc.clone());
            }
        }
        true
    }

    /// Records the state before of `loc` (`host`: what the host holds there, `tracked`: whether
    /// it is tracked) and, for a removal, of every entry below it. An untracked file is kept only
    /// within the commit's budget for them ([`MAX_UNTRACKED_KEPT`]): a removed build tree must not
    /// take the checkpoint store's room (and the earlier turns it holds); what is past it is
    /// named in the result as not kept.
    fn capture(
        &mut self,
        loc: &Location,
        host: Option<&EntryMeta>,
        tracked: bool,
        below: &[Below],
        removal: bool,
    ) {
        let Some(store) = self.store else {
            return;
        };
        let below = below
            .iter()
            .filter(|b| removal || b.tracked)
            .map(|b| (&b.loc, Some(&b.meta), b.tracked));
        for (l, meta, tracked) in std::iter::once((loc, host, tracked)).chain(below) {
            if !tracked && meta.is_some_and(|m| m.kind == EntryKind::File) {
                let size = meta.map_or(0, |m| m.size);
                if size > self.untracked_budget {
                    self.report.not_kept_untracked.push(self.ws.label(l));
                    continue;
                }
                self.untracked_budget -= size;
            }
            match store.read_state(self.fs, l) {
                Ok(state) => self.report.captured.push((l.clone(), state)),
                Err(CheckpointError::TooLarge { .. } | CheckpointError::Unsupported { .. }) => {
                    self.report.not_kept.push(self.ws.label(l));
                }
                Err(e) => self
                    .report
                    .failures
                    .push(format!("{}: could not checkpoint: {e}", self.ws.label(l))),
            }
        }
    }

    /// The layer directory holding `loc`'s staged entry, opened.
    fn layer_parent(&self, loc: &Location) -> Option<(OwnedFd, OsString)> {
        let (_, fd) = self.layers.tree(loc.root)?;
        let parent = loc.rel.parent()?;
        let name = loc.rel.file_name()?.to_os_string();
        Some((open_layer_dir(fd.as_fd(), parent).ok()?, name))
    }

    fn install_file(&self, loc: &Location) -> Result<(), FsError> {
        let Some((dir, name)) = self.layer_parent(loc) else {
            return Err(FsError::NotFound {
                label: self.ws.label(loc),
            });
        };
        self.fs.install_file(loc, dir.as_fd(), &name).map(|_| ())
    }

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

    /// Moves the staged file at `loc` aside, into the staging base's `conflicts` directory.
    fn keep_conflict(&mut self, loc: &Location) {
        let Some(layer) = self.staging.layers.iter().find(|l| l.root == loc.root) else {
            return;
        };
        let Some(base) = layer.upper.parent().and_then(Path::parent) else {
            return;
        };
        let dir = self.conflict_dir.get_or_insert_with(|| {
            let (s, n) = clock_now();
            base.join("conflicts")
                .join(format!("{s}.{n:09}-{}", std::process::id()))
        });
        let dest = dir.join(loc.root.to_string()).join(&loc.rel);
        let src = layer.upper.join(&loc.rel);
        let moved = dest
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                // The source is a file of the layer; a link there is moved, never followed.
                std::fs::rename(&src, &dest)
            });
        if moved.is_ok() {
            self.report.kept_at = Some(dir.clone());
        }
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
    if !super::tracked::in_git_dir(&loc.rel) {
        return None;
    }
    loc.rel
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == ".git"))
        .find_map(|a| index.get(&(loc.root, a.to_path_buf())).copied())
}

/// Whether a staged tree holds only directories, files and links, none set-user-ID or
/// set-group-ID: what may be moved to the host whole.
fn plain_tree(staged: &Staged) -> bool {
    match staged {
        Staged::Dir { mode, children, .. } => {
            mode & 0o6000 == 0 && children.values().all(plain_tree)
        }
        Staged::File { mode, .. } => mode & 0o6000 == 0,
        Staged::Symlink { .. } => true,
        Staged::Whiteout | Staged::Special => false,
    }
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

    fn ran(status: ToolStatus, code: i32) -> ToolResult {
        ToolResult {
            exit_code: Some(code),
            ..ToolResult::new(status)
        }
    }

    fn refused_one() -> CommitReport {
        CommitReport {
            refused: vec![(
                ".git/worktrees/wt/gitdir".to_owned(),
                Refusal::credential_store(".git/worktrees/wt/gitdir"),
            )],
            kept_together: vec![(".git".to_owned(), 7)],
            ..CommitReport::default()
        }
    }

    /// A command that exited 0 and had part of its changes kept out is denied with 126, and
    /// the reason says so before the list; the positive control, nothing refused, stays ok
    /// and 0 with no reason.
    #[test]
    fn a_commit_that_kept_changes_out_is_not_a_success() {
        let mut r = ran(ToolStatus::Ok, 0);
        refused_one().apply_to(&mut r);
        assert_eq!(r.status, ToolStatus::Denied);
        assert_eq!(r.exit_code, Some(exit_code::REFUSED));
        assert_eq!(r.process_exit_code(), exit_code::REFUSED);
        let reason = r.reason.clone().unwrap();
        let exited = reason
            .find("the command itself exited 0, but spear kept out part of what it changed")
            .unwrap();
        let list = reason
            .find("spear did not let these changes reach the workspace")
            .unwrap();
        assert!(exited < list, "{reason}");
        assert!(reason.contains(".git/worktrees/wt/gitdir"), "{reason}");
        assert!(
            reason.contains(
                "the rest of the changes to .git (7) were kept out with them: a git \
                 operation's changes are committed together or not at all"
            ),
            "{reason}"
        );
        assert!(r.refusal.is_none(), "the call itself was not refused");

        let mut clean = ran(ToolStatus::Ok, 0);
        CommitReport {
            changed: vec!["a.txt".to_owned()],
            ..CommitReport::default()
        }
        .apply_to(&mut clean);
        assert_eq!(clean.status, ToolStatus::Ok);
        assert_eq!(clean.exit_code, Some(0));
        assert_eq!(clean.reason, None);
        assert_eq!(clean.changed_paths, ["a.txt"]);
    }

    /// A failed, cancelled or timed-out command keeps its status and its own code; the list of
    /// what was kept out is still said, the exit-0 sentence is not.
    #[test]
    fn a_worse_status_and_a_non_zero_code_are_kept() {
        for (status, code) in [
            (ToolStatus::Failed, 3),
            (ToolStatus::Cancelled, 0),
            (ToolStatus::Timeout, 0),
        ] {
            let mut r = ran(status, code);
            refused_one().apply_to(&mut r);
            assert_eq!((r.status, r.exit_code), (status, Some(code)));
            let reason = r.reason.unwrap();
            assert!(
                reason.contains("did not let these changes reach"),
                "{reason}"
            );
            assert!(!reason.contains("itself exited 0"), "{reason}");
        }
        // Host-run configuration nobody approved: denied, 126, and why it was not approved.
        let mut r = ran(ToolStatus::Ok, 0);
        CommitReport {
            unapproved: Some(Refusal::no_confirmer("x")),
            ..refused_one()
        }
        .apply_to(&mut r);
        assert_eq!(
            (r.status, r.exit_code),
            (ToolStatus::Denied, Some(exit_code::REFUSED))
        );
        assert!(r.reason.unwrap().contains("it was not approved"));
        // Applied twice (a report read again), a result is not marked twice.
        let mut r = ran(ToolStatus::Ok, 0);
        refused_one().apply_to(&mut r);
        let once = r.clone();
        CommitReport {
            refused: refused_one().refused,
            ..CommitReport::default()
        }
        .deny_partial(&mut r);
        assert_eq!(r, once);
    }
}
