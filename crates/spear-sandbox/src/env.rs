//! The sandbox's environment: rebuilt from an allowlist, never inherited.
//!
//! Attack stopped: secret theft through the environment (`env`, `/proc/self/environ`). The host's
//! model API keys, cloud credentials and tokens never reach a sandbox: only named variables are
//! copied, and even those are dropped when their name or value looks like a secret, unless the
//! operator named that very variable ([`EnvPass::Exact`]). A glob the operator gave
//! ([`EnvPass::Prefix`]) never passes a secret-looking one.
//!
//! Attack stopped: code run behind the decision layer's back. A variable that changes how
//! programs load or run code (`LD_PRELOAD`, `BASH_ENV`, `PYTHONSTARTUP`, `NODE_OPTIONS`, the
//! `GIT_*` that run programs or inject configuration, ...) would turn a command judged as reading
//! into one that runs whatever the variable names; it is never passed, however it is asked for
//! ([`loads_code`]).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Variables copied from the host when present (locale and toolchain selections). The toolchain
/// homes themselves come from [`EnvInputs::toolchain_vars`]: only those of bound trees.
const COPIED: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "USER",
    "LOGNAME",
    "RUSTUP_TOOLCHAIN",
    "PYENV_VERSION",
];

/// Whether a variable's name or value looks like a secret: [`spear_core::secret::looks_secret`],
/// the one rule (names split into words: `CREDS`, `PHRASE`, `SIGNING`, `AUTH`, `SESSION`, ...;
/// values by their shape: token prefixes, private-key PEM blocks, URLs with a password, long
/// high-entropy runs). A glob never passes such a variable; an exact name still may.
pub fn looks_secret(name: &OsStr, value: &OsStr) -> bool {
    spear_core::secret::looks_secret(&name.to_string_lossy(), &value.to_string_lossy())
}

/// Names that change how programs load or run code, never passed into a sandbox.
const LOADS_CODE: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "ZDOTDIR",
    "IFS",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "LUA_INIT",
    "LUA_PATH",
    "LUA_CPATH",
    "TCLLIBPATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "GCONV_PATH",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "LESSOPEN",
    "LESSCLOSE",
];

/// Prefixes of names that load code: the dynamic linker's, bash's exported functions, and git's
/// (hooks, editors, ssh and proxy commands, external diff, `GIT_CONFIG_*` injecting keys, the
/// template directory of new repositories).
const LOADS_CODE_PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_FUNC_", "GIT_"];

/// The `GIT_*` names that run nothing: the identity of a commit.
const GIT_INERT: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
];

/// Names spear sets itself and never takes from the host: the sandbox's `PATH` holds no workspace
/// directory, its `HOME` and `TMPDIR` are its private places, its `SHLVL` is a fresh session's.
pub(crate) const SPEAR_OWNS: &[&str] = &["PATH", "HOME", "TMPDIR", "PWD", "OLDPWD", "SHLVL"];

/// Whether `name` changes how programs load or run code (see the module's doc).
pub fn loads_code(name: &str) -> bool {
    LOADS_CODE.contains(&name)
        || (LOADS_CODE_PREFIXES.iter().any(|p| name.starts_with(p)) && !GIT_INERT.contains(&name))
}

/// A variable the operator passes into every sandbox (`[env] pass`, `--env NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvPass {
    /// One variable, by its exact name: passed even if it looks like a secret.
    Exact(String),
    /// Every variable whose name starts with this (written `PREFIX_*`): never a secret-looking one.
    Prefix(String),
}

/// Why an `[env] pass` entry or `--env` name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvPassError {
    /// Not a variable name or a `PREFIX*` glob.
    #[error(
        "`{0}` is not a variable name (letters, digits, `_`, not starting with a digit) or a prefix glob such as `MY_APP_*`"
    )]
    Malformed(String),
    /// It changes how programs load code.
    #[error(
        "`{0}` changes how programs load or run code and is never passed into a sandbox: a command judged to read could then run anything. Set it inside the command instead (`{0}=... cmd`), where spear judges it"
    )]
    LoadsCode(String),
    /// spear sets it.
    #[error(
        "`{0}` is set by spear itself (the sandbox's own value) and cannot be passed from the host"
    )]
    SpearOwns(String),
}

impl EnvPass {
    /// Parses `NAME` or `PREFIX*`. Refuses what is never passed: names that load code
    /// ([`loads_code`]), globs that only such names could match, and the names spear sets.
    pub fn parse(text: &str) -> Result<EnvPass, EnvPassError> {
        let (name, glob) = match text.strip_suffix('*') {
            Some(prefix) => (prefix, true),
            None => (text, false),
        };
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(EnvPassError::Malformed(text.to_owned()));
        }
        if glob {
            let only_code = LOADS_CODE_PREFIXES
                .iter()
                .any(|p| name.starts_with(p) && *p != "GIT_");
            if only_code {
                return Err(EnvPassError::LoadsCode(text.to_owned()));
            }
            return Ok(EnvPass::Prefix(name.to_owned()));
        }
        if loads_code(name) {
            return Err(EnvPassError::LoadsCode(text.to_owned()));
        }
        if SPEAR_OWNS.contains(&name) {
            return Err(EnvPassError::SpearOwns(text.to_owned()));
        }
        Ok(EnvPass::Exact(name.to_owned()))
    }

    /// The names of the exact entries of `pass`: the ones a secret-looking value may come through.
    pub fn exact_names(pass: &[EnvPass]) -> Vec<OsString> {
        pass.iter()
            .filter_map(|p| match p {
                EnvPass::Exact(n) => Some(OsString::from(n)),
                EnvPass::Prefix(_) => None,
            })
            .collect()
    }
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
    /// The variables of the toolchain trees the sandbox binds (`CARGO_HOME`, `GOPATH`, ...).
    pub toolchain_vars: &'a [(String, PathBuf)],
    /// The user's name (from the password database) for `USER` and `LOGNAME` when the host's
    /// environment has none.
    pub user: Option<&'a OsStr>,
    /// What the operator passes.
    pub pass: &'a [EnvPass],
}

/// The whole environment of a sandboxed command: PATH, HOME, TMPDIR=/tmp, TERM=dumb (the output is
/// captured, not a terminal: a capable TERM fills it with colour and cursor codes), `SHLVL=0`
/// (what a program exec'd by a top-level shell sees, and what a program exec'd by a warm
/// sandbox's hold sees: the `warm` module), pagers that
/// never wait for a terminal, `GIT_OPTIONAL_LOCKS=0` (a read-only `git status` must not take
/// locks), `USER` and `LOGNAME` (the host's, else the user's name), `LANG` (the host's, else
/// `C.UTF-8`) and the host's other locale variables, the homes of the bound toolchains, and what
/// the operator passes ([`EnvPass`]). Sorted by name; secrets dropped (but for variables the
/// operator named exactly); nothing that [`loads_code`].
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
        ("TMPDIR".into(), spear_core::SANDBOX_TMPDIR.into()),
        ("SHLVL".into(), "0".into()),
        ("TERM".into(), "dumb".into()),
        ("PAGER".into(), "cat".into()),
        ("GIT_PAGER".into(), "cat".into()),
        ("GIT_OPTIONAL_LOCKS".into(), "0".into()),
    ];
    let set = |env: &mut Vec<(OsString, OsString)>, name: &OsStr, value: &OsStr| {
        if !env.iter().any(|(n, _)| n == name) {
            env.push((name.to_owned(), value.to_owned()));
        }
    };
    for (name, value) in inputs.toolchain_vars {
        set(&mut env, OsStr::new(name), value.as_os_str());
    }
    for (name, value) in inputs.host {
        let copied = name
            .to_str()
            .is_some_and(|n| COPIED.contains(&n) || (n.starts_with("LC_") && n.len() > 3));
        if copied && !looks_secret(name, value) {
            set(&mut env, name, value);
        }
    }
    for (name, value) in inputs.host {
        let Some(text) = name.to_str() else { continue };
        if loads_code(text) || SPEAR_OWNS.contains(&text) {
            continue;
        }
        let passed = inputs.pass.iter().any(|p| match p {
            EnvPass::Exact(n) => n == text,
            EnvPass::Prefix(pre) => text.starts_with(pre.as_str()) && !looks_secret(name, value),
        });
        if passed {
            set(&mut env, name, value);
        }
    }
    if let Some(user) = inputs.user.filter(|u| !u.is_empty()) {
        set(&mut env, OsStr::new("USER"), user);
        set(&mut env, OsStr::new("LOGNAME"), user);
    }
    set(&mut env, OsStr::new("LANG"), OsStr::new("C.UTF-8"));
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
            toolchain_vars: &[],
            user: None,
            pass: &[],
        });
        assert_eq!(
            env,
            pairs(&[
                ("GIT_OPTIONAL_LOCKS", "0"),
                ("GIT_PAGER", "cat"),
                ("HOME", "/home/u"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C"),
                ("PAGER", "cat"),
                ("PATH", "/usr/bin:/bin"),
                ("SHLVL", "0"),
                ("TERM", "dumb"),
                ("TMPDIR", "/tmp"),
            ])
        );
    }

    fn build(host: &[(&str, &str)], pass: &[&str]) -> Vec<(OsString, OsString)> {
        let host = pairs(host);
        let pass: Vec<EnvPass> = pass.iter().map(|p| EnvPass::parse(p).unwrap()).collect();
        sandbox_env(EnvInputs {
            host: &host,
            home: Path::new("/home/u"),
            path: &[PathBuf::from("/usr/bin")],
            toolchain_vars: &[
                ("CARGO_HOME".into(), PathBuf::from("/home/u/.cargo")),
                ("GOPATH".into(), PathBuf::from("/home/u/go")),
            ],
            user: Some(OsStr::new("alice")),
            pass: &pass,
        })
    }

    fn get<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a str> {
        env.iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.to_str())
    }

    /// Each row: the host's variables, what the operator passes, and for each name the value
    /// expected inside (`None`: absent).
    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a table: one row per host environment and operator passing, with the variables expected inside"
    )]
    fn builder_table() {
        type Row = (
            &'static str,
            Vec<(&'static str, &'static str)>,
            Vec<&'static str>,
            Vec<(&'static str, Option<&'static str>)>,
        );
        let rows: Vec<Row> = vec![
            (
                "defaults without a host environment",
                vec![],
                vec![],
                vec![
                    ("USER", Some("alice")),
                    ("LOGNAME", Some("alice")),
                    ("LANG", Some("C.UTF-8")),
                    ("TERM", Some("dumb")),
                    ("CARGO_HOME", Some("/home/u/.cargo")),
                    ("GOPATH", Some("/home/u/go")),
                ],
            ),
            (
                "the host's user and locale win over the defaults",
                vec![("USER", "bob"), ("LOGNAME", "bob"), ("LANG", "de_DE.UTF-8")],
                vec![],
                vec![
                    ("USER", Some("bob")),
                    ("LOGNAME", Some("bob")),
                    ("LANG", Some("de_DE.UTF-8")),
                ],
            ),
            (
                "a host toolchain variable that is not bound is not copied",
                vec![("RUSTUP_HOME", "/srv/rustup"), ("CARGO_HOME", "/elsewhere")],
                vec![],
                vec![
                    ("RUSTUP_HOME", None),
                    ("CARGO_HOME", Some("/home/u/.cargo")),
                ],
            ),
            (
                "nothing unnamed is passed",
                vec![("MY_APP_MODE", "dev"), ("DJANGO_SETTINGS_MODULE", "s")],
                vec![],
                vec![("MY_APP_MODE", None), ("DJANGO_SETTINGS_MODULE", None)],
            ),
            (
                "an exact name and a glob",
                vec![
                    ("DJANGO_SETTINGS_MODULE", "proj.settings"),
                    ("MY_APP_MODE", "dev"),
                    ("MY_APP_LEVEL", "3"),
                    ("OTHER", "x"),
                ],
                vec!["DJANGO_SETTINGS_MODULE", "MY_APP_*"],
                vec![
                    ("DJANGO_SETTINGS_MODULE", Some("proj.settings")),
                    ("MY_APP_MODE", Some("dev")),
                    ("MY_APP_LEVEL", Some("3")),
                    ("OTHER", None),
                ],
            ),
            (
                "a glob never passes what looks like a secret",
                vec![
                    ("MY_APP_TOKEN", "t"),
                    ("MY_APP_DB_PASS", "hunter2"),
                    ("MY_APP_URL", "https://u:p@db.example/"),
                    ("MY_APP_ID", "ghp_0123456789abcdefABCDEF0123456789abcd"),
                    ("MY_APP_BLOB", "q7Xv2LpR9sKd3WmZ8tNc4YbH1eJ6"),
                    ("MY_APP_MODE", "dev"),
                ],
                vec!["MY_APP_*"],
                vec![
                    ("MY_APP_TOKEN", None),
                    ("MY_APP_DB_PASS", None),
                    ("MY_APP_URL", None),
                    ("MY_APP_ID", None),
                    ("MY_APP_BLOB", None),
                    ("MY_APP_MODE", Some("dev")),
                ],
            ),
            (
                "a glob passes settings whose shape is an identifier, not a secret",
                vec![
                    ("MY_APP_COMMIT", "3f786850e387550fdab836ed7e6dc881de23001b"),
                    ("MY_APP_RUN", "550e8400-e29b-41d4-a716-446655440000"),
                    ("AWS_REGION", "eu-west-1"),
                ],
                vec!["MY_APP_*", "AWS_*"],
                vec![
                    (
                        "MY_APP_COMMIT",
                        Some("3f786850e387550fdab836ed7e6dc881de23001b"),
                    ),
                    ("MY_APP_RUN", Some("550e8400-e29b-41d4-a716-446655440000")),
                    ("AWS_REGION", Some("eu-west-1")),
                ],
            ),
            (
                "a secret named exactly is passed",
                vec![
                    ("HF_TOKEN", "hf_abc"),
                    ("AWS_REGION", "eu-west-1"),
                    ("GIT_AUTHOR_NAME", "A"),
                ],
                vec!["HF_TOKEN", "AWS_REGION", "GIT_AUTHOR_NAME"],
                vec![
                    ("HF_TOKEN", Some("hf_abc")),
                    ("AWS_REGION", Some("eu-west-1")),
                    ("GIT_AUTHOR_NAME", Some("A")),
                ],
            ),
            (
                "a glob never passes what loads code or what spear sets",
                vec![
                    ("GIT_SSH_COMMAND", "evil"),
                    ("GIT_CONFIG_COUNT", "1"),
                    ("GIT_AUTHOR_NAME", "A"),
                    ("PATH", "/work/proj/bin"),
                ],
                vec!["GIT_*", "PA*"],
                vec![
                    ("GIT_SSH_COMMAND", None),
                    ("GIT_CONFIG_COUNT", None),
                    // Inert, and `AUTHOR` is not `AUTH`: a setting.
                    ("GIT_AUTHOR_NAME", Some("A")),
                    ("PATH", Some("/usr/bin")),
                ],
            ),
            (
                "spear's own values win over a passed one",
                vec![("TERM", "xterm-256color"), ("TMPDIR", "/host/tmp")],
                vec!["TERM"],
                vec![("TERM", Some("dumb")), ("TMPDIR", Some("/tmp"))],
            ),
        ];
        for (name, host, pass, want) in rows {
            let env = build(&host, &pass);
            for (var, value) in want {
                assert_eq!(get(&env, var), value, "{name}: {var}");
            }
            let mut sorted = env.clone();
            sorted.sort();
            assert_eq!(env, sorted, "{name}: sorted");
        }
    }

    #[test]
    fn pass_entries_that_are_refused() {
        for (text, want) in [
            ("LD_PRELOAD", EnvPassError::LoadsCode("LD_PRELOAD".into())),
            ("LD_*", EnvPassError::LoadsCode("LD_*".into())),
            ("BASH_FUNC_*", EnvPassError::LoadsCode("BASH_FUNC_*".into())),
            ("BASH_ENV", EnvPassError::LoadsCode("BASH_ENV".into())),
            ("ENV", EnvPassError::LoadsCode("ENV".into())),
            (
                "PYTHONSTARTUP",
                EnvPassError::LoadsCode("PYTHONSTARTUP".into()),
            ),
            (
                "NODE_OPTIONS",
                EnvPassError::LoadsCode("NODE_OPTIONS".into()),
            ),
            (
                "PROMPT_COMMAND",
                EnvPassError::LoadsCode("PROMPT_COMMAND".into()),
            ),
            (
                "GIT_SSH_COMMAND",
                EnvPassError::LoadsCode("GIT_SSH_COMMAND".into()),
            ),
            (
                "GIT_CONFIG_PARAMETERS",
                EnvPassError::LoadsCode("GIT_CONFIG_PARAMETERS".into()),
            ),
            (
                "GIT_TEMPLATE_DIR",
                EnvPassError::LoadsCode("GIT_TEMPLATE_DIR".into()),
            ),
            ("PATH", EnvPassError::SpearOwns("PATH".into())),
            ("HOME", EnvPassError::SpearOwns("HOME".into())),
            ("*", EnvPassError::Malformed("*".into())),
            ("A-B", EnvPassError::Malformed("A-B".into())),
            ("1X", EnvPassError::Malformed("1X".into())),
            ("A*B", EnvPassError::Malformed("A*B".into())),
            ("", EnvPassError::Malformed(String::new())),
        ] {
            assert_eq!(EnvPass::parse(text), Err(want.clone()), "{text}");
        }
        assert_eq!(
            EnvPass::parse("GIT_AUTHOR_NAME"),
            Ok(EnvPass::Exact("GIT_AUTHOR_NAME".into()))
        );
        assert_eq!(EnvPass::parse("MY_*"), Ok(EnvPass::Prefix("MY_".into())));
        let msg = EnvPass::parse("LD_PRELOAD").unwrap_err().to_string();
        assert!(msg.contains("never passed"), "{msg}");
    }

    #[test]
    fn empty_path_gets_the_system_default() {
        let env = sandbox_env(EnvInputs {
            host: &[],
            home: Path::new("/h"),
            path: &[],
            toolchain_vars: &[],
            user: None,
            pass: &[],
        });
        assert!(env.contains(&("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())));
    }

    /// Issue 31, part 7: each row is a host variable, and whether the glob `APP_*` passes it. The
    /// positive control of every row: the same variable named exactly (`--env NAME`) is passed,
    /// so the variable was there to be passed and only the glob's rule kept it out.
    #[test]
    fn globs_never_pass_secrets_exact_names_do() {
        let rows: &[(&str, &str, bool)] = &[
            // The red team's: a name a substring list did not know.
            ("APP_DB_CREDS", "app:s3cr3t", false),
            ("APP_SIGNING_PHRASE", "correct horse battery staple", false),
            ("APP_CREDENTIALS", "x", false),
            ("APP_PASSPHRASE", "x", false),
            ("APP_PASSWD", "x", false),
            ("APP_AUTH", "x", false),
            ("APP_OAUTH2_CLIENT", "x", false),
            ("APP_COOKIE", "x", false),
            ("APP_SESSION", "x", false),
            ("APP_PRIVATE_PEM", "x", false),
            ("APP_SIGNING", "x", false),
            ("APP_SENTRY_DSN", "https://abc@o1.ingest.example/1", false),
            ("APP_apiKey", "x", false),
            ("APP_HMAC", "x", false),
            // Only the value says it.
            ("APP_GH", "ghp_0123456789abcdefABCDEF0123456789abcd", false),
            ("APP_HF", "hf_0123456789abcdefghijklmnopqrstuvwxyz", false),
            ("APP_AWS", "AKIAIOSFODNN7EXAMPLE", false),
            (
                "APP_JWT_LIKE",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijk",
                false,
            ),
            ("APP_STRIPE", "sk_live_0123456789abcdefABCD", false),
            ("APP_NPM", "npm_0123456789abcdefghijklmnopqrstuvwxyz", false),
            (
                "APP_PYPI",
                "pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0w",
                false,
            ),
            ("APP_SLACK", "xoxb-1234567890-abcdefghij", false),
            (
                "APP_KEYDATA",
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
                false,
            ),
            ("APP_DB", "postgres://app:hunter2@db:5432/app", false),
            ("APP_CONN", "Server=db;User Id=app;Password=hunter2;", false),
            ("APP_BLOB", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl", false),
            // Settings, passed.
            ("APP_MODE", "production", true),
            ("APP_AUTHOR", "Ada", true),
            ("APP_KEYBOARD", "us", true),
            (
                "APP_COMMIT",
                "3f786850e387550fdab836ed7e6dc881de23001b",
                true,
            ),
            ("APP_URL", "https://registry.npmjs.org/@scope/pkg", true),
            (
                "APP_DIR",
                "/nix/store/0c5gq3w0mbcrwxa8fahx8pjfdmvq3mww-bash-5.2/bin",
                true,
            ),
            ("APP_VERSION", "1.80.0-nightly", true),
        ];
        for (name, value, by_glob) in rows {
            let passed = |pass: &str| get(&build(&[(*name, *value)], &[pass]), name).is_some();
            assert_eq!(passed("APP_*"), *by_glob, "{name}={value} through APP_*");
            assert!(
                passed(name),
                "{name}: its exact name passes it (the control)"
            );
        }
    }

    #[test]
    fn secret_shapes() {
        for (n, v, secret) in [
            ("X", "ghp_0123456789abcdefghijKLMN", true),
            ("X", "github_pat_11ABCDEFG0123456789_abc", true),
            ("X", "xoxb-1234567890-abcdef", true),
            ("X", "AKIAIOSFODNN7EXAMPLE", true),
            ("X", "-----BEGIN OPENSSH PRIVATE KEY-----", true),
            ("X", "https://user:pw@example.com", true),
            ("my_api_key", "v", true),
            ("NPM_TOKEN", "v", true),
            ("X", "ghp_abc", false),
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
