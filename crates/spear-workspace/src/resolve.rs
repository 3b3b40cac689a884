//! Physical path resolution inside the roots.
//!
//! [`resolve`] walks a caller's path one component at a time, the way the kernel would, following
//! every symlink it meets (the parent chain of a file that does not exist yet included). The walk
//! is always in one of two places:
//!
//! - inside a root: the position is a root and a list of components below it, each known to be a
//!   directory, a non-directory, or missing. Only here is the filesystem consulted (`lstat`,
//!   `readlink`, by host path).
//! - outside every root: only proper ancestors of a root's host or mount path may be passed
//!   through (so `../other-root/x` and `/workspaces/lib/x` work). Nothing out here is ever
//!   looked at on disk; any other name ends the walk with an error that names how it got out (a
//!   `..`, an absolute path, or a symlink).
//!
//! A symlink's target must land inside a root when its own components are used up: a link to a
//! root's ancestor is refused even if later components would come back in.
//!
//! The walk is a check, not the enforcement: a link swapped in after it is caught by
//! [`crate::WorkspaceFs`], which opens beneath the root fd with `openat2`.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::lexical::{Comp, is_strict_ancestor, join_names, parse};
use crate::{Location, MountScheme, ResolveError, Workspace};

/// How many symlinks one resolution may follow, as Linux's own limit (`MAXSYMLINKS`).
pub(crate) const MAX_SYMLINK_HOPS: usize = 40;

/// Longest path a caller may write, as Linux's `PATH_MAX` (the kernel refuses longer ones).
const MAX_PATH_BYTES: usize = 4096;

/// A caller's path after [`crate::Workspace::resolve`].
///
/// `entry` is where the named entry itself lives (every parent symlink followed, the leaf name kept
/// as written): writes and deletes act here, so they replace or remove a leaf link rather than act
/// through it. `target` is where reads land (the leaf link followed too); it equals `entry` unless
/// the leaf is a symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The path as the caller wrote it.
    pub as_written: String,
    /// Where the entry lives.
    pub entry: Location,
    /// Where reads land.
    pub target: Location,
    /// Whether `target` existed when it was resolved.
    pub exists: bool,
}

/// What a component inside a root turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    NonDir,
    Missing,
}

/// Where a component came from: the caller's path or the target of the n-th link followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Caller,
    Link(usize),
}

/// How the walk got outside every root; decides the error if it cannot get back in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    Absolute,
    Parent,
    Link(usize),
}

/// One step of the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// Restart at `/` (an absolute path or link target).
    Root(Origin),
    /// One component.
    Comp(Comp, Origin),
    /// The components of the n-th link are used up.
    EndLink(usize),
}

/// Which spelling led into a root; `..` out of the root goes to that spelling's parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spelling {
    Mount,
    Host,
}

/// The walk's position.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pos {
    Inside {
        root: usize,
        via: Spelling,
        rel: Vec<(OsString, Kind)>,
    },
    Outside {
        path: PathBuf,
        cause: Cause,
    },
}

/// Resolves `written` in `ws`; see [`Workspace::resolve`].
pub(crate) fn resolve(
    ws: &Workspace,
    written: &str,
    follow_leaf: bool,
) -> Result<ResolvedPath, ResolveError> {
    // Attack: a NUL byte truncates the path at the C boundary, so the checked path and the opened
    // one would differ; an empty path would silently mean the launch directory.
    if written.is_empty() || written.contains('\0') || written.len() > MAX_PATH_BYTES {
        return Err(ResolveError::Malformed {
            path: written.to_owned(),
        });
    }
    let mut walk = Walk::new(ws, written);
    walk.follow_leaf = follow_leaf;
    walk.run()
}

/// The state of one resolution.
struct Walk<'a> {
    ws: &'a Workspace,
    written: &'a str,
    queue: VecDeque<Item>,
    /// Every link followed: its host path and its target as stored.
    links: Vec<(PathBuf, PathBuf)>,
    trailing_slash: bool,
    /// The caller wrote an absolute path: leaving the roots is "outside", not a `..` escape.
    absolute: bool,
    /// Set when the caller's last component is a symlink: where the link itself lives.
    leaf_link: Option<Location>,
    /// Whether a symlink at the caller's last component is followed.
    follow_leaf: bool,
}

impl<'a> Walk<'a> {
    fn new(ws: &'a Workspace, written: &'a str) -> Self {
        let parsed = parse(written.as_bytes());
        let mut queue: VecDeque<Item> = parsed
            .comps
            .into_iter()
            .map(|c| Item::Comp(c, Origin::Caller))
            .collect();
        if parsed.absolute {
            queue.push_front(Item::Root(Origin::Caller));
        }
        Walk {
            ws,
            written,
            queue,
            links: Vec::new(),
            trailing_slash: parsed.trailing_slash,
            absolute: parsed.absolute,
            leaf_link: None,
            follow_leaf: true,
        }
    }

    fn run(mut self) -> Result<ResolvedPath, ResolveError> {
        // Relative paths start at the launch directory, as the sandbox sees it.
        let launch = self.ws.launch_location();
        let mut pos = Pos::Inside {
            root: launch.root,
            via: Spelling::Mount,
            rel: launch
                .rel
                .iter()
                .map(|n| (n.to_os_string(), Kind::Dir))
                .collect(),
        };
        while let Some(item) = self.queue.pop_front() {
            pos = self.step(pos, item)?;
        }
        let (root, rel) = match pos {
            Pos::Inside { root, rel, .. } => (root, rel),
            // The walk ended outside every root (`..`, `/etc/passwd`, a leaf link to `/etc`).
            Pos::Outside { cause, .. } => return Err(self.escape(cause)),
        };
        let kind = rel.last().map_or(Kind::Dir, |(_, k)| *k);
        if self.trailing_slash && kind == Kind::NonDir {
            return Err(self.not_a_directory(root, &rel));
        }
        let target = Location {
            root,
            rel: join_names(rel.iter().map(|(n, _)| n.as_os_str())),
        };
        Ok(ResolvedPath {
            as_written: self.written.to_owned(),
            entry: self.leaf_link.take().unwrap_or_else(|| target.clone()),
            target,
            exists: kind != Kind::Missing,
        })
    }

    fn step(&mut self, pos: Pos, item: Item) -> Result<Pos, ResolveError> {
        match (pos, item) {
            (_, Item::Root(origin)) => Ok(Pos::Outside {
                path: PathBuf::from("/"),
                cause: match origin {
                    Origin::Caller => Cause::Absolute,
                    Origin::Link(i) => Cause::Link(i),
                },
            }),
            (Pos::Outside { cause, .. }, Item::EndLink(_)) => {
                // Attack: a link to a directory above the roots (`up -> ..`) that later
                // components would climb back down from; the link itself leads outside.
                Err(self.escape(cause))
            }
            (pos @ Pos::Inside { .. }, Item::EndLink(_)) => Ok(pos),
            (Pos::Outside { path, cause }, Item::Comp(comp, origin)) => {
                self.step_outside(path, cause, comp, origin)
            }
            (Pos::Inside { root, via, rel }, Item::Comp(comp, origin)) => {
                self.step_inside(root, via, rel, comp, origin)
            }
        }
    }

    /// One component while outside every root: only ancestors of roots may be passed, and
    /// nothing is looked at on disk.
    fn step_outside(
        &self,
        mut path: PathBuf,
        cause: Cause,
        comp: Comp,
        origin: Origin,
    ) -> Result<Pos, ResolveError> {
        let name = match comp {
            Comp::Cur => return Ok(Pos::Outside { path, cause }),
            Comp::Parent => {
                path.pop();
                return Ok(Pos::Outside { path, cause });
            }
            Comp::Name(name) => name,
        };
        path.push(&name);
        let roots = &self.ws.roots;
        // Mount spelling first, so `/workspace/...` means the primary root in the fixed scheme.
        if let Some(root) = roots.iter().position(|r| r.mount_path == path) {
            return Ok(Pos::Inside {
                root,
                via: Spelling::Mount,
                rel: Vec::new(),
            });
        }
        if let Some(root) = roots.iter().position(|r| r.host_path == path) {
            let r = &roots[root];
            // Attack: in the fixed scheme a host path means something else inside the sandbox
            // than outside; only the operator can allow the host spelling from a caller.
            // (Link targets are host reality and keep working.)
            if origin == Origin::Caller
                && self.ws.scheme == MountScheme::Fixed
                && !self.ws.allow_absolute_paths
                && r.host_path != r.mount_path
            {
                return Err(ResolveError::HostAbsolute {
                    path: self.written.to_owned(),
                    mount: r.mount_path.display().to_string(),
                });
            }
            return Ok(Pos::Inside {
                root,
                via: Spelling::Host,
                rel: Vec::new(),
            });
        }
        if roots.iter().any(|r| {
            is_strict_ancestor(&path, &r.mount_path) || is_strict_ancestor(&path, &r.host_path)
        }) {
            return Ok(Pos::Outside { path, cause });
        }
        // Attack: `../../etc/passwd`, `/proc/self/environ`, `/dev/fd/0`, a link to `$HOME/.ssh`:
        // anything off the way to a root is refused without being looked at.
        Err(self.escape(cause))
    }

    /// One component inside a root: the only place the filesystem is consulted.
    fn step_inside(
        &mut self,
        root: usize,
        via: Spelling,
        mut rel: Vec<(OsString, Kind)>,
        comp: Comp,
        origin: Origin,
    ) -> Result<Pos, ResolveError> {
        let kind = rel.last().map_or(Kind::Dir, |(_, k)| *k);
        // A component after a file: the kernel answers ENOTDIR, and so do we.
        if kind == Kind::NonDir {
            return Err(self.not_a_directory(root, &rel));
        }
        let name = match comp {
            Comp::Cur => return Ok(Pos::Inside { root, via, rel }),
            Comp::Parent => {
                if rel.pop().is_some() {
                    return Ok(Pos::Inside { root, via, rel });
                }
                // `..` at a root leaves it, to the parent in the spelling that led here.
                let r = &self.ws.roots[root];
                let base = match via {
                    Spelling::Mount => &r.mount_path,
                    Spelling::Host => &r.host_path,
                };
                let path = base
                    .parent()
                    .map_or_else(|| base.clone(), Path::to_path_buf);
                let cause = match origin {
                    Origin::Caller if self.absolute => Cause::Absolute,
                    Origin::Caller => Cause::Parent,
                    Origin::Link(i) => Cause::Link(i),
                };
                return Ok(Pos::Outside { path, cause });
            }
            Comp::Name(name) => name,
        };
        if kind == Kind::Missing {
            rel.push((name, Kind::Missing));
            return Ok(Pos::Inside { root, via, rel });
        }
        let host = self.host_of(root, &rel).join(&name);
        let meta = match std::fs::symlink_metadata(&host) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                rel.push((name, Kind::Missing));
                return Ok(Pos::Inside { root, via, rel });
            }
            // Fail closed: a component we cannot inspect might be a symlink leading anywhere.
            Err(e) => return Err(self.unreadable(&host, &e)),
        };
        if !meta.file_type().is_symlink() {
            let kind = if meta.is_dir() {
                Kind::Dir
            } else {
                Kind::NonDir
            };
            rel.push((name, kind));
            return Ok(Pos::Inside { root, via, rel });
        }

        // A symlink. Attack: a loop (or a long chain) would spin forever.
        if self.links.len() >= MAX_SYMLINK_HOPS {
            return Err(ResolveError::SymlinkLoop {
                path: self.written.to_owned(),
            });
        }
        // The caller's own last component: writes and deletes act on the link itself.
        if origin == Origin::Caller && self.queue.is_empty() && !self.trailing_slash {
            let mut names: Vec<&OsStr> = rel.iter().map(|(n, _)| n.as_os_str()).collect();
            names.push(&name);
            self.leaf_link = Some(Location {
                root,
                rel: join_names(names),
            });
            if !self.follow_leaf {
                // The link itself is the answer; where it points is never looked at.
                rel.push((name, Kind::NonDir));
                return Ok(Pos::Inside { root, via, rel });
            }
        }
        let target = std::fs::read_link(&host).map_err(|e| self.unreadable(&host, &e))?;
        let index = self.links.len();
        self.links.push((host, target.clone()));
        let parsed = parse(target.as_os_str().as_bytes());
        if !parsed.absolute && parsed.comps.is_empty() {
            // An empty target resolves nowhere (Linux refuses to create one): fail closed.
            return Err(self.escape(Cause::Link(index)));
        }
        self.queue.push_front(Item::EndLink(index));
        for c in parsed.comps.into_iter().rev() {
            self.queue.push_front(Item::Comp(c, Origin::Link(index)));
        }
        if parsed.absolute {
            self.queue.push_front(Item::Root(Origin::Link(index)));
        }
        // A relative target continues from the link's own directory: `rel` as it is.
        Ok(Pos::Inside { root, via, rel })
    }

    fn host_of(&self, root: usize, rel: &[(OsString, Kind)]) -> PathBuf {
        let mut p = self.ws.roots[root].host_path.clone();
        for (n, _) in rel {
            p.push(n);
        }
        p
    }

    /// The error for a walk that ended up outside every root.
    fn escape(&self, cause: Cause) -> ResolveError {
        let path = self.written.to_owned();
        match cause {
            Cause::Parent => ResolveError::ParentEscape { path },
            Cause::Absolute => ResolveError::OutsideRoots {
                path,
                launch_dir: self.ws.launch_mount_dir().display().to_string(),
            },
            Cause::Link(i) => {
                let (link, target) = self.links[i].clone();
                ResolveError::SymlinkEscape { path, link, target }
            }
        }
    }

    fn not_a_directory(&self, root: usize, rel: &[(OsString, Kind)]) -> ResolveError {
        ResolveError::NotADirectory {
            path: self.written.to_owned(),
            component: self.host_of(root, rel),
        }
    }

    fn unreadable(&self, component: &Path, e: &io::Error) -> ResolveError {
        ResolveError::Unreadable {
            path: self.written.to_owned(),
            component: component.to_path_buf(),
            reason: e.to_string(),
        }
    }
}
