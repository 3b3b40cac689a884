//! Secret-looking variables, by name and by value: one rule for every place that must tell a
//! credential from a setting (the sandbox's environment passing, the known secrets a request of
//! spear's must never carry). Pure.
//!
//! A name looks secret when one of its words is a credential's: the name is split into words at
//! `_`, `-`, `.`, between letters and digits and at a change of case (`apiKey` is `api`, `Key`),
//! and a word looks secret when
//! - it holds a strong fragment anywhere: `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `PASSPHRASE`,
//!   `PASSFILE`, `CREDENTIAL`, `APIKEY`, `PRIVATE`, `COOKIE`, `SIGNING`, `BEARER`, `OAUTH`
//!   (the whole name with its separators removed is searched too: `PASS_PHRASE`, `API_KEY`);
//! - it is a weak word: `KEY`, `KEYS`, `PASS`, `PWD`, `PW`, `PIN`, `CRED`, `CREDS`, `AUTH`,
//!   `AUTHN`, `AUTHZ`, `PHRASE`, `SESSION`, `SALT`, `HMAC`, `DSN`, `SIG`, `SIGNATURE`, `JWT`,
//!   `OTP`, `TOTP`, `NETRC`, `PASSCODE`, and the key stores (`KEYPAIR`, `KEYFILE`, `KEYSTORE`,
//!   `KEYRING`, `KEYCHAIN`, `KEYTAB`);
//! - or it ends in `KEY`, `PASS`, `PWD`, `AUTH`, `CREDS` or `SESSION` (`SSHKEY`, `DBPASS`,
//!   `BASICAUTH`), but for the ordinary words that do (`MONKEY`, `HOTKEY`, `BYPASS`, `COMPASS`).
//!
//! Decided false positives, never secret by name: `PWD` and `OLDPWD` (the shell's directories),
//! and the desktop session's plumbing (`XDG_SESSION_TYPE`, `XDG_SESSION_ID`, `DESKTOP_SESSION`,
//! `DBUS_SESSION_BUS_ADDRESS`, `SESSION_MANAGER`, ...). `AUTHOR` and `AUTHORITY` are words of their
//! own, not `AUTH` (`GIT_AUTHOR_NAME` is a setting). Kept on purpose although they are often
//! harmless: `SSH_AUTH_SOCK` (a path to the agent that holds the keys), `MAX_TOKENS`
//! (a glob does not pass it; naming it exactly does).
//!
//! A value looks secret when it holds a known token shape (GitHub, GitLab, Slack, `OpenAI`,
//! Stripe, AWS key ids, Google, npm, `PyPI`, Hugging Face, JWTs, ... as
//! [`crate::redact`] knows them), a private-key PEM block, a URL with a user name or password,
//! an assignment to a secret name (`Password=...;` in a connection string), an `Authorization`
//! scheme and credential (`Bearer ...`), or a long high-entropy run ([`high_entropy`]).
//!
//! Attack stopped: a credential passing where only settings may, because its name was not one of
//! the few a substring list knew (`APP_DB_CREDS`, `APP_SIGNING_PHRASE`) or because only its value
//! says what it is.

/// Names that hold a secret-looking word but name the system's plumbing, never a credential.
const PLAIN_NAMES: &[&str] = &[
    "PWD",
    "OLDPWD",
    "DBUS_SESSION_BUS_ADDRESS",
    "DESKTOP_SESSION",
    "SESSION_MANAGER",
    "XDG_SESSION_TYPE",
    "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP",
    "XDG_SESSION_ID",
    "XDG_SESSION_PATH",
    "GNOME_DESKTOP_SESSION_ID",
];

/// Fragments that make a word (or the whole name without its separators) a secret's wherever
/// they stand in it.
const STRONG: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "PASSFILE",
    "CREDENTIAL",
    "APIKEY",
    "PRIVATE",
    "COOKIE",
    "SIGNING",
    "BEARER",
    "OAUTH",
];

/// Words that are a secret's when they stand alone.
const WEAK_WORDS: &[&str] = &[
    "KEY",
    "KEYS",
    "PASS",
    "PWD",
    "PW",
    "PIN",
    "CRED",
    "CREDS",
    "AUTH",
    "AUTHN",
    "AUTHZ",
    "PHRASE",
    "SESSION",
    "SESSIONS",
    "SALT",
    "HMAC",
    "DSN",
    "SIG",
    "SIGNATURE",
    "JWT",
    "OTP",
    "TOTP",
    "NETRC",
    "PASSCODE",
    "KEYPAIR",
    "KEYFILE",
    "KEYSTORE",
    "KEYRING",
    "KEYCHAIN",
    "KEYTAB",
];

/// Endings that make a word a secret's (`SSHKEY`, `DBPASS`, `BASICAUTH`).
const WEAK_ENDINGS: &[&str] = &["KEY", "PASS", "PWD", "AUTH", "CREDS", "SESSION"];

/// Ordinary words with one of those endings.
const ORDINARY: &[&str] = &[
    "MONKEY",
    "DONKEY",
    "TURKEY",
    "HOCKEY",
    "JOCKEY",
    "WHISKEY",
    "HOTKEY",
    "BYPASS",
    "COMPASS",
    "SURPASS",
    "OVERPASS",
    "UNDERPASS",
];

/// The words of a variable's name, upper case: split at every character that is not a letter or
/// a digit, between a letter and a digit, before an upper-case letter that follows a lower-case
/// one (`apiKey`), and before the last upper-case letter of a run followed by a lower-case one
/// (`APIKey` is `API`, `Key`).
pub fn name_words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|p| chars.get(p)) {
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            let boundary = (prev.is_ascii_digit() != c.is_ascii_digit()
                && prev.is_ascii_alphanumeric())
                || (prev.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (prev.is_ascii_uppercase() && c.is_ascii_uppercase() && next_lower);
            if boundary && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        }
        word.push(c.to_ascii_uppercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Whether a variable's name says it holds a secret (see the module's doc).
pub fn name_looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if PLAIN_NAMES.contains(&upper.as_str()) {
        return false;
    }
    let joined: String = upper.chars().filter(char::is_ascii_alphanumeric).collect();
    if STRONG.iter().any(|s| joined.contains(s)) {
        return true;
    }
    name_words(name).iter().any(|w| {
        WEAK_WORDS.contains(&w.as_str())
            || (WEAK_ENDINGS.iter().any(|e| w.ends_with(e)) && !ORDINARY.contains(&w.as_str()))
    })
}

/// Whether a value says by its shape that it is (or holds) a secret (see the module's doc).
pub fn value_looks_secret(value: &str) -> bool {
    let b = value.as_bytes();
    let mut spans = Vec::new();
    crate::redact::token_shapes(b, &mut spans);
    crate::redact::url_userinfo(b, &mut spans);
    crate::redact::named_values(b, &mut spans);
    !spans.is_empty() || private_pem(value) || authorization(value) || high_entropy(value)
}

/// Whether a variable looks secret by its name or its value: what a glob never passes.
pub fn looks_secret(name: &str, value: &str) -> bool {
    name_looks_secret(name) || value_looks_secret(value)
}

/// A PEM block whose label is not a public one (`-----BEGIN OPENSSH PRIVATE KEY-----`,
/// `-----BEGIN ENCRYPTED PRIVATE KEY-----`, `-----BEGIN PGP PRIVATE KEY BLOCK-----`); a
/// certificate or a public key is no secret.
fn private_pem(value: &str) -> bool {
    value.match_indices("-----BEGIN").any(|(at, _)| {
        let label = value[at + 10..]
            .split("-----")
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        !["CERTIFICATE", "PUBLIC", "CRL", "SIGNATURE", "PARAMETERS"]
            .iter()
            .any(|public| label.contains(public))
    })
}

/// An `Authorization` header's value: a scheme (`Bearer`, `Basic`, `Token`, ...) and a
/// credential of 8 characters or more.
fn authorization(value: &str) -> bool {
    let mut parts = value.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some(scheme), Some(cred)) => {
            ["bearer", "basic", "token", "bot", "digest", "negotiate"]
                .iter()
                .any(|s| scheme.eq_ignore_ascii_case(s))
                && cred.len() >= 8
        }
        _ => false,
    }
}

/// Whether `value` holds a long run that only randomness makes: a run of base64 characters
/// (letters, digits, `+`, `/`, `=`, `-`, `_`) in which 20 or more letters and digits mix lower
/// case, upper case and digits and switch between them at least once every four characters (what
/// base64 of random bytes does). Each part between `/`, `-` and `_` is judged too, and only the
/// parts of a run that is a path (it starts with `/`, or holds more than two).
///
/// Not secret by value, by design: hex of any length (commit ids, digests, `HOSTNAME`s of
/// containers; a hex secret is known by its name), UUIDs, single-case runs (`/nix/store/`
/// hashes, `x86_64-unknown-linux-gnu`), paths, version strings and `CamelCase` names, which switch
/// far less. Measured on the variables of a desktop, a CI runner and a container (the tests'
/// table): no false positive.
pub fn high_entropy(value: &str) -> bool {
    // A word (between white space and the separators of lists: `:`, `;`, `,`) that starts with
    // `/` or `~/` is a path whatever its parts hold: the runs a `.` cuts it into are parts of it
    // (`/tmp/.tmpAbC9xZ/12/spear-home`, whose run `tmpAbC9xZ/12/spear-home` alone would look
    // random).
    value
        .split(|c: char| c.is_whitespace() || ":;,".contains(c))
        .any(|word| {
            let in_path = word.starts_with('/') || word.starts_with("~/");
            word.split(|c: char| !(c.is_ascii_alphanumeric() || "+/=-_".contains(c)))
                .any(|run| {
                    // A path's parts are judged one by one: a directory of random-looking name
                    // beside others is no secret (`/run/user/1000/.mutter-Xwaylandauth.8ZXKQ2`).
                    let path = in_path || run.starts_with('/') || run.matches('/').count() > 2;
                    (!path && crate::redact::looks_random(run.as_bytes()))
                        || run
                            .split(['/', '-', '_'])
                            .any(|part| crate::redact::looks_random(part.as_bytes()))
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_names() {
        for (name, words) in [
            ("APP_DB_CREDS", &["APP", "DB", "CREDS"][..]),
            ("apiKey", &["API", "KEY"]),
            ("APIKey", &["API", "KEY"]),
            ("OAUTH2_TOKEN", &["OAUTH", "2", "TOKEN"]),
            ("s3.secret-key", &["S", "3", "SECRET", "KEY"]),
            ("XAuthority", &["X", "AUTHORITY"]),
            ("__x__", &["X"]),
            ("", &[]),
        ] {
            assert_eq!(name_words(name), words, "{name}");
        }
    }

    /// Each row: a name, and whether it looks secret. The ones the red team passed through a glob
    /// first, then the words one by one, then the decided false positives.
    #[test]
    fn names_table() {
        let rows: &[(&str, bool)] = &[
            ("APP_DB_CREDS", true),
            ("APP_SIGNING_PHRASE", true),
            ("APP_PASSPHRASE", true),
            ("APP_PASS_PHRASE", true),
            ("DB_PASSWD", true),
            ("PGPASSWORD", true),
            ("PGPASSFILE", true),
            ("MYSQL_PWD", true),
            ("DBPWD", true),
            ("DB_PW", true),
            ("SIM_PIN", true),
            ("APP_CREDENTIALS", true),
            ("GOOGLE_APPLICATION_CREDENTIALS", true),
            ("REDISCLI_AUTH", true),
            ("BASICAUTH", true),
            ("OAUTH_CLIENT", true),
            ("AUTHN_URL", true),
            ("HTTP_COOKIE", true),
            ("APP_SESSION", true),
            ("JSESSION", true),
            ("APP_PRIVATE_PEM", true),
            ("GPG_SIGNING_KEY", true),
            ("WEBHOOK_SIGNATURE", true),
            ("APP_SECRET", true),
            ("GITHUB_TOKEN", true),
            ("HF_TOKEN", true),
            ("OPENAI_API_KEY", true),
            ("api_key", true),
            ("apiKey", true),
            ("SSHKEY", true),
            ("AWS_SECRET_ACCESS_KEY", true),
            ("AWS_ACCESS_KEY_ID", true),
            ("AWS_SESSION_TOKEN", true),
            ("SENTRY_DSN", true),
            ("PASSWORD_SALT", true),
            ("APP_HMAC", true),
            ("CI_JOB_JWT", true),
            ("MFA_OTP", true),
            ("ANDROID_KEYSTORE", true),
            ("KRB5_KEYTAB", true),
            ("SSH_AUTH_SOCK", true),
            ("SSH_ASKPASS", true),
            ("OPENAI_MAX_TOKENS", true),
            ("NPM_CONFIG__AUTH", true),
            ("PWD", false),
            ("OLDPWD", false),
            ("XDG_SESSION_TYPE", false),
            ("XDG_SESSION_ID", false),
            ("DESKTOP_SESSION", false),
            ("DBUS_SESSION_BUS_ADDRESS", false),
            ("GIT_AUTHOR_NAME", false),
            ("AUTHOR", false),
            ("XAUTHORITY", false),
            ("KEYBOARD_LAYOUT", false),
            ("XKB_KEYMAP", false),
            ("MONKEY_MODE", false),
            ("NO_PROXY_BYPASS", false),
            ("PATH", false),
            ("HOME", false),
            ("LANG", false),
            ("LC_ALL", false),
            ("AWS_REGION", false),
            ("DATABASE_URL", false),
            ("APP_MODE", false),
            ("SHLVL", false),
            ("SPINNER", false),
            ("TOKENIZERS_PARALLELISM", true),
        ];
        for (name, secret) in rows {
            assert_eq!(name_looks_secret(name), *secret, "{name}");
        }
    }

    /// Each row: a value, and whether it looks secret by itself.
    #[test]
    fn values_table() {
        let rows: &[(&str, bool)] = &[
            ("ghp_0123456789abcdefABCDEF0123456789abcd", true),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                true,
            ),
            ("glpat-0123456789abcdefghij", true),
            ("xoxb-1234567890-abcdefghij", true),
            ("sk-proj-0123456789abcdefghijklmn", true),
            ("sk_live_0123456789abcdefABCD", true),
            ("AKIAIOSFODNN7EXAMPLE", true),
            ("AIzaSyA0123456789abcdefghijklmnopqrstu", true),
            ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijk", true),
            ("npm_0123456789abcdefghijklmnopqrstuvwxyz", true),
            ("pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0w", true),
            ("hf_0123456789abcdefghijklmnopqrstuvwxyz", true),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
                true,
            ),
            ("-----BEGIN ENCRYPTED PRIVATE KEY-----", true),
            ("-----BEGIN CERTIFICATE-----", false),
            ("-----BEGIN PUBLIC KEY-----", false),
            ("postgres://app:hunter2@db.internal:5432/app", true),
            ("https://x-access-token@github.com/o/r.git", true),
            ("Server=db;User Id=app;Password=hunter2;", true),
            ("Bearer abcdefgh12345", true),
            ("Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl", true),
            ("q7Xv2LpR9sKd3WmZ8tNc4YbH", true),
            // Not secret by value.
            ("3f786850e387550fdab836ed7e6dc881de23001b", false),
            (
                "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                false,
            ),
            ("550e8400-e29b-41d4-a716-446655440000", false),
            (
                "/nix/store/0c5gq3w0mbcrwxa8fahx8pjfdmvq3mww-bash-5.2/bin",
                false,
            ),
            (
                "/usr/lib/x86_64-linux-gnu/libQt5WebEngineCore.so.5.15.2",
                false,
            ),
            ("https://registry.npmjs.org/@scope/pkg", false),
            ("git@github.com:owner/repo.git", false),
            ("1.80.0-nightly (2024-06-01)", false),
            ("eu-west-1", false),
            ("HTTPServerRequest2Handler", false),
            // A temporary directory's random name cut by its `.` (a test's HOME).
            ("/tmp/.tmpAbC9xZ/12/spear-home", false),
            ("/tmp/.tmpQ7DiZX/state:/tmp/.tmp8vAS3N/ws", false),
            // A secret in a path's part is still one.
            ("/srv/q7Xv2LpR9sKd3WmZ8tNc4YbH/key", true),
            ("sk-learn", false),
            ("Bearer", false),
            ("", false),
        ];
        for (value, secret) in rows {
            assert_eq!(value_looks_secret(value), *secret, "{value}");
        }
    }

    /// The environments of a desktop session, a CI runner and a container, as they come: no
    /// variable of them that is not a credential looks like one; every credential does. (The
    /// false-positive measure of the name and value rules.)
    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a table: real environments, variable by variable"
    )]
    fn realistic_environments() {
        let settings: &[(&str, &str)] = &[
            (
                "PATH",
                "/home/u/.cargo/bin:/home/u/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/snap/bin",
            ),
            (
                "PATH",
                "/run/current-system/sw/bin:/nix/store/0c5gq3w0mbcrwxa8fahx8pjfdmvq3mww-bash-interactive-5.2p26/bin:/nix/store/7hnr99nxrd2aw6lghybqdmkckq60j6l9-coreutils-9.4/bin",
            ),
            ("PWD", "/home/u/src/project"),
            ("OLDPWD", "/home/u"),
            ("HOME", "/home/u"),
            ("SHELL", "/bin/bash"),
            ("LANG", "en_US.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("TERM", "xterm-256color"),
            ("COLORTERM", "truecolor"),
            ("EDITOR", "nvim"),
            ("DISPLAY", ":0"),
            ("WAYLAND_DISPLAY", "wayland-0"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("XDG_SESSION_TYPE", "wayland"),
            ("XDG_SESSION_ID", "2"),
            ("XDG_SESSION_CLASS", "user"),
            ("XDG_SESSION_DESKTOP", "ubuntu"),
            ("DESKTOP_SESSION", "ubuntu-wayland"),
            ("XDG_CURRENT_DESKTOP", "ubuntu:GNOME"),
            (
                "XDG_DATA_DIRS",
                "/usr/share/ubuntu:/usr/local/share/:/usr/share/:/var/lib/snapd/desktop",
            ),
            ("XDG_CONFIG_DIRS", "/etc/xdg/xdg-ubuntu:/etc/xdg"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
            (
                "SESSION_MANAGER",
                "local/u-laptop:@/tmp/.ICE-unix/2345,unix/u-laptop:/tmp/.ICE-unix/2345",
            ),
            (
                "GNOME_TERMINAL_SCREEN",
                "/org/gnome/Terminal/screen/5f0e8a2c_4b1d_4e0a_9c3f_2d7e6b8a1c0f",
            ),
            ("GNOME_TERMINAL_SERVICE", ":1.104"),
            ("VTE_VERSION", "7600"),
            ("XAUTHORITY", "/run/user/1000/.mutter-Xwaylandauth.8ZXKQ2"),
            (
                "LS_COLORS",
                "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01:mi=00:su=37;41:sg=30;43:ca=30;41:tw=30;42:ow=34;42:st=37;44:ex=01;32:*.tar=01;31:*.tgz=01;31:*.zip=01;31:*.jpg=01;35:*.png=01;35:*.mp3=00;36",
            ),
            ("LESSOPEN", "| /usr/bin/lesspipe %s"),
            ("LESSCLOSE", "/usr/bin/lesspipe %s %s"),
            ("MANPATH", "/usr/share/man:/usr/local/share/man"),
            ("GPG_TTY", "/dev/pts/1"),
            ("SSH_CONNECTION", "192.0.2.10 51234 192.0.2.20 22"),
            ("SSH_CLIENT", "192.0.2.10 51234 22"),
            ("SSH_TTY", "/dev/pts/0"),
            ("CARGO_HOME", "/home/u/.cargo"),
            ("RUSTUP_HOME", "/home/u/.rustup"),
            ("RUSTUP_TOOLCHAIN", "1.88.0-x86_64-unknown-linux-gnu"),
            ("RUSTFLAGS", "-C target-cpu=native -C link-arg=-fuse-ld=lld"),
            ("GOPATH", "/home/u/go"),
            ("GOFLAGS", "-mod=mod"),
            ("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"),
            ("PYENV_VERSION", "3.12.4"),
            ("VIRTUAL_ENV", "/home/u/src/project/.venv"),
            ("CONDA_PREFIX", "/opt/conda/envs/ml"),
            ("NVM_DIR", "/home/u/.nvm"),
            ("NODE_ENV", "development"),
            ("HISTCONTROL", "ignoreboth"),
            (
                "PS1",
                "\\[\\e]0;\\u@\\h: \\w\\a\\]${debian_chroot:+($debian_chroot)}\\u@\\h:\\w\\$ ",
            ),
            ("DEBIAN_FRONTEND", "noninteractive"),
            ("HOSTNAME", "3f4e5d6c7b8a"),
            ("CONTAINER_NAME", "uid-fvkgzf-xchrmg-rftsbw"),
            ("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt"),
            ("REQUESTS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt"),
            (
                "TOX_OVERRIDE",
                "testenv.passenv+=#,OPENBLAS_*;env_run_base.passenv+=OPENBLAS_*",
            ),
            ("OPENBLAS_CORETYPE", "Haswell"),
            ("CLOUD_SDK_VERSION", "528.0.0"),
            ("CI", "true"),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_SHA", "9f2c1e0b7a6d5c4b3a29180f7e6d5c4b3a291807"),
            ("GITHUB_REF", "refs/heads/main"),
            ("GITHUB_REPOSITORY", "octo-org/octo-repo"),
            ("GITHUB_RUN_ID", "9876543210"),
            ("GITHUB_WORKSPACE", "/home/runner/work/octo-repo/octo-repo"),
            ("GITHUB_SERVER_URL", "https://github.com"),
            ("GITHUB_API_URL", "https://api.github.com"),
            (
                "GITHUB_EVENT_PATH",
                "/home/runner/work/_temp/_github_workflow/event.json",
            ),
            ("RUNNER_OS", "Linux"),
            ("RUNNER_TEMP", "/home/runner/work/_temp"),
            ("ImageOS", "ubuntu22"),
            ("ImageVersion", "20240609.1.0"),
            ("CI_COMMIT_SHA", "1ecfd275763eff1d6b4844ea3168962458c9f27a"),
            ("CI_COMMIT_SHORT_SHA", "1ecfd275"),
            ("CI_PIPELINE_ID", "1234567"),
            ("CI_PROJECT_URL", "https://gitlab.example.com/group/project"),
            (
                "CI_REGISTRY_IMAGE",
                "registry.gitlab.example.com/group/project",
            ),
            (
                "DOCKER_IMAGE",
                "ghcr.io/octo-org/app@sha256:0d5e8e58b2c1f0a9d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4",
            ),
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
            ("KUBERNETES_PORT", "tcp://10.96.0.1:443"),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_PROFILE", "dev"),
            ("TZ", "Europe/Berlin"),
            ("GIT_AUTHOR_NAME", "Ada Lovelace"),
            ("GIT_AUTHOR_EMAIL", "ada@example.com"),
            ("TRACE_ID", "4bf92f3577b34da6a3ce929d0e0e4736"),
            ("REQUEST_ID", "550e8400-e29b-41d4-a716-446655440000"),
            ("BUILD_TAG", "jenkins-MyPipeline-PR-1234-56"),
            ("JAVA_OPTS", "-Xmx2g -XX:+UseG1GC -Dfile.encoding=UTF-8"),
            ("MAKEFLAGS", "-j8"),
            ("QT_IM_MODULE", "ibus"),
            ("GTK_MODULES", "gail:atk-bridge"),
            ("MOZ_ENABLE_WAYLAND", "1"),
            ("SNAP_REVISION", "x1"),
            (
                "npm_config_user_agent",
                "npm/10.2.4 node/v20.11.0 linux x64 workspaces/false",
            ),
            ("npm_package_version", "1.4.0-beta.2"),
            ("WSLENV", "WT_SESSION:WT_PROFILE_ID"),
        ];
        let mut wrong: Vec<String> = settings
            .iter()
            .filter(|(n, v)| looks_secret(n, v))
            .map(|(n, v)| format!("setting {n}={v}"))
            .collect();
        let credentials: &[(&str, &str)] = &[
            ("GITHUB_TOKEN", "ghs_0123456789abcdefghijABCDEFGHIJ012345"),
            (
                "ACTIONS_RUNTIME_TOKEN",
                "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJuYW1lIjoiYSJ9.c2ln",
            ),
            (
                "ACTIONS_ID_TOKEN_REQUEST_URL",
                "https://pipelines.actions.githubusercontent.com/abc",
            ),
            ("NPM_TOKEN", "npm_0123456789abcdefghijklmnopqrstuvwxyz"),
            (
                "AWS_SECRET_ACCESS_KEY",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ),
            ("DATABASE_URL", "postgres://app:s3cr3t@db:5432/app"),
            ("APP_DB_CREDS", "app:s3cr3t"),
            ("APP_SIGNING_PHRASE", "correct horse battery staple"),
            ("MY_SERVICE", "q7Xv2LpR9sKd3WmZ8tNc4YbH1eJ6"),
            (
                "SLACK_WEBHOOK",
                "https://hooks.slack.com/services/T0000/B0000/XXXXqZ8tNc4YbH1eJ6Lp9s",
            ),
            // Not a credential, but `SESSION` in its name: decided secret-looking (a glob does
            // not pass it).
            ("WT_SESSION", "b2c1f0a9-d7c6-4b5a-9f3e-2d1c0b9a8f7e"),
        ];
        wrong.extend(
            credentials
                .iter()
                .filter(|(n, v)| !looks_secret(n, v))
                .map(|(n, v)| format!("credential {n}={v}")),
        );
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}
