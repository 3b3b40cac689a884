//! Lexical path arithmetic: splitting and folding paths without touching the filesystem.
//!
//! Every function here is pure. Lexical folding of `..` is only physically right where no
//! component before the `..` is a symlink; callers that need the physical answer (resolution) walk
//! the path themselves and use these helpers only where the walk has already proved that.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// One component of a path as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Comp {
    /// `.`
    Cur,
    /// `..`
    Parent,
    /// Any other name.
    Name(OsString),
}

/// A path split into components, keeping what [`Path::components`] throws away: interior `.`
/// (so `file/.` can be refused like the kernel refuses it) and a trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    /// Starts with `/`.
    pub(crate) absolute: bool,
    /// The components, empty ones (from `//`) dropped.
    pub(crate) comps: Vec<Comp>,
    /// Ends with `/` after at least one component: the leaf must be a directory and a leaf
    /// symlink is followed.
    pub(crate) trailing_slash: bool,
}

/// Splits raw path bytes on `/`.
pub(crate) fn parse(bytes: &[u8]) -> Parsed {
    let absolute = bytes.first() == Some(&b'/');
    let comps: Vec<Comp> = bytes
        .split(|b| *b == b'/')
        .filter(|s| !s.is_empty())
        .map(|s| match s {
            b"." => Comp::Cur,
            b".." => Comp::Parent,
            name => Comp::Name(OsStr::from_bytes(name).to_os_string()),
        })
        .collect();
    let trailing_slash = !comps.is_empty() && bytes.last() == Some(&b'/');
    Parsed {
        absolute,
        comps,
        trailing_slash,
    }
}

/// Folds `.` and `..` in an absolute path (`/..` is `/`). `None` for a relative path. The result
/// never holds `.` or `..`.
pub(crate) fn normalize_absolute(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

/// Folds `.` and `..` in any path: an absolute one as [`normalize_absolute`] does; in a relative
/// one, `..` that climbs above the start is kept at the front (`../x` stays `../x`). The empty
/// relative result is `.`.
pub(crate) fn lexical_normalize(path: &Path) -> PathBuf {
    if let Some(abs) = normalize_absolute(path) {
        return abs;
    }
    let mut ups = 0usize;
    let mut names: Vec<&OsStr> = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => names.push(n),
            Component::ParentDir => {
                if names.pop().is_none() {
                    ups += 1;
                }
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    let mut out = PathBuf::new();
    for _ in 0..ups {
        out.push("..");
    }
    for n in names {
        out.push(n);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Whether `ancestor` is a proper ancestor of `path`, component by component (so `/ab` is not an
/// ancestor of `/abc`).
pub(crate) fn is_strict_ancestor(ancestor: &Path, path: &Path) -> bool {
    ancestor != path && path.starts_with(ancestor)
}

/// Joins normal components into a relative path.
pub(crate) fn join_names<'a>(names: impl IntoIterator<Item = &'a OsStr>) -> PathBuf {
    names.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Comp {
        Comp::Name(OsString::from(s))
    }

    #[test]
    fn parse_table() {
        let cases: &[(&str, bool, Vec<Comp>, bool)] = &[
            ("", false, vec![], false),
            ("/", true, vec![], false),
            ("//", true, vec![], false),
            ("a", false, vec![name("a")], false),
            ("a/", false, vec![name("a")], true),
            ("a//b", false, vec![name("a"), name("b")], false),
            ("./a", false, vec![Comp::Cur, name("a")], false),
            ("a/./b", false, vec![name("a"), Comp::Cur, name("b")], false),
            ("a/..", false, vec![name("a"), Comp::Parent], false),
            (
                "/a/../b/",
                true,
                vec![name("a"), Comp::Parent, name("b")],
                true,
            ),
            ("...", false, vec![name("...")], false),
            (".a/..b", false, vec![name(".a"), name("..b")], false),
            ("./", false, vec![Comp::Cur], true),
        ];
        for (input, absolute, comps, trailing) in cases {
            let p = parse(input.as_bytes());
            assert_eq!(p.absolute, *absolute, "{input}");
            assert_eq!(&p.comps, comps, "{input}");
            assert_eq!(p.trailing_slash, *trailing, "{input}");
        }
    }

    #[test]
    fn normalize_absolute_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("/", Some("/")),
            ("/..", Some("/")),
            ("/../..", Some("/")),
            ("/a/b/../c", Some("/a/c")),
            ("/a/./b/.", Some("/a/b")),
            ("/a/../../b", Some("/b")),
            ("//a//b/", Some("/a/b")),
            ("/workspace/../etc", Some("/etc")),
            ("a/b", None),
            ("", None),
            ("../a", None),
        ];
        for (input, want) in cases {
            assert_eq!(
                normalize_absolute(Path::new(input)),
                want.map(PathBuf::from),
                "{input}"
            );
        }
    }

    #[test]
    fn lexical_normalize_table() {
        let cases: &[(&str, &str)] = &[
            ("", "."),
            (".", "."),
            ("a/..", "."),
            ("../x", "../x"),
            ("a/../../x", "../x"),
            ("../../a/../b", "../../b"),
            ("/..", "/"),
            ("/a/./b/../c", "/a/c"),
            ("a//b/", "a/b"),
        ];
        for (input, want) in cases {
            assert_eq!(
                lexical_normalize(Path::new(input)),
                PathBuf::from(want),
                "{input}"
            );
        }
    }

    #[test]
    fn strict_ancestor_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("/", "/a", true),
            ("/", "/", false),
            ("/a", "/a", false),
            ("/a", "/a/b", true),
            ("/a", "/ab", false),
            ("/a/b", "/a", false),
            ("/tmp", "/tmp/x/y", true),
        ];
        for (a, p, want) in cases {
            assert_eq!(
                is_strict_ancestor(Path::new(a), Path::new(p)),
                *want,
                "{a} {p}"
            );
        }
    }

    #[test]
    fn join_names_table() {
        assert_eq!(join_names([]), PathBuf::new());
        assert_eq!(
            join_names([OsStr::new("a"), OsStr::new("b")]),
            PathBuf::from("a/b")
        );
    }
}
