//! Where a command's operands land, and what reading, writing or searching them needs.
//!
//! Every operand is placed twice: by its spelling (lexically, mount spelling translated) and by
//! its resolved spelling (symlinks in the existing prefix followed). The stricter answer wins, so a
//! workspace symlink to `/etc` or `~/.ssh` is judged by where it leads.

use std::path::{Component, Path, PathBuf};

use spear_core::Refusal;
use spear_workspace::Location;

use crate::analysis::{Analysis, Cwd};
use crate::host_read::{HostRead, is_credential_store, names_credential_store};
use crate::shell::walk::is_discard_device;
use crate::shell::word::Arg;
use crate::target_policy::{HEADER_BYTES, generated_header};

/// Where an operand lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// Inside a root.
    Inside(Location, PathBuf),
    /// Outside every root (an absolute host path, normalised).
    Outside(PathBuf),
    /// Known only at run time.
    Unknown,
}

impl Analysis<'_> {
    /// Places an operand by its spelling and by its resolved spelling. `None` after refusing a
    /// credential store named in a pattern.
    ///
    /// A relative `..` is an ordinary path: its lexical spelling is placed as written (`src/..`
    /// is the directory holding `src`), and its resolved spelling is the physical path the kernel
    /// opens from the working directory (through `cd link && cat ../x`, `..` leaves the link's
    /// target). One that leaves every root is judged as the absolute path it names.
    ///
    /// Attack stopped: `cat ../../etc/passwd` and `cp x ../../.bashrc` are judged as
    /// `/etc/passwd` and `~/.bashrc` are, on both spellings.
    pub(crate) fn place(&mut self, arg: &Arg, cwd: &Cwd) -> Option<(Place, Place)> {
        // What a pattern or a run-time word will match is unknown, but a credential store named in
        // its known parts is refused whatever it matches (`link-*/id_rsa`, `$D/.ssh/config`).
        if let Arg::Glob(text) | Arg::Dyn { raw: text, .. } = arg
            && names_credential_store(text)
        {
            self.refuse(Refusal::credential_store(arg.display()));
            return None;
        }
        let text = match arg {
            Arg::Lit(s) => s.clone(),
            Arg::Glob(p) => glob_directory(p),
            Arg::Dyn { prefix, .. } => match prefix.rfind('/') {
                Some(i) => prefix[..=i].to_owned(),
                None => {
                    return Some((Place::Unknown, Place::Unknown));
                }
            },
        };
        if text.is_empty() {
            return Some((Place::Unknown, Place::Unknown));
        }
        let path = Path::new(&text);
        let (absolute, physical) = if path.is_absolute() {
            (path.to_path_buf(), None)
        } else {
            match cwd.join(&text) {
                // The working directory is in host spelling: its unfolded join is what the kernel
                // resolves, `..` after any link on the way.
                Some(p) => (p.clone(), Some(p)),
                None => return Some((Place::Unknown, Place::Unknown)),
            }
        };
        let ws = self.policy.workspace();
        let host = ws.to_host(&absolute);
        let literal = match ws.locate(&host) {
            Some(loc) => Place::Inside(loc, host.clone()),
            None => Place::Outside(normalise(&host)),
        };
        let real = match physical {
            Some(unfolded) if path.components().any(|c| c == Component::ParentDir) => {
                ws.realpath(&unfolded)
            }
            _ => ws.realpath(&host),
        };
        let resolved = match ws.locate(&real) {
            Some(loc) => Place::Inside(loc, real),
            None => Place::Outside(normalise(&real)),
        };
        // A run-time suffix can still climb out of a known directory, but never out of a known
        // outside one, so only the outside answer of a partial word is kept.
        if matches!(arg, Arg::Dyn { .. }) {
            let keep = |p: Place| {
                if matches!(p, Place::Outside(_)) {
                    p
                } else {
                    Place::Unknown
                }
            };
            return Some((keep(literal), keep(resolved)));
        }
        Some((literal, resolved))
    }

    /// A file the command reads.
    pub(crate) fn read_path(&mut self, arg: &Arg, cwd: &Cwd) {
        let Some((literal, resolved)) = self.place(arg, cwd) else {
            return;
        };
        for place in [literal, resolved] {
            if let Place::Outside(p) = place {
                match self.policy.host_view().vet(&p, arg.display()) {
                    HostRead::Visible => {}
                    HostRead::Needs => self.host_read(p),
                    HostRead::Refused(r) => self.refuse(r),
                }
            }
        }
    }

    /// A directory the command searches recursively (`find`, `grep -r`, `rg`): outside the
    /// project it is refused unless the operator named it.
    pub(crate) fn search_root(&mut self, arg: &Arg, cwd: &Cwd) {
        let Some((literal, resolved)) = self.place(arg, cwd) else {
            return;
        };
        for place in [literal, resolved] {
            if let Place::Outside(p) = place {
                match self.policy.host_view().vet_search(&p, arg.display()) {
                    HostRead::Visible => {}
                    HostRead::Needs => self.host_read(p),
                    HostRead::Refused(r) => self.refuse(r),
                }
            }
        }
    }

    /// A file the command creates, changes or removes.
    ///
    /// A write that lands in a root on either spelling is a workspace write, judged by the target
    /// policy on each spelling that is inside (a link under `/tmp` to `.git/hooks` is a write to
    /// `.git/hooks`). A literal path in the sandbox's private places (`/tmp`, `/dev/shm`, a new
    /// entry of the home directory) needs nothing: the host never sees it. Every other write
    /// outside the roots is refused.
    pub(crate) fn write_path(&mut self, arg: &Arg, cwd: &Cwd, program: &str) {
        if arg.lit().is_some_and(is_discard_device) {
            return;
        }
        let Some((literal, resolved)) = self.place(arg, cwd) else {
            return;
        };
        let insides: Vec<(Location, PathBuf)> = [&literal, &resolved]
            .into_iter()
            .filter_map(|p| match p {
                Place::Inside(loc, host) => Some((loc.clone(), host.clone())),
                _ => None,
            })
            .collect();
        let outsides: Vec<PathBuf> = [&literal, &resolved]
            .into_iter()
            .filter_map(|p| match p {
                Place::Outside(path) => Some(path.clone()),
                _ => None,
            })
            .collect();
        let unknown = [&literal, &resolved]
            .into_iter()
            .any(|p| matches!(p, Place::Unknown));
        // A pattern or a run-time suffix can climb out of a private place (`/tmp/.[.]/...`,
        // `/tmp/$x`), so only a literal path is private.
        let literal_word = matches!(arg, Arg::Lit(_));
        let mut held = Vec::new();
        for p in &outsides {
            match self.outside_write(p, arg.display()) {
                Ok(roots) => held.extend(roots.into_iter().map(|r| (p.clone(), r))),
                Err(r) => {
                    self.refuse(r);
                    return;
                }
            }
        }
        // A private directory that holds a root (`tar -x -C /tmp` with the workspace at
        // /tmp/ws): the write may reach the workspace's own entries, so it is a write of the root,
        // judged and granted as one.
        for (dir, root) in held {
            if self.found.mutation.is_none() {
                self.found.mutation = Some(format!(
                    "{program} writes {}, which holds the workspace root {}",
                    dir.display(),
                    root.display()
                ));
            }
            self.write_path(&Arg::Lit(root.to_string_lossy().into_owned()), cwd, program);
        }
        if unknown || (!literal_word && !outsides.is_empty()) {
            self.mutates(format!("{program} writes to a path known only at run time"));
            self.complex(format!(
                "{program} writes to `{}`, a path known only at run time",
                arg.display()
            ));
            return;
        }
        if let Some((_, host)) = insides.first() {
            let targets = &self.policy.config().targets;
            let mut verdict = Ok(());
            let mut host_run = Vec::new();
            for (loc, _) in &insides {
                verdict = verdict.and_then(|()| targets.check(&loc.rel));
                match self.policy.host_config_at(loc) {
                    Ok(()) => {}
                    Err(r) if r.is_askable() => host_run.push(r),
                    Err(r) => verdict = verdict.and(Err(r)),
                }
            }
            if let Some((real_loc, _)) = insides.last() {
                verdict = verdict
                    .and_then(|()| self.policy.check_generated_header(real_loc, arg.display()));
            }
            match verdict {
                Ok(()) => {
                    self.write_inside(host.clone(), program);
                    for r in host_run {
                        self.host_config(r);
                    }
                }
                Err(r) => self.refuse(r),
            }
            return;
        }
        if let Some(p) = outsides.first() {
            self.private_write(program, p);
        }
    }

    /// A write of git's configuration by `git config`: `.git/config`, `.git/config.worktree` or a
    /// submodule's or linked worktree's configuration is an ordinary workspace write when the
    /// keys it sets run nothing (`keys` `None`), and host-run configuration otherwise (`keys`:
    /// why they may run code): asked about, never silent. Any other file is judged as
    /// [`Analysis::write_path`] does.
    pub(crate) fn write_git_config(&mut self, arg: &Arg, cwd: &Cwd, keys: Option<String>) {
        let Some((literal, resolved)) = self.place(arg, cwd) else {
            return;
        };
        let config_file =
            |p: &Place| matches!(p, Place::Inside(loc, _) if is_git_config_file(&loc.rel));
        let (Place::Inside(loc, host), Place::Inside(real, _)) = (&literal, &resolved) else {
            self.write_path(arg, cwd, "git config");
            return;
        };
        if !config_file(&literal) && !config_file(&resolved) {
            self.write_path(arg, cwd, "git config");
            return;
        }
        let targets = &self.policy.config().targets;
        let mut verdict = Ok(());
        let mut host_run = Vec::new();
        for l in [loc, real] {
            verdict = verdict.and_then(|()| targets.check_protected(&l.rel, false));
            if !is_git_config_file(&l.rel)
                && let Some(ind) = crate::git_layout::control_by_name(&l.rel)
            {
                host_run.push(Refusal::host_run_config(
                    self.policy.workspace().label(l),
                    ind.entry,
                    ind.why,
                ));
            }
        }
        if let Some(why) = keys {
            host_run.push(Refusal::host_run_config(
                self.policy.workspace().label(real),
                "git-config",
                why,
            ));
        }
        let allowed = &self.policy.config().allow_host_config;
        host_run.retain(|r| match r {
            Refusal::HostRunConfig { entry, .. } => !allowed.contains(entry),
            _ => true,
        });
        match verdict {
            Ok(()) => {
                self.write_inside(host.clone(), "git config");
                for r in host_run {
                    self.host_config(r);
                }
            }
            Err(r) => self.refuse(r),
        }
    }

    /// Judges a write to `path`, outside every root: `Ok` when it lands in one of the sandbox's
    /// private places.
    ///
    /// In the private home, an entry the host already has (`~/other-checkout/x`) is the host's,
    /// which no write reaches: refused as outside the workspace. A dot entry (`~/.bashrc`,
    /// `~/.gitconfig`, `~/.config/...`) is what programs read as configuration or at start-up, so
    /// later commands of the session would run what it says: refused as protected. Attack
    /// stopped: `sort -o ~/.bashrc`, `>> ~/.profile`, a user unit under `~/.config/systemd`.
    fn outside_write(&self, path: &Path, shown: &str) -> Result<Vec<PathBuf>, Refusal> {
        let view = self.policy.host_view();
        if is_credential_store(path) {
            return Err(Refusal::credential_store(shown));
        }
        let sandbox = view.sandbox();
        let ws = self.policy.workspace();
        let held: Vec<PathBuf> = ws
            .roots()
            .iter()
            .filter(|r| r.host_path().starts_with(path) || r.mount_path().starts_with(path))
            .map(|r| r.host_path().to_path_buf())
            .collect();
        let private = sandbox.is_private(path) && !view.is_named_path(path);
        if path.starts_with("/dev") && !path.starts_with("/dev/shm") && !private {
            return Err(Refusal::kernel_or_device(shown));
        }
        if !private {
            return Err(Refusal::write_outside_roots(shown));
        }
        // The home directory's own rules hold whatever the entry holds (a dot directory holding
        // the workspace is still a dot directory).
        if let Some(home) = &sandbox.home
            && let Ok(rest) = path.strip_prefix(home)
            && let Some(first) = rest.components().next()
        {
            if first.as_os_str().as_encoded_bytes().starts_with(b".") {
                return Err(Refusal::protected_entry(
                    shown,
                    "programs read the home directory's dot entries as configuration or at \
                     start-up, so later commands would run what it says",
                ));
            }
            if view.host_has(&home.join(first)) {
                return Err(Refusal::write_outside_roots(shown));
            }
        }
        // A private directory that holds a root (`rm -rf ~` with the project under the home
        // directory, `tar -x -C /tmp` with it under /tmp): the write may reach the workspace's own
        // entries, so the caller judges it as a write of those roots.
        Ok(held)
    }

    /// An operand of a program whose options spear does not know: it could be read or written.
    /// Absolute paths outside the roots are vetted as reads (so they are bound read-only when
    /// `host:read` is granted, and credential stores are refused); `--opt=/path` values too.
    pub(crate) fn unknown_operand(&mut self, arg: &Arg, cwd: &Cwd) {
        let Arg::Lit(text) = arg else {
            if let Arg::Dyn { prefix, .. } = arg
                && prefix.starts_with('/')
            {
                self.read_path(arg, cwd);
            }
            return;
        };
        let value = match text.split_once('=') {
            Some((opt, v)) if opt.starts_with('-') => v,
            _ => text.as_str(),
        };
        let path = Path::new(value);
        if path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
            self.read_path(&Arg::Lit(value.to_owned()), cwd);
        }
    }
}

/// Whether `rel` is a configuration file git reads for a repository (`.git/config`,
/// `.git/config.worktree`, a submodule's or linked worktree's).
fn is_git_config_file(rel: &Path) -> bool {
    let leaf = rel
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_ascii_lowercase);
    matches!(leaf.as_deref(), Some("config" | "config.worktree"))
        && crate::git_layout::control_by_name(rel).is_some()
}

/// The directory part of a glob pattern that is known: `src/*.rs` is under `src/`.
fn glob_directory(pattern: &str) -> String {
    let cut = pattern.find(['*', '?', '[']).unwrap_or(pattern.len());
    match pattern[..cut].rfind('/') {
        Some(0) => "/".to_owned(),
        Some(i) => pattern[..i].to_owned(),
        None => ".".to_owned(),
    }
}

/// Folds `.` and `..` lexically (`..` at the root stays at the root).
pub(crate) fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

impl crate::CommandPolicy {
    /// Refuses a write to an existing file whose first lines say it is generated, and a write to a
    /// file whose header cannot be read (the check cannot be made, so it refuses).
    pub(crate) fn check_generated_header(
        &self,
        loc: &Location,
        shown: &str,
    ) -> Result<(), Refusal> {
        use spear_workspace::FsError;
        let Some(fs) = self.fs() else {
            return Err(Refusal::unverifiable(
                shown,
                "the workspace roots cannot be opened",
            ));
        };
        match fs.read_head(loc, HEADER_BYTES) {
            Ok(head) => match generated_header(&head) {
                Some(source) => Err(Refusal::generated_file(shown, source)),
                None => Ok(()),
            },
            // A new file, or a directory (removed or written into): there is no header to read.
            Err(
                FsError::NotFound { .. }
                | FsError::IsDirectory { .. }
                | FsError::NotDirectory { .. },
            ) => Ok(()),
            // A check that cannot be made refuses: an unreadable file, one that changed while it
            // was opened, a fifo or device node.
            Err(e) => Err(Refusal::unverifiable(shown, e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_dirs() {
        assert_eq!(glob_directory("src/*.rs"), "src");
        assert_eq!(glob_directory("*.o"), ".");
        assert_eq!(glob_directory("/etc/*"), "/etc");
        assert_eq!(glob_directory("/*"), "/");
        assert_eq!(glob_directory("/etc/x*/y"), "/etc");
        assert_eq!(glob_directory(".git/hooks/*"), ".git/hooks");
    }

    #[test]
    fn normalising() {
        assert_eq!(
            normalise(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(normalise(Path::new("/../..")), PathBuf::from("/"));
    }
}
