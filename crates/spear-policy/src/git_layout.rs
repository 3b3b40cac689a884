//! git's indirections: every file git reads as configuration or hooks, and every file that sends
//! git to another directory where it would read them, by whatever name it is reached
//! (`git help gitrepository-layout`).
//!
//! A change is host-run configuration (entries `git-config`, `git-hooks`, `git-include` and
//! `git-program` of [`crate::host_config`]: never written without a person's approval, unless
//! the operator allows the entry) when it touches:
//! 1. by its own name, in any `.git` directory: `config`, `config.worktree`, `commondir`, `gitdir`,
//!    `hooks/`; the same files of every linked worktree (`.git/worktrees/<id>/...`) and of every
//!    submodule (`.git/modules/<name>/...`, at any depth); and a `.git` that is not a directory (a
//!    gitlink file or a link, which redirect git anywhere);
//! 2. the same files of any directory that git takes for a repository (it holds `HEAD` and
//!    `objects/` or `commondir`: a bare repository, or one with an unusual name), and the
//!    `HEAD`, `objects` or `refs` that would make git take a directory already holding a `config`
//!    or `hooks` for one;
//! 3. what the host's repositories and the user's configuration send git to, read from the host
//!    before the change: every file a configuration includes (`include.path`, `includeIf.*.path`
//!    whatever the condition, transitively, whether it exists yet or not: git reads it as
//!    configuration, so a `core.fsmonitor` written there runs on the next `git status`), the
//!    hooks directory and configuration files when they are links (`.git/hooks -> ../.githooks`:
//!    the target is host-run as well as the name), the directory `core.hooksPath` names (and, in
//!    husky's layout `<dir>/_`, the `<dir>` whose files its stubs run), and the programs the
//!    configuration names by a path (`core.fsmonitor`, `core.pager`, filter and diff drivers,
//!    aliases that run a shell command, ...). Every repository that contains the change counts,
//!    inside or above the workspace, with system, global and repository configuration; what the
//!    system's and the user's configuration name counts for every path, in a repository or not,
//!    and their relative names under every repository the command leaves (one it makes too);
//! 4. for a link the command creates, what it points at, judged as if it were written there.
//!
//! A repository whose `.git` or configuration cannot be read is refused whole (a protected entry,
//! whatever anyone answers): what git would run there cannot be known.
//!
//! Ordinary git work keeps working: objects, refs, the index, `HEAD`, logs, `ORIG_HEAD`,
//! `COMMIT_EDITMSG`, `info/exclude` and everything else git writes during commit, checkout, merge,
//! rebase and stash are not indirections. A directory that will hold them is not one either
//! (`git init` makes `.git`); a hooks directory is.
//!
//! Attack stopped: code planted for the host's git. A hook, a `core.fsmonitor`, a `commondir`
//! that points git at a directory the command made, all run later on the host when the user
//! commits, checks out or only runs `git status`.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use spear_core::{ChangeKind, Refusal};
use spear_workspace::{EntryKind, Location, TreeView, Workspace};

use crate::paths::normalise;

/// Files of a git directory that git reads as configuration or that redirect it.
const CONTROL_FILES: &[&str] = &["config", "config.worktree", "commondir", "gitdir"];

/// Configuration keys whose value is a program git runs (the first word, when it is a path).
/// Matched on `section.key` and `section.*.key`, lower-case.
const PROGRAM_KEYS: &[&str] = &[
    "core.fsmonitor",
    "core.editor",
    "core.pager",
    "core.sshcommand",
    "core.askpass",
    "core.gitproxy",
    "core.hookspath",
    "sequence.editor",
    "diff.external",
    "diff.*.command",
    "diff.*.textconv",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "gpg.program",
    "gpg.*.program",
    "credential.helper",
    "credential.*.helper",
    "uploadpack.packobjectshook",
    "remote.*.uploadpack",
    "remote.*.receivepack",
    "mergetool.*.cmd",
    "mergetool.*.path",
    "difftool.*.cmd",
    "difftool.*.path",
    "man.*.cmd",
    "man.*.path",
    "web.browser",
    "browser.*.cmd",
    "browser.*.path",
    "pager.*",
    "alias.*",
];

/// Keys of a repository's configuration that name no program and send git nowhere: what
/// `git init`, `git clone`, `git remote add`, `git branch -u` and `git config user.*` write. A
/// configuration holding only these (and no include) is inert, and may be written. Matched
/// lower-case on `section.key` and `section.*.key`.
const INERT_CONFIG_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.abbrev",
    "extensions.objectformat",
    "extensions.refstorage",
    "extensions.worktreeconfig",
    "core.quotepath",
    "core.whitespace",
    "init.defaultbranch",
    "user.*",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.promisor",
    "remote.*.partialclonefilter",
    "branch.*.remote",
    "branch.*.pushremote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.description",
    "branch.autosetupmerge",
    "branch.autosetuprebase",
    "branch.sort",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "gc.auto",
    "merge.conflictstyle",
    "diff.algorithm",
    "rerere.enabled",
    "advice.*",
    "color.*",
    "diff.renames",
    "diff.mnemonicprefix",
    "diff.noprefix",
    "merge.ff",
    "rebase.autosquash",
    "rebase.autostash",
    "log.date",
    "log.decorate",
    "status.short",
    "status.branch",
    "status.showuntrackedfiles",
    "commit.verbose",
];

/// One entry of a configuration file: section and key lower-case, subsection as written, value.
type Entry = (String, Option<String>, String, String);

/// The entries of a configuration file (includes not followed: an include is an entry itself);
/// `None` when it does not parse.
fn config_entries(bytes: &[u8]) -> Option<Vec<Entry>> {
    let meta = gix_config::file::Metadata::from(gix_config::Source::Local);
    let file = gix_config::File::from_bytes_no_includes(
        bytes,
        meta,
        gix_config::file::init::Options::default(),
    )
    .ok()?;
    let mut out = Vec::new();
    for section in file.sections() {
        let name = section.header().name().to_string().to_ascii_lowercase();
        let sub = section.header().subsection_name().map(ToString::to_string);
        for key in section.body().value_names() {
            let key = key.to_ascii_lowercase();
            for value in section.body().values(&key) {
                out.push((name.clone(), sub.clone(), key.clone(), value.to_string()));
            }
        }
    }
    out.sort();
    Some(out)
}

/// Whether one entry names no program and sends git nowhere: its key is one of
/// [`INERT_CONFIG_KEYS`], and a URL is not of git's `ext::` transport (which runs a command).
fn entry_is_inert(entry: &Entry) -> bool {
    let (name, sub, key, value) = entry;
    key_is_inert(name, sub.is_some(), key, Some(value))
}

/// Whether `section[.sub].key = value` names no program and sends git nowhere. `value` `None`
/// when it is not known (a removal).
fn key_is_inert(name: &str, sub: bool, key: &str, value: Option<&str>) -> bool {
    let listed = INERT_CONFIG_KEYS
        .iter()
        .any(|k| key_matches(k, name, sub, key));
    let no_ext = !key.ends_with("url")
        || value.is_none_or(|v| !v.trim().to_ascii_lowercase().starts_with("ext::"));
    listed && no_ext
}

/// Whether `bytes` is a repository configuration with inert keys only (see
/// [`INERT_CONFIG_KEYS`]), no include, and no URL of git's `ext::` transport (which runs a
/// command).
pub fn is_inert_config(bytes: &[u8]) -> bool {
    config_entries(bytes).is_some_and(|entries| entries.iter().all(entry_is_inert))
}

/// Whether a configuration rewritten from `host` (`None`: there was none) to `staged` adds,
/// changes or removes only inert entries: every entry that is in one and not in the other (counted
/// with repetitions) is inert. A repository whose configuration already names a hooks directory or
/// a pager keeps them, and takes `git config user.name x`; a new `core.fsmonitor`, a changed
/// `core.hooksPath`, a new include or a removed one are not inert. Either file unparsable: not
/// inert (fails closed).
pub fn config_change_is_inert(staged: &[u8], host: Option<&[u8]>) -> bool {
    let Some(new) = config_entries(staged) else {
        return false;
    };
    let old = match host {
        Some(bytes) => match config_entries(bytes) {
            Some(e) => e,
            None => return false,
        },
        None => Vec::new(),
    };
    multiset_difference(&new, &old)
        .chain(multiset_difference(&old, &new))
        .all(entry_is_inert)
}

/// The entries of `a` (sorted) that `b` (sorted) does not have, counted with repetitions.
fn multiset_difference<'e>(a: &'e [Entry], b: &'e [Entry]) -> impl Iterator<Item = &'e Entry> {
    let mut j = 0;
    a.iter().filter(move |e| {
        while j < b.len() && b[j] < **e {
            j += 1;
        }
        if j < b.len() && b[j] == **e {
            j += 1;
            false
        } else {
            true
        }
    })
}

/// What `git config` (or `git -c`) setting or removing `key` (`section.key` or
/// `section.subsection.key`) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyEffect {
    /// Names no program and sends git nowhere ([`INERT_CONFIG_KEYS`]).
    Inert,
    /// Makes git run a program or read other configuration later: hooks, pagers, editors,
    /// drivers, aliases, credential helpers, includes, an `ext::` URL.
    RunsCode,
    /// A key spear does not know to be inert.
    Unknown,
}

/// The effect of setting `key` to `value` (`None`: removed, or not known).
pub(crate) fn key_effect(key: &str, value: Option<&str>) -> KeyEffect {
    let Some((section, rest)) = key.split_once('.') else {
        return KeyEffect::Unknown;
    };
    let (sub, leaf) = match rest.rsplit_once('.') {
        Some((sub, leaf)) => (Some(sub), leaf),
        None => (None, rest),
    };
    let name = section.to_ascii_lowercase();
    let leaf = leaf.to_ascii_lowercase();
    if leaf.is_empty() || name.is_empty() || sub.is_some_and(str::is_empty) {
        return KeyEffect::Unknown;
    }
    if key_is_inert(&name, sub.is_some(), &leaf, value) {
        return KeyEffect::Inert;
    }
    let runs = PROGRAM_KEYS
        .iter()
        .any(|k| key_matches(k, &name, sub.is_some(), &leaf))
        || matches!(name.as_str(), "include" | "includeif" | "credential")
        || (leaf.ends_with("url")
            && value.is_none_or(|v| v.trim().to_ascii_lowercase().starts_with("ext::")));
    if runs {
        KeyEffect::RunsCode
    } else {
        KeyEffect::Unknown
    }
}

/// Whether the pattern `section.key`, `section.*.key` or `section.*` names `name.key`.
fn key_matches(pattern: &str, name: &str, sub: bool, key: &str) -> bool {
    let (s, rest) = pattern.split_once('.').unwrap_or((pattern, ""));
    if s != name {
        return false;
    }
    match rest.split_once('.') {
        Some(("*", k2)) => sub && k2 == key,
        None if rest == "*" => true,
        None => !sub && rest == key,
        Some(_) => false,
    }
}

/// One of git's indirections a path is: the host-run configuration entry it belongs to
/// (`git-config` or `git-hooks`, see [`crate::host_config`]) and what git does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indirection {
    /// The catalogue entry.
    pub entry: &'static str,
    /// What git does with it.
    pub why: &'static str,
}

const HOOKS: Indirection = Indirection {
    entry: "git-hooks",
    why: "git runs the hooks in it",
};

/// Why git would read a path as configuration or hooks, from its own components (rule 1).
pub fn control_by_name(rel: &Path) -> Option<Indirection> {
    let parts = names(rel);
    for (i, part) in parts.iter().enumerate() {
        if !is(part, ".git") {
            continue;
        }
        let tail = &parts[i + 1..];
        let Some(first) = tail.first() else {
            continue;
        };
        if is(first, "hooks") {
            return Some(HOOKS);
        }
        if CONTROL_FILES.iter().any(|f| is(first, f)) {
            return Some(control_reason(first));
        }
        if is(first, "worktrees")
            && let Some(third) = tail.get(2)
        {
            if is(third, "hooks") {
                return Some(HOOKS);
            }
            if CONTROL_FILES.iter().any(|f| is(third, f)) {
                return Some(Indirection {
                    entry: "git-config",
                    why: "git reads it for a linked worktree, which may lie outside the workspace",
                });
            }
        }
        if is(first, "modules")
            && let Some(hit) = tail
                .iter()
                .skip(2)
                .find(|p| is(p, "hooks") || CONTROL_FILES.iter().any(|f| is(p, f)))
        {
            return Some(Indirection {
                entry: if is(hit, "hooks") {
                    "git-hooks"
                } else {
                    "git-config"
                },
                why: "git reads it for a submodule",
            });
        }
    }
    None
}

fn control_reason(name: &OsStr) -> Indirection {
    if is(name, "commondir") || is(name, "gitdir") {
        Indirection {
            entry: "git-config",
            why: "it sends git to another directory, whose configuration and hooks git then uses",
        }
    } else {
        Indirection {
            entry: "git-config",
            why: "git reads it on every command, and it can name programs to run",
        }
    }
}

/// The names of a relative path's components (`.` and `..` left out).
pub(crate) fn names(rel: &Path) -> Vec<&OsStr> {
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect()
}

fn is(part: &OsStr, name: &str) -> bool {
    part.as_encoded_bytes()
        .eq_ignore_ascii_case(name.as_bytes())
}

/// Whether the view shows a directory git takes for a repository at `dir`.
pub(crate) fn is_git_dir(view: &dyn TreeView, dir: &Location) -> bool {
    let at = |name: &str| Location {
        root: dir.root,
        rel: dir.rel.join(name),
    };
    matches!(
        view.kind(&at("HEAD")),
        Some(EntryKind::File | EntryKind::Symlink)
    ) && (view.kind(&at("objects")) == Some(EntryKind::Dir)
        || view.kind(&at("commondir")).is_some())
}

/// A place the host's repositories (or the user's configuration) make git read or run, and why.
#[derive(Debug, Clone)]
struct Control {
    path: PathBuf,
    /// The host-run configuration entry; `None`: refused whatever anyone answers (what git would
    /// run there cannot be known).
    entry: Option<&'static str>,
    why: &'static str,
}

/// Why a place the configuration names as a program is host-run.
const NAMED_BY_CONFIG: &str = "git's configuration names it as a program git runs";

/// Why the directory `core.hooksPath` names is host-run.
const HOOKS_PATH: &str = "git's configuration (`core.hooksPath`) makes it the hooks directory, and git runs the hooks in it";

/// Why a file a configuration includes is host-run.
const INCLUDED: &str = "git's configuration includes it (`include.path` or `includeIf`), so git reads it as configuration on every command, and it can name programs to run";

/// Why a repository's own configuration files are host-run.
const OWN_CONFIG: &str = "it is the repository's own configuration, which git reads on every command and which can name programs to run";

/// Why a repository's own hooks directory is host-run.
const OWN_HOOKS: &str = "it is the repository's own hooks directory, and git runs the hooks in it";

/// Why everything in a repository whose configuration cannot be read is protected.
const UNREADABLE: &str = "it lies in a repository whose `.git` or configuration cannot be read, so what git would run cannot be known; make them readable by the user running spear";

/// How deep git follows includes (git's own limit).
const MAX_INCLUDE_DEPTH: usize = 10;

/// What the system's and the user's configuration make git read or run, for every repository.
#[derive(Debug, Default)]
struct Global {
    /// Places by their absolute path: included files, programs named by an absolute or `~/`
    /// path.
    controls: Vec<Control>,
    /// Places relative to each repository's worktree: programs and `core.hooksPath` named by a
    /// relative path.
    relative: Vec<(String, &'static str, &'static str)>,
    /// The configuration exists and cannot be read or parsed.
    unreadable: bool,
}

/// The configuration and hooks of the host's repositories, read once per judge.
#[derive(Debug)]
pub struct GitIndirections {
    home: Option<PathBuf>,
    xdg_config: Option<PathBuf>,
    system_config: PathBuf,
    /// Entries the operator lets through without asking (`[policy] allow_host_config`).
    allowed: Vec<String>,
    /// Per directory: the control paths of every repository whose worktree holds it.
    repos: Mutex<HashMap<PathBuf, Arc<Vec<Control>>>>,
    global: std::sync::OnceLock<Global>,
}

impl GitIndirections {
    /// A judge that reads the user's global configuration under `home` (and `xdg_config`, else
    /// `home/.config`) and the system's `/etc/gitconfig`, and lets through without asking the
    /// host-run configuration entries in `allowed`.
    pub fn new(home: Option<PathBuf>, xdg_config: Option<PathBuf>, allowed: Vec<String>) -> Self {
        GitIndirections {
            home,
            xdg_config,
            system_config: PathBuf::from("/etc/gitconfig"),
            allowed,
            repos: Mutex::new(HashMap::new()),
            global: std::sync::OnceLock::new(),
        }
    }

    /// The host-run refusal of `shown` for `entry`, or `None` when the operator allows it.
    fn host_run(&self, shown: &str, entry: &'static str, why: &str) -> Option<Refusal> {
        (!self.allowed.iter().any(|a| a == entry))
            .then(|| Refusal::host_run_config(shown, entry, why))
    }

    /// Refuses `change` at `loc` when it touches one of git's indirections (see the module's
    /// doc): a host-run configuration refusal ([`Refusal::is_askable`]: a person's approval may
    /// let it through) unless the operator allows its entry, or a protected-entry refusal where
    /// what git would run cannot be known. `view` shows the workspace as it will be (the staged
    /// changes over the host), `host` as it is (the same view for a change that is not staged).
    pub fn check(
        &self,
        ws: &Workspace,
        view: &dyn TreeView,
        host: &dyn TreeView,
        loc: &Location,
        change: ChangeKind<'_>,
    ) -> Result<(), Refusal> {
        let inert = is_inert(view, host, loc, change);
        self.judge(ws, view, host, loc, change, inert)
    }

    /// [`GitIndirections::check`] for a file about to be written whose content is not known yet
    /// (a redirection, a file tool's write judged before it is made): nothing is inert, so a
    /// repository's configuration is host-run whatever it holds now.
    pub fn check_unknown_write(
        &self,
        ws: &Workspace,
        host: &dyn TreeView,
        loc: &Location,
    ) -> Result<(), Refusal> {
        self.judge(ws, host, host, loc, ChangeKind::File, false)
    }

    fn judge(
        &self,
        ws: &Workspace,
        view: &dyn TreeView,
        host: &dyn TreeView,
        loc: &Location,
        change: ChangeKind<'_>,
        inert: bool,
    ) -> Result<(), Refusal> {
        let shown = ws.label(loc);
        let refuse = |ind: Indirection| match self.host_run(&shown, ind.entry, ind.why) {
            Some(r) => Err(r),
            None => Ok(()),
        };
        // A linked worktree's own pointers, back to the repository the host already has, send
        // git nowhere new (`git worktree add wt`): rules 1 and 2 do not apply to them.
        let own_worktree = crate::git_worktree::own_worktree_link(ws, view, host, loc, change);
        // Rule 1, by name (a hooks directory being made included).
        if !inert
            && !own_worktree
            && let Some(ind) = control_by_name(&loc.rel)
        {
            refuse(ind)?;
        }
        if let (Some(leaf), ChangeKind::File | ChangeKind::Symlink { .. }) =
            (loc.rel.file_name(), change)
            && is(leaf, ".git")
            && !own_worktree
        {
            refuse(Indirection {
                entry: "git-config",
                why: "a `.git` that is not a directory sends git to another repository, whose configuration and hooks git then uses",
            })?;
        }
        // Rule 2, by what the view shows around it.
        if !inert
            && !own_worktree
            && let Some(ind) = in_other_git_dir(view, host, loc, change)
        {
            refuse(ind)?;
        }
        // Rule 3, what the host's repositories and the user's configuration name. An inert
        // change is judged by its content, not by being in the repository's own files.
        for control in self.named_by_host(ws, view, loc, inert) {
            match control.entry {
                None => return Err(Refusal::protected_entry(shown, control.why)),
                Some(entry) => {
                    if let Some(r) = self.host_run(&shown, entry, control.why) {
                        return Err(r);
                    }
                }
            }
        }
        // Rule 4, a link judged by where it points.
        if let ChangeKind::Symlink { target } = change
            && let Some(pointed) = link_destination(ws, loc, target)
        {
            let through = self.judge(ws, view, host, &pointed, ChangeKind::File, false);
            match through {
                Err(Refusal::HostRunConfig { entry, why, .. }) => {
                    return Err(Refusal::host_run_config(
                        shown,
                        entry,
                        format!("it is a link to {}, and {why}", ws.label(&pointed)),
                    ));
                }
                Err(r) => {
                    return Err(Refusal::protected_entry(
                        shown,
                        format!(
                            "it is a link to {}, and {}",
                            ws.label(&pointed),
                            r.message()
                        ),
                    ));
                }
                Ok(()) => {}
            }
        }
        Ok(())
    }

    /// Rule 3: the controls that hold `loc`: those of every host repository whose worktree
    /// holds it, those the user's and the system's configuration name, and the relative ones of
    /// that configuration under every repository `view` shows around it (one the command is
    /// making included). `inert`: the change is inert ([`is_inert`]), so the repository's own
    /// configuration file at exactly this path and its own hooks directory do not count (what
    /// the configuration names still does). Hard controls (`entry` `None`) first.
    fn named_by_host(
        &self,
        ws: &Workspace,
        view: &dyn TreeView,
        loc: &Location,
        inert: bool,
    ) -> Vec<Control> {
        let host = ws.host_path(loc);
        let Some(parent) = host.parent() else {
            return Vec::new();
        };
        let real = parent
            .canonicalize()
            .ok()
            .and_then(|p| host.file_name().map(|n| p.join(n)));
        let holds = |c: &Control| {
            host.starts_with(&c.path) || real.as_ref().is_some_and(|r| r.starts_with(&c.path))
        };
        // An inert change (an inert configuration rewrite, a sample hook, an empty hooks
        // directory) is judged by what it is, not by lying in the repository's own files.
        let this_file = |c: &Control| {
            inert
                && ((c.why == OWN_CONFIG
                    && (c.path == host || real.as_ref().is_some_and(|r| c.path == *r)))
                    || c.why == OWN_HOOKS)
        };
        let global = self.global();
        let mut found: Vec<Control> = self
            .controls_above(parent)
            .iter()
            .chain(&global.controls)
            .filter(|c| holds(c) && !this_file(c))
            .cloned()
            .collect();
        // The user's relative programs and hooks directory, under every repository around `loc`
        // as the command leaves the workspace.
        if !global.relative.is_empty() {
            let mut dir = loc.rel.parent();
            while let Some(d) = dir {
                let git = Location {
                    root: loc.root,
                    rel: d.join(".git"),
                };
                if view.kind(&git).is_some() {
                    for (path, entry, why) in &global.relative {
                        let named = normalise(&d.join(path));
                        if loc.rel.starts_with(&named) {
                            found.push(Control {
                                path: ws.host_path(&Location {
                                    root: loc.root,
                                    rel: named,
                                }),
                                entry: Some(entry),
                                why,
                            });
                        }
                    }
                }
                dir = d.parent();
            }
        }
        found.sort_by_key(|c| c.entry.is_some());
        found
    }

    /// The control paths of every repository whose worktree holds `dir` (`dir` itself or one of
    /// its ancestors holds a `.git`), memoised per directory so that a commit of many files in
    /// one tree reads each repository once.
    fn controls_above(&self, dir: &Path) -> Arc<Vec<Control>> {
        if let Some(found) = self.lock_repos().get(dir) {
            return Arc::clone(found);
        }
        let mut controls = self.read_repo(dir);
        if let Some(parent) = dir.parent() {
            controls.extend(self.controls_above(parent).iter().cloned());
        }
        let controls = Arc::new(controls);
        self.lock_repos()
            .insert(dir.to_path_buf(), Arc::clone(&controls));
        controls
    }

    fn lock_repos(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<Vec<Control>>>> {
        self.repos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The system's and the user's configuration files, in git's order.
    fn global_configs(&self) -> Vec<PathBuf> {
        let mut configs = vec![self.system_config.clone()];
        if let Some(home) = &self.home {
            configs.push(home.join(".gitconfig"));
        }
        if let Some(x) = self
            .xdg_config
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")))
        {
            configs.push(x.join("git/config"));
        }
        configs
    }

    /// What the system's and the user's configuration name, read once.
    fn global(&self) -> &Global {
        self.global.get_or_init(|| {
            let Ok(closure) = config_closure(&self.global_configs(), self.home.as_deref()) else {
                return Global {
                    unreadable: true,
                    ..Global::default()
                };
            };
            let mut global = Global::default();
            let mut absolute = Vec::new();
            for include in &closure.includes {
                push_spellings(&mut absolute, include);
            }
            global
                .controls
                .extend(absolute.into_iter().map(|path| Control {
                    path,
                    entry: Some("git-include"),
                    why: INCLUDED,
                }));
            for named in closure.programs() {
                let (entry, why) = named.entry_and_why();
                if named.path.starts_with('/') || named.path.starts_with("~/") {
                    let mut paths = Vec::new();
                    push_spellings(
                        &mut paths,
                        &expand(&named.path, self.home.as_deref(), Path::new("/")),
                    );
                    global
                        .controls
                        .extend(paths.into_iter().map(|path| Control {
                            path,
                            entry: Some(entry),
                            why,
                        }));
                } else {
                    global.relative.push((named.path, entry, why));
                }
            }
            global
        })
    }

    /// The controls of the repository whose worktree is `worktree`, if it holds a `.git`.
    ///
    /// Fails closed: a `.git` or a configuration that exists and cannot be read or parsed makes
    /// the whole worktree a control (what it names cannot be known, so nothing in it is written).
    fn read_repo(&self, worktree: &Path) -> Vec<Control> {
        let dot_git = worktree.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            return Vec::new();
        };
        let unreadable = || {
            vec![Control {
                path: worktree.to_path_buf(),
                entry: None,
                why: UNREADABLE,
            }]
        };
        let git_dir = if meta.is_file() {
            let Ok(text) = std::fs::read_to_string(&dot_git) else {
                return unreadable();
            };
            match text.trim().strip_prefix("gitdir:") {
                Some(p) => worktree.join(p.trim()),
                None => return Vec::new(),
            }
        } else {
            dot_git.clone()
        };
        let common = std::fs::read_to_string(git_dir.join("commondir"))
            .ok()
            .map_or_else(|| git_dir.clone(), |c| git_dir.join(c.trim()));
        let mut controls = Vec::new();
        let mut own = |names: &[&str], why: &'static str, entry: &'static str| {
            let mut paths = Vec::new();
            for base in [&git_dir, &common] {
                for name in names {
                    push_spellings(&mut paths, &base.join(name));
                }
            }
            controls.extend(paths.into_iter().map(|path| Control {
                path,
                entry: Some(entry),
                why,
            }));
        };
        own(&["hooks"], OWN_HOOKS, "git-hooks");
        own(
            &["config", "config.worktree", "commondir"],
            OWN_CONFIG,
            "git-config",
        );
        let global = self.global();
        if global.unreadable {
            return unreadable();
        }
        let repo_configs = [common.join("config"), git_dir.join("config.worktree")];
        let Ok(closure) = config_closure(&repo_configs, self.home.as_deref()) else {
            return unreadable();
        };
        let mut included = Vec::new();
        for include in &closure.includes {
            push_spellings(&mut included, include);
        }
        controls.extend(included.into_iter().map(|path| Control {
            path,
            entry: Some("git-include"),
            why: INCLUDED,
        }));
        let named = closure
            .programs()
            .into_iter()
            .map(|n| {
                let (entry, why) = n.entry_and_why();
                (n.path, entry, why)
            })
            .chain(global.relative.iter().cloned());
        for (program, entry, why) in named {
            let mut paths = Vec::new();
            push_spellings(
                &mut paths,
                &expand(&program, self.home.as_deref(), worktree),
            );
            controls.extend(paths.into_iter().map(|path| Control {
                path,
                entry: Some(entry),
                why,
            }));
        }
        controls
    }
}

/// A path a configuration names as a program, or as the hooks directory.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    path: String,
    hooks_dir: bool,
}

impl Named {
    fn entry_and_why(&self) -> (&'static str, &'static str) {
        if self.hooks_dir {
            ("git-hooks", HOOKS_PATH)
        } else {
            ("git-program", NAMED_BY_CONFIG)
        }
    }
}

/// Configuration files and everything they include, transitively.
#[derive(Debug, Default)]
struct Closure {
    /// The entries of every file that exists, includes not followed (each file once).
    entries: Vec<Entry>,
    /// Every file an include names, whatever its condition, whether it exists or not (absolute,
    /// as git resolves it: `~/` under home, relative to the including file's directory).
    includes: Vec<PathBuf>,
}

impl Closure {
    /// The paths program-valued keys (and `core.hooksPath`) name.
    fn programs(&self) -> Vec<Named> {
        let mut out = Vec::new();
        for (name, sub, key, value) in &self.entries {
            let wanted = PROGRAM_KEYS
                .iter()
                .any(|k| key_matches(k, name, sub.is_some(), key));
            if !wanted {
                continue;
            }
            let hooks_dir = name == "core" && sub.is_none() && key == "hookspath";
            let Some(word) = first_path_word(value, hooks_dir) else {
                continue;
            };
            // husky's layout: `core.hooksPath = <dir>/_`, whose stubs run `<dir>/<hook>`; the
            // hooks are the parent's files, however the directory is named.
            let husky_parent = hooks_dir
                .then(|| {
                    word.trim_end_matches('/')
                        .strip_suffix("/_")
                        .map(str::to_owned)
                })
                .flatten();
            for path in std::iter::once(word).chain(husky_parent) {
                let named = Named { path, hooks_dir };
                if !out.contains(&named) {
                    out.push(named);
                }
            }
        }
        out
    }
}

/// Reads `configs` and follows their includes (every `include.path` and `includeIf.*.path`,
/// whatever the condition: a condition can become true later, on another branch or in another
/// directory), up to git's depth. A file that does not exist is skipped, as git skips it; one
/// that exists and cannot be read or parsed is an error (the caller fails closed).
fn config_closure(configs: &[PathBuf], home: Option<&Path>) -> Result<Closure, ()> {
    let mut closure = Closure::default();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut queue: Vec<(PathBuf, usize)> = configs.iter().map(|c| (c.clone(), 0)).collect();
    while let Some((file, depth)) = queue.pop() {
        if seen.contains(&file) {
            continue;
        }
        seen.push(file.clone());
        let bytes = match std::fs::read(&file) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => continue,
            Err(_) => return Err(()),
        };
        let entries = config_entries(&bytes).ok_or(())?;
        let dir = file.parent().unwrap_or(Path::new("/"));
        for (name, _, key, value) in &entries {
            if (name == "include" || name == "includeif") && key == "path" {
                let Some(target) = include_target(value, dir, home) else {
                    continue;
                };
                if !closure.includes.contains(&target) {
                    closure.includes.push(target.clone());
                }
                if depth < MAX_INCLUDE_DEPTH {
                    queue.push((target, depth + 1));
                }
            }
        }
        closure.entries.extend(entries);
    }
    Ok(closure)
}

/// Where an include's `path` sends git (`git help config`, "Includes"): `~/` under home, a
/// relative path from the directory of the file that holds the include. `:(optional)` is
/// dropped. `None` for what cannot be placed (`%(prefix)/`, `~user/`, an empty value).
fn include_target(value: &str, dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let v = value.trim();
    let v = v.strip_prefix(":(optional)").unwrap_or(v);
    if v.is_empty() || v.starts_with("%(prefix)") {
        return None;
    }
    if let Some(rest) = v.strip_prefix("~/") {
        return home.map(|h| normalise(&h.join(rest)));
    }
    if v.starts_with('~') {
        return None;
    }
    Some(normalise(&dir.join(v)))
}

/// Whether `change` puts something git reads but that cannot make it run anything: a
/// configuration of inert keys only ([`is_inert_config`]) or, over one the host has, a rewrite
/// that adds, changes or removes only inert entries ([`config_change_is_inert`]), a sample hook
/// written or removed (git runs a hook by its exact name, never `pre-commit.sample`), or an empty
/// hooks directory being made. This is what
/// `git init` and `git clone` write; everything else of rules 1 and 2 is refused.
pub fn is_inert(
    view: &dyn TreeView,
    host: &dyn TreeView,
    loc: &Location,
    change: ChangeKind<'_>,
) -> bool {
    let Some(leaf) = loc.rel.file_name() else {
        return false;
    };
    let in_hooks = loc
        .rel
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|p| is(p, "hooks"));
    match change {
        // An empty hooks directory made; a hooks directory removed (what it holds is judged on
        // its own, each hook by its name).
        ChangeKind::Dir | ChangeKind::Remove if is(leaf, "hooks") => true,
        // git runs a hook by its exact name: a sample is never run, written or removed.
        ChangeKind::File | ChangeKind::Remove if in_hooks => {
            leaf.as_encoded_bytes().ends_with(b".sample")
        }
        ChangeKind::File if is(leaf, "config") || is(leaf, "config.worktree") => {
            let Some(staged) = view.read_head(loc, 1 << 20).filter(|b| b.len() < 1 << 20) else {
                return false;
            };
            match host.kind(loc) {
                None => is_inert_config(&staged),
                Some(EntryKind::File) => host
                    .read_head(loc, 1 << 20)
                    .filter(|b| b.len() < 1 << 20)
                    .is_some_and(|old| config_change_is_inert(&staged, Some(&old))),
                Some(_) => false,
            }
        }
        _ => false,
    }
}

/// Rule 2: a control file of a directory git takes for a repository, or what would make
/// git take a directory holding one for a repository.
fn in_other_git_dir(
    view: &dyn TreeView,
    host: &dyn TreeView,
    loc: &Location,
    change: ChangeKind<'_>,
) -> Option<Indirection> {
    let parts = names(&loc.rel);
    let dir_of = |n: usize| Location {
        root: loc.root,
        rel: parts[..n].iter().collect(),
    };
    let leaf = parts.last()?;
    let n = parts.len();
    if CONTROL_FILES.iter().any(|f| is(leaf, f)) && is_git_dir(view, &dir_of(n - 1)) {
        return Some(control_reason(leaf));
    }
    if let Some(k) = parts.iter().position(|p| is(p, "hooks"))
        && is_git_dir(view, &dir_of(k))
    {
        return Some(HOOKS);
    }
    let makes_repo = ["HEAD", "objects", "refs", "commondir"]
        .iter()
        .any(|m| is(leaf, m));
    if makes_repo && !matches!(change, ChangeKind::Remove) {
        let dir = dir_of(n - 1);
        let holds = |name: &str| {
            host.kind(&Location {
                root: dir.root,
                rel: dir.rel.join(name),
            })
            .is_some()
        };
        if (holds("config") || holds("hooks")) && !is_git_dir(host, &dir) {
            return Some(Indirection {
                entry: "git-config",
                why: "it would make git take a directory that already holds a configuration or hooks for a repository",
            });
        }
    }
    None
}

/// The first word of a program value when it names a path (`./scripts/x`, `~/bin/y`,
/// `/opt/z`); a bare name (`less`, `vim`) is found on the host's PATH, not in the workspace.
/// `core.hooksPath` is a directory, always a path.
fn first_path_word(value: &str, is_dir: bool) -> Option<String> {
    let v = value.trim().trim_start_matches('!').trim();
    if is_dir {
        return (!v.is_empty()).then(|| v.to_owned());
    }
    let word: String = if let Some(rest) = v.strip_prefix('"') {
        rest.chars().take_while(|c| *c != '"').collect()
    } else if let Some(rest) = v.strip_prefix('\'') {
        rest.chars().take_while(|c| *c != '\'').collect()
    } else {
        v.chars().take_while(|c| !c.is_whitespace()).collect()
    };
    word.contains('/').then_some(word)
}

/// `path` as git would find it: `~/` under home, relative to the worktree.
fn expand(path: &str, home: Option<&Path>, worktree: &Path) -> PathBuf {
    if let (Some(rest), Some(home)) = (path.strip_prefix("~/"), home) {
        return home.join(rest);
    }
    worktree.join(path)
}

/// Adds `path` as it is spelled, normalised, and resolved through links on the host.
fn push_spellings(out: &mut Vec<PathBuf>, path: &Path) {
    let normal = normalise(path);
    if let Ok(real) = std::fs::canonicalize(&normal) {
        if !out.contains(&real) {
            out.push(real);
        }
    } else if let (Some(parent), Some(leaf)) = (normal.parent(), normal.file_name())
        && let Ok(real) = std::fs::canonicalize(parent)
    {
        let p = real.join(leaf);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if !out.contains(&normal) {
        out.push(normal);
    }
}

/// Where a link at `loc` to `target` points, when that is in a root (lexically; an absolute
/// target is read as the sandbox sees it, a root's mount path).
fn link_destination(ws: &Workspace, loc: &Location, target: &OsStr) -> Option<Location> {
    let target = Path::new(target);
    if target.is_absolute() {
        return ws.locate(target);
    }
    let mut rel = loc.rel.parent()?.to_path_buf();
    for c in target.components() {
        match c {
            Component::Normal(n) => rel.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if !rel.pop() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(Location {
        root: loc.root,
        rel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_name() {
        for (rel, protected) in [
            (".git/config", true),
            (".git/config.worktree", true),
            (".git/commondir", true),
            (".git/hooks/pre-commit", true),
            (".git/hooks", true),
            (".GIT/Hooks/post-checkout", true),
            ("sub/.git/config", true),
            (".git/worktrees/wt/commondir", true),
            (".git/worktrees/wt/gitdir", true),
            (".git/worktrees/wt/config.worktree", true),
            (".git/worktrees/wt/HEAD", false),
            (".git/worktrees/wt/index", false),
            (".git/modules/lib/config", true),
            (".git/modules/lib/hooks/pre-commit", true),
            (".git/modules/a/b/config", true),
            (".git/modules/lib/modules/inner/config", true),
            (".git/modules/lib/HEAD", false),
            (".git/modules/lib/objects/ab/cd", false),
            (".git/index", false),
            (".git/HEAD", false),
            (".git/ORIG_HEAD", false),
            (".git/objects/ab/cdef", false),
            (".git/refs/heads/main", false),
            (".git/refs/heads/config", false),
            (".git/logs/HEAD", false),
            (".git/info/exclude", false),
            (".git/COMMIT_EDITMSG", false),
            (".git/config.lock", false),
            ("src/config", false),
            ("hooks/pre-commit", false),
        ] {
            assert_eq!(
                control_by_name(Path::new(rel)).is_some(),
                protected,
                "{rel}"
            );
        }
    }

    #[test]
    fn inert_configurations() {
        let init = b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
        assert!(is_inert_config(init));
        let clone = b"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.invalid/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n[user]\n\temail = a@b\n";
        assert!(is_inert_config(clone));
        for bad in [
            &b"[core]\n\tfsmonitor = touch x\n"[..],
            b"[core]\n\thooksPath = .h\n",
            b"[include]\n\tpath = other\n",
            b"[includeIf \"gitdir:/\"]\n\tpath = other\n",
            b"[alias]\n\tst = !sh -c x\n",
            b"[filter \"x\"]\n\tclean = x\n",
            b"[remote \"o\"]\n\turl = ext::sh -c x\n",
            b"[remote \"o\"]\n\tuploadpack = x\n",
            b"[core]\n\tworktree = /elsewhere\n",
            b"[user\n\tname = x\n",
            b"[remote]\n\turl = x\n",
        ] {
            assert!(!is_inert_config(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn key_effects() {
        use KeyEffect::{Inert as I, RunsCode as R, Unknown as U};
        for (key, value, effect) in [
            ("user.name", Some("x"), I),
            ("User.Email", Some("x@y"), I),
            ("user.signingkey", Some("k"), I),
            ("branch.main.remote", Some("origin"), I),
            ("branch.feature/x.merge", Some("refs/heads/x"), I),
            ("remote.origin.url", Some("https://example.com/x.git"), I),
            ("remote.origin.url", Some("ext::sh -c x"), R),
            ("remote.origin.url", None, I),
            ("core.autocrlf", Some("input"), I),
            ("init.defaultBranch", Some("main"), I),
            ("color.ui", Some("never"), I),
            ("core.hooksPath", Some(".husky"), R),
            ("core.fsmonitor", Some("x"), R),
            ("core.pager", Some("less"), R),
            ("core.editor", Some("vim"), R),
            ("core.sshCommand", Some("ssh"), R),
            ("filter.lfs.smudge", Some("x"), R),
            ("diff.x.textconv", Some("x"), R),
            ("alias.st", Some("status"), R),
            ("alias.x", Some("!sh"), R),
            ("credential.helper", Some("store"), R),
            ("credential.https://x.helper", Some("store"), R),
            ("include.path", Some("x"), R),
            ("includeIf.gitdir:/x/.path", Some("y"), R),
            ("remote.origin.uploadpack", Some("x"), R),
            ("core.worktree", Some("/x"), U),
            ("nodot", Some("x"), U),
            ("user.", Some("x"), U),
        ] {
            assert_eq!(key_effect(key, value), effect, "{key} = {value:?}");
        }
    }

    #[test]
    fn config_changes() {
        let hooks = b"[core]\n\thooksPath = .husky\n";
        let plus_user = b"[core]\n\thooksPath = .husky\n[user]\n\tname = x\n";
        assert!(config_change_is_inert(plus_user, Some(hooks)));
        assert!(config_change_is_inert(hooks, Some(hooks)));
        assert!(!config_change_is_inert(
            b"[core]\n\thooksPath = y\n",
            Some(hooks)
        ));
        assert!(
            !config_change_is_inert(b"[user]\n\tname = x\n", Some(hooks)),
            "removed"
        );
        assert!(
            !config_change_is_inert(plus_user, Some(b"[core\n")),
            "host unparsable"
        );
        assert!(config_change_is_inert(b"[user]\n\tname = x\n", None));
        assert!(!config_change_is_inert(hooks, None));
        // A duplicate of a code-running entry is a new one.
        let twice = b"[core]\n\thooksPath = .husky\n\thooksPath = .husky\n";
        assert!(!config_change_is_inert(twice, Some(hooks)));
    }

    /// A repository whose configuration cannot be parsed protects everything in it (what it
    /// names cannot be known); a readable one protects only what it names.
    #[test]
    fn an_unreadable_configuration_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let ws = Workspace::open(&spear_workspace::WorkspaceConfig::new(&root)).unwrap();
        let fs = ws.fs().unwrap();
        let file = Location {
            root: 0,
            rel: PathBuf::from("src/main.rs"),
        };
        let judge = |config: &str| {
            std::fs::write(root.join(".git/config"), config).unwrap();
            GitIndirections::new(None, None, Vec::new())
                .check(&ws, &fs, &fs, &file, ChangeKind::File)
                .map_err(|r| r.message())
        };
        let err = judge("[core\n\tbare = false\n").unwrap_err();
        assert!(err.contains("cannot be read"), "{err}");
        // Positive control: the same repository with a configuration git can read.
        assert_eq!(judge("[core]\n\tbare = false\n"), Ok(()));
        let hooks = judge("[core]\n\thooksPath = src\n").unwrap_err();
        assert!(hooks.contains("the hooks directory"), "{hooks}");
    }

    /// A view of the host with entries a command added (a repository it made).
    struct WithStaged<'a> {
        host: &'a spear_workspace::WorkspaceFs,
        added: Vec<PathBuf>,
    }

    impl TreeView for WithStaged<'_> {
        fn kind(&self, loc: &Location) -> Option<EntryKind> {
            if self.added.contains(&loc.rel) {
                return Some(EntryKind::Dir);
            }
            TreeView::kind(self.host, loc)
        }
        fn link_target(&self, loc: &Location) -> Option<std::ffi::OsString> {
            TreeView::link_target(self.host, loc)
        }
        fn read_head(&self, loc: &Location, limit: usize) -> Option<Vec<u8>> {
            TreeView::read_head(self.host, loc, limit)
        }
    }

    /// Rule 3, row by row: what a repository's configuration includes (transitively, whatever
    /// the condition, existing or not), what the user's configuration includes and names (its
    /// relative names under every repository, one the command makes too), and husky's layout,
    /// each host-run with its entry; the operator's allowance lets an entry through; a file no
    /// configuration names is ordinary (the positive control that the judge lets writes by).
    #[test]
    fn includes_and_what_configurations_name() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, home) = (base.join("ws"), base.join("home"));
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::create_dir_all(root.join("inc")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\thooksPath = tools/hooks/_\n[include]\n\tpath = ../inc/a.cfg\n\
             [includeIf \"onbranch:never\"]\n\tpath = ../never.cfg\n",
        )
        .unwrap();
        std::fs::write(root.join("inc/a.cfg"), "[include]\n\tpath = b.cfg\n").unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            format!(
                "[include]\n\tpath = {}\n[core]\n\tfsmonitor = ./fsmon.sh\n",
                root.join("global.inc").display()
            ),
        )
        .unwrap();
        let ws = Workspace::open(&spear_workspace::WorkspaceConfig::new(&root)).unwrap();
        let fs = ws.fs().unwrap();
        let staged = WithStaged {
            host: &fs,
            added: vec![PathBuf::from("made/.git")],
        };
        let judge = |rel: &str, allowed: Vec<String>| {
            let loc = Location {
                root: 0,
                rel: PathBuf::from(rel),
            };
            match GitIndirections::new(Some(home.clone()), None, allowed).check(
                &ws,
                &staged,
                &fs,
                &loc,
                ChangeKind::File,
            ) {
                Ok(()) => None,
                Err(Refusal::HostRunConfig { entry, .. }) => Some(entry),
                Err(r) => panic!("{rel}: {}", r.message()),
            }
        };
        for (rel, entry) in [
            ("inc/a.cfg", Some("git-include")),
            ("inc/b.cfg", Some("git-include")),
            ("never.cfg", Some("git-include")),
            ("global.inc", Some("git-include")),
            ("fsmon.sh", Some("git-program")),
            ("made/fsmon.sh", Some("git-program")),
            ("tools/hooks/_/h", Some("git-hooks")),
            ("tools/hooks/pre-commit", Some("git-hooks")),
            (".git/config.worktree", Some("git-config")),
            (".git/hooks/pre-push", Some("git-hooks")),
            ("inc/c.cfg", None),
            ("tools/other", None),
            ("src/main.rs", None),
            ("other/fsmon.sh", None),
        ] {
            assert_eq!(judge(rel, Vec::new()).as_deref(), entry, "{rel}");
        }
        assert_eq!(judge("inc/a.cfg", vec!["git-include".into()]), None);
        assert_eq!(
            judge("tools/hooks/pre-commit", vec!["git-include".into()]).as_deref(),
            Some("git-hooks")
        );
    }

    #[test]
    fn include_targets() {
        let home = Path::new("/home/u");
        let dir = Path::new("/ws/.git");
        for (value, target) in [
            ("../inc.cfg", Some("/ws/inc.cfg")),
            ("sub/x", Some("/ws/.git/sub/x")),
            ("/abs/x", Some("/abs/x")),
            ("~/x.cfg", Some("/home/u/x.cfg")),
            (":(optional)~/y", Some("/home/u/y")),
            ("%(prefix)/etc/x", None),
            ("~other/x", None),
            ("", None),
        ] {
            assert_eq!(
                include_target(value, dir, Some(home)),
                target.map(PathBuf::from),
                "{value}"
            );
        }
    }

    #[test]
    fn program_words() {
        assert_eq!(
            first_path_word("./scripts/fsmon.sh --x", false),
            Some("./scripts/fsmon.sh".into())
        );
        assert_eq!(
            first_path_word("!tools/run x", false),
            Some("tools/run".into())
        );
        assert_eq!(first_path_word("less -R", false), None);
        assert_eq!(
            first_path_word("\"bin/my tool\" a", false),
            Some("bin/my tool".into())
        );
        assert_eq!(first_path_word(".husky", true), Some(".husky".into()));
    }

    #[test]
    fn link_destinations() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = Workspace::open(&spear_workspace::WorkspaceConfig::new(&root)).unwrap();
        let loc = Location {
            root: 0,
            rel: PathBuf::from("a/link"),
        };
        let at = |t: &str| link_destination(&ws, &loc, OsStr::new(t)).map(|l| l.rel);
        assert_eq!(
            at("../.git/hooks/pre-commit"),
            Some(PathBuf::from(".git/hooks/pre-commit"))
        );
        assert_eq!(at("../../x"), None);
        assert_eq!(at("/etc/passwd"), None);
        let inside = root.join(".git/../.git/config");
        assert_eq!(
            at(inside.to_str().unwrap()),
            Some(PathBuf::from(".git/config"))
        );
    }
}
