//! A linked worktree's own pointers, as `git worktree add` makes them inside the workspace: the
//! worktree's `.git` file (`gitdir: <repo>/.git/worktrees/<id>`), and that administrative
//! directory's `gitdir` (back to the worktree's `.git`) and `commondir` (`../..`, the repository's
//! own git directory).
//!
//! Each of these is one of git's indirections ([`crate::git_layout`]), refused without a person's
//! approval because a planted one sends git to configuration and hooks the command chose. A set
//! that only sends git back to the repository the host already has sends it nowhere new: the
//! worktree then reads the repository's own configuration and hooks, which the host already runs.
//! So such a pointer is no indirection when, as the command leaves the workspace:
//! - the administrative directory is `<X>/.git/worktrees/<id>` of a repository `<X>/.git` that the
//!   host already holds (a git directory before the command ran), in the same root;
//! - its `commondir` names exactly that `<X>/.git`;
//! - the worktree's `.git` file and the administrative directory's `gitdir` name each other, in the
//!   same root.
//!
//! Anything else (a pointer outside the root, to another repository, to a directory the command
//! made, one spear cannot read) stays an indirection. The administrative directory's other control
//! files (`config.worktree`, `hooks/`) are judged on their own by name.

use std::path::{Path, PathBuf};

use spear_core::ChangeKind;
use spear_workspace::{Location, TreeView, Workspace};

use crate::git_layout::{is_git_dir, names};
use crate::paths::normalise;

/// Most bytes of a pointer file read.
const MAX_POINTER: usize = 4096;

/// Whether writing `change` at `loc` writes a linked worktree's own pointer (see the module's doc),
/// judged on `view` (the workspace as the command leaves it) and `host` (as it was).
pub(crate) fn own_worktree_link(
    ws: &Workspace,
    view: &dyn TreeView,
    host: &dyn TreeView,
    loc: &Location,
    change: ChangeKind<'_>,
) -> bool {
    if change != ChangeKind::File {
        return false;
    }
    let Some(leaf) = loc.rel.file_name() else {
        return false;
    };
    let Some(dir) = loc.rel.parent() else {
        return false;
    };
    if leaf == ".git" {
        // The worktree's `.git` file: to an administrative directory of ours that names it back.
        return gitfile_target(ws, view, loc).is_some_and(|admin| {
            own_admin(view, host, &admin) && admin_names(ws, view, &admin, loc)
        });
    }
    let admin = Location {
        root: loc.root,
        rel: dir.to_path_buf(),
    };
    if !own_admin(view, host, &admin) {
        return false;
    }
    match leaf.to_str() {
        Some("commondir") => true,
        // Back to a worktree's `.git` file that names this directory.
        Some("gitdir") => pointer(view, loc)
            .and_then(|t| place(ws, loc.root, dir, t.trim()))
            .is_some_and(|file| {
                file.rel.file_name().is_some_and(|n| n == ".git")
                    && gitfile_target(ws, view, &file).as_ref() == Some(&admin)
            }),
        _ => false,
    }
}

/// Where the `.git` file at `loc` (as the view shows it) sends git: `gitdir: PATH`, in the same
/// root.
fn gitfile_target(ws: &Workspace, view: &dyn TreeView, loc: &Location) -> Option<Location> {
    let text = pointer(view, loc)?;
    let target = text.strip_prefix("gitdir:")?.trim();
    place(ws, loc.root, loc.rel.parent()?, target)
}

/// Whether the administrative directory `admin`'s `gitdir` (as the view shows it) names `file`.
fn admin_names(ws: &Workspace, view: &dyn TreeView, admin: &Location, file: &Location) -> bool {
    let gitdir = Location {
        root: admin.root,
        rel: admin.rel.join("gitdir"),
    };
    pointer(view, &gitdir)
        .and_then(|t| place(ws, admin.root, &admin.rel, t.trim()))
        .is_some_and(|named| named == *file)
}

/// Whether `admin` is `<X>/.git/worktrees/<id>` of a repository the host already holds at
/// `<X>/.git`, whose `commondir` (as the command leaves it) names that `<X>/.git`.
fn own_admin(view: &dyn TreeView, host: &dyn TreeView, admin: &Location) -> bool {
    let parts = names(&admin.rel);
    let [prefix @ .., git, worktrees, _id] = parts.as_slice() else {
        return false;
    };
    if *git != ".git" || *worktrees != "worktrees" {
        return false;
    }
    let git_dir = Location {
        root: admin.root,
        rel: prefix.iter().collect::<PathBuf>().join(".git"),
    };
    if !is_git_dir(host, &git_dir) {
        return false;
    }
    let commondir = Location {
        root: admin.root,
        rel: admin.rel.join("commondir"),
    };
    let Some(common) = pointer(view, &commondir) else {
        return false;
    };
    let common = common.trim();
    // git writes it relative (`../..`); an absolute one is judged by where it is, too.
    !Path::new(common).is_absolute() && normalise(&admin.rel.join(common)) == git_dir.rel
}

/// The file at `loc` as text, when it is a small one the view shows.
fn pointer(view: &dyn TreeView, loc: &Location) -> Option<String> {
    let bytes = view.read_head(loc, MAX_POINTER + 1)?;
    if bytes.len() > MAX_POINTER {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// Where a pointer's `target` (absolute in the sandbox's spelling, or relative to `dir`) lands,
/// when that is in root `root`.
fn place(ws: &Workspace, root: usize, dir: &Path, target: &str) -> Option<Location> {
    let target = Path::new(target);
    let host = if target.is_absolute() {
        normalise(&ws.to_host(target))
    } else {
        let here = ws.host_path(&Location {
            root,
            rel: dir.to_path_buf(),
        });
        normalise(&here.join(target))
    };
    ws.locate(&host).filter(|l| l.root == root)
}
