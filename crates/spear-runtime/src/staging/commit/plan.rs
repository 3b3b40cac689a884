//! Step 1 of a commit: the upper layer of each root compared with the host, entry by entry,
//! into a list of operations in tree order (parents before children, a removal before what
//! replaces it).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use spear_core::ChangeKind;
use spear_workspace::{EntryKind, EntryMeta, Location, TreeView, Walk, Workspace, WorkspaceFs};

use crate::staging::upper::Staged;

/// One planned operation.
#[derive(Debug)]
pub(super) enum Op {
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
pub(super) struct Planned {
    pub(super) loc: Location,
    pub(super) op: Op,
    /// The host entry there when planned.
    pub(super) host: Option<EntryMeta>,
}

impl Planned {
    /// Whether the entry is (or becomes) a directory.
    pub(super) fn is_dir(&self) -> bool {
        matches!(self.op, Op::Dir(_)) || self.host.is_some_and(|h| h.kind == EntryKind::Dir)
    }
}

/// Compares a layer with the host into operations.
pub(super) struct Planner<'a> {
    pub(super) fs: &'a WorkspaceFs,
    pub(super) ws: &'a Workspace,
    pub(super) out: &'a mut Vec<Planned>,
    pub(super) special: &'a mut Vec<String>,
    /// Host entries that could not be looked at: nothing is planned for them (or below them).
    pub(super) failures: &'a mut Vec<String>,
}

impl Planner<'_> {
    /// The children of the staged directory at `rel`. `host_dir`: the host has a directory there
    /// (otherwise no host entry below can exist, and none is looked up).
    pub(super) fn dir(
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

/// What the judge is told `op` does.
pub(super) fn change_kind(op: &Op) -> ChangeKind<'_> {
    match op {
        Op::Remove => ChangeKind::Remove,
        Op::Dir(_) => ChangeKind::Dir,
        Op::Mode(_) => ChangeKind::Mode,
        Op::File => ChangeKind::File,
        Op::Symlink(t) => ChangeKind::Symlink { target: t },
    }
}
