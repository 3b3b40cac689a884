//! A read-only view of the entries under the roots, for decisions that look at what is there:
//! the host as it is ([`WorkspaceFs`]), or the host with a command's staged changes on top.

use std::ffi::OsString;

use crate::{EntryKind, Location, WorkspaceFs};

/// What a decision may look at under the roots. Never follows a link: a link is
/// [`EntryKind::Symlink`], and a link on the way to a location means nothing is there.
pub trait TreeView {
    /// The kind of the entry at `loc`, or `None` when nothing is there (or it cannot be seen).
    fn kind(&self, loc: &Location) -> Option<EntryKind>;
    /// The target of the link at `loc`, as written.
    fn link_target(&self, loc: &Location) -> Option<OsString>;
    /// At most `limit` bytes from the start of the file at `loc`.
    fn read_head(&self, loc: &Location, limit: usize) -> Option<Vec<u8>>;
}

impl TreeView for WorkspaceFs {
    fn kind(&self, loc: &Location) -> Option<EntryKind> {
        if loc.rel.as_os_str().is_empty() {
            return Some(EntryKind::Dir);
        }
        self.entry_kind(loc).ok().flatten().map(|(kind, _)| kind)
    }

    fn link_target(&self, loc: &Location) -> Option<OsString> {
        let mut budget = crate::Budget {
            bytes: 4096,
            entries: 1,
        };
        match self.read_entry(loc, &mut budget).ok().flatten()? {
            crate::Node::Symlink { target } => Some(target),
            _ => None,
        }
    }

    fn read_head(&self, loc: &Location, limit: usize) -> Option<Vec<u8>> {
        if self.kind(loc)? != EntryKind::File {
            return None;
        }
        WorkspaceFs::read_head(self, loc, limit).ok()
    }
}
