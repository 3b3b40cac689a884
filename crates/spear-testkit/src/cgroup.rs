//! The cgroups of this machine, for "no cgroup is left" checks: a search of a hierarchy for
//! directories by name.

use std::path::{Path, PathBuf};

/// The cgroup directories under `root` whose name starts with `prefix`, at any depth (spear names
/// its cgroups `spear-PID-N` and similar). Empty when there is none, or no `root`.
pub fn named(root: impl AsRef<Path>, prefix: &str) -> Vec<PathBuf> {
    find(root, usize::MAX, |name| name.starts_with(prefix))
}

/// The cgroup directories under `root` whose name `matches`, looked for at most `depth` levels
/// below `root` (0: `root`'s own entries). A matching directory is listed and not searched
/// further. Empty when there is none, or no `root`.
pub fn find(root: impl AsRef<Path>, depth: usize, matches: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut queue = vec![(root.as_ref().to_path_buf(), 0)];
    while let Some((dir, level)) = queue.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if matches(&entry.file_name().to_string_lossy()) {
                found.push(entry.path());
            } else if level < depth {
                queue.push((entry.path(), level + 1));
            }
        }
    }
    found
}
