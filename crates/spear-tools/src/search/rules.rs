//! Ignore rules by directory, applied the way ripgrep (the `ignore` crate) applies them. Pure: the
//! text of the ignore files comes in, verdicts go out; reading them is the engine's job.
//!
//! Precedence, as in ripgrep: a `.ignore` match anywhere up the chain beats a `.gitignore` match,
//! which beats a `.git/info/exclude` match; within one kind the deepest directory wins; a `!`
//! pattern whitelists. Git's files only count inside a repository (a `.git` or `.jj` in the
//! directory or an ancestor) and stop at the repository's top.

use std::path::Path;
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// What the ignore files say about one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// No rule matches.
    None,
    /// An ignore rule matches: not searched.
    Ignore,
    /// A `!` rule matches: searched even if hidden.
    Whitelist,
}

/// The text of one directory's ignore files, and whether it is the top of a repository.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct DirRules {
    /// `.ignore`.
    pub ignore: Option<String>,
    /// `.gitignore`.
    pub gitignore: Option<String>,
    /// `.git/info/exclude`.
    pub exclude: Option<String>,
    /// A `.git` (or `.jj`) is there.
    pub has_git: bool,
}

/// The rules of one directory and, through `parent`, of its ancestors. Directories without rules
/// share their parent's level.
#[derive(Debug)]
pub(super) struct Level {
    ignore: Gitignore,
    gitignore: Gitignore,
    exclude: Gitignore,
    has_git: bool,
    /// This directory or an ancestor (also above the roots) is in a repository.
    any_git: bool,
    parent: Option<Arc<Level>>,
}

impl Level {
    /// The level above the first directory read: no rules; `outer_git` says whether an ancestor
    /// outside the roots holds a `.git` (so a workspace inside a repository honours `.gitignore`).
    pub fn base(outer_git: bool) -> Arc<Level> {
        Arc::new(Level {
            ignore: Gitignore::empty(),
            gitignore: Gitignore::empty(),
            exclude: Gitignore::empty(),
            has_git: false,
            any_git: outer_git,
            parent: None,
        })
    }

    /// The level of directory `dir` (a host path; the rules' patterns are relative to it) below
    /// `parent`. Unparsable lines are dropped, as ripgrep drops them.
    pub fn child(parent: &Arc<Level>, dir: &Path, rules: &DirRules) -> Arc<Level> {
        if rules.ignore.is_none()
            && rules.gitignore.is_none()
            && rules.exclude.is_none()
            && !rules.has_git
        {
            return Arc::clone(parent);
        }
        Arc::new(Level {
            ignore: compile(dir, rules.ignore.as_deref()),
            gitignore: compile(dir, rules.gitignore.as_deref()),
            exclude: compile(dir, rules.exclude.as_deref()),
            has_git: rules.has_git,
            any_git: parent.any_git || rules.has_git,
            parent: Some(Arc::clone(parent)),
        })
    }

    /// What the rules of this level and its ancestors say about `path` (a host path below this
    /// level's directory).
    pub fn verdict(&self, path: &Path, is_dir: bool) -> Verdict {
        let mut by_ignore = Match::None;
        let mut by_git = Match::None;
        let mut by_exclude = Match::None;
        let mut saw_git = false;
        let mut level = Some(self);
        while let Some(l) = level {
            if by_ignore.is_none() {
                by_ignore = l.ignore.matched(path, is_dir);
            }
            if self.any_git && !saw_git {
                if by_git.is_none() {
                    by_git = l.gitignore.matched(path, is_dir);
                }
                if by_exclude.is_none() {
                    by_exclude = l.exclude.matched(path, is_dir);
                }
            }
            saw_git = saw_git || l.has_git;
            level = l.parent.as_deref();
        }
        match by_ignore.or(by_git).or(by_exclude) {
            Match::None => Verdict::None,
            Match::Ignore(_) => Verdict::Ignore,
            Match::Whitelist(_) => Verdict::Whitelist,
        }
    }
}

/// The matcher of one ignore file's text.
fn compile(dir: &Path, text: Option<&str>) -> Gitignore {
    let Some(text) = text else {
        return Gitignore::empty();
    };
    let mut builder = GitignoreBuilder::new(dir);
    // Git skips a byte order mark at the start of the file.
    for line in text.trim_start_matches('\u{feff}').lines() {
        // A line that is not a valid glob is dropped, the rest still apply (as ripgrep does).
        let _ = builder.add_line(None, line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn rules(ignore: Option<&str>, gitignore: Option<&str>, has_git: bool) -> DirRules {
        DirRules {
            ignore: ignore.map(str::to_owned),
            gitignore: gitignore.map(str::to_owned),
            exclude: None,
            has_git,
        }
    }

    /// A two-level tree: `/r` (rules `top`) and `/r/sub` (rules `sub`).
    fn chain(outer_git: bool, top: &DirRules, sub: &DirRules) -> Arc<Level> {
        let base = Level::base(outer_git);
        let r = Level::child(&base, Path::new("/r"), top);
        Level::child(&r, Path::new("/r/sub"), sub)
    }

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a table: one case per ignore rule and where it applies, with the verdict expected"
    )]
    fn verdict_table() {
        use Verdict::{Ignore, None as No, Whitelist};
        let none = DirRules::default();
        // (outer_git, top, sub, path below /r/sub, is_dir, want)
        let cases: Vec<(bool, DirRules, DirRules, &str, bool, Verdict)> = vec![
            // .gitignore applies in a repository only.
            (
                false,
                rules(None, Some("*.log"), true),
                none.clone(),
                "a.log",
                false,
                Ignore,
            ),
            (
                false,
                rules(None, Some("*.log"), false),
                none.clone(),
                "a.log",
                false,
                No,
            ),
            (
                true,
                rules(None, Some("*.log"), false),
                none.clone(),
                "a.log",
                false,
                Ignore,
            ),
            // .ignore applies everywhere.
            (
                false,
                rules(Some("*.log"), None, false),
                none.clone(),
                "a.log",
                false,
                Ignore,
            ),
            // Deeper wins within a kind.
            (
                false,
                rules(Some("*.log"), None, false),
                rules(Some("!keep.log"), None, false),
                "keep.log",
                false,
                Whitelist,
            ),
            (
                false,
                rules(Some("!*.log"), None, false),
                rules(Some("*.log"), None, false),
                "a.log",
                false,
                Ignore,
            ),
            // .ignore beats .gitignore, even from higher up.
            (
                false,
                rules(Some("!a.log"), None, true),
                rules(None, Some("a.log"), false),
                "a.log",
                false,
                Whitelist,
            ),
            // Directory-only patterns.
            (
                false,
                rules(Some("build/"), None, false),
                none.clone(),
                "build",
                true,
                Ignore,
            ),
            (
                false,
                rules(Some("build/"), None, false),
                none.clone(),
                "build",
                false,
                No,
            ),
            // Anchored patterns are relative to their own directory.
            (
                false,
                rules(Some("/sub/x"), None, false),
                none.clone(),
                "x",
                false,
                Ignore,
            ),
            (
                false,
                rules(Some("/x"), None, false),
                none.clone(),
                "x",
                false,
                No,
            ),
            // Git's rules stop at the top of a nested repository.
            (
                false,
                rules(None, Some("*.log"), true),
                rules(None, None, true),
                "a.log",
                false,
                No,
            ),
            // Nothing at all.
            (true, none.clone(), none.clone(), "a.rs", false, No),
        ];
        for (i, (outer, top, sub, rel, is_dir, want)) in cases.into_iter().enumerate() {
            let level = chain(outer, &top, &sub);
            let path = Path::new("/r/sub").join(rel);
            assert_eq!(level.verdict(&path, is_dir), want, "case {i}: {rel}");
        }
    }

    #[test]
    fn directories_without_rules_share_the_parent_level() {
        let base = Level::base(false);
        let same = Level::child(&base, Path::new("/r"), &DirRules::default());
        assert!(Arc::ptr_eq(&base, &same));
        let git = Level::child(&base, Path::new("/r"), &rules(None, None, true));
        assert!(!Arc::ptr_eq(&base, &git));
    }

    #[test]
    fn bad_lines_are_dropped_and_the_rest_apply() {
        let level = chain(
            false,
            &rules(Some("a[\n*.log\n"), None, false),
            &DirRules::default(),
        );
        assert_eq!(
            level.verdict(Path::new("/r/sub/x.log"), false),
            Verdict::Ignore
        );
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        let level = chain(
            false,
            &rules(Some("\u{feff}*.log"), None, false),
            &DirRules::default(),
        );
        assert_eq!(
            level.verdict(Path::new("/r/sub/x.log"), false),
            Verdict::Ignore
        );
    }
}
