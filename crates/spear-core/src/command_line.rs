//! What a command executes in its sandbox, and the one place its argv is written.
//!
//! An agent's script and the argv bubblewrap is handed after `--` must never be two different
//! commands: the decision layer classifies the [`CommandLine`] it builds (spear-policy's
//! `CommandPolicy::prepare_script` and `prepare_argv`), and the runner and the warm path execute
//! [`CommandLine::argv`] of that same value, unchanged.

use std::ffi::OsString;

/// The shell a script runs in.
pub const SHELL: &str = "/bin/bash";

/// What to run: an argv, executed directly, or a script for bash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// Executed as is; never through a shell.
    Argv(Vec<OsString>),
    /// Run as `/bin/bash -o pipefail -c SCRIPT`, the text exactly as held. An agent's script gets
    /// here through spear-policy's `prepare_script`, its pipelines rewritten so that `cmd | head`
    /// is no failure, and classified as this very text.
    Script(String),
}

impl CommandLine {
    /// The exact argv the sandbox executes: the program and its arguments, or bash with
    /// `pipefail` given the script. Nothing else builds this argv.
    pub fn argv(&self) -> Vec<OsString> {
        match self {
            CommandLine::Argv(argv) => argv.clone(),
            CommandLine::Script(script) => vec![
                SHELL.into(),
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

    #[test]
    fn a_script_runs_in_bash_with_pipefail_and_an_argv_as_is() {
        let script = CommandLine::Script("a | b".into());
        assert_eq!(
            script.argv(),
            ["/bin/bash", "-o", "pipefail", "-c", "a | b"].map(OsString::from)
        );
        let argv = CommandLine::Argv(vec!["ls".into(), "-l".into()]);
        assert_eq!(argv.argv(), ["ls", "-l"].map(OsString::from));
    }
}
