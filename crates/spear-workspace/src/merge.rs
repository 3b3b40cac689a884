//! Which canonical directories become roots: merging, ordering, and the directories that can never
//! be one. Pure decisions; [`crate::Workspace::open`] does the filesystem part.

use std::path::{Path, PathBuf};

/// Merges canonical candidate roots into the final list, primary first.
///
/// `launch` is the canonical launch directory, `extras` the canonical extra roots in configured
/// order. Duplicates collapse; a candidate inside another is merged into the outer one; the root
/// holding `launch` (the launch directory itself or an extra root enclosing it) comes first, the
/// others keep their order.
pub(crate) fn merge_roots(launch: &Path, extras: &[PathBuf]) -> Vec<PathBuf> {
    let mut candidates: Vec<&Path> = Vec::with_capacity(extras.len() + 1);
    for c in std::iter::once(launch).chain(extras.iter().map(PathBuf::as_path)) {
        if !candidates.contains(&c) {
            candidates.push(c);
        }
    }
    // Nested roots merge into the outer one: two roots sharing files would give one file two
    // names (and two audit labels) and bind the inner one twice.
    let outer: Vec<&Path> = candidates
        .iter()
        .copied()
        .filter(|c| !candidates.iter().any(|o| o != c && c.starts_with(o)))
        .collect();
    let mut merged: Vec<PathBuf> = Vec::with_capacity(outer.len());
    if let Some(primary) = outer.iter().find(|r| launch.starts_with(r)) {
        merged.push(primary.to_path_buf());
    }
    for r in outer {
        if !launch.starts_with(r) {
            merged.push(r.to_path_buf());
        }
    }
    merged
}

/// The nearest ancestor of `launch` (itself included) for which `is_build_tree` holds.
pub(crate) fn nearest_build_tree(
    launch: &Path,
    is_build_tree: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    launch
        .ancestors()
        .find(|a| is_build_tree(a))
        .map(Path::to_path_buf)
}

/// Why a canonical directory can never be a root, or `None` if it can.
///
/// Attack: a root at `/` would put every host file (credential stores included) inside the
/// workspace; a root in `/proc`, `/sys` or `/dev` would put the harness's own `/proc/self/environ`
/// (API keys) and magic links such as `/proc/self/root` or `/dev/fd/N` inside it.
pub(crate) fn forbidden_root(path: &Path) -> Option<String> {
    if path == Path::new("/") {
        return Some("the filesystem root / cannot be a workspace root".to_owned());
    }
    ["/proc", "/sys", "/dev"]
        .iter()
        .find(|p| path.starts_with(p))
        .map(|p| format!("{p} holds kernel and device files and cannot hold a workspace root"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn merge_roots_table() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            // Only the launch directory.
            ("/w/a", &[], &["/w/a"]),
            // Extras keep their order after the primary.
            ("/w/a", &["/w/c", "/w/b"], &["/w/a", "/w/c", "/w/b"]),
            // Duplicates collapse, the launch directory included.
            ("/w/a", &["/w/a", "/w/b", "/w/b"], &["/w/a", "/w/b"]),
            // An extra root inside the launch directory merges into it.
            ("/w/a", &["/w/a/sub", "/w/b"], &["/w/a", "/w/b"]),
            // The launch directory inside an extra root: that root becomes primary.
            (
                "/w/tree/proj",
                &["/w/other", "/w/tree"],
                &["/w/tree", "/w/other"],
            ),
            // Several levels: the outermost wins.
            ("/w/t/p/q", &["/w/t/p", "/w/t"], &["/w/t"]),
            // Component-wise, not string prefixes: /w/ab is not inside /w/a.
            ("/w/a", &["/w/ab"], &["/w/a", "/w/ab"]),
            // Nested extras merge among themselves.
            ("/w/a", &["/w/b/c", "/w/b"], &["/w/a", "/w/b"]),
        ];
        for (launch, extras, want) in cases {
            assert_eq!(
                merge_roots(Path::new(launch), &paths(extras)),
                paths(want),
                "{launch} {extras:?}"
            );
        }
    }

    #[test]
    fn nearest_build_tree_table() {
        let cases: &[(&str, &[&str], Option<&str>)] = &[
            ("/w/t/p", &[], None),
            ("/w/t/p", &["/w/t"], Some("/w/t")),
            ("/w/t/p", &["/w/t/p"], Some("/w/t/p")),
            ("/w/t/p", &["/w", "/w/t"], Some("/w/t")),
            ("/w/t/p", &["/x"], None),
        ];
        for (launch, trees, want) in cases {
            let got = nearest_build_tree(Path::new(launch), |p| {
                trees.iter().any(|t| Path::new(t) == p)
            });
            assert_eq!(got, want.map(PathBuf::from), "{launch} {trees:?}");
        }
    }

    #[test]
    fn forbidden_root_table() {
        let cases: &[(&str, bool)] = &[
            ("/", true),
            ("/proc", true),
            ("/proc/1/cwd", true),
            ("/sys/kernel", true),
            ("/dev", true),
            ("/dev/shm/x", true),
            ("/home/u/p", false),
            ("/tmp/x", false),
            ("/procs", false),
            ("/devel", false),
            ("/usr/src", false),
        ];
        for (path, want) in cases {
            assert_eq!(forbidden_root(Path::new(path)).is_some(), *want, "{path}");
        }
    }
}
