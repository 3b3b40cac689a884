//! Where a command's operands land, and what reading, writing or searching them needs.
//!
//! Every operand is placed twice: by its spelling (lexically, mount spelling translated) and by
//! its resolved spelling (symlinks in the existing prefix followed). The stricter answer wins, so a
//! workspace symlink to `/etc` or `~/.ssh` is judged by where it leads.

use std::path::{Component, Path, PathBuf};

use spear_core::Refusal;
use spear_workspace::Location;

use crate::analysis::{Analysis, Cwd};
use crate::host_read::{HostRead, names_credential_store};
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
    /// relative `..`.
    ///
    /// Attack stopped: `cat ../../etc/passwd` and `cp x ../../.bashrc`. A relative `..` in a shell
    /// argument is refused outright; the refusal asks for the absolute path, which is then judged
    /// on its own.
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
        if !path.is_absolute() && path.components().any(|c| c == Component::ParentDir) {
            self.refuse(Refusal::parent_traversal(arg.display()));
            return None;
        }
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            match cwd.join(&text) {
                Some(p) => p,
                None => return Some((Place::Unknown, Place::Unknown)),
            }
        };
        let ws = self.policy.workspace();
        let host = ws.to_host(&absolute);
        let literal = match ws.locate(&host) {
            Some(loc) => Place::Inside(loc, host.clone()),
            None => Place::Outside(normalise(&host)),
        };
        let real = ws.realpath(&host);
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
    pub(crate) fn write_path(&mut self, arg: &Arg, cwd: &Cwd, program: &str) {
        if arg.lit().is_some_and(is_discard_device) {
            return;
        }
        let Some((literal, resolved)) = self.place(arg, cwd) else {
            return;
        };
        match (&literal, &resolved) {
            (Place::Outside(p), _) | (_, Place::Outside(p)) => {
                if p.starts_with("/dev") && !p.starts_with("/dev/shm") {
                    self.refuse(Refusal::kernel_or_device(arg.display()));
                } else {
                    self.refuse(Refusal::write_outside_roots(arg.display()));
                }
            }
            (Place::Inside(loc, host), Place::Inside(real_loc, _)) => {
                let targets = &self.policy.config().targets;
                let verdict = targets
                    .check(&loc.rel)
                    .and_then(|()| targets.check(&real_loc.rel))
                    .and_then(|()| self.policy.check_generated_header(real_loc, arg.display()));
                match verdict {
                    Ok(()) => self.write_inside(host.clone(), program),
                    Err(r) => self.refuse(r),
                }
            }
            _ => {
                self.mutates(format!("{program} writes to a path known only at run time"));
                self.complex(format!(
                    "{program} writes to `{}`, a path known only at run time",
                    arg.display()
                ));
            }
        }
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
