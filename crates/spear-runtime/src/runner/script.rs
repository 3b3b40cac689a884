//! The argv a command runs as in the sandbox: an argv as it is, a script through
//! `bash -o pipefail -c`. The runner builds a command's argv here and nowhere else.

use std::ffi::OsString;

/// What to run: an argv, executed directly, or a script for bash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// Executed as is; never through a shell.
    Argv(Vec<OsString>),
    /// Run as `bash -o pipefail -c SCRIPT`. Callers that run an agent's script pass it through
    /// `spear_policy::script_to_run` first, so that `cmd | head` is no failure.
    Script(String),
}

impl CommandLine {
    /// The argv that runs it after bwrap's `--`: an argv as it is; a script as
    /// `/bin/bash -o pipefail -c SCRIPT`.
    pub(crate) fn argv(&self) -> Vec<OsString> {
        match self {
            CommandLine::Argv(argv) => argv.clone(),
            CommandLine::Script(script) => vec![
                "/bin/bash".into(),
                "-o".into(),
                "pipefail".into(),
                "-c".into(),
                script.into(),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact words each command line runs as.
    #[test]
    fn an_argv_runs_as_it_is_and_a_script_through_bash_with_pipefail() {
        let words = |line: CommandLine| -> Vec<String> {
            line.argv()
                .into_iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            words(CommandLine::Argv(vec!["ls".into(), "-l".into()])),
            ["ls", "-l"]
        );
        assert_eq!(
            words(CommandLine::Script("a | b".to_owned())),
            ["/bin/bash", "-o", "pipefail", "-c", "a | b"]
        );
    }
}
