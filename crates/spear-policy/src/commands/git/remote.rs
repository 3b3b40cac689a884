//! `git push`, `git fetch` and `git pull` whose other repository is on this machine.
//!
//! git reaches a repository on this machine (a path, or a `file:///` URL) by running
//! `receive-pack` or `upload-pack` in it: a push writes that directory, a fetch reads it, and
//! neither reaches the network. When spear shows that every URL the command would use is such a
//! path, a push is a write of that path (a workspace write inside the roots; anywhere else judged
//! as any other write, so refused outside them) and a fetch or pull a read of it, with no
//! `remote:write` and no network. Everything else keeps the judgement of a network remote: a push
//! needs `remote:write`, which no mode grants, and a fetch needs the network.
//!
//! How git picks the URL (git 2.47, `remote.c` and `transport.c`): the repository operand, or
//! without one `branch.<current>.pushRemote`, `remote.pushDefault`, `branch.<current>.remote`,
//! then the only configured remote, then `origin` (a fetch takes only the last three). A
//! configured remote of that name comes first, whatever the name looks like; then
//! `.git/remotes/NAME` and `.git/branches/NAME`; only then is the name read as a URL. A URL with
//! no `:` (or a `/` before its first `:`) is a path, relative to the top of the working tree (git
//! moves there before it connects, also from a subdirectory), and `file://` names a path too.
//! `url.<base>.insteadOf` and `pushInsteadOf` rewrite any of them.
//!
//! Attacks stopped (each falls back to the network judgement, so a push is refused):
//! - A remote named like a path but configured to a network URL (`[remote "./origin.git"] url =
//!   https://...`): git takes the configured remote first, so the name is looked up before it is
//!   read as a path.
//! - `url.<base>.insteadOf`/`pushInsteadOf` rewriting a local-looking URL to the network: any `url`
//!   section in the configuration, and a `git -c` of any key but identity, colours and the like
//!   (which could set one), is not local.
//! - An include (`include.path`, `includeIf`) that could hold either: not followed, not local.
//! - A legacy remote file (`.git/remotes/NAME`, `.git/branches/NAME`) of the name: not local.
//! - `host:path` (SSH), `scheme://host/...` and `helper::address` (`ext::` runs a command): a URL
//!   with a `:` anywhere is not local (only `file:///` is read).
//! - A configuration the script changed before the command (`git remote set-url`, `git config`, a
//!   write in the git directory or above the working tree, code spear cannot follow): the file
//!   read here is no longer the one git reads, so it is not local. The one change followed is
//!   `git remote add NAME URL` with plain words (the script's own remote, `origin` of `git init
//!   --bare origin.git && git remote add origin ./origin.git && git push origin main`): NAME's URL
//!   is the one it adds where the file on disk has no remote NAME (with one, `remote add` fails
//!   and changes nothing), every URL it is added with where the script adds it more than once,
//!   and a push or fetch that names no remote is not local then (the addition may change which
//!   remote git takes).
//! - Submodule recursion, which fetches or pushes each submodule from its own remote, and
//!   `--all`, `--multiple` and `--repo`, which name other remotes than the operand: not local.
//! - `remote.NAME.receivepack`/`uploadpack` (a program git runs) and `remote.NAME.vcs` (a remote
//!   helper): `SHELL_COMPLEX`, and not local.
//!
//! Left to the sandbox: the sandbox's own global configuration (its private home, which spear
//! cannot read before the command runs, and which only `git config --global` writes) and a loop
//! that changes the configuration after a push it repeats. A command judged local runs without
//! the network (unless another command of the script needs it), so such a push cannot reach a
//! network remote either.

use std::path::{Path, PathBuf};

use spear_core::{Capability, Refusal};

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{Item, OptionSpec, has, operands, scan, unknown_options};
use crate::paths::normalise;
use crate::shell::word::Arg;

/// The largest configuration file read; a larger one is not judged (fails closed).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `git push`'s options (`git push -h`, git 2.47). `--signed` (which runs gpg) is left out, so a
/// signed push is judged as a network one.
const PUSH: OptionSpec = OptionSpec::gnu(
    "o",
    &[
        "repo",
        "push-option",
        "receive-pack",
        "exec",
        "recurse-submodules",
    ],
    &[],
)
.flags(
    "vqdnfu46",
    &[
        "verbose",
        "no-verbose",
        "quiet",
        "no-quiet",
        "all",
        "no-all",
        "branches",
        "no-branches",
        "mirror",
        "no-mirror",
        "delete",
        "no-delete",
        "tags",
        "no-tags",
        "dry-run",
        "no-dry-run",
        "porcelain",
        "no-porcelain",
        "force",
        "no-force",
        "force-with-lease",
        "no-force-with-lease",
        "force-if-includes",
        "no-force-if-includes",
        "no-recurse-submodules",
        "thin",
        "no-thin",
        "set-upstream",
        "no-set-upstream",
        "progress",
        "no-progress",
        "prune",
        "no-prune",
        "verify",
        "no-verify",
        "follow-tags",
        "no-follow-tags",
        "atomic",
        "no-atomic",
        "ipv4",
        "ipv6",
    ],
);

/// `git fetch`'s options with a value (`git fetch -h`, git 2.47).
const FETCH_VALUES: &[&str] = &[
    "upload-pack",
    "jobs",
    "depth",
    "shallow-since",
    "shallow-exclude",
    "deepen",
    "refmap",
    "server-option",
    "negotiation-tip",
    "filter",
];

/// `git fetch`'s options without one.
const FETCH_FLAGS: &[&str] = &[
    "verbose",
    "no-verbose",
    "quiet",
    "no-quiet",
    "all",
    "no-all",
    "set-upstream",
    "no-set-upstream",
    "append",
    "no-append",
    "atomic",
    "no-atomic",
    "force",
    "no-force",
    "multiple",
    "no-multiple",
    "tags",
    "no-tags",
    "prefetch",
    "no-prefetch",
    "prune",
    "no-prune",
    "prune-tags",
    "no-prune-tags",
    "recurse-submodules",
    "no-recurse-submodules",
    "dry-run",
    "no-dry-run",
    "porcelain",
    "no-porcelain",
    "write-fetch-head",
    "no-write-fetch-head",
    "keep",
    "no-keep",
    "update-head-ok",
    "no-update-head-ok",
    "progress",
    "no-progress",
    "unshallow",
    "refetch",
    "update-shallow",
    "no-update-shallow",
    "ipv4",
    "ipv6",
    "negotiate-only",
    "no-negotiate-only",
    "auto-maintenance",
    "no-auto-maintenance",
    "auto-gc",
    "no-auto-gc",
    "show-forced-updates",
    "no-show-forced-updates",
    "write-commit-graph",
    "no-write-commit-graph",
    "stdin",
    "no-stdin",
];

/// `git fetch`'s options.
const FETCH: OptionSpec =
    OptionSpec::gnu("jo", FETCH_VALUES, &[]).flags("vqafmtnpPku46", FETCH_FLAGS);

/// `git pull`'s options with a value (`git pull -h`, git 2.47): its own and the fetching ones
/// (`-j` takes its value attached only).
const PULL_VALUES: &[&str] = &[
    "cleanup",
    "strategy",
    "strategy-option",
    "upload-pack",
    "depth",
    "shallow-since",
    "shallow-exclude",
    "deepen",
    "refmap",
    "server-option",
    "negotiation-tip",
];

/// `git pull`'s options without one (some take a value attached: `--rebase=merges`).
const PULL_FLAGS: &[&str] = &[
    "verbose",
    "no-verbose",
    "quiet",
    "no-quiet",
    "progress",
    "no-progress",
    "recurse-submodules",
    "no-recurse-submodules",
    "rebase",
    "no-rebase",
    "stat",
    "no-stat",
    "log",
    "no-log",
    "signoff",
    "no-signoff",
    "squash",
    "no-squash",
    "commit",
    "no-commit",
    "edit",
    "no-edit",
    "no-cleanup",
    "ff",
    "no-ff",
    "ff-only",
    "verify",
    "no-verify",
    "verify-signatures",
    "no-verify-signatures",
    "autostash",
    "no-autostash",
    "no-strategy",
    "no-strategy-option",
    "gpg-sign",
    "no-gpg-sign",
    "allow-unrelated-histories",
    "no-allow-unrelated-histories",
    "all",
    "no-all",
    "append",
    "no-append",
    "force",
    "no-force",
    "tags",
    "no-tags",
    "prune",
    "no-prune",
    "jobs",
    "no-jobs",
    "dry-run",
    "no-dry-run",
    "keep",
    "no-keep",
    "unshallow",
    "update-shallow",
    "no-update-shallow",
    "ipv4",
    "no-ipv4",
    "ipv6",
    "no-ipv6",
    "show-forced-updates",
    "no-show-forced-updates",
    "set-upstream",
    "no-set-upstream",
];

/// `git pull`'s options.
const PULL: OptionSpec =
    OptionSpec::gnu("sXo", PULL_VALUES, &[]).flags("vqrnSaftpjk46", PULL_FLAGS);

/// The keys of a `[remote "NAME"]` section that send git nowhere else and run nothing.
const REMOTE_KEYS: &[&str] = &[
    "url",
    "pushurl",
    "fetch",
    "push",
    "tagopt",
    "prune",
    "prunetags",
    "mirror",
    "skipdefaultupdate",
    "skipfetchall",
    "promisor",
    "partialclonefilter",
    "followremotehead",
];

/// The keys of a `[remote "NAME"]` section that name a program git runs for the remote.
const REMOTE_PROGRAM_KEYS: &[&str] = &["receivepack", "uploadpack", "vcs"];

/// One entry of the repository's configuration: section (lower-case), subsection as written, key
/// (lower-case), value.
struct Entry {
    section: String,
    sub: Option<String>,
    key: String,
    value: String,
}

/// The repository git finds from a directory, as much of it as the judgement needs.
struct Repository {
    /// The directory git works in: the top of the working tree (the git directory of a bare one).
    top: PathBuf,
    /// The repository's own git directory (a linked worktree's).
    git_dir: PathBuf,
    /// The directory holding the shared configuration, refs and objects.
    common: PathBuf,
    /// The entries of `config` and `config.worktree`.
    config: Vec<Entry>,
}

impl Repository {
    /// The values of `section[.sub].key` (names lower-case, `sub` exact), in file order.
    fn values(&self, section: &str, sub: Option<&str>, key: &str) -> Vec<&str> {
        self.config
            .iter()
            .filter(|e| e.section == section && e.sub.as_deref() == sub && e.key == key)
            .map(|e| e.value.as_str())
            .collect()
    }

    /// The last value of `section[.sub].key` (the one git uses).
    fn value(&self, section: &str, sub: Option<&str>, key: &str) -> Option<&str> {
        self.values(section, sub, key).last().copied()
    }
}

/// What the analysis knew when the git command started, beyond its arguments.
#[derive(Debug, Clone, Copy)]
pub(super) struct Before {
    /// `git -c`/`--config-env` set configuration that can change where a remote is.
    pub one_shot: bool,
    /// Something earlier in the script runs code spear cannot follow.
    pub complex: bool,
}

/// What a push, fetch or pull is judged to reach.
enum Reach {
    /// Repositories on this machine: each path as written, and the directory it is relative to.
    Local(Vec<(Arg, Cwd)>),
    /// Possibly the network: why spear cannot show otherwise.
    Elsewhere(String),
}

/// `git push`, `git fetch` or `git pull` (`sub`) with `rest` after the subcommand, run in `dir`
/// on the repository `repo` (`.` unless `--git-dir`/`--work-tree` named one).
pub(super) fn transfer(
    a: &mut Analysis<'_>,
    sub: &str,
    rest: &[Arg],
    dir: &Cwd,
    repo: &Arg,
    before: Before,
) {
    let spec = match sub {
        "push" => &PUSH,
        "fetch" => &FETCH,
        _ => &PULL,
    };
    let items = scan(rest, spec);
    let ops = operands(&items);
    // Only the first operand is a repository; the others are refspecs (`HEAD:main` is no SSH).
    let repository_operand = &ops[..ops.len().min(1)];
    let reach = match reach(a, sub, &items, spec, dir, repo, before) {
        Ok(paths) => Reach::Local(paths),
        Err(why) => Reach::Elsewhere(why),
    };
    let program = format!("git {sub}");
    match reach {
        Reach::Local(paths) => {
            for (path, base) in &paths {
                if sub == "push" {
                    a.write_path(path, base, &program);
                } else {
                    a.read_path(path, base);
                }
            }
            // The current repository: remote-tracking refs, `-u`'s upstream, a fetch's objects.
            a.write_path(repo, dir, &program);
        }
        Reach::Elsewhere(why) if sub == "push" => {
            a.needs(Capability::RemoteWrite);
            // The reason goes inside the refusal's quoted command: its own quotes become plain.
            let to = ops
                .first()
                .map_or(String::new(), |o| format!(" {}", o.display()));
            a.refuse(Refusal::no_mode_grants(
                Capability::RemoteWrite,
                format!("{program}{to} ({})", why.replace('`', "'")),
            ));
            super::remote_url_check(a, repository_operand);
        }
        Reach::Elsewhere(_) => {
            super::remote_url_check(a, repository_operand);
            a.needs(Capability::Network);
            a.write_path(repo, dir, &program);
        }
    }
}

/// The paths (each with the directory it is relative to) of the repositories a push, fetch or
/// pull reaches, when every one is on this machine; `Err` saying why not otherwise.
fn reach(
    a: &mut Analysis<'_>,
    sub: &str,
    items: &[Item],
    spec: &OptionSpec,
    dir: &Cwd,
    repo: &Arg,
    before: Before,
) -> Result<Vec<(Arg, Cwd)>, String> {
    if before.one_shot {
        return Err("`git -c` sets configuration that can name the remote".to_owned());
    }
    if repo.lit() != Some(".") {
        return Err("`--git-dir`/`--work-tree` names another repository".to_owned());
    }
    if let Some(name) = unknown_options(items, spec).next() {
        return Err(format!(
            "`{name}` is not an option spear knows for `git {sub}`"
        ));
    }
    if items.iter().any(|i| matches!(i, Item::Unknown(_))) {
        return Err("an argument is known only at run time".to_owned());
    }
    if has(items, &["--all", "--multiple", "-m", "--repo"]) {
        return Err("the command names other remotes than its operand".to_owned());
    }
    let ops = operands(items);
    let operand = match ops.first() {
        Some(op) => match op.lit() {
            Some(text) => Some(text.to_owned()),
            None => return Err("the remote is known only at run time".to_owned()),
        },
        None => None,
    };
    let Cwd::Known(cwd) = dir else {
        return Err("the directory is known only at run time".to_owned());
    };
    let r = repository(a, cwd)?;
    if let Some(why) = changed_earlier(a, &r, before) {
        return Err(why);
    }
    submodules(sub, items, &r)?;
    let (name, given) = if let Some(op) = operand {
        (op, true)
    } else {
        let config = r.common.join("config");
        let added: Vec<&str> = a
            .git_remotes_added
            .iter()
            .filter(|(file, _, _)| spellings(file) == spellings(&config))
            .map(|(_, n, _)| n.as_str())
            .collect();
        default_remote(sub, &r, &added)?
    };
    let urls = remote_urls(a, sub, &r, &name, given)?;
    let base = Cwd::Known(r.top.clone());
    urls.iter()
        .map(|url| local_path(url, &r.top).map(|p| (p, base.clone())))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| format!("`{name}` is not a path on this machine"))
}

/// The repository git finds from `cwd`, with its configuration. `Err` when there is none, it is
/// not inside the roots (the sandbox may not show it where the host has it), or its configuration
/// cannot be read whole or holds what spear does not follow (includes, `core.worktree`, the
/// legacy `[section.sub]` spelling).
fn repository(a: &Analysis<'_>, cwd: &Path) -> Result<Repository, String> {
    // A directory the script makes is not there yet: what git finds from it is not known.
    if !cwd.is_dir() {
        return Err(format!("{} does not exist yet", cwd.display()));
    }
    let (top, git_dir) = discover(cwd)?;
    let common = common_dir(&git_dir)?;
    let ws = a.policy.workspace();
    for p in [&top, &git_dir, &common] {
        if ws.locate(p).is_none() {
            return Err(format!(
                "the repository at {} is outside the roots",
                p.display()
            ));
        }
    }
    let mut config = Vec::new();
    for path in [common.join("config"), git_dir.join("config.worktree")] {
        if let Some(text) = read_small(&path)? {
            config.extend(entries(&path, text.as_bytes())?);
        }
    }
    if let Some(e) = config.iter().find(|e| {
        matches!(e.section.as_str(), "include" | "includeif")
            || (e.section == "core" && e.key == "worktree")
    }) {
        return Err(format!(
            "its configuration sets `{}.{}`, which spear does not follow",
            e.section, e.key
        ));
    }
    Ok(Repository {
        top,
        git_dir,
        common,
        config,
    })
}

/// The top of the working tree and the git directory git uses from `dir`: the nearest directory
/// holding `.git` (a directory, or a file naming one), or the nearest that is itself a bare
/// repository (then both are that directory).
fn discover(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    for d in dir.ancestors() {
        let dot = d.join(".git");
        match std::fs::symlink_metadata(&dot) {
            Ok(meta) if meta.is_file() => {
                let text = read_small(&dot)?.unwrap_or_default();
                return match text.trim().strip_prefix("gitdir:") {
                    Some(p) => Ok((d.to_path_buf(), normalise(&d.join(p.trim())))),
                    None => Err(format!("{} names no git directory", dot.display())),
                };
            }
            Ok(meta) if meta.is_dir() => return Ok((d.to_path_buf(), dot)),
            Ok(_) => {
                return Err(format!(
                    "{} is neither a directory nor a file",
                    dot.display()
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{} cannot be examined ({e})", dot.display())),
        }
        let bare = ["HEAD", "objects", "refs"]
            .iter()
            .all(|f| d.join(f).symlink_metadata().is_ok());
        if bare {
            return Ok((d.to_path_buf(), d.to_path_buf()));
        }
    }
    Err(format!("no git repository holds {}", dir.display()))
}

/// The directory holding the configuration, refs and objects a linked worktree's git directory
/// shares (its `commondir`), or the git directory itself.
fn common_dir(git_dir: &Path) -> Result<PathBuf, String> {
    Ok(match read_small(&git_dir.join("commondir"))? {
        Some(rel) => normalise(&git_dir.join(rel.trim())),
        None => git_dir.to_path_buf(),
    })
}

/// The text of the file `path`: `Ok(None)` when there is none, `Err` when one is there and cannot
/// be read whole.
fn read_small(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be examined ({e})", path.display())),
    };
    if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES {
        return Err(format!("{} cannot be read whole", path.display()));
    }
    let bytes =
        std::fs::read(path).map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("{} is not UTF-8", path.display()))
}

/// The entries of the configuration file `path` holding `bytes`, includes not followed (an include
/// is an entry itself). `Err` when it does not parse, or spells a subsection the legacy way
/// (`[remote.origin]`, which git matches without case).
fn entries(path: &Path, bytes: &[u8]) -> Result<Vec<Entry>, String> {
    let meta = gix_config::file::Metadata::from(gix_config::Source::Local);
    let file = gix_config::File::from_bytes_no_includes(
        bytes,
        meta,
        gix_config::file::init::Options::default(),
    )
    .map_err(|e| format!("{} does not parse ({e})", path.display()))?;
    let mut out = Vec::new();
    for section in file.sections() {
        let header = section.header();
        if header.is_legacy() {
            return Err(format!(
                "{} spells a section the legacy way",
                path.display()
            ));
        }
        let name = header.name().to_string().to_ascii_lowercase();
        let sub = header.subsection_name().map(ToString::to_string);
        let body = section.body();
        for key in body.value_names() {
            let key = key.to_ascii_lowercase();
            for value in body.values(&key) {
                out.push(Entry {
                    section: name.clone(),
                    sub: sub.clone(),
                    key: key.clone(),
                    value: value.to_string(),
                });
            }
        }
    }
    Ok(out)
}

/// Why the configuration read from disk may not be the one git reads: something the script did
/// before this command could have changed it. A write into the git directory (`git config`,
/// `git remote`, `> .git/config`, `rm -rf .git`), one to a directory above the working tree's top
/// (`tar x` there), and code spear cannot follow.
fn changed_earlier(a: &Analysis<'_>, r: &Repository, before: Before) -> Option<String> {
    if before.complex {
        return Some("the script runs code before it that could change the configuration".into());
    }
    // Each path in both spellings: `..` folded as written, and as the kernel resolves it
    // (`cd sub && > ../.git/config`, a link to the git directory).
    let (git_dirs, commons, tops) = (
        spellings(&r.git_dir),
        spellings(&r.common),
        spellings(&r.top),
    );
    let changed = a.found.writes.iter().find(|w| {
        spellings(w).iter().any(|w| {
            git_dirs.iter().chain(&commons).any(|g| w.starts_with(g))
                || tops.iter().any(|t| t.starts_with(w) && t != w)
        })
    });
    changed.map(|w| {
        format!(
            "the script writes {} before it, which can change the configuration",
            w.display()
        )
    })
}

/// `path` with `..` folded as written, and as the kernel resolves it where its directory exists.
fn spellings(path: &Path) -> Vec<PathBuf> {
    let mut out = vec![normalise(path)];
    let real = std::fs::canonicalize(path).ok().or_else(|| {
        let parent = std::fs::canonicalize(path.parent()?).ok()?;
        Some(parent.join(path.file_name()?))
    });
    out.extend(real);
    out
}

/// `Err` when the command may recurse into submodules, which fetch from or push to remotes of
/// their own: a fetch by default when the repository has any, a push when asked to.
fn submodules(sub: &str, items: &[Item], r: &Repository) -> Result<(), String> {
    let off = items.iter().any(|i| match i {
        Item::Opt { name, value } if name == "--recurse-submodules" => {
            match value.as_ref().and_then(Arg::lit) {
                Some("no" | "false" | "off" | "0") => true,
                Some("check") => sub == "push",
                _ => false,
            }
        }
        Item::Opt { name, .. } => name == "--no-recurse-submodules",
        _ => false,
    });
    if off {
        return Ok(());
    }
    let asked = has(items, &["--recurse-submodules"]);
    let configured = r.config.iter().any(|e| {
        e.section == "submodule"
            || (matches!(e.section.as_str(), "push" | "fetch") && e.key == "recursesubmodules")
    });
    let has_modules = r.top.join(".gitmodules").symlink_metadata().is_ok();
    let recurses = if sub == "push" {
        asked || configured
    } else {
        asked || configured || has_modules
    };
    if recurses {
        return Err("it may recurse into submodules, which have remotes of their own".into());
    }
    Ok(())
}

/// The remote git uses when none is named, and whether the configuration named it (then git also
/// takes it as a URL when no remote has that name): for a push `branch.<current>.pushRemote`,
/// `remote.pushDefault`, `branch.<current>.remote`; for a fetch or pull the last; else the only
/// configured remote when there is one (git 2.47), else `origin`.
fn default_remote(
    sub: &str,
    r: &Repository,
    a_added_here: &[&str],
) -> Result<(String, bool), String> {
    let branch = current_branch(r)?;
    let from_branch = |key: &str| {
        branch
            .as_deref()
            .and_then(|b| r.value("branch", Some(b), key))
            .map(str::to_owned)
    };
    let named = if sub == "push" {
        from_branch("pushremote")
            .or_else(|| r.value("remote", None, "pushdefault").map(str::to_owned))
            .or_else(|| from_branch("remote"))
    } else {
        from_branch("remote")
    };
    if let Some(name) = named {
        return Ok((name, true));
    }
    if !a_added_here.is_empty() {
        return Err(
            "the script adds remotes, so which one git takes by default is not known".into(),
        );
    }
    let mut remotes: Vec<&str> = r
        .config
        .iter()
        .filter(|e| e.section == "remote")
        .filter_map(|e| e.sub.as_deref())
        .collect();
    remotes.sort_unstable();
    remotes.dedup();
    Ok(match remotes.as_slice() {
        [only] => ((*only).to_owned(), false),
        _ => ("origin".to_owned(), false),
    })
}

/// The branch `HEAD` names (`None` when detached). `Err` when `HEAD` cannot be read as a file of
/// the files backend (a symbolic link, the reftable backend's placeholder).
fn current_branch(r: &Repository) -> Result<Option<String>, String> {
    if r.value("extensions", None, "refstorage")
        .is_some_and(|s| !s.eq_ignore_ascii_case("files"))
    {
        return Err("its refs are not files spear reads".into());
    }
    let head = r.git_dir.join("HEAD");
    if head
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(format!("{} is a symbolic link", head.display()));
    }
    let text = read_small(&head)?.ok_or_else(|| format!("{} is missing", head.display()))?;
    let text = text.trim();
    Ok(match text.strip_prefix("ref:") {
        Some(target) => match target.trim().strip_prefix("refs/heads/") {
            Some(b) => Some(b.to_owned()),
            None => return Err(format!("{} names {target}", head.display())),
        },
        None => None,
    })
}

/// The URLs of the remote `name` (`given` when the command line or the configuration named it):
/// a configured remote's `url` and `pushurl` values (a fetch uses the first, a push the push URLs
/// or the URLs; all are judged), or `name` itself as a URL. `Err` when a remote file of that name
/// exists, a default is not configured, a configured remote has no URL or a key spear does not
/// know, or the configuration rewrites URLs.
fn remote_urls(
    a: &mut Analysis<'_>,
    sub: &str,
    r: &Repository,
    name: &str,
    given: bool,
) -> Result<Vec<String>, String> {
    if r.config.iter().any(|e| e.section == "url") {
        return Err("the configuration rewrites URLs (`url.<base>.insteadOf`)".into());
    }
    let section: Vec<&Entry> = r
        .config
        .iter()
        .filter(|e| e.section == "remote" && e.sub.as_deref() == Some(name))
        .collect();
    if !section.is_empty() {
        if let Some(e) = section
            .iter()
            .find(|e| REMOTE_PROGRAM_KEYS.contains(&e.key.as_str()))
        {
            a.complex(format!(
                "`git {sub}` runs the program `remote.{name}.{}` names",
                e.key
            ));
            return Err(format!("`remote.{name}.{}` names a program", e.key));
        }
        if let Some(e) = section
            .iter()
            .find(|e| !REMOTE_KEYS.contains(&e.key.as_str()))
        {
            return Err(format!("spear does not know `remote.{name}.{}`", e.key));
        }
        let urls: Vec<String> = section
            .iter()
            .filter(|e| e.key == "url" || e.key == "pushurl")
            .map(|e| e.value.clone())
            .collect();
        if urls.is_empty() || urls.iter().any(String::is_empty) {
            return Err(format!("the remote `{name}` has no URL spear can read"));
        }
        for url in &urls {
            if url.starts_with("ext::") {
                a.complex(format!(
                    "`remote.{name}.url` is a git `ext::` URL, which runs a command"
                ));
            }
        }
        return Ok(urls);
    }
    // Remote nicknames have no `/` and are not `.` or `..` (git's `valid_remote_nick`).
    let nick = !name.is_empty() && name != "." && name != ".." && !name.contains('/');
    if nick {
        for legacy in ["remotes", "branches"] {
            let file = r.common.join(legacy).join(name);
            if file.symlink_metadata().is_ok() {
                return Err(format!("{} defines the remote", file.display()));
            }
        }
    }
    // Added by the script: its URL, or any of them when it is added more than once (a second
    // `remote add` fails, but which one ran first may depend on the script's branches).
    let config = r.common.join("config");
    let added: Vec<String> = a
        .git_remotes_added
        .iter()
        .filter(|(file, n, _)| n == name && spellings(file) == spellings(&config))
        .map(|(_, _, url)| url.clone())
        .collect();
    if !added.is_empty() {
        return Ok(added);
    }
    if !given {
        return Err(format!("no remote `{name}` is configured"));
    }
    Ok(vec![name.to_owned()])
}

/// `url` as a path on this machine, relative to `top` unless absolute: `/abs`, `./x`, `../x`, a
/// relative path with a `/`, `.`/`..`, a directory of that name in `top`, or `file:///abs`. `None`
/// for anything git would send elsewhere (a `:` before any `/`: `host:path`, `scheme://`,
/// `helper::address`) or spear cannot be sure of (`file://` with a host or `%` escapes, a bare word
/// that is no directory).
fn local_path(url: &str, top: &Path) -> Option<Arg> {
    if let Some(rest) = url.strip_prefix("file://") {
        return (rest.starts_with('/') && !rest.contains('%')).then(|| Arg::Lit(rest.to_owned()));
    }
    if url.is_empty() || url.contains(':') {
        return None;
    }
    let pathlike = url.contains('/') || url == "." || url == "..";
    if pathlike || top.join(url).is_dir() {
        return Some(Arg::Lit(url.to_owned()));
    }
    None
}

/// Sections of `git -c` settings that cannot change where a push or fetch goes: identity,
/// colours, advice and the like. Any other (`remote.*`, `url.*.insteadOf`, `branch.*`, `include.*`)
/// makes the command's remote unknown to [`transfer`].
const INERT_FOR_REMOTES: &[&str] = &["user", "color", "advice", "init", "commit", "log", "gc"];

/// Whether the `git -c` setting `KEY=VALUE` leaves every remote where the configuration on disk
/// puts it. Attack stopped: `git -c url.https://host/.pushInsteadOf=./ push ./x.git` and `git -c
/// remote.x.url=https://... push x`, which a judgement of the files alone would call local.
pub(super) fn inert_for_remotes(setting: Option<&Arg>) -> bool {
    setting.and_then(Arg::lit).is_some_and(|text| {
        let section = text.split(['.', '=']).next().unwrap_or("");
        INERT_FOR_REMOTES
            .iter()
            .any(|s| s.eq_ignore_ascii_case(section))
            && text
                .split_once('=')
                .is_none_or(|(key, _)| key.matches('.').count() == 1)
    })
}

/// `add NAME URL` with literal words and no options (`-f` fetches, `--mirror` and `-t` change
/// what is pushed): the remote's name and URL.
pub(super) fn added_remote(rest: &[Arg]) -> Option<(String, String)> {
    match rest {
        [add, name, url] if add.lit() == Some("add") => {
            let (name, url) = (name.lit()?, url.lit()?);
            (!name.starts_with('-') && !url.starts_with('-'))
                .then(|| (name.to_owned(), url.to_owned()))
        }
        _ => None,
    }
}

/// The configuration file of the repository git finds from `dir`, when one is found: `git remote`
/// records it as written, so that a push or fetch after it in the script knows the configuration
/// on disk is no longer the one git reads.
pub(super) fn config_file(dir: &Cwd) -> Option<PathBuf> {
    let Cwd::Known(d) = dir else { return None };
    let (_, git_dir) = discover(d).ok()?;
    Some(common_dir(&git_dir).ok()?.join("config"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths() {
        let top = Path::new("/nonexistent-top");
        let local = |u: &str| local_path(u, top).map(|a| a.display().to_owned());
        assert_eq!(local("./origin.git").as_deref(), Some("./origin.git"));
        assert_eq!(local("../x.git").as_deref(), Some("../x.git"));
        assert_eq!(local("sub/x.git").as_deref(), Some("sub/x.git"));
        assert_eq!(local("/abs/x.git").as_deref(), Some("/abs/x.git"));
        assert_eq!(local(".").as_deref(), Some("."));
        assert_eq!(local("file:///abs/x.git").as_deref(), Some("/abs/x.git"));
        for remote in [
            "origin",
            "git@github.com:x/y.git",
            "host:path",
            "https://github.com/x/y",
            "ssh://host/x",
            "git://host/x",
            "ext::sh -c x",
            "file://host/x",
            "file:///a%20b",
            "./x:y",
            "",
        ] {
            assert_eq!(local(remote), None, "{remote}");
        }
    }
}
