//! The physical host path a path names, wherever it leads (for checks on the resolved spelling,
//! such as "is this a credential store?"). Unlike [`crate::Workspace::resolve`] this never refuses:
//! it follows links outside the roots too, and stops quietly where it cannot go on.

use std::collections::VecDeque;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::Workspace;
use crate::lexical::{Comp, is_strict_ancestor, parse};
use crate::resolve::MAX_SYMLINK_HOPS;

/// One step: `None` restarts at `/`.
type Item = Option<Comp>;

/// See [`Workspace::realpath`].
pub(crate) fn realpath(ws: &Workspace, path: &Path) -> PathBuf {
    let mut queue: VecDeque<Item> = VecDeque::new();
    push_path(&mut queue, path);
    let mut pos = ws.launch_dir.clone();
    let mut hops = 0usize;
    while let Some(item) = queue.pop_front() {
        let name = match item {
            None => {
                pos = PathBuf::from("/");
                continue;
            }
            Some(Comp::Cur) => continue,
            Some(Comp::Parent) => {
                pos.pop();
                continue;
            }
            Some(Comp::Name(name)) => name,
        };
        let next = pos.join(&name);
        // Mount spelling first: `/workspace/x` (and a link pointing there) is the primary root.
        if let Some(r) = ws
            .roots
            .iter()
            .find(|r| r.mount_path == next && r.mount_path != r.host_path)
        {
            pos = r.host_path.clone();
            continue;
        }
        if ws
            .roots
            .iter()
            .any(|r| r.mount_path != r.host_path && is_strict_ancestor(&next, &r.mount_path))
        {
            // `/workspaces` exists only inside the sandbox; pass through it lexically.
            pos = next;
            continue;
        }
        let is_link = std::fs::symlink_metadata(&next).map(|m| m.file_type().is_symlink());
        let target = match is_link {
            Ok(false) => {
                pos = next;
                continue;
            }
            Ok(true) if hops < MAX_SYMLINK_HOPS => std::fs::read_link(&next).ok(),
            // A loop, or a component that does not exist or cannot be read: stop here.
            Ok(true) | Err(_) => None,
        };
        let Some(target) = target else {
            pos = next;
            break;
        };
        hops += 1;
        let mut front = VecDeque::new();
        push_path(&mut front, &target);
        while let Some(i) = front.pop_back() {
            queue.push_front(i);
        }
    }
    // The rest, appended lexically.
    for item in queue {
        match item {
            None => pos = PathBuf::from("/"),
            Some(Comp::Cur) => {}
            Some(Comp::Parent) => {
                pos.pop();
            }
            Some(Comp::Name(n)) => pos.push(n),
        }
    }
    pos
}

/// Appends the steps of `path` to `queue`.
fn push_path(queue: &mut VecDeque<Item>, path: &Path) {
    let parsed = parse(path.as_os_str().as_bytes());
    if parsed.absolute {
        queue.push_back(None);
    }
    queue.extend(parsed.comps.into_iter().map(Some));
}
