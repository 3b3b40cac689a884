//! What the host offers a sandbox: its system directories, curated `/etc`, toolchains, and the
//! credential stores that must be masked. The only I/O here is looking (stat, readlink); the
//! choices are pure functions of what was seen, tested on their own.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use spear_core::credentials::{home_stores, is_credential_store};

use crate::spec::{Mask, SystemDir};

/// Entries of `/etc` that programs need (`ssl/certs`, not `ssl`, which holds `private/`): users and groups (names for `ls -l`, `id`), name
/// resolution files, the dynamic linker cache, time zone, TLS certificates, alternatives, shells and
/// profile, locale and MIME tables. Never `shadow`, `sudoers`, `ssh`, `npmrc`, `pip.conf`,
/// `gitconfig` or anything else that holds secrets or credentials of the host.
pub const ETC_ENTRIES: &[&str] = &[
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "magic",
    "magic.mime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "perl",
    "profile",
    "protocols",
    "services",
    "shells",
    "ssl/certs",
    "ssl/openssl.cnf",
    "terminfo",
    "timezone",
];

/// Prefixes of `/etc` entries that language runtimes read (`python3.11`, `java-17-openjdk`).
const ETC_PREFIXES: &[&str] = &["python3", "java-"];

/// Top-level directories of a Linux root that hold programs and libraries.
const SYSTEM_NAMES: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// Toolchain homes bound read-only when they exist: the variable, and its default under home.
const TOOLCHAIN_HOMES: &[(&str, Option<&str>)] = &[
    ("CARGO_HOME", Some(".cargo")),
    ("RUSTUP_HOME", Some(".rustup")),
    ("PYENV_ROOT", Some(".pyenv")),
    ("NVM_DIR", Some(".nvm")),
    ("GOROOT", None),
    ("GOPATH", Some("go")),
    ("JAVA_HOME", None),
];

/// Fixed toolchain locations (`/usr/local` is visible through `/usr` already).
const TOOLCHAIN_FIXED: &[&str] = &["/opt"];

/// The host's `/usr` and top-level system directories as they are: a merged-/usr host gets
/// symlinks, an older one gets binds.
pub fn system_dirs(root: &Path) -> Vec<SystemDir> {
    let mut dirs = vec![SystemDir::Bind(PathBuf::from("/usr"))];
    for name in SYSTEM_NAMES {
        let host = root.join(name);
        let inside = Path::new("/").join(name);
        if let Ok(target) = fs::read_link(&host) {
            dirs.push(SystemDir::Symlink {
                path: inside,
                target,
            });
        } else if host.is_dir() {
            dirs.push(SystemDir::Bind(inside));
        }
    }
    dirs
}

/// The curated `/etc` entries that exist on this host.
pub fn etc_entries(etc: &Path) -> Vec<PathBuf> {
    let mut names: Vec<String> = ETC_ENTRIES.iter().map(|s| (*s).to_owned()).collect();
    if let Ok(dir) = fs::read_dir(etc) {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if ETC_PREFIXES.iter().any(|p| name.starts_with(p)) {
                names.push(name);
            }
        }
    }
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| etc.join(n).exists())
        .map(|n| Path::new("/etc").join(n))
        .filter(|p| !is_credential_store(p))
        .collect()
}

/// What toolchain discovery reads from the host.
#[derive(Clone, Copy)]
pub struct ToolchainInputs<'a> {
    /// The operator's PATH.
    pub path: Option<&'a OsStr>,
    /// Reads a host environment variable.
    pub var: &'a dyn Fn(&str) -> Option<PathBuf>,
    /// The user's home.
    pub home: &'a Path,
    /// Workspace roots (host paths): never on PATH, never a toolchain.
    pub roots: &'a [PathBuf],
    /// Whether a path exists as a directory (a stat on the host; a table in tests).
    pub is_dir: &'a dyn Fn(&Path) -> bool,
}

/// The sandbox's PATH and the toolchain directories to bind read-only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Toolchains {
    /// The PATH inside the sandbox, in the operator's order.
    pub path: Vec<PathBuf>,
    /// Directories to bind read-only.
    pub binds: Vec<PathBuf>,
}

/// Chooses PATH and toolchain binds. A PATH entry is kept when it is absolute, exists, and lies in
/// no workspace root: a writable root on PATH would let a planted `ls` run where the decision layer
/// assumed the system's. Entries outside the system directories become read-only binds, as do the
/// toolchain homes. Never a credential store, never the home directory itself or one of its
/// ancestors (that would expose every store under it).
pub fn toolchains(inputs: &ToolchainInputs<'_>) -> Toolchains {
    let mut out = Toolchains::default();
    let in_root = |p: &Path| inputs.roots.iter().any(|r| p.starts_with(r));
    let bindable = |p: &Path| {
        p.is_absolute()
            && !is_credential_store(p)
            && !inputs.home.starts_with(p)
            && !in_root(p)
            && (inputs.is_dir)(p)
    };
    let system = |p: &Path| {
        ["/usr", "/bin", "/sbin", "/lib", "/lib64"]
            .iter()
            .any(|s| p.starts_with(s))
    };
    if let Some(path) = inputs.path {
        for dir in std::env::split_paths(path) {
            let normal = dir.components().all(|c| {
                matches!(
                    c,
                    std::path::Component::RootDir | std::path::Component::Normal(_)
                )
            });
            if !normal || !bindable(&dir) || out.path.contains(&dir) {
                continue;
            }
            if !system(&dir) {
                out.binds.push(dir.clone());
            }
            out.path.push(dir);
        }
    }
    for (var, default) in TOOLCHAIN_HOMES {
        let dir = (inputs.var)(var).or_else(|| default.map(|d| inputs.home.join(d)));
        if let Some(dir) = dir.filter(|d| bindable(d) && !system(d)) {
            out.binds.push(dir);
        }
    }
    for fixed in TOOLCHAIN_FIXED {
        let dir = PathBuf::from(fixed);
        if bindable(&dir) {
            out.binds.push(dir);
        }
    }
    out.binds.sort();
    out.binds.dedup();
    // A bind inside another bind adds nothing.
    let all = out.binds.clone();
    out.binds
        .retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
    out
}

/// The credential stores under `home` that exist inside one of `bound` (host paths that the
/// sandbox binds): each must be masked. `exists` reports what is there (`Some(true)` for a
/// directory, `Some(false)` for anything else).
pub fn credential_masks(
    home: &Path,
    bound: &[PathBuf],
    exists: &dyn Fn(&Path) -> Option<bool>,
) -> Vec<Mask> {
    home_stores(home)
        .into_iter()
        .filter(|store| bound.iter().any(|b| store.starts_with(b) && store != b))
        .filter_map(|store| match exists(&store) {
            Some(true) => Some(Mask::Dir(store)),
            Some(false) => Some(Mask::File(store)),
            None => None,
        })
        .collect()
}

/// What is at `path` on the host, without following a final symlink: `Some(true)` for a
/// directory, `Some(false)` for anything else, `None` when nothing is.
pub fn host_entry(path: &Path) -> Option<bool> {
    fs::symlink_metadata(path).ok().map(|m| m.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn toolchain_choice() {
        let dirs = [
            "/root/.cargo",
            "/root/.cargo/bin",
            "/root/.pyenv",
            "/root/.pyenv/shims",
            "/usr/bin",
            "/bin",
            "/opt",
            "/usr/local/bin",
            "/work/proj/bin",
            "/root/.ssh",
            "/root",
            "/srv/go",
        ];
        let is_dir = |d: &Path| dirs.iter().any(|x| Path::new(x) == d);
        let var = |name: &str| (name == "GOROOT").then(|| p("/srv/go"));
        let path = OsString::from(
            "/root/.cargo/bin:/root/.cargo/bin:relative:/root/.pyenv/shims:/work/proj/bin:/root/.ssh:/root:/usr/local/bin:/usr/bin:/missing:/bin:/usr/../etc",
        );
        let roots = [p("/work/proj")];
        let t = toolchains(&ToolchainInputs {
            path: Some(&path),
            var: &var,
            home: Path::new("/root"),
            roots: &roots,
            is_dir: &is_dir,
        });
        assert_eq!(
            t.path,
            vec![
                p("/root/.cargo/bin"),
                p("/root/.pyenv/shims"),
                p("/usr/local/bin"),
                p("/usr/bin"),
                p("/bin")
            ]
        );
        assert_eq!(
            t.binds,
            vec![
                p("/opt"),
                p("/root/.cargo"),
                p("/root/.pyenv"),
                p("/srv/go")
            ]
        );
    }

    #[test]
    fn masks_only_existing_stores_inside_binds() {
        let bound = [p("/h/.cargo"), p("/h/.config/tool")];
        let exists = |q: &Path| match q.to_str() {
            Some("/h/.cargo/credentials.toml") => Some(false),
            Some("/h/.cargo/credentials" | "/h/.ssh") => None,
            _ => Some(true),
        };
        let masks = credential_masks(Path::new("/h"), &bound, &exists);
        assert_eq!(masks, vec![Mask::File(p("/h/.cargo/credentials.toml"))]);
    }

    #[test]
    fn etc_is_curated() {
        let entries = etc_entries(Path::new("/etc"));
        assert!(entries.contains(&p("/etc/passwd")));
        for secret in [
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/sudoers",
            "/etc/ssh",
            "/etc/npmrc",
        ] {
            assert!(!entries.contains(&p(secret)), "{secret}");
        }
    }

    #[test]
    fn system_layout_of_this_host() {
        let dirs = system_dirs(Path::new("/"));
        assert_eq!(dirs[0], SystemDir::Bind(p("/usr")));
        assert!(dirs.iter().any(|d| matches!(d,
            SystemDir::Symlink { path, .. } | SystemDir::Bind(path) if path == Path::new("/bin"))));
    }
}
