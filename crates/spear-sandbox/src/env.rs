//! The sandbox's environment: rebuilt from an allowlist, never inherited.
//!
//! Attack stopped: secret theft through the environment (`env`, `/proc/self/environ`). The host's
//! model API keys, cloud credentials and tokens never reach a sandbox: only named variables are
//! copied, and even those are dropped when their name or value looks like a secret.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Variables copied from the host when present (locale and toolchain homes).
const COPIED: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "USER",
    "LOGNAME",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "GOROOT",
    "GOPATH",
    "JAVA_HOME",
    "NVM_DIR",
];

/// Name fragments that mark a secret (compared case-insensitively).
const SECRET_NAMES: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
];

/// Value prefixes of well-known token shapes.
const SECRET_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "AKIA",
    "ASIA",
    "AIza",
    "eyJ",
];

/// Whether a variable's name or value looks like a secret.
pub fn looks_secret(name: &OsStr, value: &OsStr) -> bool {
    let name = name.to_string_lossy().to_ascii_uppercase();
    let value = value.to_string_lossy();
    SECRET_NAMES.iter().any(|s| name.contains(s))
        || SECRET_PREFIXES.iter().any(|p| value.starts_with(p))
        || value.contains("-----BEGIN")
        || value.contains("://") && value.contains('@')
}

/// What the environment is built from.
#[derive(Debug, Clone, Copy)]
pub struct EnvInputs<'a> {
    /// The host's environment.
    pub host: &'a [(OsString, OsString)],
    /// The sandbox's home directory.
    pub home: &'a Path,
    /// The sandbox's PATH, in order.
    pub path: &'a [PathBuf],
}

/// The whole environment of a sandboxed command: PATH, HOME, TMPDIR=/tmp, TERM=dumb, pagers that
/// never wait for a terminal, `GIT_OPTIONAL_LOCKS=0` (a read-only `git status` must not take
/// locks), the locale and the toolchain homes of the host. Sorted by name; secrets dropped.
pub fn sandbox_env(inputs: EnvInputs<'_>) -> Vec<(OsString, OsString)> {
    let mut path = OsString::new();
    for (i, dir) in inputs.path.iter().enumerate() {
        if i > 0 {
            path.push(":");
        }
        path.push(dir);
    }
    if path.is_empty() {
        path.push("/usr/local/bin:/usr/bin:/bin");
    }
    let mut env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), path),
        ("HOME".into(), inputs.home.as_os_str().to_owned()),
        ("TMPDIR".into(), "/tmp".into()),
        ("TERM".into(), "dumb".into()),
        ("PAGER".into(), "cat".into()),
        ("GIT_PAGER".into(), "cat".into()),
        ("GIT_OPTIONAL_LOCKS".into(), "0".into()),
    ];
    for (name, value) in inputs.host {
        let copied = name
            .to_str()
            .is_some_and(|n| COPIED.contains(&n) || (n.starts_with("LC_") && n.len() > 3));
        if copied && !looks_secret(name, value) && !env.iter().any(|(n, _)| n == name) {
            env.push((name.clone(), value.clone()));
        }
    }
    env.sort();
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(a, b)| ((*a).into(), (*b).into()))
            .collect()
    }

    #[test]
    fn allowlist_only() {
        let host = pairs(&[
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("CARGO_HOME", "/root/.cargo"),
            ("OPENAI_API_KEY", "sk-abc"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("SSH_AUTH_SOCK", "/run/agent"),
            ("LD_PRELOAD", "/evil.so"),
            ("PATH", "/host/path"),
            ("HOME", "/elsewhere"),
            ("GOPATH", "ghp_smuggled"),
            ("JAVA_HOME", "https://u:p@host/"),
            ("LC_", "x"),
        ]);
        let env = sandbox_env(EnvInputs {
            host: &host,
            home: Path::new("/home/u"),
            path: &[PathBuf::from("/usr/bin"), PathBuf::from("/bin")],
        });
        assert_eq!(
            env,
            pairs(&[
                ("CARGO_HOME", "/root/.cargo"),
                ("GIT_OPTIONAL_LOCKS", "0"),
                ("GIT_PAGER", "cat"),
                ("HOME", "/home/u"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C"),
                ("PAGER", "cat"),
                ("PATH", "/usr/bin:/bin"),
                ("TERM", "dumb"),
                ("TMPDIR", "/tmp"),
            ])
        );
    }

    #[test]
    fn empty_path_gets_the_system_default() {
        let env = sandbox_env(EnvInputs {
            host: &[],
            home: Path::new("/h"),
            path: &[],
        });
        assert!(env.contains(&("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())));
    }

    #[test]
    fn secret_shapes() {
        for (n, v, secret) in [
            ("X", "ghp_abc", true),
            ("X", "github_pat_1", true),
            ("X", "xoxb-1", true),
            ("X", "AKIAIOSFODNN7EXAMPLE", true),
            ("X", "-----BEGIN OPENSSH PRIVATE KEY-----", true),
            ("X", "https://user:pw@example.com", true),
            ("my_api_key", "v", true),
            ("NPM_TOKEN", "v", true),
            ("LANG", "C.UTF-8", false),
            ("PATH", "/usr/bin", false),
            ("URL", "https://example.com", false),
        ] {
            assert_eq!(
                looks_secret(OsStr::new(n), OsStr::new(v)),
                secret,
                "{n}={v}"
            );
        }
    }
}
