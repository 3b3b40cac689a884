//! Credential stores: files and directories that hold keys and tokens.
//!
//! One list, used by the decision layer (a command naming one is refused) and by the sandbox (one
//! is never bound, and one inside a bound directory is masked). Attack stopped: key and token theft.

use std::path::{Component, Path, PathBuf};

/// Names of credential stores, matched against every component of a path.
pub const CREDENTIAL_DIRS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".docker",
    ".kube",
    ".azure",
    ".password-store",
    ".vault-token",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".Xauthority",
    "shadow",
    "gshadow",
    "sudoers",
    "sudoers.d",
    "master.passwd",
];

/// Credential stores that are a sequence of components (`.config/gh`).
pub const CREDENTIAL_SEQUENCES: &[&[&str]] = &[
    &[".config", "gh"],
    &[".config", "gcloud"],
    &[".config", "hub"],
    &[".cargo", "credentials"],
    &[".cargo", "credentials.toml"],
    &[".local", "share", "keyrings"],
    &["etc", "ssh"],
];

/// Whether `path` is or lies inside a credential store: a component such as `.ssh` or `shadow`, a
/// private key file (`id_*`, `ssh_host_*_key`), or a sequence such as `.config/gh`.
pub fn is_credential_store(path: &Path) -> bool {
    let parts: Vec<&str> = normal_components(path);
    parts.iter().any(|p| {
        CREDENTIAL_DIRS.contains(p)
            || p.starts_with("id_")
            || (p.starts_with("ssh_host_") && p.contains("_key"))
    }) || CREDENTIAL_SEQUENCES
        .iter()
        .any(|seq| parts.windows(seq.len()).any(|w| w == *seq))
}

/// Whether a pattern or a partly known word names a credential store in its known components:
/// `link-*/.ssh/x`, `$D/.aws/credentials`, `~*/id_rsa`. Only unambiguous names count here (a glob
/// such as `src/id_*.rs` is not a key).
pub fn names_credential_store(text: &str) -> bool {
    const KEYS: &[&str] = &["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_xmss"];
    let parts: Vec<&str> = text.split('/').collect();
    parts
        .iter()
        .any(|p| CREDENTIAL_DIRS.contains(p) || KEYS.iter().any(|k| p.starts_with(k)))
        || CREDENTIAL_SEQUENCES
            .iter()
            .any(|seq| parts.windows(seq.len()).any(|w| w == *seq))
}

/// The credential stores under `home` that exist as names (not patterns): `~/.ssh`,
/// `~/.config/gh`, `~/.cargo/credentials.toml`, ... The sandbox masks the ones that exist inside a
/// directory it binds.
pub fn home_stores(home: &Path) -> Vec<PathBuf> {
    CREDENTIAL_DIRS
        .iter()
        .filter(|d| d.starts_with('.'))
        .map(|d| home.join(d))
        .chain(
            CREDENTIAL_SEQUENCES
                .iter()
                .filter(|seq| seq.first() != Some(&"etc"))
                .map(|seq| seq.iter().fold(home.to_path_buf(), |p, c| p.join(c))),
        )
        .collect()
}

fn normal_components(path: &Path) -> Vec<&str> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores() {
        assert!(is_credential_store(Path::new("/home/u/.ssh/id_rsa")));
        assert!(is_credential_store(Path::new(
            "/home/u/.cargo/credentials.toml"
        )));
        assert!(is_credential_store(Path::new("/etc/shadow")));
        assert!(!is_credential_store(Path::new("/home/u/.cargo/bin")));
        let home = home_stores(Path::new("/h"));
        assert!(home.contains(&PathBuf::from("/h/.ssh")));
        assert!(home.contains(&PathBuf::from("/h/.cargo/credentials.toml")));
        assert!(!home.iter().any(|p| p.ends_with("shadow")));
    }
}
