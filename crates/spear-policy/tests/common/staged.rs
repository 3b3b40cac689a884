//! What a commit's judge sees of the tree: the host as it is, with the files a command staged.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;

use spear_workspace::{EntryKind, Location, TreeView, WorkspaceFs};

/// The host as it is, with files added or replaced as a command staged them (each by its path
/// under the workspace's one root); a directory on a staged file's path exists.
pub struct Staged<'a> {
    pub host: &'a WorkspaceFs,
    pub files: HashMap<PathBuf, Vec<u8>>,
}

impl TreeView for Staged<'_> {
    fn kind(&self, loc: &Location) -> Option<EntryKind> {
        if self.files.contains_key(&loc.rel) {
            return Some(EntryKind::File);
        }
        if self.files.keys().any(|f| f.starts_with(&loc.rel)) {
            return Some(EntryKind::Dir);
        }
        TreeView::kind(self.host, loc)
    }
    fn link_target(&self, loc: &Location) -> Option<OsString> {
        TreeView::link_target(self.host, loc)
    }
    fn read_head(&self, loc: &Location, limit: usize) -> Option<Vec<u8>> {
        match self.files.get(&loc.rel) {
            Some(bytes) => Some(bytes.iter().copied().take(limit).collect()),
            None => TreeView::read_head(self.host, loc, limit),
        }
    }
}
