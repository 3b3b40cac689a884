//! git's indirections: every file git reads as configuration or hooks, and every file that sends
//! git to another directory where it would read them, by whatever name it is reached
//! (`git help gitrepository-layout`).
//!
//! A change is refused when it touches:
//! 1. by its own name, in any `.git` directory: `config`, `config.worktree`, `commondir`, `gitdir`,
//!    `hooks/`; the same files of every linked worktree (`.git/worktrees/<id>/...`) and of every
//!    submodule (`.git/modules/<name>/...`, at any depth); and a `.git` that is not a directory (a
//!    gitlink file or a link, which redirect git anywhere);
//! 2. the same files of any directory that git takes for a repository (it holds `HEAD` and
//!    `objects/` or `commondir`: a bare repository, or one with an unusual name), and the
//!    `HEAD`, `objects` or `refs` that would make git take a directory already holding a `config`
//!    or `hooks` for one;
//! 3. what the host's own repositories send git to, read from the host before the change: the
//!    hooks directory and configuration files when they are links (`.git/hooks -> ../.githooks`:
//!    the target is protected as well as the name), the directory `core.hooksPath` names (husky's
//!    `.husky/`, lefthook), and the programs the configuration names by a path (`core.fsmonitor`,
//!    `core.pager`, filter and diff drivers, aliases that run a shell command, ...). Every
//!    repository that contains the change counts, inside or above the workspace, with system,
//!    global and repository configuration and their includes;
//! 4. for a link the command creates, what it points at, judged as if it were written there.
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

/// Why git would read a path as configuration or hooks, from its own components (rule 1).
pub fn control_by_name(rel: &Path) -> Option<&'static str> {
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for (i, part) in parts.iter().enumerate() {
        if !is(part, ".git") {
            continue;
        }
        let tail = &parts[i + 1..];
        let Some(first) = tail.first() else {
            continue;
        };
        if is(first, "hooks") {
            return Some("git runs the hooks in it");
        }
        if CONTROL_FILES.iter().any(|f| is(first, f)) {
            return Some(control_reason(first));
        }
        if is(first, "worktrees")
            && let Some(third) = tail.get(2)
            && (is(third, "hooks") || CONTROL_FILES.iter().any(|f| is(third, f)))
        {
            return Some("git reads it for a linked worktree, which may lie outside the workspace");
        }
        if is(first, "modules")
            && let Some(hit) = tail
                .iter()
                .skip(2)
                .find(|p| is(p, "hooks") || CONTROL_FILES.iter().any(|f| is(p, f)))
        {
            let _ = hit;
            return Some("git reads it for a submodule");
        }
    }
    None
}

fn control_reason(name: &OsStr) -> &'static str {
    if is(name, "commondir") || is(name, "gitdir") {
        "it sends git to another directory, whose configuration and hooks git then uses"
    } else {
        "git reads it on every command, and it can name programs to run"
    }
}

fn is(part: &OsStr, name: &str) -> bool {
    part.as_encoded_bytes()
        .eq_ignore_ascii_case(name.as_bytes())
}

/// Whether the view shows a directory git takes for a repository at `dir`.
fn is_git_dir(view: &dyn TreeView, dir: &Location) -> bool {
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

/// A place the host's repositories make git read or run, and why.
#[derive(Debug, Clone)]
struct Control {
    path: PathBuf,
    why: &'static str,
}

/// Why a place the configuration names is protected.
const NAMED_BY_CONFIG: &str =
    "the repository's configuration sends git to it: it holds hooks or programs git runs";

/// Why a repository's own hooks directory and configuration files are protected.
const OWN_FILE: &str =
    "it is the repository's own hooks directory or configuration, which git reads and runs";

/// Why everything in a repository whose configuration cannot be read is protected.
const UNREADABLE: &str = "it lies in a repository whose `.git` or configuration cannot be read, so      what git would run cannot be known; make them readable by the user running spear";

/// The configuration and hooks of the host's repositories, read once per judge.
#[derive(Debug)]
pub struct GitIndirections {
    home: Option<PathBuf>,
    xdg_config: Option<PathBuf>,
    system_config: PathBuf,
    /// Per directory: the control paths of every repository whose worktree holds it.
    repos: Mutex<HashMap<PathBuf, Arc<Vec<Control>>>>,
}

impl GitIndirections {
    /// A judge that reads the user's global configuration under `home` (and `xdg_config`, else
    /// `home/.config`) and the system's `/etc/gitconfig`.
    pub fn new(home: Option<PathBuf>, xdg_config: Option<PathBuf>) -> Self {
        GitIndirections {
            home,
            xdg_config,
            system_config: PathBuf::from("/etc/gitconfig"),
            repos: Mutex::new(HashMap::new()),
        }
    }

    /// Refuses `change` at `loc` when it touches one of git's indirections (see the module's
    /// doc). `view` shows the workspace as it will be (the staged changes over the host), `host`
    /// as it is (the same view for a change that is not staged).
    pub fn check(
        &self,
        ws: &Workspace,
        view: &dyn TreeView,
        host: &dyn TreeView,
        loc: &Location,
        change: ChangeKind<'_>,
    ) -> Result<(), Refusal> {
        let shown = ws.label(loc);
        let inert = is_inert(view, host, loc, change);
        // Rule 1, by name (a hooks directory being made included).
        if !inert && let Some(why) = control_by_name(&loc.rel) {
            return Err(Refusal::protected_entry(shown, why));
        }
        if let (Some(leaf), ChangeKind::File | ChangeKind::Symlink { .. }) =
            (loc.rel.file_name(), change)
            && is(leaf, ".git")
        {
            return Err(Refusal::protected_entry(
                shown,
                "a `.git` that is not a directory sends git to another repository, whose configuration and hooks git then uses",
            ));
        }
        // Rule 2, by what the view shows around it.
        if !inert && let Some(why) = in_other_git_dir(view, host, loc, change) {
            return Err(Refusal::protected_entry(shown, why));
        }
        // Rule 3, what the host's repositories name. A configuration file rewritten with inert
        // entries only is judged by its content, not by being the repository's own file.
        let own_config = inert && matches!(change, ChangeKind::File);
        if let Some(why) = self.named_by_host(ws, loc, own_config) {
            return Err(Refusal::protected_entry(shown, why));
        }
        // Rule 4, a link judged by where it points.
        if let ChangeKind::Symlink { target } = change
            && let Some(pointed) = link_destination(ws, loc, target)
        {
            let through = self.check(ws, view, host, &pointed, ChangeKind::File);
            if let Err(r) = through {
                return Err(Refusal::protected_entry(
                    shown,
                    format!(
                        "it is a link to {}, and {}",
                        ws.label(&pointed),
                        r.message()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Rule 3: the control paths of every host repository whose worktree holds `loc`.
    /// `own_config`: the change is an inert rewrite of a configuration file, so the repository's
    /// own files at exactly this path do not refuse it (what the configuration names still does).
    fn named_by_host(
        &self,
        ws: &Workspace,
        loc: &Location,
        own_config: bool,
    ) -> Option<&'static str> {
        let host = ws.host_path(loc);
        let parent = host.parent()?;
        let real = parent
            .canonicalize()
            .ok()
            .and_then(|p| host.file_name().map(|n| p.join(n)));
        let this_file = |c: &Control| {
            own_config
                && c.why == OWN_FILE
                && (c.path == host || real.as_ref().is_some_and(|r| c.path == *r))
        };
        self.controls_above(parent)
            .iter()
            .find(|control| host.starts_with(&control.path) && !this_file(control))
            .map(|control| control.why)
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
        let mut own = Vec::new();
        for base in [&git_dir, &common] {
            for name in ["hooks", "config", "config.worktree", "commondir"] {
                push_spellings(&mut own, &base.join(name));
            }
        }
        let mut paths = Vec::new();
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
        configs.push(common.join("config"));
        configs.push(git_dir.join("config.worktree"));
        let Ok(programs) = self.programs(&configs, &git_dir) else {
            return unreadable();
        };
        for program in programs {
            let path = expand(&program, self.home.as_deref(), worktree);
            push_spellings(&mut paths, &path);
        }
        own.into_iter()
            .map(|path| Control {
                path,
                why: OWN_FILE,
            })
            .chain(paths.into_iter().map(|path| Control {
                path,
                why: NAMED_BY_CONFIG,
            }))
            .collect()
    }

    /// The paths named by program-valued keys (and `core.hooksPath`) in `configs`, includes
    /// followed.
    /// A configuration that exists and cannot be read or parsed is an error (the caller fails
    /// closed); an include that names no file is skipped, as git skips it.
    fn programs(&self, configs: &[PathBuf], git_dir: &Path) -> Result<Vec<String>, ()> {
        let metas: Vec<gix_config::file::Metadata> = configs
            .iter()
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .map(|p| gix_config::file::Metadata::try_from_path(p, gix_config::Source::Local))
            .collect::<Result<_, _>>()
            .map_err(|_| ())?;
        let mut includes = gix_config::file::includes::Options::follow(
            gix_config::path::interpolate::Context {
                home_dir: self.home.as_deref(),
                ..Default::default()
            },
            gix_config::file::includes::conditional::Context {
                git_dir: Some(git_dir),
                branch_name: None,
            },
        );
        includes.err_on_missing_config_path = false;
        let options = gix_config::file::init::Options {
            includes,
            lossy: true,
            ..Default::default()
        };
        let Some(file) = gix_config::File::from_paths_metadata(metas, options).map_err(|_| ())?
        else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for section in file.sections() {
            let name = section.header().name().to_string().to_ascii_lowercase();
            let sub = section.header().subsection_name().is_some();
            for key in section.body().value_names() {
                let key = key.to_ascii_lowercase();
                let wanted = PROGRAM_KEYS
                    .iter()
                    .any(|k| key_matches(k, &name, sub, &key));
                if !wanted {
                    continue;
                }
                for value in section.body().values(&key) {
                    let text = value.to_string();
                    if let Some(word) = first_path_word(&text, key == "hookspath") {
                        out.push(word);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Whether `change` puts something git reads but that cannot make it run anything: a
/// configuration of inert keys only ([`is_inert_config`]) or, over one the host has, a rewrite
/// that adds, changes or removes only inert entries ([`config_change_is_inert`]), a sample hook (git runs a hook by its
/// exact name, never `pre-commit.sample`), or an empty hooks directory being made. This is what
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
        ChangeKind::Dir => is(leaf, "hooks"),
        ChangeKind::File if in_hooks => leaf.as_encoded_bytes().ends_with(b".sample"),
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
) -> Option<&'static str> {
    let parts: Vec<&OsStr> = loc
        .rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
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
        return Some("git runs the hooks in it");
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
            return Some(
                "it would make git take a directory that already holds a configuration or hooks for a repository",
            );
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
            GitIndirections::new(None, None)
                .check(&ws, &fs, &fs, &file, ChangeKind::File)
                .map_err(|r| r.message())
        };
        let err = judge("[core\n\tbare = false\n").unwrap_err();
        assert!(err.contains("cannot be read"), "{err}");
        // Positive control: the same repository with a configuration git can read.
        assert_eq!(judge("[core]\n\tbare = false\n"), Ok(()));
        let hooks = judge("[core]\n\thooksPath = src\n").unwrap_err();
        assert!(hooks.contains("configuration sends git to it"), "{hooks}");
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
