//! The executable summary of a command: which program it runs and how many arguments it gives
//! it, never what they are. It is made from the classifier's own reading of the command (the
//! simple commands its parser found, assignments already stripped), so the audit log and the
//! decision can never disagree about what a command runs.
//!
//! The summary is `name (N args)` for the first simple command of the script's top level that
//! runs a program (past an `env` prefix, as the `env` analyser itself reads its options and
//! assignments), followed by
//! `+ M more` when more top-level commands run programs. Commands inside `$(...)`, `bash -c` and
//! the like are not counted: they are arguments of the command that runs them.
//!
//! Attack stopped: a secret reaching the audit log through a command line. Arguments and
//! assignment values are never part of the summary; the program word itself goes through
//! [`spear_core::redact::redact`], is cut to [`MAX_NAME_CHARS`] characters, and is shown only
//! when it is a plain name or path (a computed or quoted program word, `$(echo hunter2)` or
//! `"mysql -pS3cret"`, is `(computed)`).

use std::fmt::Write as _;

use spear_core::redact::redact;

use crate::shell::word::Arg;

/// The longest program name a summary keeps (in characters) before cutting it with `…`.
pub const MAX_NAME_CHARS: usize = 64;

/// What a program whose name is not a plain word is shown as.
const COMPUTED: &str = "(computed)";

/// One top-level simple command that runs a program.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Run {
    /// The program word, when it is known text.
    name: Option<String>,
    /// How many arguments it gets.
    args: usize,
}

/// What the analysis saw of the script's top level, for its summary: the first command that runs
/// a program, how many more do, and how many commands there were (only the first is kept whole:
/// classification stays as fast as it was).
#[derive(Debug, Clone, Default)]
pub(crate) struct Runs {
    first: Option<Run>,
    /// The last top-level command recorded is `first`: a wrapper analysing it (`env`) may still
    /// name the program it runs in its place.
    first_is_last: bool,
    /// Top-level commands after the first that run a program.
    more: usize,
    /// Simple commands seen, including those that only assign.
    commands: usize,
    /// The script could not be parsed (or was refused before parsing).
    unparsed: bool,
}

impl Runs {
    /// Records a top-level simple command with these words (assignments stripped; empty when it
    /// only assigns).
    pub(crate) fn command(&mut self, words: &[Arg]) {
        self.commands += 1;
        self.first_is_last = false;
        let Some(program) = words.first() else {
            return;
        };
        if self.first.is_some() {
            self.more += 1;
        } else {
            self.first = Some(Run::of(program, words.len() - 1));
            self.first_is_last = true;
        }
    }

    /// The wrapper of the last top-level command (`env OPTIONS... PROGRAM ARGS...`) runs `words`
    /// in its place, as the wrapper's own analyser read its options: when that command is the
    /// first, the summary names the program it runs instead of the wrapper.
    pub(crate) fn runs_in_place(&mut self, words: &[Arg]) {
        if let (true, Some(program)) = (self.first_is_last, words.first()) {
            self.first = Some(Run::of(program, words.len() - 1));
        }
    }

    /// The script's top level could not be read.
    pub(crate) fn unparsed(&mut self) {
        self.unparsed = true;
    }

    /// The summary: `cargo (2 args) + 1 more`, `(empty)`, `(no program)` or `(not parsed)`.
    pub(crate) fn summary(&self) -> String {
        let Some(first) = &self.first else {
            return if self.unparsed {
                "(not parsed)"
            } else if self.commands == 0 {
                "(empty)"
            } else {
                "(no program)"
            }
            .to_owned();
        };
        let name = match &first.name {
            Some(name) if is_plain(name) => clamp(&redact(name)),
            _ => COMPUTED.to_owned(),
        };
        let plural = if first.args == 1 { "" } else { "s" };
        let mut summary = format!("{name} ({} arg{plural})", first.args);
        if self.more > 0 {
            let _ = write!(summary, " + {} more", self.more);
        }
        summary
    }
}

impl Run {
    fn of(program: &Arg, args: usize) -> Run {
        Run {
            name: program.lit().map(str::to_owned),
            args,
        }
    }
}

/// A plain name or path: nothing that could carry argument text.
fn is_plain(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-/@:,=".contains(c))
}

fn clamp(name: &str) -> String {
    if name.chars().count() <= MAX_NAME_CHARS {
        return name.to_owned();
    }
    let mut cut: String = name.chars().take(MAX_NAME_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::fixture;

    fn summary(script: &str) -> String {
        let fx = fixture();
        fx.policy.classify_script(script, &fx.ws).executable
    }

    #[test]
    fn summaries_table() {
        let cases: &[(&str, &str)] = &[
            ("cargo test --all", "cargo (2 args)"),
            ("FOO=1 BAR=x cargo test --all", "cargo (2 args)"),
            ("$(echo hunter2) x", "(computed) (1 arg)"),
            ("\"mysql -pS3cretPass\" -e x", "(computed) (2 args)"),
            ("`printf secret` a b", "(computed) (2 args)"),
            ("./scripts/build.sh --fast", "./scripts/build.sh (1 arg)"),
            ("git status", "git (1 arg)"),
            ("ls", "ls (0 args)"),
            ("", "(empty)"),
            ("   \n\t", "(empty)"),
            ("# only a comment", "(empty)"),
            ("FOO=1", "(no program)"),
            ("env -i PATH=/bin HOME=/h make -j4", "make (1 arg)"),
            ("env -u SECRET make", "make (0 args)"),
            ("/usr/bin/env FOO=bar python3 x.py", "python3 (1 arg)"),
            ("env", "env (0 args)"),
            ("env -S 'make all'", "env (2 args)"),
            // `-a` takes a value: the program is `prog`, as the env analyser reads it.
            ("env -a name prog x", "prog (1 arg)"),
            ("env env make", "make (0 args)"),
            // A wrapper inside a substitution or a later command names nothing.
            ("env X=1 make; echo $(env cargo)", "make (0 args) + 1 more"),
            ("make && env X=1 cargo", "make (0 args) + 1 more"),
            ("cargo build && cargo test", "cargo (1 arg) + 1 more"),
            (
                "make; make install | tee log & echo done",
                "make (0 args) + 3 more",
            ),
            ("cargo test > out.txt 2>&1", "cargo (1 arg)"),
            ("cat <<EOF\nrm -rf /\nEOF\nls -la", "cat (0 args) + 1 more"),
            ("cat <<-END\n\techo hi\n\tEND", "cat (0 args)"),
            ("grep -r 'a; b' src", "grep (3 args)"),
            ("echo \"x && y\" | wc -l", "echo (1 arg) + 1 more"),
            ("echo $(date; whoami) ok", "echo (2 args)"),
            ("echo `date; whoami`", "echo (1 arg)"),
            ("if cargo test; then echo ok; fi", "cargo (1 arg) + 1 more"),
            ("( cd sub && make )", "cd (1 arg) + 1 more"),
            ("X='a b' Y=\"c d\" ./run.sh --flag", "./run.sh (1 arg)"),
            ("'my prog' a b", "(computed) (2 args)"),
            ("ec\\\nho hi", "echo (1 arg)"),
            ("diff <(ls a) <(ls b)", "diff (2 args)"),
            ("cmd <<< 'secret input'", "cmd (0 args)"),
            ("sort < in.txt >> out.txt", "sort (0 args)"),
            ("echo a=b", "echo (1 arg)"),
            ("'A=1' prog", "A=1 (1 arg)"),
            (
                "TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB gh pr list",
                "gh (2 args)",
            ),
            (
                "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB --x",
                "[REDACTED] (1 arg)",
            ),
            // Unreadable scripts say so rather than guess.
            ("echo 'abc", "(not parsed)"),
        ];
        for (script, want) in cases {
            assert_eq!(summary(script), *want, "{script:?}");
        }
    }

    #[test]
    fn an_argv_is_summarised_like_its_script() {
        let fx = fixture();
        for argv in [
            &["cargo", "test", "--all"][..],
            &["env", "-i", "PATH=/bin", "make", "-j4"],
            &["a b", "x"],
        ] {
            let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
            let script: Vec<String> = argv
                .iter()
                .map(|a| crate::commands::wrappers::shell_quote(a))
                .collect();
            let script = script.join(" ");
            assert_eq!(
                fx.policy.classify(&argv, &fx.ws).executable,
                fx.policy.classify_script(&script, &fx.ws).executable,
                "{argv:?}"
            );
        }
    }

    #[test]
    fn arguments_never_appear() {
        let script = "FOO=topsecretvalue curl -u admin:hunter2xyz --data 'p=qwertyuiop' https://h";
        let s = summary(script);
        assert_eq!(s, "curl (5 args)");
        for fragment in ["topsecret", "hunter2", "qwerty", "admin", "https"] {
            assert!(!s.contains(fragment), "{s}");
        }
    }

    #[test]
    fn long_names_are_cut() {
        let name = "a".repeat(100);
        let s = summary(&format!("{name} x"));
        assert_eq!(s, format!("{}… (1 arg)", "a".repeat(MAX_NAME_CHARS)));
    }
}
