//! The host's git identity, and nothing else of its git configuration, for the sandbox.
//!
//! `git commit` in a sandbox needs `user.name` and `user.email`. They are read once on the host
//! (`GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL` when set, else the host's system and global
//! configuration files, includes followed) and written to a file of spear's holding only a
//! `[user]` section. The sandbox sees it read-only at [`spear_sandbox::GIT_CONFIG_PATH`], named by
//! `GIT_CONFIG_SYSTEM`: the lowest level of git's configuration, so a repository's own
//! `user.name`, or one the command sets with `git config --global` in its private home, wins.
//!
//! Attack stopped: the host's git configuration running code in the sandbox, or leaking through
//! it. Nothing but the two values is copied: no alias, credential helper, hook path, pager,
//! include or url rewrite of the host's reaches the sandbox, and a value holding a line break
//! (which could start a new section) is dropped.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The host's `user.name` and `user.email`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitIdentity {
    /// `user.name`.
    pub name: Option<String>,
    /// `user.email`.
    pub email: Option<String>,
}

impl GitIdentity {
    /// Reads the identity from the host: `GIT_AUTHOR_NAME` and `GIT_AUTHOR_EMAIL` in `env` first
    /// (they win for the host's own git too), else `user.name` and `user.email` of the host's
    /// configuration files (system, `$XDG_CONFIG_HOME/git/config`, `~/.gitconfig`, or
    /// `GIT_CONFIG_GLOBAL`/`GIT_CONFIG_SYSTEM` as `env` names them).
    pub fn from_host(env: &[(OsString, OsString)], home: &Path) -> GitIdentity {
        let var = |name: &str| {
            env.iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, v)| v.to_str())
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let config = read_config(&config_paths(&var, home), home);
        GitIdentity {
            name: var("GIT_AUTHOR_NAME").or(config.name),
            email: var("GIT_AUTHOR_EMAIL").or(config.email),
        }
    }

    /// The configuration file's text: a `[user]` section with the values that are set and safe to
    /// write; `None` when there is none.
    pub fn config_text(&self) -> Option<String> {
        let mut text = String::from("[user]\n");
        let mut any = false;
        for (key, value) in [("name", &self.name), ("email", &self.email)] {
            if let Some(quoted) = value.as_deref().and_then(quote) {
                let _ = writeln!(text, "\t{key} = {quoted}");
                any = true;
            }
        }
        any.then_some(text)
    }

    /// Writes [`GitIdentity::config_text`] into `dir` (spear's private directory), named by its
    /// content so that sessions with different identities never share a file; `None` when there
    /// is nothing to write or it cannot be written.
    pub fn write(&self, dir: &Path) -> Option<PathBuf> {
        use sha2::Digest;
        let text = self.config_text()?;
        let hash = sha2::Sha256::digest(text.as_bytes());
        let name = hash.iter().take(8).fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        });
        let path = dir.join(format!("identity-{name}"));
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            let tmp = dir.join(format!("identity-{name}.{}", std::process::id()));
            std::fs::write(&tmp, &text).ok()?;
            std::fs::rename(&tmp, &path).ok()?;
        }
        Some(path)
    }
}

/// The host's configuration files as git reads them, lowest precedence first.
fn config_paths(var: &dyn Fn(&str) -> Option<String>, home: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    if var("GIT_CONFIG_NOSYSTEM").is_none() {
        paths.push(
            var("GIT_CONFIG_SYSTEM").map_or_else(|| PathBuf::from("/etc/gitconfig"), PathBuf::from),
        );
    }
    if let Some(global) = var("GIT_CONFIG_GLOBAL") {
        paths.push(PathBuf::from(global));
    } else {
        let xdg = var("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".config"));
        paths.push(xdg.join("git").join("config"));
        paths.push(home.join(".gitconfig"));
    }
    paths
}

/// `user.name` and `user.email` of `paths` (those that exist), includes followed when they can
/// be; a file that cannot be read yields nothing.
fn read_config(paths: &[PathBuf], home: &Path) -> GitIdentity {
    let metas = || {
        paths
            .iter()
            .filter(|p| p.is_file())
            .filter_map(|p| {
                gix_config::file::Metadata::try_from_path(p, gix_config::Source::User).ok()
            })
            .collect::<Vec<_>>()
    };
    let follow = gix_config::file::init::Options {
        includes: gix_config::file::includes::Options::follow_without_conditional(Some(home)),
        ..Default::default()
    };
    let file = gix_config::File::from_paths_metadata(metas(), follow)
        .ok()
        .flatten()
        .or_else(|| {
            gix_config::File::from_paths_metadata(
                metas(),
                gix_config::file::init::Options::default(),
            )
            .ok()
            .flatten()
        });
    let Some(file) = file else {
        return GitIdentity::default();
    };
    let get = |key: &str| {
        file.string(key)
            .map(|v| v.to_string())
            .filter(|v| !v.is_empty())
    };
    GitIdentity {
        name: get("user.name"),
        email: get("user.email"),
    }
}

/// A value as a quoted git configuration string; `None` for one holding a line break or a NUL.
fn quote(value: &str) -> Option<String> {
    if value.contains(['\n', '\r', '\0']) {
        return None;
    }
    Some(format!(
        "\"{}\"",
        value.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(a, b)| ((*a).into(), (*b).into()))
            .collect()
    }

    #[test]
    fn reads_global_files_and_env_wins() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(".gitconfig"),
            "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n[alias]\n\tx = !rm -rf /\n[core]\n\thooksPath = /evil\n",
        )
        .unwrap();
        let host = env(&[("GIT_CONFIG_NOSYSTEM", "1")]);
        let id = GitIdentity::from_host(&host, home.path());
        assert_eq!(id.name.as_deref(), Some("Ada Lovelace"));
        assert_eq!(id.email.as_deref(), Some("ada@example.com"));
        let text = id.config_text().unwrap();
        assert_eq!(
            text,
            "[user]\n\tname = \"Ada Lovelace\"\n\temail = \"ada@example.com\"\n"
        );
        let host = env(&[
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("GIT_AUTHOR_NAME", "Env Name"),
        ]);
        let id = GitIdentity::from_host(&host, home.path());
        assert_eq!(id.name.as_deref(), Some("Env Name"));
        assert_eq!(id.email.as_deref(), Some("ada@example.com"));
    }

    #[test]
    fn xdg_config_and_includes() {
        let home = tempfile::tempdir().unwrap();
        let xdg = home.path().join("xdg");
        std::fs::create_dir_all(xdg.join("git")).unwrap();
        std::fs::write(xdg.join("git/config"), "[user]\n\temail = x@example.com\n").unwrap();
        std::fs::write(home.path().join("id.inc"), "[user]\n\tname = Included\n").unwrap();
        std::fs::write(
            home.path().join(".gitconfig"),
            format!(
                "[include]\n\tpath = {}\n",
                home.path().join("id.inc").display()
            ),
        )
        .unwrap();
        let host = env(&[
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("XDG_CONFIG_HOME", xdg.to_str().unwrap()),
        ]);
        let id = GitIdentity::from_host(&host, home.path());
        assert_eq!(id.name.as_deref(), Some("Included"));
        assert_eq!(id.email.as_deref(), Some("x@example.com"));
    }

    #[test]
    fn nothing_to_write_and_unsafe_values() {
        assert_eq!(GitIdentity::default().config_text(), None);
        let id = GitIdentity {
            name: Some("a\n[core]\n\thooksPath = /x".into()),
            email: Some("q\"uote\\@x".into()),
        };
        assert_eq!(
            id.config_text().unwrap(),
            "[user]\n\temail = \"q\\\"uote\\\\@x\"\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let a = id.write(dir.path()).unwrap();
        let b = id.write(dir.path()).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            std::fs::read_to_string(a).unwrap(),
            id.config_text().unwrap()
        );
    }
}
