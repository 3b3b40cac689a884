//! Which environment and shell variable assignments change what a program runs.
//!
//! Attacks stopped: `GIT_SSH_COMMAND='touch x' git ls-remote ...` runs `touch`; `LESSOPEN='|cmd'
//! less f` runs `cmd`; `LESSKEYIN=./keys less f` reads a lesskey file whose `#env` section sets
//! `LESSOPEN`; `PAGER='sh -c x' man ls` and `BAT_PAGER=x bat f` run their pager; `PATH=.:$PATH ls`
//! runs `./ls`; `HOME=/x git log` reads `/x/.gitconfig`, which can name a pager. A prefix
//! assignment is harmless only for the variables listed here; any other makes the command
//! `SHELL_COMPLEX`. The same holds for an `export`ed or `env`-given variable, and for a shell
//! variable that builtins assign (`read PAGER`, `printf -v PATH`, `unset PATH`, `for PATH in`).

use crate::analysis::Analysis;
use crate::shell::word::Arg;

/// Variables that only change formatting, locale, colour, logging or metadata.
const HARMLESS: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLORTERM",
    "CI",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_TEST_THREADS",
    "RUST_MIN_STACK",
    "CARGO_TERM_COLOR",
    "CARGO_INCREMENTAL",
    "CARGO_TERM_VERBOSE",
    "CARGO_BUILD_JOBS",
    "NODE_ENV",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONWARNINGS",
    "PYTHONUTF8",
    "GO111MODULE",
    "CGO_ENABLED",
    "GOOS",
    "GOARCH",
    "GOMAXPROCS",
    "GREP_COLOR",
    "GREP_COLORS",
    "LS_COLORS",
    "TIME_STYLE",
    "SOURCE_DATE_EPOCH",
    "GIT_TERMINAL_PROMPT",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_OPTIONAL_LOCKS",
    "DEBIAN_FRONTEND",
    "NPM_CONFIG_COLOR",
    "NPM_CONFIG_FUND",
    "NPM_CONFIG_AUDIT",
    "NPM_CONFIG_UPDATE_NOTIFIER",
    "POSIXLY_CORRECT",
    "VERBOSE",
    "DEBUG",
    "QUIET",
    // The shell's own results (`read`, `getopts`, `mapfile`), which no program reads.
    "REPLY",
    "OPTARG",
    "OPTIND",
    "MAPFILE",
];

/// Variables whose value names a program to run; harmless only when the value is one of
/// [`INERT_PROGRAMS`].
const PROGRAM_VARIABLES: &[&str] = &[
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "BAT_PAGER",
    "EDITOR",
    "VISUAL",
    "GIT_EDITOR",
];

/// Programs that, used as a pager or editor, only pass text through or do nothing.
const INERT_PROGRAMS: &[&str] = &["", "cat", "true", ":", "less -R", "less"];

/// Lower-case variables that programs read (proxy settings route traffic).
const LOWERCASE_PROGRAM_VARIABLES: &[&str] = &[
    "http_proxy",
    "https_proxy",
    "ftp_proxy",
    "all_proxy",
    "no_proxy",
];

fn harmless(name: &str, value: Option<&Arg>) -> bool {
    if HARMLESS.contains(&name) || name.starts_with("LC_") {
        return true;
    }
    if PROGRAM_VARIABLES.contains(&name) {
        return value
            .and_then(Arg::lit)
            .is_some_and(|v| INERT_PROGRAMS.contains(&v.trim()));
    }
    false
}

/// `NAME=value program ...`: the variable is in `program`'s environment.
pub(crate) fn check_env_assignment(
    a: &mut Analysis<'_>,
    name: &str,
    value: Option<&Arg>,
    program: &str,
) {
    if !harmless(name, value) {
        a.complex(format!(
            "`{name}=...` is in the environment of `{program}` and can change what it runs"
        ));
    }
}

/// Variables bash itself reads to decide how later commands are found, parsed, traced or run
/// (also the ones spear cannot tell apart from them by name: `BASH*`, `HIST*`, `COMP_*`).
const SHELL_VARIABLES: &[&str] = &[
    "PATH",
    "IFS",
    "CDPATH",
    "HOME",
    "ENV",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "PROMPT_DIRTRIM",
    "SHELLOPTS",
    "GLOBIGNORE",
    "EXECIGNORE",
    "FIGNORE",
    "FUNCNEST",
    "MAIL",
    "MAILPATH",
    "MAILCHECK",
    "TMOUT",
    "TMPDIR",
    "HOSTFILE",
    "INPUTRC",
    "OLDPWD",
    "PWD",
    "TIMEFORMAT",
    "POSIXLY_CORRECT",
    "TEXTDOMAIN",
    "TEXTDOMAINDIR",
    "GLOBSORT",
    "CHILD_MAX",
    "SHELL",
];

/// Name shapes of variables that programs, the dynamic loader or interpreters read to find or
/// run code (`LD_PRELOAD`, `PYTHONSTARTUP`, `NODE_OPTIONS`, `GIT_EXEC_PATH`, `MANPATH`,
/// `CARGO_BUILD_RUSTC_WRAPPER`, ...). A shell variable of such a name reaches a program once it
/// is exported (`export NAME`, `declare -x`, `set -a`), so it is judged as today whatever the
/// environment holds.
const PROGRAM_PREFIXES: &[&str] = &[
    "BASH",
    "HIST",
    "COMP_",
    "READLINE",
    "LD_",
    "DYLD_",
    "GIT",
    "LESS",
    "PYTHON",
    "PERL",
    "RUBY",
    "NODE",
    "NPM_",
    "YARN",
    "JAVA",
    "_JAVA",
    "JDK_",
    "MAVEN",
    "GRADLE",
    "SSH",
    "GPG",
    "GNUPG",
    "CARGO",
    "RUST",
    "GO",
    "PIP_",
    "UV_",
    "CONDA",
    "PYENV",
    "NVM",
    "VIRTUAL_ENV",
    "XDG_",
    "MAKE",
    "CC",
    "CXX",
    "CPP",
    "CFLAGS",
    "LDFLAGS",
    "SUDO",
    "SYSTEMD",
    "DBUS",
    "DOCKER",
    "KUBE",
    "TERMINFO",
    "MAN",
    "GCONV",
    "LOCPATH",
    "NLSPATH",
    "OPENSSL",
    "SSL_",
    "CURL",
    "WGET",
    "HTTP",
    "FTP",
    "ALL_",
    "NO_PROXY",
    "TCL",
    "LUA",
    "PHP",
    "COMPOSER",
    "GEM",
    "BUNDLE",
    "NIX",
    "EMACS",
    "VIM",
    "EXINIT",
    "ZDOTDIR",
    "DISPLAY",
    "XAUTH",
    "WAYLAND",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "BROWSER",
    "PROMPT",
    "DEBUGINFOD",
    "MALLOC",
    "GLIBC",
    "GDB",
    "VALGRIND",
    "ASAN",
    "UBSAN",
    "LSAN",
    "TSAN",
];

/// Name endings of such variables (`LD_LIBRARY_PATH`, `FOO_HOME`, `X_OPTIONS`, `MY_COMMAND`).
const PROGRAM_SUFFIXES: &[&str] = &[
    "PATH", "_HOME", "_ROOT", "_DIR", "_DIRS", "_CONFIG", "_OPTIONS", "_OPTS", "OPT", "FLAGS",
    "_COMMAND", "_CMD", "_PROGRAM", "_PAGER", "_EDITOR", "_SHELL", "_HOOK", "_HOOKS", "RC",
    "_PROXY", "_PRELOAD", "_LIBRARY", "LIB", "_INIT", "_STARTUP", "_ENV", "_PLUGIN", "_PLUGINS",
    "_EXEC", "_WRAPPER", "_RUNNER", "_LINKER",
];

/// Whether a variable of this name may be read by programs to find or run code (by its shape).
fn reads_to_run(name: &str) -> bool {
    PROGRAM_PREFIXES.iter().any(|p| name.starts_with(p))
        || PROGRAM_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// `NAME=value` on its own: a variable of the shell, exported to later commands if it already is
/// in the environment (or once `set -a` is on). It matters when bash itself reads it, when the
/// sandbox's environment already holds it, or when its name is one programs read to run code;
/// `for F in ...`, `read LINE` and `N=3` name none of these. `HOME` also stops `~` from being
/// known.
pub(crate) fn check_shell_assignment(a: &mut Analysis<'_>, name: &str, value: Option<&Arg>) {
    if name == "HOME" {
        a.home_intact = false;
    }
    if name == "TMPDIR" {
        a.tmpdir_intact = false;
    }
    if a.allexport {
        check_env_assignment(a, name, value, "later commands (`set -a` exports it)");
        return;
    }
    if shell_assignment_matters(a.policy.config(), name, value) {
        a.complex(format!(
            "assigning `{name}` can change how later commands are found or what they run"
        ));
    }
}

/// Whether giving the shell variable `name` the value `value` (or any value, or none: `unset`,
/// `read NAME`, `printf -v NAME`) can change how later commands are found or what they run: an
/// upper-case name (the environment's by convention) or a proxy variable that bash reads, that
/// the sandbox's environment holds, or that programs read to run code, unless harmless.
pub(crate) fn shell_assignment_matters(
    config: &crate::PolicyConfig,
    name: &str,
    value: Option<&Arg>,
) -> bool {
    may_matter(name, value)
        && (SHELL_VARIABLES.contains(&name)
            || LOWERCASE_PROGRAM_VARIABLES.contains(&name)
            || config.sandbox.has_variable(name)
            || reads_to_run(name))
}

/// Whether a variable of this name could be one the environment or programs read: an upper-case
/// name (the environment's by convention) or a proxy variable, unless harmless. Used where the
/// name's use is not known (`test -v NAME`).
pub(crate) fn may_matter(name: &str, value: Option<&Arg>) -> bool {
    let env_like = name
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        || LOWERCASE_PROGRAM_VARIABLES.contains(&name);
    env_like && !harmless(name, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let lit = |s: &str| Arg::Lit(s.into());
        assert!(harmless("LANG", Some(&lit("C"))));
        assert!(harmless("LC_ALL", Some(&lit("C"))));
        assert!(harmless("RUST_LOG", Some(&Arg::unknown("$x"))));
        assert!(harmless("GIT_PAGER", Some(&lit("cat"))));
        assert!(!harmless("GIT_PAGER", Some(&lit("sh -c 'touch x'"))));
        assert!(!harmless("PAGER", Some(&Arg::unknown("$p"))));
        assert!(harmless("BAT_PAGER", Some(&lit("cat"))));
        for name in [
            "PATH",
            "GIT_SSH_COMMAND",
            "LESSOPEN",
            "LESSCLOSE",
            "LESSKEY",
            "LESSKEYIN",
            "LESSKEY_SRC",
            "LESSKEY_CONTENT",
            "LESS",
            "PAGER",
            "MANPAGER",
            "GIT_PAGER",
            "BAT_PAGER",
            "SYSTEMD_PAGER",
            "EDITOR",
            "VISUAL",
            "LD_PRELOAD",
            "BASH_ENV",
            "HOME",
            "PS4",
        ] {
            assert!(!harmless(name, Some(&lit("x"))), "{name}");
        }
    }

    /// A shell variable that is not exported matters only when bash reads it, the sandbox's
    /// environment holds it, or programs read it to run code.
    #[test]
    fn shell_variables() {
        let config = crate::PolicyConfig::new(None);
        for (name, matters) in [
            ("F", false),
            ("LINE", false),
            ("FILE", false),
            ("COUNT", false),
            ("N", false),
            ("TOTAL", false),
            ("VERSION", false),
            ("line", false),
            ("PATH", true),
            ("IFS", true),
            ("BASH_ENV", true),
            ("LD_PRELOAD", true),
            ("LD_LIBRARY_PATH", true),
            ("PYTHONSTARTUP", true),
            ("NODE_OPTIONS", true),
            ("PS4", true),
            ("HOME", true),
            ("TMPDIR", true),
            ("PAGER", true),
            ("GIT_DIR", true),
            ("CARGO_HOME", true),
            ("USER", true),
            ("http_proxy", true),
            ("LANG", false),
        ] {
            assert_eq!(
                shell_assignment_matters(&config, name, Some(&Arg::Lit("x".into()))),
                matters,
                "{name}"
            );
        }
    }
}
