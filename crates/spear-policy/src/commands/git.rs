//! git: which subcommands read, which change the repository, which reach the network, and the
//! options that make git run other programs.
//!
//! Attacks stopped: `git -c core.pager=...`, `--config-env`, `-c diff.x.textconv=...`, `--ext-diff`,
//! `--upload-pack`, `rebase -x`, `grep -O`: each names a program git runs. A configuration write
//! of a key that can name such programs for every later git command (on the host too) is refused
//! however it is spelled (`git config`, `--file .git/config`, `--global`); one of a key that runs
//! nothing (`user.name`) is an ordinary write. `git -c` of such a key holds for one invocation
//! inside the sandbox and is harmless. Pushing changes a remote, which no mode grants, unless the
//! remote is a repository on this machine: then it is a write of that path ([`remote`]), and a
//! fetch or pull from one is a read of it, without the network.

mod remote;

use spear_core::{Capability, Refusal};

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{Item, OptionSpec, has, operands, scan, values};
use crate::commands::{Call, Programs, UnknownOptions};
use crate::shell::word::Arg;

/// Subcommands that only read the repository.
const READ_ONLY: &[&str] = &[
    "status",
    "log",
    "show",
    "diff",
    "blame",
    "annotate",
    "grep",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "describe",
    "shortlog",
    "cat-file",
    "rev-list",
    "show-ref",
    "for-each-ref",
    "merge-base",
    "name-rev",
    "whatchanged",
    "count-objects",
    "fsck",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "check-mailmap",
    "var",
    "help",
    "version",
    "diff-tree",
    "diff-index",
    "diff-files",
    "cherry",
    "range-diff",
    "show-branch",
    "verify-commit",
    "verify-tag",
    "verify-pack",
    "get-tar-commit-id",
    "column",
    "request-pull",
    "show-index",
    "merge-tree",
];

/// Subcommands that change the working tree or the repository.
const MUTATING: &[&str] = &[
    "add",
    "commit",
    "checkout",
    "switch",
    "restore",
    "reset",
    "rm",
    "mv",
    "merge",
    "rebase",
    "cherry-pick",
    "revert",
    "apply",
    "am",
    "init",
    "clean",
    "gc",
    "prune",
    "repack",
    "sparse-checkout",
    "update-index",
    "update-ref",
    "commit-tree",
    "mktree",
    "read-tree",
    "checkout-index",
    "merge-file",
    "format-patch",
    "bisect",
    "replace",
    "fast-import",
    "maintenance",
    "pack-refs",
    "rerere",
    "stage",
    "unpack-objects",
    "prune-packed",
    "symbolic-ref",
    "mktag",
    "write-tree",
    "commit-graph",
    "multi-pack-index",
    "bundle",
    "archive",
    "hash-object",
];

/// Subcommands that fetch from the network (and change the repository). `fetch` and `pull` are
/// judged by [`remote::transfer`] first: from a repository on this machine they only read it.
const FETCHING: &[&str] = &["clone", "fetch", "pull", "ls-remote", "fetch-pack"];

/// Subcommands that change a remote. `push` is judged by [`remote::transfer`] first: to a
/// repository on this machine it is a write of that path.
const PUSHING: &[&str] = &[
    "push",
    "send-pack",
    "send-email",
    "svn",
    "p4",
    "cvsexportcommit",
    "http-push",
];

/// Subcommands that run other programs by design.
const RUNS_PROGRAMS: &[&str] = &[
    "difftool",
    "mergetool",
    "filter-branch",
    "filter-repo",
    "instaweb",
    "web--browse",
    "daemon",
    "credential",
    "credential-store",
    "credential-cache",
    "upload-pack",
    "receive-pack",
    "shell",
    "remote-ext",
    "gui",
    "citool",
    "gitk",
    "lfs",
];

/// Subcommand options that run a program.
const EXEC_OPTIONS: &[&str] = &[
    "--ext-diff",
    "--textconv",
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--filters",
    "--open-files-in-pager",
    "--tool",
    "--extcmd",
    "--template",
    "--config",
    "--run",
    "--exec-path",
];

/// git's global options without a value, which run nothing (`-c`, `-C`, `--git-dir`... are
/// handled one by one).
const GLOBAL_FLAGS: &[&str] = &[
    "-P",
    "--no-pager",
    "--bare",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-optional-locks",
    "--no-advice",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--html-path",
    "--man-path",
    "--info-path",
    "--exec-path",
];

/// The options of the read-only subcommands (log, diff, show, status, grep, blame, ls-files...)
/// that only choose what is shown (with or without a value): any other one is `SHELL_COMPLEX`, since a subcommand option can
/// run a program (`--ext-diff`, `-O`) or write a file (`--output`). `--no-X` forms only turn
/// things off and are all accepted.
const READ_LONG: &[&str] = &[
    "abbrev",
    "abbrev-commit",
    "after",
    "all",
    "all-match",
    "ancestry-path",
    "author",
    "author-date-order",
    "basic-regexp",
    "before",
    "binary",
    "boundary",
    "branch",
    "branches",
    "break-rewrites",
    "cached",
    "cc",
    "check",
    "cherry",
    "cherry-mark",
    "cherry-pick",
    "children",
    "color",
    "color-moved",
    "color-words",
    "column",
    "combined-all-paths",
    "committer",
    "compact-summary",
    "contains",
    "count",
    "cumulative",
    "date",
    "date-order",
    "decorate",
    "decorate-refs",
    "decorate-refs-exclude",
    "default",
    "deleted",
    "dense",
    "dereference",
    "diff-algorithm",
    "diff-filter",
    "diff-merges",
    "directory",
    "dirstat",
    "dirstat-by-file",
    "dst-prefix",
    "email",
    "empty",
    "error-unmatch",
    "exclude",
    "exclude-standard",
    "exclude-per-directory",
    "exists",
    "expand-tabs",
    "extended-regexp",
    "find-copies",
    "find-copies-harder",
    "find-renames",
    "first-parent",
    "fixed-strings",
    "follow",
    "format",
    "full-diff",
    "full-history",
    "full-index",
    "full-name",
    "full-tree",
    "function-context",
    "git-dir",
    "git-common-dir",
    "glob",
    "graph",
    "grep",
    "grep-reflog",
    "heads",
    "histogram",
    "ignore-all-space",
    "ignore-blank-lines",
    "ignore-case",
    "ignore-cr-at-eol",
    "ignore-matching-lines",
    "ignore-space-at-eol",
    "ignore-space-change",
    "ignore-submodules",
    "ignored",
    "incremental",
    "indent-heuristic",
    "inter-hunk-context",
    "invert-grep",
    "is-ancestor",
    "is-bare-repository",
    "is-inside-git-dir",
    "is-inside-work-tree",
    "is-shallow-repository",
    "killed",
    "left-only",
    "left-right",
    "line-number",
    "line-porcelain",
    "local",
    "log-size",
    "long",
    "mailmap",
    "max-count",
    "max-depth",
    "max-parents",
    "merge",
    "merged",
    "merges",
    "min-parents",
    "minimal",
    "modified",
    "name-only",
    "name-status",
    "null",
    "numbered",
    "numstat",
    "object-only",
    "oneline",
    "only-matching",
    "others",
    "parents",
    "patch",
    "patch-with-raw",
    "patch-with-stat",
    "patience",
    "perl-regexp",
    "pickaxe-all",
    "pickaxe-regex",
    "points-at",
    "porcelain",
    "pretty",
    "quiet",
    "raw",
    "recurse-submodules",
    "reflog",
    "refs",
    "relative",
    "relative-date",
    "remotes",
    "remove-empty",
    "reverse",
    "right-only",
    "root",
    "shortstat",
    "show",
    "show-cdup",
    "show-current",
    "show-email",
    "show-linear-break",
    "show-name",
    "show-notes",
    "show-number",
    "show-prefix",
    "show-pulls",
    "show-signature",
    "show-stash",
    "show-stats",
    "show-superproject-working-tree",
    "show-toplevel",
    "simplify-by-decoration",
    "simplify-merges",
    "since",
    "since-as-filter",
    "single-worktree",
    "sort",
    "source",
    "sparse",
    "src-prefix",
    "stage",
    "staged",
    "stat",
    "stat-count",
    "stat-graph-width",
    "stat-name-width",
    "stat-width",
    "stdin",
    "submodule",
    "summary",
    "symbolic",
    "symbolic-full-name",
    "tags",
    "text",
    "textconv-off",
    "topo-order",
    "tree",
    "unified",
    "until",
    "untracked-files",
    "verbose",
    "verify",
    "walk-reflogs",
    "word-diff",
    "word-diff-regex",
    "with-tree",
    "ws-error-highlight",
    "z",
    "ignore-other",
    "full",
    "strict",
    "unreachable",
    "dangling",
    "connectivity-only",
    "lost-found-off",
    "no-reflogs",
    "progress",
    "name",
    "refs-only",
    "annotate-stdin",
    "undefined",
    "always",
    "candidates",
    "match",
    "first-parent-only",
    "exact-match",
    "dirty",
    "broken",
    "batch",
    "batch-check",
    "batch-all-objects",
    "buffer",
    "unordered",
    "allow-unknown-type",
    "follow-symlinks",
    "mode",
    "width",
    "indent",
    "padding",
    "nl",
    "raw-mode",
    "short",
    "ahead-behind",
    "renames",
    "find-object",
    "anchored",
    "rotate-to",
    "skip-to",
    "skip",
    "and",
    "or",
    "not",
    "all-match-off",
    "threads",
    "untracked",
    "no-index-off",
    "heading",
    "break",
    "files-with-matches",
    "files-without-match",
    "name-only-off",
    "function-context",
    "max-count",
    "word-regexp",
    "invert-match",
    "count",
    "only-matching",
    "column-off",
    "show-function",
    "recursive",
    "color-by-age",
    "line-porcelain",
    "incremental",
    "root",
    "show-stats",
    "score-debug",
    "ignore-rev",
    "ignore-revs-file",
    "deduplicate",
    "eol",
    "format-patch",
    "exclude-hidden",
    "bisect",
    "sparse-index",
    "abbrev-ref",
    "verify-only",
    "sq",
    "sq-quote",
    "local-env-vars",
    "path-format",
    "shared-index-path",
    "absolute-git-dir",
    "resolve-git-dir",
    "git-path",
    "show-object-format",
    "show-ref-format",
    "since-cutoff",
    "object-format",
    "keep-dashdash",
    "stop-at-non-option",
    "parseopt",
    "revs-only",
    "no-revs",
    "flags",
    "no-flags",
    "remotes-only",
    "head",
    "hash",
    "contents-off",
    "normalize",
    "current",
    "sha1-name",
    "more",
    "topics",
    "independent",
    "merge-base",
    "allow-onelevel",
    "refspec-pattern",
];

/// The short options of the read-only subcommands: letters and counts (`-5`) that choose what is
/// shown (`grep -O`, which runs a pager, is judged on its own).
const READ_SHORT: &str = "0123456789abcdefghiklmnopqrstuvwxzABCDEFGHIKLMNOPRSTUVWXZ";

/// How subcommand options are read: git accepts unique prefixes of long options, and a value
/// attached with `=` or as the next argument.
const SUBCOMMAND_OPTIONS: OptionSpec = OptionSpec::gnu(
    "",
    &[
        "output",
        "upload-pack",
        "receive-pack",
        "exec",
        "template",
        "config",
        "tool",
        "extcmd",
        "remote",
        "contents",
        "mailmap-file",
    ],
    &[
        "no-index",
        "write-tree",
        "trivial-merge",
        "lost-found",
        "ext-diff",
        "textconv",
        "filters",
        "open-files-in-pager",
        "run",
    ],
);

/// The options of `git archive`, which has short options with values of its own (`-o FILE`).
const ARCHIVE_OPTIONS: OptionSpec = OptionSpec::gnu(
    "o",
    &[
        "output",
        "remote",
        "exec",
        "prefix",
        "format",
        "add-file",
        "add-virtual-file",
        "mtime",
    ],
    &[],
);

/// git: an option spear does not know could be one that runs a program or writes a file.
pub(crate) const PROGRAMS: &[Programs] = &[Programs::complex(&["git"], analyse)];

/// Where git's global options leave the command line.
struct Globals {
    /// The index of the subcommand in the arguments.
    sub: usize,
    /// The directory git runs in (`-C`).
    dir: Cwd,
    /// The repository named by `--git-dir` or `--work-tree`.
    git_dir: Option<Arg>,
    /// Whether `-c` or `--config-env` set configuration for this invocation that could name a
    /// remote's URL or rewrite URLs, which [`remote`] does not see.
    one_shot: bool,
}

/// Reads git's global options, the ones before the subcommand. `None` when nothing is left to
/// analyse: an argument known only at run time (judged complex here), `--version`/`--help`, or a
/// `-C` without a directory.
fn global_options(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &Cwd) -> Option<Globals> {
    let args = c.args;
    let mut dir = cwd.clone();
    let mut i = 0;
    let mut git_dir: Option<Arg> = None;
    let mut one_shot = false;
    while let Some(arg) = args.get(i) {
        let Some(t) = arg.lit() else {
            a.complex(format!("`git {}` is known only at run time", arg.display()));
            return None;
        };
        if !t.starts_with('-') {
            break;
        }
        i += 1;
        let (name, inline) = match t.split_once('=') {
            Some((key, val)) if key.starts_with("--") => (key, Some(val)),
            _ => (t, None),
        };
        let value = |i: &mut usize| -> Option<Arg> {
            inline.map(|val| Arg::Lit(val.to_owned())).or_else(|| {
                *i += 1;
                args.get(*i - 1).cloned()
            })
        };
        match name {
            "-c" | "--config-env" => {
                let setting = value(&mut i);
                one_shot_config(a, name, setting.as_ref());
                one_shot |= name == "--config-env" || !remote::inert_for_remotes(setting.as_ref());
            }
            "--exec-path" if inline.is_some() => {
                a.complex("`git --exec-path=` runs git commands from another directory");
            }
            "-p" | "--paginate" => a.complex("`git -p` runs the configured pager"),
            "-C" => match value(&mut i) {
                Some(target) => {
                    a.read_path(&target, &dir);
                    let mut moved = dir.clone();
                    crate::commands::builtins::change_dir(a, "cd", &[target], &mut moved);
                    dir = moved;
                }
                None => return None,
            },
            "--git-dir" | "--work-tree" => {
                if let Some(path) = value(&mut i) {
                    a.read_path(&path, &dir);
                    git_dir = Some(path);
                }
            }
            "--namespace" | "--super-prefix" | "--list-cmds" | "--attr-source" => {
                let _ = value(&mut i);
            }
            "--version" | "--help" | "-h" | "-v" => return None,
            _ if GLOBAL_FLAGS.contains(&name) => {}
            _ => c.unknown_option(a, t),
        }
    }
    Some(Globals {
        sub: i,
        dir,
        git_dir,
        one_shot,
    })
}

/// Analyses a git command line.
pub(crate) fn analyse(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let complex_before = a.found.complex.is_some();
    let Some(Globals {
        sub: i,
        dir,
        git_dir,
        one_shot,
    }) = global_options(a, c, cwd)
    else {
        return;
    };
    let Some(sub_arg) = args.get(i) else { return };
    let Some(sub) = sub_arg.lit() else {
        a.complex("the git subcommand is known only at run time");
        return;
    };
    let rest = &args[i + 1..];
    let items = scan(rest, &SUBCOMMAND_OPTIONS);
    for item in &items {
        match item {
            Item::Opt { name, .. } if EXEC_OPTIONS.contains(&name.as_str()) => {
                a.complex(format!("`git {sub} {name}` runs another program"));
            }
            Item::Unknown(arg) => a.complex(format!(
                "`{}` is known only at run time and could be a git option that runs a program",
                arg.display()
            )),
            _ => {}
        }
    }
    if READ_ONLY.contains(&sub) && c.unknown_options == UnknownOptions::Complex {
        read_options(a, sub, &items);
    }
    let repo = git_dir.unwrap_or(Arg::Lit(".".into()));
    for out in values(&items, &["--output"]) {
        a.write_path(out, &dir, &format!("git {sub}"));
    }
    let before = remote::Before {
        one_shot,
        complex: complex_before,
    };
    subcommand(a, sub, rest, &items, &dir, &repo, before);
}

/// What the subcommand `sub` does, one arm per subcommand (or family): the capabilities it needs,
/// the paths it reads and writes, and whether it runs other programs.
fn subcommand(
    a: &mut Analysis<'_>,
    sub: &str,
    rest: &[Arg],
    items: &[Item],
    dir: &Cwd,
    repo: &Arg,
    before: remote::Before,
) {
    if READ_ONLY.contains(&sub) {
        repository_programs(a, sub, dir, repo);
    }
    match sub {
        // To a repository on this machine a push is a write of it and a fetch a read.
        "push" | "fetch" | "pull" => remote::transfer(a, sub, rest, dir, repo, before),
        _ if PUSHING.contains(&sub) => {
            a.needs(Capability::RemoteWrite);
            a.refuse(Refusal::no_mode_grants(
                Capability::RemoteWrite,
                format!("git {sub}"),
            ));
        }
        _ if RUNS_PROGRAMS.contains(&sub) => {
            a.complex(format!("`git {sub}` runs other programs"));
            a.mutates(format!("git {sub} may change the repository"));
        }
        "config" => config(a, rest, dir),
        "branch" | "tag" | "stash" | "worktree" | "notes" | "reflog" | "remote" | "submodule" => {
            listing_or_changing(a, sub, rest, dir, repo);
        }
        "rebase" if has(items, &["-x"]) => {
            a.complex("`git rebase -x` runs a command after each commit");
            a.write_path(repo, dir, "git rebase");
        }
        "grep" if has(items, &["-O"]) => a.complex("`git grep -O` runs a pager"),
        "cat-file" if has(items, &["--filters", "--textconv"]) => {}
        "archive" => {
            // archive has short options with values of its own: -o FILE.
            let items = scan(rest, &ARCHIVE_OPTIONS);
            if values(&items, &["--remote"]).next().is_some() {
                a.needs(Capability::Network);
            }
            for out in values(&items, &["-o", "--output"]) {
                a.write_path(out, dir, "git archive");
            }
            for added in values(&items, &["--add-file"]) {
                a.read_path(added, dir);
            }
        }
        "clone" => clone(a, rest, dir),
        // Since git 2.38 merge-tree writes the merged trees into the object store unless given
        // the three trees of the old `--trivial-merge` form.
        "merge-tree"
            if !has(items, &["--trivial-merge"])
                && (has(items, &["--write-tree"]) || operands(items).len() < 3) =>
        {
            a.write_path(repo, dir, "git merge-tree");
        }
        "fsck" if has(items, &["--lost-found"]) => {
            a.write_path(repo, dir, "git fsck --lost-found");
        }
        // `help -w` opens the page in the web browser git is configured with.
        "help" if rest.iter().any(|x| matches!(x.lit(), Some("-w" | "--web"))) => {
            a.complex("`git help --web` runs a web browser");
        }
        // `request-pull` asks the remote it names for its branches.
        "request-pull" => a.needs(Capability::Network),
        // Reads files named outside the repository: `blame --contents FILE`, `check-mailmap
        // --mailmap-file FILE`, `diff --no-index A B`.
        "blame" | "annotate" | "check-mailmap" | "diff" => {
            for f in values(items, &["--contents", "--mailmap-file"]) {
                a.read_path(f, dir);
            }
            if sub == "diff" && has(items, &["--no-index"]) {
                for f in operands(items) {
                    a.read_path(&f, dir);
                }
            }
        }
        _ if FETCHING.contains(&sub) => {
            remote_url_check(a, &operands(items));
            a.needs(Capability::Network);
            if sub != "ls-remote" {
                a.write_path(repo, dir, &format!("git {sub}"));
            }
        }
        _ if READ_ONLY.contains(&sub) => {}
        // `git clean -n` only lists what it would remove; `-i` asks and then removes.
        "clean" if has(items, &["-n", "--dry-run"]) && !has(items, &["-i", "--interactive"]) => {}
        _ if MUTATING.contains(&sub) => {
            a.write_path(repo, dir, &format!("git {sub}"));
            if matches!(sub, "rm" | "mv" | "checkout" | "restore") {
                let after_dashdash = rest.iter().skip_while(|x| x.lit() != Some("--")).skip(1);
                for path in after_dashdash {
                    a.write_path(path, dir, &format!("git {sub}"));
                }
            }
        }
        _ => {
            a.complex(format!(
                "`git {sub}` is not a git command spear knows (it may be an alias)"
            ));
        }
    }
}

/// A reading subcommand runs what the repository's own configuration names for it (an external
/// diff, a textconv driver, `core.fsmonitor`): the repository git finds from the working
/// directory, `-C` or `--git-dir`/`--work-tree`
/// ([`crate::commands::workspace_code::git_repository_programs`]).
fn repository_programs(a: &mut Analysis<'_>, sub: &str, dir: &Cwd, repo: &Arg) {
    let mut start = dir.clone();
    if repo.lit() != Some(".") {
        crate::commands::builtins::change_dir(a, "cd", std::slice::from_ref(repo), &mut start);
    }
    a.workspace_code(&format!("git {sub}"), &start, |d| {
        crate::commands::workspace_code::git_repository_programs(d)
    });
}

/// The options of a read-only subcommand: one not in [`READ_LONG`] or [`READ_SHORT`] could run a
/// program or write a file, which the subcommand's own analysis has not seen.
fn read_options(a: &mut Analysis<'_>, sub: &str, items: &[Item]) {
    for item in items {
        let Item::Opt { name, .. } = item else {
            continue;
        };
        let known = match name.strip_prefix("--") {
            Some(long) => long.starts_with("no-") || READ_LONG.contains(&long),
            None => name.chars().nth(1).is_some_and(|c| READ_SHORT.contains(c)),
        } || EXEC_OPTIONS.contains(&name.as_str())
            || SUBCOMMAND_OPTIONS.knows(name);
        if !known {
            crate::commands::unknown_option(a, &format!("git {sub}"), name);
        }
    }
}

/// `git config`: reading is harmless. Writing a key that runs nothing (user.*, branch.*,
/// remote.*.url, core.autocrlf, init.defaultBranch, ... see `INERT_CONFIG_KEYS`) is a write of the
/// configuration file: `.git/config` (or `--file`, `--worktree`) is a workspace write, `--global`
/// the sandbox's private home (nothing of the host). Setting or removing any other key is refused,
/// whichever file it goes to: hooks and `core.hooksPath`, pagers, editors, `core.sshCommand`,
/// filter and diff drivers, aliases, credential helpers, includes make git run code later. The
/// commit-time judge holds the same line on the file itself (`config_change_is_inert`).
fn config(a: &mut Analysis<'_>, rest: &[Arg], dir: &Cwd) {
    let items = scan(
        rest,
        &OptionSpec::gnu("f", &["file", "blob", "type", "default", "comment"], &[]),
    );
    let mut ops: Vec<Arg> = operands(&items);
    // git 2.46's subcommands: `git config get|list|set|unset|rename-section|remove-section|edit`.
    let verb = match ops.first().and_then(Arg::lit) {
        Some(
            v @ ("get" | "list" | "set" | "unset" | "rename-section" | "remove-section" | "edit"),
        ) => {
            let v = v.to_owned();
            ops.remove(0);
            Some(v)
        }
        _ => None,
    };
    let reading = has(
        &items,
        &[
            "--get",
            "--get-all",
            "--get-regexp",
            "--get-urlmatch",
            "--list",
            "-l",
            "--show-origin",
            "--show-scope",
            "--name-only",
            "--get-color",
            "--get-colorbool",
        ],
    ) || matches!(verb.as_deref(), Some("get" | "list"))
        || (verb.is_none()
            && ops.len() == 1
            && !has(
                &items,
                &[
                    "--unset",
                    "--unset-all",
                    "--add",
                    "--replace-all",
                    "--remove-section",
                    "--rename-section",
                    "--edit",
                    "-e",
                ],
            ));
    if reading {
        return;
    }
    if has(&items, &["--edit", "-e"]) || verb.as_deref() == Some("edit") {
        a.complex("`git config --edit` runs an editor");
        return;
    }
    let sections = has(&items, &["--remove-section", "--rename-section"])
        || matches!(verb.as_deref(), Some("rename-section" | "remove-section"));
    let removing = has(&items, &["--unset", "--unset-all"]) || verb.as_deref() == Some("unset");
    // Keys that may run code make the write host-run configuration when it lands in a
    // repository's configuration; anywhere else (the sandbox's own `~/.gitconfig`, a file no
    // configuration includes) the place decides.
    let keys = config_keys(&ops, sections, removing).err();
    if has(&items, &["--global"]) {
        // The sandbox's home is its own tmpfs: git there writes nothing of the host.
        match a.policy.config().sandbox.home.clone() {
            Some(home) if a.home_intact => {
                a.private_write("git config --global", &home.join(".gitconfig"));
            }
            _ => a.complex(
                "`git config --global` writes under a home directory known only at run time",
            ),
        }
        return;
    }
    if has(&items, &["--system"]) {
        a.write_path(
            &Arg::Lit("/etc/gitconfig".into()),
            dir,
            "git config --system",
        );
        return;
    }
    let target = if let Some(file) = values(&items, &["-f", "--file"]).last() {
        file.clone()
    } else if has(&items, &["--worktree"]) {
        Arg::Lit(".git/config.worktree".into())
    } else {
        Arg::Lit(".git/config".into())
    };
    a.write_git_config(&target, dir, keys);
}

/// Judges the keys a `git config` write names (`ops`: the operands after the options): `KEY
/// [VALUE [PATTERN]]`, or a section to rename or remove. `Err` (why, naming the key) for a key
/// or section that is not inert.
fn config_keys(ops: &[Arg], sections: bool, removing: bool) -> Result<(), String> {
    use crate::git_layout::{KeyEffect, key_effect};
    let refuse = |key: &str, runs: bool| {
        if runs {
            format!(
                "git configuration that makes git run a program or read other configuration \
                 later (`{key}`: hooks, pagers, editors, drivers, aliases, credential helpers, \
                 includes)"
            )
        } else {
            format!(
                "git configuration that may make git run a program later (`{key}` is not one of \
                 the keys spear knows to run nothing: user.*, branch.*, remote.*.url, \
                 core.autocrlf, init.defaultBranch, ...)"
            )
        }
    };
    if sections {
        // A section holds any keys: only the ones whose every key is inert may move or go.
        for section in ops.iter().take(2) {
            let Some(name) = section.lit() else {
                return Err(refuse(section.display(), false));
            };
            let head = name.split('.').next().unwrap_or("").to_ascii_lowercase();
            if !matches!(
                head.as_str(),
                "user" | "branch" | "init" | "advice" | "color"
            ) {
                return Err(refuse(name, false));
            }
        }
        return Ok(());
    }
    let Some(key) = ops.first() else {
        return Ok(());
    };
    let Some(key) = key.lit() else {
        return Err(refuse(key.display(), false));
    };
    let value = if removing {
        None
    } else {
        match ops.get(1) {
            Some(v) => match v.lit() {
                Some(text) => Some(text),
                None => return Err(refuse(key, false)),
            },
            None => None,
        }
    };
    match key_effect(key, value) {
        KeyEffect::Inert => Ok(()),
        KeyEffect::RunsCode => Err(refuse(key, true)),
        KeyEffect::Unknown => Err(refuse(key, false)),
    }
}

/// `git -c KEY=VALUE` (`--config-env KEY=VAR`): the setting holds for this one invocation, inside
/// the sandbox. A key that runs nothing is harmless; any other can name a program git runs now.
fn one_shot_config(a: &mut Analysis<'_>, name: &str, setting: Option<&Arg>) {
    use crate::git_layout::{KeyEffect, key_effect};
    let inert = setting.and_then(Arg::lit).is_some_and(|text| {
        let (key, value) = match text.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (text, None),
        };
        // `--config-env` takes the value from a variable: only the key is known, so a URL (which
        // could be `ext::`) is not taken.
        let from_env = name == "--config-env";
        !(from_env && key.to_ascii_lowercase().ends_with("url"))
            && key_effect(key, if from_env { None } else { value }) == KeyEffect::Inert
    });
    if !inert {
        a.complex(format!(
            "`git {name}` sets configuration that can name programs for git to run"
        ));
    }
}

/// branch, tag, stash, worktree, notes, reflog, remote, submodule: listing reads, anything else
/// changes the repository (and `remote update`, `submodule update` fetch).
fn listing_or_changing(a: &mut Analysis<'_>, sub: &str, rest: &[Arg], dir: &Cwd, repo: &Arg) {
    let first = rest.first().and_then(Arg::lit);
    let lists = match sub {
        "branch" | "tag" => {
            let lit = |x: &Arg| x.lit().map(str::to_owned);
            let words: Vec<String> = rest.iter().filter_map(lit).collect();
            let listing_flags: &[&str] = if sub == "branch" {
                &[
                    "-l",
                    "--list",
                    "-a",
                    "--all",
                    "-r",
                    "--remotes",
                    "-v",
                    "-vv",
                    "--verbose",
                    "--show-current",
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                    "--format",
                    "--sort",
                    "--column",
                    "--no-column",
                    "--color",
                    "--no-color",
                    "-i",
                    "--ignore-case",
                ]
            } else {
                &[
                    "-l",
                    "--list",
                    "-n",
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                    "--format",
                    "--sort",
                    "--column",
                    "--no-column",
                    "--color",
                    "-i",
                    "--ignore-case",
                    "-v",
                    "--verify",
                ]
            };
            let names = words.iter().filter(|w| !w.starts_with('-')).count();
            let flag_listing = words.iter().any(|w| {
                listing_flags
                    .iter()
                    .any(|f| w == f || w.starts_with(&format!("{f}=")))
            });
            let other_flags = words.iter().any(|w| {
                w.starts_with('-')
                    && !listing_flags
                        .iter()
                        .any(|f| w == f || w.starts_with(&format!("{f}=")))
            });
            rest.len() == words.len() && !other_flags && (names == 0 || flag_listing)
        }
        "stash" => matches!(first, Some("list" | "show")),
        "worktree" => matches!(first, Some("list")),
        "notes" => matches!(first, None | Some("list" | "show")),
        "reflog" => {
            matches!(first, None | Some("show" | "exists"))
                || first.is_some_and(|f| f.starts_with('-'))
        }
        "remote" => matches!(first, None | Some("-v" | "--verbose" | "get-url")),
        "submodule" => matches!(first, None | Some("status" | "summary" | "--quiet")),
        _ => false,
    };
    if lists {
        return;
    }
    let fetches = matches!(
        (sub, first),
        ("remote", Some("update" | "show" | "prune"))
            | ("submodule", Some("update" | "add" | "sync" | "init"))
    );
    if fetches {
        a.needs(Capability::Network);
    }
    if sub == "submodule" && first == Some("foreach") {
        a.complex("`git submodule foreach` runs a command in every submodule");
    }
    if sub == "worktree" && first == Some("add") {
        worktree_add(a, &rest[1..], dir);
    }
    if sub == "remote" {
        remote_config_change(a, rest, dir, repo);
    }
    a.write_path(repo, dir, &format!("git {sub}"));
}

/// `git remote add/set-url/rename/remove` rewrites the configuration. `git remote add NAME URL`
/// is remembered as a remote of the script, so that a push or fetch to NAME after it knows where
/// it goes; any other change is recorded as a write of the configuration file (an inert one:
/// remote URLs run nothing), so that a push or fetch later in the script does not judge its remote
/// by the configuration on disk.
fn remote_config_change(a: &mut Analysis<'_>, rest: &[Arg], dir: &Cwd, repo: &Arg) {
    if repo.lit() != Some(".") {
        return;
    }
    let Some(config) = remote::config_file(dir) else {
        return;
    };
    if a.policy.workspace().locate(&config).is_none() {
        return;
    }
    if let Some((name, url)) = remote::added_remote(rest) {
        a.git_remotes_added.push((config, name, url));
    } else {
        let file = Arg::Lit(config.to_string_lossy().into_owned());
        a.write_git_config(&file, dir, None);
    }
}

/// `git worktree add [OPTIONS] PATH [COMMIT]` checks out a worktree at PATH: a write of PATH,
/// judged where it lands. Attack stopped, and an honest answer given before anything runs: a
/// worktree outside the workspace (`../wt` of a project under the home directory) would leave its
/// metadata in `.git` pointing at a directory the host never gets.
fn worktree_add(a: &mut Analysis<'_>, rest: &[Arg], dir: &Cwd) {
    let items = scan(
        rest,
        &OptionSpec::gnu("bB", &["reason"], &[]).flags(
            "fq",
            &[
                "force",
                "detach",
                "checkout",
                "no-checkout",
                "lock",
                "orphan",
                "track",
                "no-track",
                "guess-remote",
                "no-guess-remote",
                "quiet",
                "relative-paths",
                "no-relative-paths",
            ],
        ),
    );
    if let Some(path) = operands(&items).first() {
        a.write_path(path, dir, "git worktree add");
    }
}

/// `git clone URL [DIR]`: fetches and writes DIR (or the name taken from URL).
fn clone(a: &mut Analysis<'_>, rest: &[Arg], dir: &Cwd) {
    let items = scan(
        rest,
        &OptionSpec::gnu(
            "obuc",
            &[
                "origin",
                "branch",
                "upload-pack",
                "template",
                "config",
                "depth",
                "shallow-since",
                "shallow-exclude",
                "reference",
                "reference-if-able",
                "separate-git-dir",
                "jobs",
                "filter",
                "server-option",
                "bundle-uri",
                "revision",
            ],
            &[],
        ),
    );
    if has(
        &items,
        &["-c", "--config", "-u", "--upload-pack", "--template"],
    ) {
        a.complex("`git clone -c/--upload-pack/--template` makes git run programs");
    }
    let ops = operands(&items);
    remote_url_check(a, &ops);
    match ops.first().and_then(Arg::lit) {
        // A local repository is read, not fetched.
        Some(src) if src.starts_with('/') || src.starts_with("./") || src.starts_with("../") => {
            a.read_path(&ops[0], dir);
        }
        Some(src) if src.starts_with("file://") => {
            crate::commands::network::local_urls(a, &ops[..1], dir);
        }
        _ => a.needs(Capability::Network),
    }
    let target = match (ops.first(), ops.get(1)) {
        (_, Some(d)) => d.clone(),
        (Some(url), None) => match url.lit() {
            Some(u) => {
                let base = u
                    .trim_end_matches('/')
                    .rsplit(['/', ':'])
                    .next()
                    .unwrap_or(u);
                Arg::Lit(base.trim_end_matches(".git").to_owned())
            }
            None => url.clone(),
        },
        (None, None) => return,
    };
    a.write_path(&target, dir, "git clone");
    if let Some(sep) = values(&items, &["--separate-git-dir"]).last() {
        a.write_path(sep, dir, "git clone");
    }
}

/// A URL that reaches over SSH needs keys no mode grants; `ext::` runs a command.
fn remote_url_check(a: &mut Analysis<'_>, ops: &[Arg]) {
    for op in ops {
        let Some(u) = op.lit() else { continue };
        if u.starts_with("ext::") {
            a.complex("a git `ext::` URL runs a command");
        } else if u.starts_with("ssh://")
            || u.starts_with("git+ssh://")
            || (crate::commands::writers::is_remote_spec(u) && !u.contains("://"))
        {
            a.needs(Capability::Ssh);
            a.refuse(Refusal::no_mode_grants(
                Capability::Ssh,
                format!("git over SSH ({u})"),
            ));
        }
    }
}
