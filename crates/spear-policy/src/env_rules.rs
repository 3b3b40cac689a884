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

/// `NAME=value` on its own: a variable of the shell, exported to later commands if it already is
/// in the environment. Upper-case names (the environment's by convention) and the proxy variables
/// are `SHELL_COMPLEX` unless harmless; `HOME` also stops `~` from being known.
pub(crate) fn check_shell_assignment(a: &mut Analysis<'_>, name: &str, value: Option<&Arg>) {
    if name == "HOME" {
        a.home_intact = false;
    }
    if shell_assignment_matters(name, value) {
        a.complex(format!(
            "assigning `{name}` can change how later commands are found or what they run"
        ));
    }
}

/// Whether giving the shell variable `name` the value `value` (or any value, or none: `unset`,
/// `read NAME`, `printf -v NAME`) can change how later commands are found or what they run: an
/// upper-case name (the environment's by convention) or a proxy variable, unless harmless.
pub(crate) fn shell_assignment_matters(name: &str, value: Option<&Arg>) -> bool {
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
}
