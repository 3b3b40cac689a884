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
    "_netrc",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".credentials",
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

/// Names of files that are credential stores whatever they hold, too common as other things to
/// refuse by name in every path ([`CREDENTIAL_DIRS`] is refused there): a file (never a directory)
/// with one of these names inside a directory the sandbox binds from the host is masked. cargo's
/// legacy `credentials` and `credentials.toml` (also uv's and `gem`'s), git's `credentials` store,
/// poetry's `auth.toml`, Maven's master password, `htpasswd` files.
pub const CREDENTIAL_FILES: &[&str] = &[
    "credentials",
    "credentials.toml",
    ".credentials.toml",
    "auth.toml",
    "settings-security.xml",
    ".htpasswd",
];

/// Private key files by their exact names (not `.pub`, not `id_map.rs`).
const KEY_FILES: &[&str] = &[
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ecdsa_sk",
    "id_ed25519",
    "id_ed25519_sk",
    "id_xmss",
];

/// Configuration files of a known format that hold registry tokens or passwords when someone put
/// them there, and ordinary settings otherwise (an index URL, a cache directory): npm's `npmrc`
/// (`.npmrc` is a store, [`CREDENTIAL_DIRS`]), pip's, conda's, uv's, yarn's and bun's, git's
/// global configuration, Gradle's properties, Maven's settings, Mercurial's, Terraform's, dotenv
/// files, composer's `auth.json` and Google's `credentials.json`. Each is judged by what it holds
/// ([`config_holds_secret`]): one that holds a secret is masked, one that holds none is shown, so
/// that a build that needs its index URL still finds it. cargo's `config`/`config.toml` and git's
/// `config` count only where those programs read them ([`secret_candidate`]).
pub const CREDENTIAL_CONFIGS: &[&str] = &[
    "npmrc",
    "pip.conf",
    "pip.ini",
    ".condarc",
    "condarc",
    "uv.toml",
    ".yarnrc",
    ".yarnrc.yml",
    "bunfig.toml",
    ".bunfig.toml",
    ".gitconfig",
    "gitconfig",
    "gradle.properties",
    "settings.xml",
    ".hgrc",
    "hgrc",
    ".terraformrc",
    "terraform.rc",
    ".env",
    ".envrc",
    "auth.json",
    "credentials.json",
];

/// What a host file or directory inside a directory the sandbox binds is, by its path: what the
/// sandbox masks at any depth of a bound tree (see `spear_sandbox::secret_scan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretCandidate {
    /// A credential store: masked whatever it holds.
    Store,
    /// A configuration file of a known format: masked when [`config_holds_secret`] finds a secret
    /// in it.
    Config,
    /// Anything else: shown.
    Other,
}

/// What `path` (absolute) is, as an entry of a tree bound at `tree`: a directory when `is_dir`.
///
/// A store: a component named as in [`CREDENTIAL_DIRS`] or a sequence of
/// [`CREDENTIAL_SEQUENCES`] (a directory such as `.ssh` or `.config/gh`, a file such as `.netrc`,
/// `.git-credentials` or `.npmrc`), a file named as in [`CREDENTIAL_FILES`], a private key file
/// (`id_rsa`, `ssh_host_ed25519_key`). A configuration: a file named as in [`CREDENTIAL_CONFIGS`],
/// cargo's `config` or `config.toml` in a `.cargo` directory or at the tree's top (a `CARGO_HOME`
/// elsewhere), git's `config` in a `.git` directory or in `.config/git`, and any file of a conda
/// `condarc.d` directory. Attack stopped: a registry token or password read from a toolchain tree
/// at any depth (a pyenv-virtualenv's `pip.conf`, npm's own `npmrc` in nvm's tree, a conda
/// environment's `.condarc`, `.git-credentials` one level down).
pub fn secret_candidate(tree: &Path, path: &Path, is_dir: bool) -> SecretCandidate {
    let parts = normal_components(path);
    let Some(name) = parts.last().copied() else {
        return SecretCandidate::Other;
    };
    let sequence = CREDENTIAL_SEQUENCES
        .iter()
        .filter(|seq| seq.first() != Some(&"etc"))
        .any(|seq| parts.ends_with(seq));
    let key = !is_dir
        && (KEY_FILES.contains(&name) || (name.starts_with("ssh_host_") && name.ends_with("_key")));
    if CREDENTIAL_DIRS.contains(&name)
        || sequence
        || key
        || (!is_dir && CREDENTIAL_FILES.contains(&name))
    {
        return SecretCandidate::Store;
    }
    if is_dir {
        return SecretCandidate::Other;
    }
    let parent = parts.len().checked_sub(2).map(|i| parts[i]);
    let at_top = path.parent() == Some(tree);
    let cargo = matches!(name, "config" | "config.toml") && (parent == Some(".cargo") || at_top);
    let git = name == "config"
        && (parent == Some(".git") || parts.ends_with(&[".config", "git", "config"]));
    if CREDENTIAL_CONFIGS.contains(&name) || cargo || git || parent == Some("condarc.d") {
        SecretCandidate::Config
    } else {
        SecretCandidate::Other
    }
}

/// Fragments of a key name that say its value is a secret (compared with the key's last segment,
/// in lower case): cargo's `token` (`[registry]`, `[registries.NAME]`, `registry.token`), npm's
/// `_authToken`, `_auth` and `_password`, yarn's `npmAuthToken`, passwords, API keys, client
/// secrets, git's `extraHeader` and `Authorization` headers. cargo's `credential-provider` names a
/// program, not a secret, and matches none.
const SECRET_KEYS: &[&str] = &[
    "token",
    "_auth",
    "password",
    "passwd",
    "secret",
    "apikey",
    "api_key",
    "api-key",
    "authorization",
    "extraheader",
    "authident",
    "private_key",
    "private-key",
    "privatekey",
];

/// Whether the text of a configuration file holds a secret: a key whose name says it holds one
/// (`token = "..."`, `//registry.npmjs.org/:_authToken=...`, `"password": "..."`,
/// `<password>...</password>`, in any table, section or nesting, commented out or not) with a
/// value that is not empty and not a reference to a variable (`${NPM_TOKEN}`); a URL with userinfo
/// (`https://user:pass@host`, `https://TOKEN@host`; `ssh://git@host` is no secret); a conda
/// channel token (`/t/<token>/`); a PEM private key.
///
/// Errs towards a secret: a file that only looks like one is masked, and a program that needed it
/// finds it empty. Pure.
pub fn config_holds_secret(text: &str) -> bool {
    text.contains("PRIVATE KEY-----")
        || url_userinfo(text)
        || conda_token(text)
        || named_secret(text)
}

/// Whether a URL in `text` carries a secret in its userinfo: a password (`user:pass@`), or a user
/// name long enough to be a token (`ghp_...@`); a plain user name (`git@`, `hg@`) is none.
fn url_userinfo(text: &str) -> bool {
    text.match_indices("://").any(|(i, _)| {
        let rest = &text[i + 3..];
        let end = rest
            .find(|c: char| {
                matches!(
                    c,
                    '/' | '?' | '#' | '"' | '\'' | '<' | '>' | ',' | ';' | ')' | ']' | '}'
                ) || c.is_whitespace()
            })
            .unwrap_or(rest.len());
        rest[..end].rfind('@').is_some_and(|at| {
            let userinfo = &rest[..at];
            userinfo.contains(':') || userinfo.len() >= 16
        })
    })
}

/// Whether `text` holds a conda channel token: a path segment `/t/` followed by a token and `/`.
fn conda_token(text: &str) -> bool {
    text.match_indices("/t/").any(|(i, _)| {
        let rest = &text[i + 3..];
        let token = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(rest.len());
        token >= 8 && rest[token..].starts_with('/')
    })
}

/// Whether `text` holds `KEY SEP VALUE` with a secret-named key and a real value, where SEP is
/// `=`, `:` or `>` (XML's `<password>VALUE`).
fn named_secret(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        matches!(c, b'=' | b':' | b'>') && secret_key_before(&b[..i]) && real_value(&b[i + 1..])
    })
}

/// Whether the key that ends `before` (blanks and one closing quote skipped) names a secret.
fn secret_key_before(before: &[u8]) -> bool {
    let mut end = before.len();
    while end > 0 && matches!(before[end - 1], b' ' | b'\t') {
        end -= 1;
    }
    if end > 0 && matches!(before[end - 1], b'"' | b'\'') {
        end -= 1;
    }
    let mut start = end;
    while start > 0
        && (before[start - 1].is_ascii_alphanumeric() || matches!(before[start - 1], b'_' | b'-'))
    {
        start -= 1;
    }
    let key = String::from_utf8_lossy(&before[start..end]).to_ascii_lowercase();
    !key.is_empty() && SECRET_KEYS.iter().any(|s| key.contains(s))
}

/// Whether `after` (what follows a separator) starts with a value: not empty, not a bare
/// boolean or null, not a reference to a variable.
fn real_value(after: &[u8]) -> bool {
    let mut i = 0;
    while i < after.len() && matches!(after[i], b' ' | b'\t') {
        i += 1;
    }
    if i < after.len() && matches!(after[i], b'"' | b'\'' | b'`') {
        i += 1;
    }
    let rest = &after[i..];
    let end = rest
        .iter()
        .position(|c| {
            matches!(
                c,
                b'\n' | b'\r' | b'"' | b'\'' | b'`' | b'<' | b',' | b'}' | b']'
            )
        })
        .unwrap_or(rest.len());
    let value = String::from_utf8_lossy(&rest[..end]);
    let value = value.trim();
    !value.is_empty()
        && !value.starts_with('$')
        && !value.starts_with('{')
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "none" | "~"
        )
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

    /// Each row: a path inside the tree `/h/.cargo` (or `/h/tree`), whether it is a directory,
    /// and what the sandbox makes of it.
    #[test]
    fn secret_candidates() {
        use SecretCandidate::{Config as C, Other as O, Store as S};
        for (tree, path, dir, want) in [
            // Stores, at any depth, files and directories alike.
            ("/h/.cargo", "/h/.cargo/credentials.toml", false, S),
            ("/h/.cargo", "/h/.cargo/credentials", false, S),
            (
                "/h/.cargo",
                "/h/.cargo/registry/x/.git-credentials",
                false,
                S,
            ),
            ("/h/.pyenv", "/h/.pyenv/versions/3.12/.netrc", false, S),
            ("/h/.pyenv", "/h/.pyenv/versions/3.12/_netrc", false, S),
            ("/h/.nvm", "/h/.nvm/versions/node/v20/.npmrc", false, S),
            ("/h/.pyenv", "/h/.pyenv/a/b/c/d/e/.pypirc", false, S),
            ("/h/tree", "/h/tree/x/.ssh", true, S),
            ("/h/tree", "/h/tree/x/.docker", true, S),
            ("/h/tree", "/h/tree/x/.config/gh", true, S),
            ("/h/tree", "/h/tree/x/id_ed25519", false, S),
            (
                "/h/tree",
                "/h/tree/.local/share/uv/credentials/credentials.toml",
                false,
                S,
            ),
            ("/h/tree", "/h/tree/x/auth.toml", false, S),
            // Configuration files: judged by what they hold.
            ("/h/.cargo", "/h/.cargo/config.toml", false, C),
            ("/h/.cargo", "/h/.cargo/config", false, C),
            ("/srv/cargo", "/srv/cargo/config.toml", false, C),
            (
                "/h/.cargo",
                "/h/.cargo/registry/src/i/x-1.0/.cargo/config.toml",
                false,
                C,
            ),
            (
                "/h/.pyenv",
                "/h/.pyenv/versions/3.12/envs/v/pip.conf",
                false,
                C,
            ),
            (
                "/h/.nvm",
                "/h/.nvm/versions/node/v20/lib/node_modules/npm/npmrc",
                false,
                C,
            ),
            ("/h/m", "/h/m/envs/e/.condarc", false, C),
            ("/h/m", "/h/m/envs/e/condarc.d/channels.yml", false, C),
            ("/h/uv", "/h/uv/uv.toml", false, C),
            ("/h/uv", "/h/uv/tools/ruff/pip.conf", false, C),
            ("/h/.pyenv", "/h/.pyenv/.git/config", false, C),
            ("/h/tree", "/h/tree/x/.config/git/config", false, C),
            ("/h/tree", "/h/tree/x/settings.xml", false, C),
            // Ordinary entries: never masked.
            ("/h/tree", "/h/tree/pkg/credentials", true, O),
            ("/h/tree", "/h/tree/pkg/credentials.py", false, O),
            ("/h/tree", "/h/tree/pkg/config.toml", false, O),
            ("/h/tree", "/h/tree/pkg/config", false, O),
            ("/h/tree", "/h/tree/pkg/id_map.rs", false, O),
            ("/h/tree", "/h/tree/pkg/id_rsa.pub", false, O),
            ("/h/tree", "/h/tree/pkg/pip.conf", true, O),
            ("/h/.cargo", "/h/.cargo/bin/cargo", false, O),
        ] {
            assert_eq!(
                secret_candidate(Path::new(tree), Path::new(path), dir),
                want,
                "{path}"
            );
        }
    }

    /// Each row: a configuration file's text and whether it holds a secret. The rows that hold
    /// none are the positive controls: the same files with the secret taken out.
    #[test]
    fn secrets_in_configuration() {
        for (text, secret) in [
            // cargo: a registry token in any table, inline or not; a credential provider is none.
            ("[registry]\ntoken = \"cio_abc\"\n", true),
            (
                "[registries.corp]\nindex = \"sparse+https://r/\"\ntoken = \"x1\"\n",
                true,
            ),
            ("registry.token = 'abc'\n", true),
            (
                "[registries]\ncorp = { index = \"https://r/\", token = \"abc\" }\n",
                true,
            ),
            ("# token = \"old-one\"\n", true),
            (
                "[registry]\nglobal-credential-providers = [\"cargo:token\"]\n",
                false,
            ),
            (
                "[registries.corp]\ncredential-provider = \"cargo:token\"\n",
                false,
            ),
            (
                "[build]\njobs = 4\n[net]\ngit-fetch-with-cli = true\n",
                false,
            ),
            ("[registry]\ntoken = \"\"\n", false),
            // npm.
            ("//registry.npmjs.org/:_authToken=npm_abcdef\n", true),
            ("_auth=dXNlcjpwYXNz\nemail=a@b\n", true),
            ("//r.corp/:_password=cGFzcw==\n", true),
            ("//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n", false),
            ("registry=https://registry.npmjs.org/\nfund=false\n", false),
            ("cafile=/etc/ssl/certs/ca-certificates.crt\n", false),
            // pip and uv: index URLs with userinfo.
            (
                "[global]\nindex-url = https://user:s3cret@pypi.corp/simple\n",
                true,
            ),
            (
                "[global]\nextra-index-url = https://ghp_0123456789abcdef0123@h/simple\n",
                true,
            ),
            (
                "[[index]]\nname = \"corp\"\nurl = \"https://u:p@corp/simple\"\n",
                true,
            ),
            (
                "[global]\nindex-url = https://pypi.org/simple\ntimeout = 60\n",
                false,
            ),
            ("[[index]]\nurl = \"https://pypi.org/simple\"\n", false),
            ("[global]\nfind-links = git+ssh://git@github.com/x\n", false),
            // conda: channel tokens and proxies.
            (
                "channels:\n  - https://conda.anaconda.org/t/ab-12cd34ef-5678/corp\n",
                true,
            ),
            ("proxy_servers:\n  https: http://u:p@proxy:8080\n", true),
            (
                "channels:\n  - conda-forge\n  - defaults\nssl_verify: true\n",
                false,
            ),
            // git, Maven, Gradle, JSON.
            ("[http]\n\textraHeader = AUTHORIZATION: basic abc\n", true),
            ("[url \"https://x-access-token:ghs_x@github.com/\"]\n", true),
            ("[user]\n\tname = A\n\tsigningkey = ABCD\n", false),
            ("<server><id>c</id><password>pw</password></server>", true),
            ("<server><id>c</id><password></password></server>", false),
            ("signing.password=pw\norg.gradle.jvmargs=-Xmx2g\n", true),
            ("org.gradle.jvmargs=-Xmx2g\n", false),
            ("{\"installed\": {\"client_secret\": \"GOCSPX-x\"}}", true),
            ("{\"client_secret\": null}", false),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n",
                true,
            ),
        ] {
            assert_eq!(config_holds_secret(text), secret, "{text}");
        }
    }
}
