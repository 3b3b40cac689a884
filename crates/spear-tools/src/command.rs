//! One command as its caller wrote it, whichever front end asked for it: the terminal tool's
//! arguments, `spear exec`'s argv or script with its stdin, `spear grant`'s command. Data and the
//! pure ways of showing it; the router decides it through the command gates (`crate::gates`) and
//! the terminal runs what they cleared.

use std::time::Duration;

use spear_policy::{ConfirmRequest, Confirmation, Confirmer};

use crate::escalation::EscalationAsk;

/// A command as its caller wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandText {
    /// A bash script (the terminal tool, `spear exec -c`).
    Script(String),
    /// A program and its arguments, run without a shell (`spear exec -- ARGV`).
    Argv(Vec<String>),
}

impl CommandText {
    /// The command as one line of shell: the script itself, or the argv shell-quoted. This is
    /// what a confirmation shows and what the audit summary is made from.
    pub fn as_shell(&self) -> String {
        match self {
            CommandText::Script(s) => s.clone(),
            CommandText::Argv(argv) => shell_words(argv),
        }
    }
}

/// The wall-clock limit a command call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandTimeout {
    /// This many seconds, at most the tools' longest ([`crate::ToolLimits`]).
    Asked(u64),
    /// The terminal tool's default ([`crate::ToolLimits::terminal_timeout_secs`]).
    ToolDefault,
    /// The runner's default (`spear exec`: `--timeout` or `[limits] timeout`, already bounded).
    RunnerDefault,
}

/// One command, whichever front end asked for it: the terminal tool's arguments and `spear
/// exec`'s both become this, and the router decides it through the same command gates
/// (classification, authorization, escalation, approval and grants, the sandbox-down and
/// job-writing gates, the write lock) and records it the same way (checkpoints, the change
/// tracker, audit, evidence), in [`ToolRouter::run_command`](crate::ToolRouter::run_command) as
/// for a `terminal` call.
#[derive(Debug, Clone)]
pub struct CommandCall {
    /// The command.
    pub text: CommandText,
    /// Its working directory, inside the workspace (default: where spear was started).
    pub workdir: Option<String>,
    /// Its wall-clock limit (ignored for a background job, which has none).
    pub timeout: CommandTimeout,
    /// Run it as a background job of the session.
    pub background: bool,
    /// The read end of a pipe the caller feeds, as the command's stdin (`/dev/null` when
    /// `None`). Never a terminal or a file: see `CommandRequest::stdin`.
    pub stdin: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    /// The wider sandbox this one call asks for, and why: the user is asked, and only their
    /// approval gives it (see `crate::escalation`).
    pub escalation: Option<EscalationAsk>,
}

impl CommandCall {
    /// A foreground call of `text` from where spear was started, with the runner's timeout and
    /// no stdin.
    pub fn new(text: CommandText) -> Self {
        CommandCall {
            text,
            workdir: None,
            timeout: CommandTimeout::RunnerDefault,
            background: false,
            stdin: None,
            escalation: None,
        }
    }

    /// The call as the terminal tool's JSON arguments would name it, for observers.
    pub(crate) fn as_args(&self) -> serde_json::Value {
        let mut fields = serde_json::Map::new();
        match &self.text {
            CommandText::Script(s) => fields.insert("command".into(), s.clone().into()),
            CommandText::Argv(words) => fields.insert("argv".into(), words.clone().into()),
        };
        if let Some(w) = &self.workdir {
            fields.insert("workdir".into(), w.clone().into());
        }
        serde_json::Value::Object(fields)
    }

    /// Where and how the command runs, as the person asked sees it: the working directory, and
    /// the background or the timeout (`tool_default_secs` the terminal's default, `runner_default`
    /// the runner's). Pure. Attack: approving `./run.sh` shown bare, when it runs in another
    /// directory (another `run.sh`) or as a job that never times out.
    pub(crate) fn setting(&self, tool_default_secs: u64, runner_default: Duration) -> String {
        let dir = self.workdir.as_deref().unwrap_or(".");
        if self.background {
            return format!(
                "in {dir}, as a background job with no timeout (stop it with terminal_kill)"
            );
        }
        match self.timeout {
            CommandTimeout::Asked(secs) => {
                format!("in {dir}, in the foreground, with a timeout of {secs} s")
            }
            CommandTimeout::ToolDefault => {
                format!("in {dir}, in the foreground, with a timeout of {tool_default_secs} s")
            }
            CommandTimeout::RunnerDefault => format!(
                "in {dir}, in the foreground, with a timeout of {} s",
                runner_default.as_secs_f64()
            ),
        }
    }
}

/// Asks `inner` with the command's setting ([`CommandCall::setting`]) added to the question, and
/// what an approval would be bound to (`bound`), when known.
pub(crate) struct InSetting<'a> {
    /// Who is asked.
    pub(crate) inner: &'a dyn Confirmer,
    /// Where and how the command runs.
    pub(crate) setting: String,
    /// What the approval is bound to (the place read before the question was asked).
    pub(crate) bound: Option<String>,
}

impl Confirmer for InSetting<'_> {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        let mut request = request.clone();
        request.setting = Some(self.setting.clone());
        request.bound.clone_from(&self.bound);
        self.inner.confirm(&request)
    }

    fn unanswered(&self, what: String) -> spear_core::Refusal {
        self.inner.unanswered(what)
    }
}

/// The argv as one shell-quoted line: what a confirmation shows for an argv command.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(
            shell_words(&[
                "ls".into(),
                "-la".into(),
                "a b".into(),
                "it's".into(),
                String::new()
            ]),
            r"ls -la 'a b' 'it'\''s' ''"
        );
    }

    /// What a person asked sees: the directory, and the timeout that applies or the background.
    #[test]
    fn the_setting_names_the_directory_and_the_timeout_or_the_background() {
        let mut call = CommandCall::new(CommandText::Script("./run.sh".into()));
        let runner = Duration::from_secs(30);
        assert_eq!(
            call.setting(180, runner),
            "in ., in the foreground, with a timeout of 30 s"
        );
        call.workdir = Some("sub".into());
        call.timeout = CommandTimeout::ToolDefault;
        assert_eq!(
            call.setting(180, runner),
            "in sub, in the foreground, with a timeout of 180 s"
        );
        call.timeout = CommandTimeout::Asked(5);
        assert_eq!(
            call.setting(180, runner),
            "in sub, in the foreground, with a timeout of 5 s"
        );
        call.background = true;
        assert_eq!(
            call.setting(180, runner),
            "in sub, as a background job with no timeout (stop it with terminal_kill)"
        );
    }

    #[test]
    fn a_script_is_shown_as_written_and_an_argv_quoted() {
        assert_eq!(CommandText::Script("a | b".into()).as_shell(), "a | b");
        assert_eq!(
            CommandText::Argv(vec!["echo".into(), "a b".into()]).as_shell(),
            "echo 'a b'"
        );
    }
}
