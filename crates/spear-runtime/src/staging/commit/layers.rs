//! The layers a commit reads, and the workspace as the command left it: its layer over the host
//! ([`StagedView`]), which the judge sees.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use spear_workspace::{EntryKind, Location, TreeView, WorkspaceFs};

use crate::staging::upper::{Staged, open_layer_dir};

/// The layers of a commit, read.
pub(super) struct Layers {
    pub(super) trees: Vec<(usize, Staged, OwnedFd)>,
}

impl Layers {
    /// The layer of root `root`, read, and its directory.
    pub(super) fn tree(&self, root: usize) -> Option<(&Staged, &OwnedFd)> {
        self.trees
            .iter()
            .find(|(r, _, _)| *r == root)
            .map(|(_, t, fd)| (t, fd))
    }
}

/// The workspace as a command left it: its layer over the host.
pub(super) struct StagedView<'a> {
    pub(super) layers: &'a Layers,
    pub(super) host: &'a WorkspaceFs,
}

/// What the layer says of a place.
pub(super) enum Layered<'t> {
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
pub(super) fn staged_entry<'t>(tree: &'t Staged, rel: &Path) -> Option<&'t Staged> {
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

/// The file `name` in the layer directory `dir`, opened for reading without following a link.
pub(super) fn open_file_in(dir: &OwnedFd, name: &OsStr) -> Result<OwnedFd, rustix::io::Errno> {
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
