//! Host-run configuration: files whose contents a tool on the host runs or obeys without the
//! user asking. One catalogue, each entry with the tool that runs it; `docs/host-run-config.md`
//! is the same table for people (a test keeps the two the same).
//!
//! Two kinds of entry:
//! - **by name** ([`Match::Names`]): a file or tree a tool looks for by its name (`.vscode/`,
//!   `.pre-commit-config.yaml`, `.envrc`), matched here, at any depth;
//! - **git's** ([`Match::Git`]): what git reads or runs through its own indirections (a
//!   repository's configuration and hooks, whatever a configuration includes or names, the
//!   hooks directory `core.hooksPath` names), resolved at judge time from the host's
//!   repositories and the user's configuration by [`crate::GitIndirections`].
//!
//! A write to host-run configuration is never silent: SAFE writes nothing, ASK and AUTO ask the
//! user (before a command runs when it names the file, when its staged writes are judged
//! otherwise), and only the operator's `[policy] allow_host_config` lets an entry be written
//! without asking. Removals, modes, renames and links onto such a path are writes too.
//!
//! Attack stopped: persistence. A hook, a `core.fsmonitor`, an editor's folder-open task, a
//! devcontainer's `initializeCommand` or an agent's MCP server written by the agent inside the
//! sandbox runs later on the host, outside every sandbox, when the user runs `git status`, opens
//! the folder or starts an agent.

use std::path::{Component, Path};

/// Where a tool looks for an entry found by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// In any directory: a shell entering it (direnv, mise) or an editor started there runs it.
    AnyDepth,
    /// Project configuration: at any depth (a monorepo's package opened on its own), but not
    /// inside a package manager's dependency tree ([`DEPENDENCY_TREES`]), where no tool looks for
    /// a project's configuration and installs put whatever their packages ship.
    Project,
}

/// How an entry's files are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// By name: each pattern is matched against the path's components at any depth; `a/b/`
    /// names the tree `a/b`, `a/b` the entry (and, when it is a directory, everything in it);
    /// a component may hold one `*` (`mise.*.toml`). ASCII case is ignored: a case-insensitive
    /// filesystem shows `.VSCode` to the editor as `.vscode`.
    Names(&'static [&'static str], Scope),
    /// By git's own rules ([`crate::GitIndirections`]); the text says what they cover.
    Git(&'static str),
}

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Its name in `[policy] allow_host_config` and in refusals.
    pub id: &'static str,
    /// Which files it covers.
    pub matches: Match,
    /// The tool on the host that runs or obeys it, and when: what the user is told.
    pub runs: &'static str,
}

/// Directories package managers fill with what their packages ship: project configuration
/// inside them is no project's (an npm package that ships its `.vscode/` or `.husky/`).
pub const DEPENDENCY_TREES: &[&str] = &[
    "node_modules",
    "bower_components",
    "jspm_packages",
    "site-packages",
    "dist-packages",
    "__pypackages__",
];

/// The catalogue. Each id is stable: operators name it in `[policy] allow_host_config`.
pub const CATALOGUE: &[Entry] = &[
    Entry {
        id: "git-config",
        matches: Match::Git(
            "`config`, `config.worktree`, `commondir` and `gitdir` of every repository, linked \
             worktree and submodule (`.git/...`, `.git/worktrees/*/...`, `.git/modules/**/...`, a \
             bare repository's); a `.git` that is a file or a link; what makes a directory that \
             holds a configuration a repository. A rewrite that adds, changes or removes only \
             inert keys (what `git init`, `git clone`, `git remote` and `git config user.*` \
             write) is not host-run",
        ),
        runs: "git reads it on every command, and it names programs git runs (`core.fsmonitor` \
               on `git status`, pagers, editors, filters, aliases, credential helpers)",
    },
    Entry {
        id: "git-hooks",
        matches: Match::Git(
            "`.git/hooks/` of every repository, linked worktree and submodule, and the directory \
             `core.hooksPath` names (however it is named: husky's `.husky/_`, `.githooks/`); \
             sample hooks and an empty hooks directory are not host-run",
        ),
        runs: "git runs the hooks in it on commit, checkout, merge, rebase and push",
    },
    Entry {
        id: "git-include",
        matches: Match::Git(
            "every file a repository's, the user's or the system's git configuration includes \
             (`include.path`, `includeIf.*.path`, whatever the condition), transitively, whether \
             it exists yet or not",
        ),
        runs: "git reads it as configuration on every command, which can name programs to run \
               (`core.fsmonitor` on `git status`)",
    },
    Entry {
        id: "git-program",
        matches: Match::Git(
            "a program git's configuration names by a path (`core.fsmonitor`, `core.pager`, \
             `core.editor`, `core.sshCommand`, filter, diff and merge drivers, aliases that run a \
             shell command, credential helpers, ...), whether it exists yet or not",
        ),
        runs: "git runs it",
    },
    Entry {
        id: "git-attributes",
        matches: Match::Names(&[".git/info/attributes"], Scope::AnyDepth),
        runs: "git applies the filter, diff and merge drivers it assigns",
    },
    Entry {
        id: "git-alternates",
        matches: Match::Names(
            &[
                ".git/objects/info/alternates",
                ".git/objects/info/http-alternates",
            ],
            Scope::AnyDepth,
        ),
        runs: "git reads objects from the repositories it names",
    },
    Entry {
        id: "gitmodules",
        matches: Match::Names(&[".gitmodules"], Scope::Project),
        runs: "`git submodule update` fetches and checks out what it names (and an `update = \
               !command` runs a command)",
    },
    Entry {
        id: "lfsconfig",
        matches: Match::Names(&[".lfsconfig"], Scope::Project),
        runs: "git-lfs reads it on checkout, fetch and push (its custom transfer agents are \
               programs it runs)",
    },
    Entry {
        id: "husky",
        matches: Match::Names(&[".husky/"], Scope::Project),
        runs: "git runs husky's hooks (`core.hooksPath = .husky/_` runs `.husky/<hook>`) on \
               commit and push",
    },
    Entry {
        id: "pre-commit",
        matches: Match::Names(
            &[".pre-commit-config.yaml", ".pre-commit-config.yml"],
            Scope::Project,
        ),
        runs: "pre-commit's git hook runs the hooks it names on every commit",
    },
    Entry {
        id: "lefthook",
        matches: Match::Names(
            &[
                "lefthook.yml",
                "lefthook.yaml",
                "lefthook.toml",
                "lefthook.json",
                ".lefthook.yml",
                ".lefthook.yaml",
                ".lefthook.toml",
                ".lefthook.json",
                "lefthook-local.yml",
                "lefthook-local.yaml",
                ".lefthook-local.yml",
                ".lefthook-local.yaml",
                ".lefthook/",
            ],
            Scope::Project,
        ),
        runs: "lefthook's git hooks run the commands it names",
    },
    Entry {
        id: "overcommit",
        matches: Match::Names(&[".overcommit.yml"], Scope::Project),
        runs: "overcommit's git hooks run the checks it names",
    },
    Entry {
        id: "devcontainer",
        matches: Match::Names(&[".devcontainer/", ".devcontainer.json"], Scope::Project),
        runs: "the editor runs its `initializeCommand` on the host before the container starts",
    },
    Entry {
        id: "vscode",
        matches: Match::Names(&[".vscode/", "*.code-workspace"], Scope::Project),
        runs: "VS Code runs its tasks (on opening the folder too), its launch configurations and \
               the programs its settings name",
    },
    Entry {
        id: "idea",
        matches: Match::Names(&[".idea/"], Scope::Project),
        runs: "JetBrains IDEs run its run configurations, startup tasks and the tools it names",
    },
    Entry {
        id: "zed",
        matches: Match::Names(&[".zed/"], Scope::Project),
        runs: "Zed runs its tasks and the language servers and formatters its settings name",
    },
    Entry {
        id: "helix",
        matches: Match::Names(&[".helix/"], Scope::Project),
        runs: "Helix starts the language servers its `languages.toml` names",
    },
    Entry {
        id: "neovim",
        matches: Match::Names(
            &[".nvim.lua", ".nvimrc", ".exrc", ".lazy.lua"],
            Scope::AnyDepth,
        ),
        runs: "Neovim (with `exrc`) and lazy.nvim run it when started in that directory",
    },
    Entry {
        id: "emacs",
        matches: Match::Names(&[".dir-locals.el", ".dir-locals-2.el"], Scope::AnyDepth),
        runs: "Emacs evaluates its `eval` variables when a file below it is visited",
    },
    Entry {
        id: "direnv",
        matches: Match::Names(&[".envrc"], Scope::AnyDepth),
        runs: "direnv runs it when a shell enters the directory",
    },
    Entry {
        id: "mise",
        matches: Match::Names(
            &[
                "mise.toml",
                ".mise.toml",
                "mise.local.toml",
                ".mise.local.toml",
                "mise.*.toml",
                ".mise.*.toml",
                ".mise/",
                "mise/config.toml",
                ".config/mise.toml",
                ".config/mise/",
            ],
            Scope::AnyDepth,
        ),
        runs: "mise runs its hooks and tasks and sources the scripts its `[env]` names when a \
               shell enters the directory",
    },
    Entry {
        id: "mcp",
        matches: Match::Names(&[".mcp.json"], Scope::Project),
        runs: "agents start the MCP servers it names",
    },
    Entry {
        id: "claude",
        matches: Match::Names(&[".claude/"], Scope::Project),
        runs: "Claude Code runs the hooks and starts the MCP servers its settings name",
    },
    Entry {
        id: "codex",
        matches: Match::Names(&[".codex/"], Scope::Project),
        runs: "Codex starts the MCP servers and runs the notify command its configuration names",
    },
    Entry {
        id: "cursor",
        matches: Match::Names(&[".cursor/"], Scope::Project),
        runs: "Cursor starts the MCP servers and runs the hooks it names",
    },
    Entry {
        id: "gemini",
        matches: Match::Names(&[".gemini/"], Scope::Project),
        runs: "Gemini CLI starts the MCP servers and runs the tool-discovery commands its \
               settings name",
    },
    Entry {
        id: "opencode",
        matches: Match::Names(
            &["opencode.json", "opencode.jsonc", ".opencode/"],
            Scope::Project,
        ),
        runs: "opencode starts the MCP servers and runs the commands it names",
    },
    Entry {
        id: "aider",
        matches: Match::Names(&[".aider.conf.yml", ".aider.conf.yaml"], Scope::Project),
        runs: "aider runs the lint and test commands it names",
    },
    Entry {
        id: "amazonq",
        matches: Match::Names(&[".amazonq/"], Scope::Project),
        runs: "Amazon Q starts the MCP servers it names",
    },
    Entry {
        id: "continue",
        matches: Match::Names(&[".continue/"], Scope::Project),
        runs: "Continue starts the MCP servers it names",
    },
    Entry {
        id: "kiro",
        matches: Match::Names(&[".kiro/"], Scope::Project),
        runs: "Kiro runs its agent hooks and starts the MCP servers it names",
    },
    Entry {
        id: "roo",
        matches: Match::Names(&[".roo/"], Scope::Project),
        runs: "Roo Code starts the MCP servers it names",
    },
];

/// The entry with id `id`.
pub fn entry(id: &str) -> Option<&'static Entry> {
    CATALOGUE.iter().find(|e| e.id == id)
}

/// Checks the operator's `[policy] allow_host_config`: every name must be a catalogue entry.
/// Attack stopped: a typo (`vs-code`) that would leave the operator believing an entry is
/// allowed, or worse, believing one is still asked about.
pub fn check_allowed(names: &[String]) -> Result<(), String> {
    for name in names {
        if entry(name).is_none() {
            let known: Vec<&str> = CATALOGUE.iter().map(|e| e.id).collect();
            return Err(format!(
                "`{name}` in [policy] allow_host_config is not an entry of spear's host-run \
                 configuration; the entries are: {}",
                known.join(", ")
            ));
        }
    }
    Ok(())
}

/// One name pattern of the catalogue, split into its components once.
struct Compiled {
    entry: &'static Entry,
    scope: Scope,
    parts: Vec<&'static str>,
}

/// Every name pattern, compiled at first use: the judge asks about each of a command's changes
/// (hundreds of thousands for a build), so a question costs no allocation per pattern.
fn compiled() -> &'static [Compiled] {
    static COMPILED: std::sync::OnceLock<Vec<Compiled>> = std::sync::OnceLock::new();
    COMPILED.get_or_init(|| {
        let mut out = Vec::new();
        for entry in CATALOGUE {
            if let Match::Names(names, scope) = entry.matches {
                for name in names {
                    out.push(Compiled {
                        entry,
                        scope,
                        parts: name.split('/').filter(|p| !p.is_empty()).collect(),
                    });
                }
            }
        }
        out
    })
}

/// The entry by name that `rel` (a path relative to its root) is, lies in, or (unless `dir`, a
/// directory being made) would replace as a parent (`mv crafted .git` replaces
/// `.git/info/attributes`). `None` when no name entry covers it.
pub fn by_name(rel: &Path, dir: bool) -> Option<&'static Entry> {
    let parts: Vec<&[u8]> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.as_encoded_bytes()),
            _ => None,
        })
        .collect();
    // Every pattern's first component is a dot name or one of a few others
    // (`might_start_a_pattern`): a path with none of them is no entry's, and most paths a
    // build writes are decided here, without trying each pattern.
    if !parts.iter().any(|p| might_start_a_pattern(p)) {
        return None;
    }
    compiled()
        .iter()
        .find(|c| matches_name(&c.parts, &parts, c.scope, dir))
        .map(|c| c.entry)
}

/// Whether a path component may be the first component of a name pattern: it starts with a dot,
/// or with `lefthook`, `mise` or `opencode`, or ends with `.code-workspace` (ASCII case ignored).
/// A test holds every pattern of the catalogue to this.
fn might_start_a_pattern(part: &[u8]) -> bool {
    let lower = |s: &[u8]| s.to_ascii_lowercase();
    part.first() == Some(&b'.')
        || ["lefthook", "mise", "opencode"]
            .iter()
            .any(|p| part.len() >= p.len() && lower(&part[..p.len()]) == p.as_bytes())
        || (part.len() >= 15 && lower(&part[part.len() - 15..]) == b".code-workspace")
}

/// Whether the pattern's components `pattern` cover `parts` (see [`Match::Names`]).
fn matches_name(pattern: &[&str], parts: &[&[u8]], scope: Scope, dir: bool) -> bool {
    let n = pattern.len();
    if n == 0 {
        return false;
    }
    let outside_dependencies = |start: usize| {
        scope == Scope::AnyDepth
            || !parts[..start].iter().any(|p| {
                DEPENDENCY_TREES
                    .iter()
                    .any(|d| p.eq_ignore_ascii_case(d.as_bytes()))
            })
    };
    // The entry itself, or anything in it.
    let within = (0..parts.len().saturating_sub(n - 1)).any(|start| {
        parts[start..start + n]
            .iter()
            .zip(pattern)
            .all(|(part, pat)| component_matches(pat, part))
            && outside_dependencies(start)
    });
    // A parent of the entry, replaced whole.
    let parent = !dir
        && (1..n).any(|k| {
            parts.len() >= k && {
                let start = parts.len() - k;
                parts[start..]
                    .iter()
                    .zip(pattern)
                    .all(|(part, pat)| component_matches(pat, part))
                    && outside_dependencies(start)
            }
        });
    within || parent
}

/// Whether one path component matches one pattern component (ASCII case ignored; at most one
/// `*`, standing for any run of bytes).
fn component_matches(pattern: &str, part: &[u8]) -> bool {
    let pattern = pattern.as_bytes();
    match pattern.iter().position(|b| *b == b'*') {
        None => part.eq_ignore_ascii_case(pattern),
        Some(star) => {
            let (prefix, suffix) = (&pattern[..star], &pattern[star + 1..]);
            part.len() >= prefix.len() + suffix.len()
                && part[..prefix.len()].eq_ignore_ascii_case(prefix)
                && part[part.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(rel: &str) -> Option<&'static str> {
        by_name(Path::new(rel), false).map(|e| e.id)
    }

    /// Row by row: each name entry's files are found at the top, in a subdirectory, and (for
    /// trees) below; a sibling that only looks alike is not.
    #[test]
    fn every_name_row() {
        for (rel, expected) in [
            (".git/info/attributes", Some("git-attributes")),
            ("sub/.git/info/attributes", Some("git-attributes")),
            (".git/info/exclude", None),
            (".git/info", Some("git-attributes")),
            (".git", Some("git-attributes")),
            (".git/objects/info/alternates", Some("git-alternates")),
            (".git/objects/info/http-alternates", Some("git-alternates")),
            (".git/objects/info/packs", None),
            (".git/objects/ab/cdef", None),
            (".gitmodules", Some("gitmodules")),
            ("lib/.gitmodules", Some("gitmodules")),
            (".lfsconfig", Some("lfsconfig")),
            (".husky/pre-commit", Some("husky")),
            (".husky/_/h", Some("husky")),
            (".husky", Some("husky")),
            ("husky/pre-commit", None),
            (".pre-commit-config.yaml", Some("pre-commit")),
            (".pre-commit-config.yml", Some("pre-commit")),
            (".pre-commit-hooks.yaml", None),
            ("lefthook.yml", Some("lefthook")),
            (".lefthook.toml", Some("lefthook")),
            ("lefthook-local.yml", Some("lefthook")),
            (".lefthook/pre-commit/check.sh", Some("lefthook")),
            (".overcommit.yml", Some("overcommit")),
            (".devcontainer/devcontainer.json", Some("devcontainer")),
            (".devcontainer.json", Some("devcontainer")),
            ("devcontainer.json", None),
            (".vscode/tasks.json", Some("vscode")),
            ("project.code-workspace", Some("vscode")),
            ("code-workspace", None),
            (".idea/workspace.xml", Some("idea")),
            (".zed/tasks.json", Some("zed")),
            (".helix/languages.toml", Some("helix")),
            (".nvim.lua", Some("neovim")),
            (".exrc", Some("neovim")),
            (".lazy.lua", Some("neovim")),
            ("init.lua", None),
            (".dir-locals.el", Some("emacs")),
            (".envrc", Some("direnv")),
            ("a/b/.envrc", Some("direnv")),
            ("envrc", None),
            (".env", None),
            ("mise.toml", Some("mise")),
            (".mise.local.toml", Some("mise")),
            ("mise.production.toml", Some("mise")),
            (".mise/tasks/build", Some("mise")),
            ("mise/config.toml", Some("mise")),
            (".config/mise/config.toml", Some("mise")),
            ("mise.txt", None),
            (".mcp.json", Some("mcp")),
            ("mcp.json", None),
            (".claude/settings.json", Some("claude")),
            (".codex/config.toml", Some("codex")),
            (".cursor/mcp.json", Some("cursor")),
            (".gemini/settings.json", Some("gemini")),
            ("opencode.json", Some("opencode")),
            ("opencode.jsonc", Some("opencode")),
            (".opencode/agent/x.md", Some("opencode")),
            (".aider.conf.yml", Some("aider")),
            (".amazonq/mcp.json", Some("amazonq")),
            (".continue/config.yaml", Some("continue")),
            (".kiro/hooks/x.kiro.hook", Some("kiro")),
            (".roo/mcp.json", Some("roo")),
            ("src/main.rs", None),
            ("README.md", None),
            (".gitignore", None),
            (".gitattributes", None),
            (".spear/policy.toml", None),
        ] {
            assert_eq!(id(rel), expected, "{rel}");
        }
    }

    #[test]
    fn case_and_patterns() {
        assert_eq!(id(".VSCode/tasks.json"), Some("vscode"));
        assert_eq!(id(".ENVRC"), Some("direnv"));
        assert_eq!(id("Mise.Staging.TOML"), Some("mise"));
        assert!(component_matches("mise.*.toml", b"mise..toml"));
        assert!(!component_matches("mise.*.toml", b"mise.toml"));
        assert!(!component_matches("a*b", b"ab_"));
    }

    /// Project configuration shipped inside a dependency tree is no project's; what runs where a
    /// shell enters (direnv) is host-run everywhere.
    #[test]
    fn dependency_trees() {
        assert_eq!(id("node_modules/pkg/.vscode/settings.json"), None);
        assert_eq!(id("node_modules/pkg/.husky/pre-commit"), None);
        assert_eq!(
            id(".venv/lib/python3.12/site-packages/x/.pre-commit-config.yaml"),
            None
        );
        assert_eq!(id("node_modules/pkg/.envrc"), Some("direnv"));
        // The same entries outside a dependency tree.
        assert_eq!(id("packages/app/.vscode/settings.json"), Some("vscode"));
        assert_eq!(id("node_modules_notes/.husky/pre-commit"), Some("husky"));
    }

    /// A directory that would replace the entry whole counts; one being made does not, since
    /// what is put in it is judged on its own (`git init` makes `.git`).
    #[test]
    fn parents() {
        assert_eq!(
            by_name(Path::new(".git/objects/info"), false).map(|e| e.id),
            Some("git-alternates")
        );
        assert_eq!(by_name(Path::new(".git/objects/info"), true), None);
        assert_eq!(
            by_name(Path::new(".vscode"), true).map(|e| e.id),
            Some("vscode")
        );
    }

    /// The quick refusal of `by_name` is sound: every pattern starts with a component it lets
    /// through.
    #[test]
    fn every_pattern_starts_with_what_the_quick_check_lets_through() {
        for c in compiled() {
            let first = c.parts[0].replace('*', "x");
            assert!(
                might_start_a_pattern(first.as_bytes()),
                "{}: {:?}",
                c.entry.id,
                c.parts
            );
        }
        assert!(!might_start_a_pattern(b"src"));
        assert!(might_start_a_pattern(b"MISE.toml"));
        assert!(might_start_a_pattern(b"a.Code-Workspace"));
    }

    #[test]
    fn ids_are_unique_and_checked() {
        for (i, e) in CATALOGUE.iter().enumerate() {
            assert!(
                CATALOGUE[..i].iter().all(|o| o.id != e.id),
                "{} twice",
                e.id
            );
        }
        assert!(check_allowed(&["vscode".into(), "git-hooks".into()]).is_ok());
        let err = check_allowed(&["vs-code".into()]).unwrap_err();
        assert!(err.contains("vs-code") && err.contains("vscode"), "{err}");
    }

    /// The table in `docs/host-run-config.md` lists every entry, with the same names.
    #[test]
    fn the_document_lists_every_entry() {
        let doc = include_str!("../../../docs/host-run-config.md");
        for e in CATALOGUE {
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", e.id)))
                .unwrap_or_else(|| panic!("docs/host-run-config.md has no row for `{}`", e.id));
            if let Match::Names(names, _) = e.matches {
                for name in names {
                    assert!(row.contains(&format!("`{name}`")), "{} lacks {name}", e.id);
                }
            }
        }
    }
}
