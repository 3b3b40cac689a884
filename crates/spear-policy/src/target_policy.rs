//! The target policy: paths no tool and no command may write, whatever the mode.
//!
//! It applies to every write, by a file tool or by a shell command, on the path as written and on
//! its resolved spelling (the caller checks both). Three families:
//! - generated output (`generated/` trees, `build/tmp/`, files whose first lines say DO NOT
//!   MODIFY, DO NOT EDIT, auto-generated or @generated): the change belongs in the source;
//! - snapshot and third-party copies (`*.back`, `*.pristine`, `*.0` trees, vendored trees): the
//!   change belongs in the original;
//! - protected entries, at any depth: files that make other programs run code later
//!   (`.git/hooks/`, `.git/config`, `.gitmodules`, `.envrc`, `.vscode/`, `.idea/`, `.mcp.json`)
//!   and agent configuration (`.spear/`, `.claude/`, `.codex/`, `.cursor/`).
//!
//! Attack stopped: persistence. A hook, an `.envrc` or an MCP configuration written by the agent
//! runs later on the host, outside every sandbox, when the user commits, enters the directory or
//! starts an agent.

use std::path::{Component, Path};

use spear_core::Refusal;

/// A path pattern matched against the components of a path relative to its root, at any depth.
/// `a/b/` matches the tree `a/b` (and everything in it); `a/b` matches the entry `a/b` (and, should
/// it be a directory, everything in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    parts: Vec<String>,
}

impl Pattern {
    /// Parses `text`; empty components and `.` are ignored.
    pub fn new(text: &str) -> Self {
        let parts = text
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .map(str::to_owned)
            .collect();
        Pattern {
            text: text.to_owned(),
            parts,
        }
    }

    /// The pattern as configured.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `rel` is the entry or lies inside it.
    fn matches(&self, rel: &[&str]) -> bool {
        let n = self.parts.len();
        n > 0
            && rel
                .windows(n)
                .any(|w| w.iter().zip(&self.parts).all(|(a, b)| *a == b))
    }

    /// Whether `rel` is a parent of the entry that a write would replace, such as `.git` for
    /// `.git/hooks/` (`mv crafted .git` plants hooks).
    fn parent_matches(&self, rel: &[&str]) -> bool {
        let n = self.parts.len();
        n > 1
            && (1..n).any(|k| {
                rel.len() >= k
                    && rel[rel.len() - k..]
                        .iter()
                        .zip(&self.parts)
                        .all(|(a, b)| *a == b)
            })
    }
}

/// The built-in protected entries and what each would let run.
const PROTECTED: &[(&str, &str)] = &[
    (
        ".git/hooks/",
        "git runs its hooks on commit, checkout and merge",
    ),
    (
        ".git/config",
        "git reads it on every command, and it can name programs to run",
    ),
    (
        ".gitmodules",
        "git submodule commands fetch and check out what it names",
    ),
    (".envrc", "direnv runs it when a shell enters the directory"),
    (".vscode/", "editors run the tasks and settings it holds"),
    (
        ".idea/",
        "IDEs run the run configurations and settings it holds",
    ),
    (".mcp.json", "agents start the MCP servers it names"),
    (".spear/", "it is spear's own configuration"),
    (".claude/", "it configures an agent"),
    (".codex/", "it configures an agent"),
    (".cursor/", "it configures an agent"),
];

/// Built-in generated trees.
const GENERATED: &[&str] = &["generated/", "build/tmp/"];

/// Suffixes of snapshot trees (`linux.pristine/`, `src.back/`, `tree.0/`).
const SNAPSHOT_SUFFIXES: &[&str] = &[".back", ".pristine", ".0"];

/// Vendored third-party trees.
const VENDORED: &[&str] = &["vendor/", "third_party/", "third-party/", "vendored/"];

/// The rules, built-in plus configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRules {
    protected: Vec<(Pattern, String)>,
    generated: Vec<Pattern>,
    vendored: Vec<Pattern>,
    snapshot_suffixes: Vec<String>,
}

impl Default for TargetRules {
    fn default() -> Self {
        TargetRules {
            protected: PROTECTED
                .iter()
                .map(|(p, why)| (Pattern::new(p), (*why).to_owned()))
                .collect(),
            generated: GENERATED.iter().map(|p| Pattern::new(p)).collect(),
            vendored: VENDORED.iter().map(|p| Pattern::new(p)).collect(),
            snapshot_suffixes: SNAPSHOT_SUFFIXES.iter().map(|s| (*s).to_owned()).collect(),
        }
    }
}

impl TargetRules {
    /// Adds and removes entries. Removal matches the configured text of a built-in entry, with or
    /// without a trailing `/`; a snapshot suffix is removed by naming it (`.0`).
    #[must_use]
    pub fn adjusted(
        mut self,
        protect: &[String],
        unprotect: &[String],
        generated: &[String],
        not_generated: &[String],
    ) -> Self {
        let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
        self.protected
            .retain(|(p, _)| !unprotect.iter().any(|u| same(p.as_str(), u)));
        self.generated
            .retain(|p| !not_generated.iter().any(|u| same(p.as_str(), u)));
        self.vendored
            .retain(|p| !not_generated.iter().any(|u| same(p.as_str(), u)));
        self.snapshot_suffixes
            .retain(|s| !not_generated.iter().any(|u| u == s));
        for p in protect {
            self.protected.push((
                Pattern::new(p),
                "the operator or the workspace protects it".into(),
            ));
        }
        for g in generated {
            self.generated.push(Pattern::new(g));
        }
        self
    }

    /// The protected-entry patterns, as configured (`.git/hooks/`, `.envrc`, ...): the runtime binds
    /// the entries they match read-only in every writable sandbox.
    pub fn protected_patterns(&self) -> Vec<String> {
        self.protected
            .iter()
            .map(|(p, _)| p.as_str().to_owned())
            .collect()
    }

    /// Checks a directory being made (or given a mode) at `rel`: refused when it is a protected,
    /// generated, snapshot or vendored entry or lies in one. Unlike [`TargetRules::check`], a
    /// directory that merely holds protected entries is not refused (`git init` makes `.git`);
    /// what is put in it is judged on its own.
    pub fn check_dir(&self, rel: &Path) -> Result<(), Refusal> {
        self.check_protected(rel, true)?;
        self.check_sources(rel)
    }

    /// Checks a write to `rel`, a path relative to its root, by its name alone (the header of an
    /// existing file is checked by [`generated_header`]).
    pub fn check(&self, rel: &Path) -> Result<(), Refusal> {
        self.check_protected(rel, false)?;
        self.check_sources(rel)
    }

    /// [`TargetRules::check_protected`] with the built-in entries `except` (as configured, such
    /// as `.git/config`) left out: for changes a finer rule has already judged.
    pub fn check_protected_except(
        &self,
        rel: &Path,
        dir: bool,
        except: &[&str],
    ) -> Result<(), Refusal> {
        let parts = parts(rel);
        for (pattern, why) in &self.protected {
            if except.contains(&pattern.as_str()) {
                continue;
            }
            if pattern.matches(&parts) || (!dir && pattern.parent_matches(&parts)) {
                return Err(Refusal::protected_entry(
                    rel.display().to_string(),
                    why.clone(),
                ));
            }
        }
        Ok(())
    }

    /// The protected entries alone: `rel` is one or lies in one, or (unless `dir`, a directory
    /// being made) is a directory holding one that a write would replace (`.git` of
    /// `.git/hooks/`). These hold everywhere, in ignored build output too: they run code later.
    pub fn check_protected(&self, rel: &Path, dir: bool) -> Result<(), Refusal> {
        let parts = parts(rel);
        let shown = rel.display().to_string();
        for (pattern, why) in &self.protected {
            if pattern.matches(&parts) || (!dir && pattern.parent_matches(&parts)) {
                return Err(Refusal::protected_entry(shown, why.clone()));
            }
        }
        Ok(())
    }

    /// Generated output, snapshot and vendored copies alone: rules about sources, which a build
    /// writing its own ignored output is not bound by.
    pub fn check_sources(&self, rel: &Path) -> Result<(), Refusal> {
        let parts = parts(rel);
        let shown = rel.display().to_string();
        if let Some(p) = self.generated.iter().find(|p| p.matches(&parts)) {
            return Err(Refusal::generated_file(
                shown,
                format!(
                    "the generator or its input (this file is under {})",
                    p.as_str()
                ),
            ));
        }
        if let Some(i) = parts.iter().enumerate().position(|(i, part)| {
            let leaf = i + 1 == parts.len();
            self.snapshot_suffixes
                .iter()
                .any(|s| part.len() > s.len() && part.ends_with(s.as_str()) && (!leaf || s != ".0"))
        }) {
            let part = parts[i];
            let suffix = self
                .snapshot_suffixes
                .iter()
                .find(|s| part.ends_with(s.as_str()));
            let original_part = suffix.map_or(part, |s| &part[..part.len() - s.len()]);
            let mut original: Vec<&str> = parts.clone();
            original[i] = original_part;
            return Err(Refusal::snapshot_copy(
                shown,
                format!("`{}`", original.join("/")),
            ));
        }
        if let Some(p) = self.vendored.iter().find(|p| p.matches(&parts)) {
            return Err(Refusal::snapshot_copy(
                shown,
                format!(
                    "the upstream project, or the patches the project keeps for its vendored code \
                     (this file is under {})",
                    p.as_str()
                ),
            ));
        }
        Ok(())
    }
}

/// The normal components of `rel` that are valid UTF-8.
fn parts(rel: &Path) -> Vec<&str> {
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect()
}

/// How many bytes of a file's start are read for a generated-file marker.
pub const HEADER_BYTES: usize = 2048;

/// How many lines of a file's start are searched for a generated-file marker.
const HEADER_LINES: usize = 10;

/// If the first lines of a file say it is generated, what to change instead: the source the
/// header names (`generated from X`, `source: X`), or a general pointer.
pub fn generated_header(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head);
    let lines: Vec<&str> = text.lines().take(HEADER_LINES).collect();
    let marked = lines.iter().any(|line| {
        let l = line.to_ascii_lowercase();
        l.contains("do not modify")
            || l.contains("do not edit")
            || l.contains("auto-generated")
            || l.contains("autogenerated")
            || l.contains("automatically generated")
            || l.contains("@generated")
    });
    if !marked {
        return None;
    }
    let source = lines.iter().find_map(|line| named_source(line));
    Some(source.map_or_else(
        || "the generator or its input (the file's header says it is generated)".to_owned(),
        |s| format!("`{s}`, which the header names as its source"),
    ))
}

/// The source named on a header line: the word after `from` or `source:`.
fn named_source(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    for key in [" from ", "source: ", "source file: ", "input: "] {
        if let Some(pos) = lower.find(key) {
            let rest = &line[pos + key.len()..];
            let word: String = rest
                .trim_start_matches(|c: char| c.is_whitespace() || "\"'`".contains(c))
                .chars()
                .take_while(|c| !c.is_whitespace() && !"\"'`,;".contains(*c))
                .collect();
            let word = word.trim_end_matches(['.', ':', ')']).to_owned();
            if !word.is_empty() && (word.contains('.') || word.contains('/')) {
                return Some(word);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use spear_core::RefusalRule;

    fn rule(rel: &str) -> Option<RefusalRule> {
        TargetRules::default()
            .check(Path::new(rel))
            .err()
            .map(|r| r.rule())
    }

    #[test]
    fn table() {
        use RefusalRule::{GeneratedFile as G, ProtectedEntry as P, SnapshotCopy as S};
        for (rel, expected) in [
            ("src/main.rs", None),
            ("README.md", None),
            (".git/hooks/pre-commit", Some(P)),
            (".git/hooks", Some(P)),
            ("vendor/lib/.git/hooks/post-checkout", Some(P)),
            ("sub/.git/config", Some(P)),
            (".git", Some(P)),
            ("sub/.git", Some(P)),
            (".git/index", None),
            (".git/objects/ab/cdef", None),
            (".git/config.lock", None),
            (".gitmodules", Some(P)),
            (".envrc", Some(P)),
            ("a/b/.envrc", Some(P)),
            (".vscode/tasks.json", Some(P)),
            (".idea/workspace.xml", Some(P)),
            (".mcp.json", Some(P)),
            (".spear/policy.toml", Some(P)),
            (".claude/settings.json", Some(P)),
            (".codex/config.toml", Some(P)),
            (".cursor/mcp.json", Some(P)),
            ("envrc", None),
            ("src/generated/api.rs", Some(G)),
            ("generated", Some(G)),
            ("build/tmp/x.o", Some(G)),
            ("build/out/x.o", None),
            ("build", None),
            ("build/tmp", Some(G)),
            ("linux.pristine/Makefile", Some(S)),
            ("src.back/a.c", Some(S)),
            ("tree.0/a.c", Some(S)),
            ("libfoo.so.0", None),
            ("notes.back", Some(S)),
            ("vendor/github.com/x/y.go", Some(S)),
            ("third_party/zlib/zlib.h", Some(S)),
            ("vendors.txt", None),
        ] {
            assert_eq!(rule(rel), expected, "{rel}");
        }
    }

    #[test]
    fn directories_and_the_rules_that_bind_everywhere() {
        let rules = TargetRules::default();
        let dir = |rel: &str| rules.check_dir(Path::new(rel)).is_ok();
        // A directory that will hold protected entries may be made; one that is one may not.
        assert!(dir(".git"));
        assert!(dir("sub/.git"));
        assert!(dir("src"));
        assert!(!dir(".git/hooks"));
        assert!(!dir(".vscode"));
        assert!(!dir("generated"));
        assert!(!dir("vendor/x"));
        // Protected entries bind everywhere, the rules about sources only tracked files.
        let protected = |rel: &str| rules.check_protected(Path::new(rel), false).is_err();
        assert!(protected("target/x/.envrc"));
        assert!(protected(".git"));
        assert!(!protected("target/out/generated/x.rs"));
        assert!(
            rules
                .check_sources(Path::new("target/out/generated/x.rs"))
                .is_err()
        );
        // A finer rule may take over some built-in entries, and only those.
        let except = |rel: &str| {
            rules
                .check_protected_except(Path::new(rel), false, &[".git/config"])
                .is_ok()
        };
        assert!(except(".git/config"));
        assert!(!except(".git/hooks/pre-commit"));
        assert!(!except(".envrc"));
    }

    #[test]
    fn refusals_name_what_to_change() {
        let r = TargetRules::default()
            .check(Path::new("linux.pristine/Makefile"))
            .unwrap_err();
        assert!(r.message().contains("`linux/Makefile`"), "{}", r.message());
        let r = TargetRules::default()
            .check(Path::new(".git/hooks/pre-commit"))
            .unwrap_err();
        assert!(r.message().contains("hooks"), "{}", r.message());
    }

    #[test]
    fn headers() {
        assert_eq!(generated_header(b"fn main() {}\n"), None);
        let s = generated_header(
            b"// Code generated by protoc-gen-go from api/v1/api.proto. DO NOT EDIT.\npackage x\n",
        )
        .unwrap();
        assert!(s.contains("api/v1/api.proto"), "{s}");
        let s = generated_header(b"# @generated by build.py\n").unwrap();
        assert!(s.contains("generator"), "{s}");
        assert!(generated_header(b"/* This file is auto-generated. */").is_some());
        assert!(
            generated_header(b"<!-- DO NOT MODIFY: source: docs/src/index.md -->")
                .unwrap()
                .contains("docs/src/index.md")
        );
        let late = format!("{}// DO NOT EDIT\n", "x\n".repeat(20));
        assert_eq!(
            generated_header(late.as_bytes()),
            None,
            "only the first lines count"
        );
    }
}
