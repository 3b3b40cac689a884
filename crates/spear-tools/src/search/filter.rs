//! Which entries met in the walk are searched or descended into. Pure decisions.

use std::ffi::OsStr;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

use super::model::SearchError;
use super::rules::Verdict;

/// The kind of an entry as the walk saw it, links not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Dir,
    Symlink,
    /// A fifo, socket or device.
    Other,
}

/// Whether the walk keeps an entry below the starting point (the starting point itself is always
/// kept, as ripgrep searches what it is named). `glob_ok` says whether the request's glob admits
/// it (files only; `true` when there is no glob).
pub(super) fn admit(kind: Kind, name: &OsStr, verdict: Verdict, glob_ok: bool) -> bool {
    match kind {
        // Attack: a link to `~/.ssh` (or to `/`) planted in the workspace. Links are never
        // followed, not even those that stay inside, so that no check of where they lead is needed.
        // Attack: a fifo would block a reader forever; a device could be anything.
        Kind::Symlink | Kind::Other => return false,
        Kind::File | Kind::Dir => {}
    }
    // A repository's internals are never searched, whatever the ignore files say.
    if name == OsStr::new(".git") {
        return false;
    }
    if verdict == Verdict::Ignore {
        return false;
    }
    if is_hidden(name) && verdict != Verdict::Whitelist {
        return false;
    }
    kind == Kind::Dir || glob_ok
}

/// A dot file or dot directory, as ripgrep defines hidden on Unix.
fn is_hidden(name: &OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.')
}

/// The request's glob. Without a `/` it matches a file's name (`*.rs`); with one, its path relative
/// to the starting point or to the primary root (`src/**/*.ts`), `*` not crossing a `/`.
#[derive(Debug, Clone)]
pub(super) struct GlobFilter {
    matcher: GlobMatcher,
    by_name: bool,
}

impl GlobFilter {
    /// Parses `glob`; a glob that does not parse is [`SearchError::BadGlob`].
    pub fn new(glob: &str) -> Result<GlobFilter, SearchError> {
        let bad = |reason: String| SearchError::BadGlob {
            glob: glob.to_owned(),
            reason,
        };
        if glob.trim().is_empty() {
            return Err(bad("it is empty".to_owned()));
        }
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| bad(e.kind().to_string()))?
            .compile_matcher();
        Ok(GlobFilter {
            matcher,
            by_name: !glob.contains('/'),
        })
    }

    /// Whether a file with this name, path relative to the starting point and label path (relative
    /// to its root) is searched.
    pub fn admits(&self, name: &OsStr, from_start: &Path, from_root: &Path) -> bool {
        if self.by_name {
            self.matcher.is_match(name)
        } else {
            self.matcher.is_match(from_start) || self.matcher.is_match(from_root)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn admit_table() {
        use Kind::{Dir, File, Other, Symlink};
        use Verdict::{Ignore, None as No, Whitelist};
        let cases: &[(Kind, &str, Verdict, bool, bool)] = &[
            (File, "a.rs", No, true, true),
            (File, "a.rs", No, false, false),
            (Dir, "src", No, false, true),
            (Symlink, "link", No, true, false),
            (Symlink, "link", Whitelist, true, false),
            (Other, "fifo", No, true, false),
            (File, "a.rs", Ignore, true, false),
            (Dir, "target", Ignore, true, false),
            (File, ".env", No, true, false),
            (Dir, ".github", No, true, false),
            (Dir, ".github", Whitelist, true, true),
            (File, ".env", Whitelist, true, true),
            (Dir, ".git", Whitelist, true, false),
            (File, ".git", No, true, false),
        ];
        for (kind, name, verdict, glob_ok, want) in cases {
            assert_eq!(
                admit(*kind, OsStr::new(name), *verdict, *glob_ok),
                *want,
                "{kind:?} {name} {verdict:?} {glob_ok}"
            );
        }
    }

    #[test]
    fn glob_table() {
        // (glob, name, from start, from root, want)
        let cases: &[(&str, &str, &str, &str, bool)] = &[
            ("*.rs", "a.rs", "src/a.rs", "crate/src/a.rs", true),
            ("*.rs", "a.ts", "src/a.ts", "crate/src/a.ts", false),
            (
                "*.{rs,toml}",
                "Cargo.toml",
                "Cargo.toml",
                "Cargo.toml",
                true,
            ),
            (
                "src/**/*.ts",
                "a.ts",
                "src/x/y/a.ts",
                "p/src/x/y/a.ts",
                true,
            ),
            ("src/**/*.ts", "a.ts", "lib/a.ts", "p/lib/a.ts", false),
            ("src/*.ts", "a.ts", "src/x/a.ts", "src/x/a.ts", false),
            ("p/src/*.ts", "a.ts", "src/a.ts", "p/src/a.ts", true),
            ("**/*.md", "README.md", "README.md", "README.md", true),
        ];
        for (glob, name, start, root, want) in cases {
            let g = GlobFilter::new(glob).unwrap();
            assert_eq!(
                g.admits(OsStr::new(name), Path::new(start), Path::new(root)),
                *want,
                "{glob} {start}"
            );
        }
    }

    #[test]
    fn bad_globs_are_refused() {
        for glob in ["a[", "", "  ", "{a,b"] {
            let err = GlobFilter::new(glob).unwrap_err();
            assert!(
                matches!(err, SearchError::BadGlob { .. }),
                "{glob}: {err:?}"
            );
        }
    }
}
