//! Which paths a session may have changed, read from its overlay's upper layer: only those are
//! compared with the template to make the patch, so a patch costs what the session changed, not
//! what the template holds.
//!
//! The upper layer only nominates: a path is in the patch only if the template and the session's
//! view differ there ([`super::patch`] compares both), so an entry a session forged in the layer
//! (a file named `.wh.x`, an attribute named like an opaque mark) can widen what is compared but
//! never put a change in the patch that the session's tree does not have. What must not happen is
//! a change left out; every form the two mechanisms write is therefore read:
//! - a whiteout (a deleted entry): a character device 0:0 of the deleted name (kernel overlayfs,
//!   fuse-overlayfs), or a file `.wh.NAME` (fuse-overlayfs where it cannot make the device);
//! - an opaque directory (one that replaces the template's instead of merging with it): the
//!   attribute `trusted.overlay.opaque` (root), `user.overlay.opaque` (`userxattr`),
//!   `user.fuseoverlayfs.opaque`, or a `.wh..wh..opq` entry inside it. Such a directory is
//!   compared whole, as is a directory where the template has none (or has a file or a link).
//!
//! No link is followed: entries are read with `lstat` and only real directories are entered.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

/// The opaque mark fuse-overlayfs and the OCI layer format write as an entry.
const OPAQUE_ENTRY: &[u8] = b".wh..wh..opq";
/// The prefix of a whiteout written as a file.
const WHITEOUT_PREFIX: &[u8] = b".wh.";
/// The attributes that mark a directory of the upper layer opaque, in any mechanism.
const OPAQUE_XATTRS: [&std::ffi::CStr; 3] = [
    c"trusted.overlay.opaque",
    c"user.overlay.opaque",
    c"user.fuseoverlayfs.opaque",
];

/// An entry of the upper layer's kind, as far as nominating changes goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A directory.
    Dir,
    /// A character device with this device number.
    CharDev(u64),
    /// Anything else (a file, a link, a fifo).
    Other,
}

/// What an entry of the upper layer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Entry {
    /// Its directory is opaque: nothing of itself.
    OpaqueMark,
    /// The template's entry of this name was deleted (and the entry's own name is nominated
    /// too, in case the session made a file of that name).
    Whiteout(OsString),
    /// A directory: entered, or compared whole.
    Dir,
    /// A changed or new entry of this name.
    Changed,
}

/// What the entry `name` of kind `kind` says (pure).
pub(super) fn classify(name: &OsStr, kind: Kind) -> Entry {
    let bytes = name.as_bytes();
    if bytes == OPAQUE_ENTRY {
        return Entry::OpaqueMark;
    }
    if let Some(hidden) = bytes.strip_prefix(WHITEOUT_PREFIX)
        && !hidden.is_empty()
    {
        return Entry::Whiteout(OsStr::from_bytes(hidden).to_owned());
    }
    match kind {
        Kind::CharDev(0) => Entry::Whiteout(name.to_owned()),
        Kind::Dir => Entry::Dir,
        Kind::CharDev(_) | Kind::Other => Entry::Changed,
    }
}

/// The paths (relative to the root) the session may have changed, read from `upper` against
/// `template`: none has another among its ancestors, and none has a `.git` component (a
/// repository's own files are not in a patch: `git apply` refuses to write them).
pub(super) fn changed_paths(upper: &Path, template: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = BTreeSet::new();
    walk(upper, template, Path::new(""), &mut found)?;
    let mut kept = BTreeSet::new();
    for path in found {
        // Sorted by components, a path comes after its ancestors.
        if is_git_path(&path) || path.ancestors().skip(1).any(|a| kept.contains(a)) {
            continue;
        }
        kept.insert(path);
    }
    Ok(kept.into_iter().collect())
}

/// Whether a component of `path` is `.git`.
pub(super) fn is_git_path(path: &Path) -> bool {
    path.components()
        .any(|c| matches!(c, Component::Normal(n) if n == ".git"))
}

fn walk(
    upper: &Path,
    template: &Path,
    rel: &Path,
    found: &mut BTreeSet<PathBuf>,
) -> io::Result<()> {
    for entry in std::fs::read_dir(upper)? {
        let entry = entry?;
        let name = entry.file_name();
        let meta = entry.metadata()?;
        let kind = if meta.is_dir() {
            Kind::Dir
        } else if meta.file_type().is_char_device() {
            Kind::CharDev(meta.rdev())
        } else {
            Kind::Other
        };
        match classify(&name, kind) {
            Entry::OpaqueMark => {}
            Entry::Whiteout(hidden) => {
                found.insert(rel.join(hidden));
                found.insert(rel.join(&name));
            }
            Entry::Changed => {
                found.insert(rel.join(&name));
            }
            Entry::Dir => {
                let below = template.join(&name);
                let merges = std::fs::symlink_metadata(&below).is_ok_and(|m| m.is_dir());
                if merges && !is_opaque(&entry.path()) {
                    walk(&entry.path(), &below, &rel.join(&name), found)?;
                } else {
                    found.insert(rel.join(&name));
                }
            }
        }
    }
    Ok(())
}

/// Whether the upper layer's directory `dir` is marked opaque in any mechanism's way.
fn is_opaque(dir: &Path) -> bool {
    let marked = OPAQUE_XATTRS.iter().any(|name| {
        let mut value = [0u8; 8];
        rustix::fs::lgetxattr(dir, *name, &mut value).is_ok()
    });
    marked || std::fs::symlink_metadata(dir.join(OsStr::from_bytes(OPAQUE_ENTRY))).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_say_what_they_mark() {
        let w = |s: &str| Entry::Whiteout(OsString::from(s));
        for (name, kind, want) in [
            ("a", Kind::CharDev(0), w("a")),
            ("a", Kind::CharDev(0x0103), Entry::Changed),
            ("a", Kind::Other, Entry::Changed),
            ("a", Kind::Dir, Entry::Dir),
            (".wh.a", Kind::Other, w("a")),
            (".wh.a", Kind::CharDev(0), w("a")),
            (".wh..opq", Kind::CharDev(0), w(".opq")),
            (".wh..wh..opq", Kind::Other, Entry::OpaqueMark),
            (".wh.", Kind::Other, Entry::Changed),
            (".whx", Kind::Other, Entry::Changed),
        ] {
            assert_eq!(classify(OsStr::new(name), kind), want, "{name} {kind:?}");
        }
    }

    #[test]
    fn git_paths_are_left_out() {
        for (path, git) in [
            (".git", true),
            ("a/.git/config", true),
            (".github/x", false),
            ("a.git", false),
            ("src/main.rs", false),
        ] {
            assert_eq!(is_git_path(Path::new(path)), git, "{path}");
        }
    }

    /// Changes nominated from a layer written by hand in each mechanism's forms: a whiteout
    /// device is only made by root, so the `.wh.` form stands for it here.
    #[test]
    fn a_layer_nominates_each_change_once() {
        let t = tempfile::tempdir().unwrap();
        let (upper, template) = (t.path().join("u"), t.path().join("t"));
        for d in [
            "t/keep/deep",
            "t/gone",
            "t/opq",
            "t/link",
            "u/keep/deep",
            "u/opq",
            "u/new/sub",
            "u/link",
        ] {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        std::fs::remove_dir(template.join("link")).unwrap();
        std::os::unix::fs::symlink("/etc", template.join("link")).unwrap();
        for f in [
            "u/keep/deep/f",
            "u/keep/.wh.old",
            "u/.wh.gone",
            "u/opq/.wh..wh..opq",
            "u/opq/x",
            "u/new/sub/y",
            "u/link/passwd",
        ] {
            std::fs::write(t.path().join(f), b"").unwrap();
        }
        let got = changed_paths(&upper, &template).unwrap();
        let want: Vec<PathBuf> = [
            ".wh.gone",
            "gone",
            "keep/.wh.old",
            "keep/deep/f",
            "keep/old",
            "link",
            "new",
            "opq",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(got, want);
    }
}
