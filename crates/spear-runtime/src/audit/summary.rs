//! The executable summary of a shell script: which program it runs and how many arguments it
//! gives it, never what they are. Pure.
//!
//! A small shell-word tokenizer (quotes, backslashes, `$(...)`, backticks, comments, here-docs,
//! redirections, `;` `&&` `||` `|` `&` and parentheses) splits the script into simple commands.
//! For the first command that runs a program, leading `NAME=value` assignments, shell keywords
//! (`if`, `then`, `!`, ...) and an `env` prefix with its options and assignments are skipped; the
//! summary is `name (N args)`, followed by `+ M more` when more commands run programs.
//!
//! Attack stopped: a secret reaching the audit log through a command line. Arguments and
//! assignment values are never part of the summary; the program word itself goes through
//! [`crate::redact::redact`] and is cut to [`MAX_NAME_CHARS`] characters.

use std::fmt::Write as _;

use crate::redact::redact;

/// The longest program name a summary keeps (in characters) before cutting it with `…`.
pub const MAX_NAME_CHARS: usize = 64;

/// What a script that holds no command at all is summarised as.
const EMPTY: &str = "(empty)";

/// What a script whose commands run no program (only assignments, keywords) is summarised as.
const NO_PROGRAM: &str = "(no program)";

/// `name (N args)` for the first command of `command` that runs a program, with `+ M more` when
/// others do too: `FOO=1 BAR=x cargo test --all` gives `cargo (2 args)`. Argument text never
/// appears in it.
pub fn executable_summary(command: &str) -> String {
    let commands = split_commands(command);
    if commands.is_empty() {
        return EMPTY.to_owned();
    }
    let programs: Vec<(&str, usize)> = commands.iter().filter_map(|c| program(c)).collect();
    let Some(&(name, args)) = programs.first() else {
        return NO_PROGRAM.to_owned();
    };
    // Attack: a program word that is computed or quoted (`$(echo hunter2)`, `"mysql -pS3cret"`)
    // would carry argument text into the log; only a plain name or path is shown.
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-/@:,=".contains(c));
    let name = if plain {
        clamp(&redact(name))
    } else {
        COMPUTED.to_owned()
    };
    let plural = if args == 1 { "" } else { "s" };
    let mut summary = format!("{name} ({args} arg{plural})");
    if programs.len() > 1 {
        let _ = write!(summary, " + {} more", programs.len() - 1);
    }
    summary
}

fn clamp(name: &str) -> String {
    if name.chars().count() <= MAX_NAME_CHARS {
        return name.to_owned();
    }
    let mut cut: String = name.chars().take(MAX_NAME_CHARS).collect();
    cut.push('…');
    cut
}

/// What stands for a program whose name is not a plain word.
const COMPUTED: &str = "(computed)";

/// One word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    /// The word with its quoting removed.
    text: String,
    /// The word is an assignment: an unquoted `NAME=` starts it.
    assignment: bool,
}

/// Words that start or continue a compound command rather than name a program.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time",
    "case", "esac", "in",
];

/// The program of one simple command and how many arguments it gets.
fn program(words: &[Word]) -> Option<(&str, usize)> {
    let mut i = 0;
    while i < words.len() && (words[i].assignment || KEYWORDS.contains(&words[i].text.as_str())) {
        i += 1;
    }
    let first = words.get(i)?;
    if (first.text == "env" || first.text.ends_with("/env"))
        && let Some(j) = after_env(words, i + 1)
    {
        return Some((&words[j].text, words.len() - j - 1));
    }
    Some((&first.text, words.len() - i - 1))
}

/// The index of the program an `env` runs, past its options and assignments; `None` when `env`
/// runs nothing (it prints the environment) or takes its command as one string (`-S`).
fn after_env(words: &[Word], mut i: usize) -> Option<usize> {
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        match t {
            "-i" | "-" | "--ignore-environment" | "-0" | "--null" | "-v" | "--debug" => i += 1,
            "-u" | "--unset" | "-C" | "--chdir" => i += 2,
            "--" => {
                i += 1;
                while words
                    .get(i)
                    .is_some_and(|w| w.assignment || w.text.contains('='))
                {
                    i += 1;
                }
                return words.get(i).map(|_| i);
            }
            _ if t.starts_with("-S") || t.starts_with("--split-string") => return None,
            _ if t.starts_with("--unset=") || t.starts_with("--chdir=") => i += 1,
            _ if t.starts_with("-u") || t.starts_with("-C") => i += 1,
            _ if t.starts_with('-') => i += 1,
            _ if w.assignment || t.contains('=') => i += 1,
            _ => return Some(i),
        }
    }
    None
}

/// What the next finished word is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// An ordinary word.
    Word,
    /// The target of a redirection: not an argument.
    RedirectTarget,
    /// The delimiter of a here-document.
    HereDoc { strip_tabs: bool },
}

/// The tokenizer's state: the word and command being built, and what is pending.
struct Lexer {
    commands: Vec<Vec<Word>>,
    words: Vec<Word>,
    word: String,
    in_word: bool,
    quoted: bool,
    assignment: bool,
    pending: Pending,
    here_docs: Vec<(String, bool)>,
}

impl Lexer {
    fn finish_word(&mut self) {
        if self.in_word {
            let text = std::mem::take(&mut self.word);
            match self.pending {
                Pending::Word => self.words.push(Word {
                    text,
                    assignment: self.assignment,
                }),
                Pending::RedirectTarget => {}
                Pending::HereDoc { strip_tabs } => self.here_docs.push((text, strip_tabs)),
            }
            self.pending = Pending::Word;
        }
        self.word.clear();
        self.in_word = false;
        self.quoted = false;
        self.assignment = false;
    }

    fn finish_command(&mut self) {
        self.finish_word();
        // A redirection with no target word (`cat > ;`) does not eat the next command's program.
        self.pending = Pending::Word;
        if !self.words.is_empty() {
            self.commands.push(std::mem::take(&mut self.words));
        }
    }

    /// An unquoted `=`: the word is an assignment when what came before is a plain name.
    fn equals(&mut self) {
        if !self.quoted
            && !self.assignment
            && self.words.iter().all(|w| w.assignment)
            && is_name(&self.word)
        {
            self.assignment = true;
        }
        self.word.push('=');
        self.in_word = true;
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits a script into simple commands, each a list of words (redirections and here-document
/// bodies left out).
fn split_commands(script: &str) -> Vec<Vec<Word>> {
    let chars: Vec<char> = script.chars().collect();
    let mut lx = Lexer {
        commands: Vec::new(),
        words: Vec::new(),
        word: String::new(),
        in_word: false,
        quoted: false,
        assignment: false,
        pending: Pending::Word,
        here_docs: Vec::new(),
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                lx.finish_word();
                i += 1;
            }
            '\n' => {
                lx.finish_command();
                i = skip_here_docs(&chars, i + 1, &mut lx.here_docs);
            }
            '#' if !lx.in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\'' => {
                lx.in_word = true;
                lx.quoted = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    lx.word.push(chars[i]);
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                lx.in_word = true;
                lx.quoted = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        let next = chars[i + 1];
                        if matches!(next, '"' | '\\' | '$' | '`') {
                            lx.word.push(next);
                        } else if next != '\n' {
                            lx.word.push('\\');
                            lx.word.push(next);
                        }
                        i += 2;
                    } else {
                        lx.word.push(chars[i]);
                        i += 1;
                    }
                }
                i += 1;
            }
            '\\' => {
                if chars.get(i + 1) == Some(&'\n') {
                    i += 2;
                } else {
                    if let Some(&next) = chars.get(i + 1) {
                        lx.word.push(next);
                    }
                    lx.in_word = true;
                    lx.quoted = true;
                    i += 2;
                }
            }
            '$' if matches!(chars.get(i + 1), Some('(' | '{')) => {
                let end = balanced(&chars, i + 1);
                lx.word.extend(&chars[i..end]);
                lx.in_word = true;
                i = end;
            }
            '$' if chars.get(i + 1) == Some(&'\'') => {
                // ANSI-C quoting: backslash escapes, ends at an unescaped `'`.
                lx.in_word = true;
                lx.quoted = true;
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    if let Some(&ch) = chars.get(i) {
                        lx.word.push(ch);
                    }
                    i += 1;
                }
                i += 1;
            }
            '`' => {
                let mut end = i + 1;
                while end < chars.len() && chars[end] != '`' {
                    end += if chars[end] == '\\' { 2 } else { 1 };
                }
                let end = (end + 1).min(chars.len());
                lx.word.extend(&chars[i..end]);
                lx.in_word = true;
                i = end;
            }
            '<' | '>' if matches!(chars.get(i + 1), Some('(')) => {
                // Process substitution: one word.
                let end = balanced(&chars, i + 1);
                lx.word.extend(&chars[i..end]);
                lx.in_word = true;
                i = end;
            }
            '<' | '>' => {
                if !lx.quoted && !lx.word.is_empty() && lx.word.chars().all(|d| d.is_ascii_digit())
                {
                    // `2>`: the digits name a file descriptor, not an argument.
                    lx.word.clear();
                    lx.in_word = false;
                }
                lx.finish_word();
                i = redirection(&chars, i, &mut lx.pending);
            }
            '&' if chars.get(i + 1) == Some(&'>') => {
                lx.finish_word();
                i = redirection(&chars, i + 1, &mut lx.pending);
            }
            ';' | '&' | '|' | '(' | ')' => {
                lx.finish_command();
                i += 1;
            }
            '=' => {
                lx.equals();
                i += 1;
            }
            _ => {
                lx.word.push(c);
                lx.in_word = true;
                i += 1;
            }
        }
    }
    lx.finish_command();
    lx.commands
}

/// The index just past the bracket group that opens at `chars[open]` (`(`, `{`), quotes inside
/// it respected; the end of the script when it is not closed.
fn balanced(chars: &[char], open: usize) -> usize {
    let (o, c) = if chars[open] == '{' {
        ('{', '}')
    } else {
        ('(', ')')
    };
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            ch if ch == o => depth += 1,
            ch if ch == c => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// Consumes a redirection operator at `chars[i]` (`<`, `>`, `>>`, `<<`, `<<-`, `<<<`, `<>`,
/// `>|`, `>&N`, `<&-`, ...) and says what the next word is for; returns the index after it.
fn redirection(chars: &[char], mut i: usize, pending: &mut Pending) -> usize {
    let first = chars[i];
    i += 1;
    if first == '<' && chars.get(i) == Some(&'<') {
        i += 1;
        if chars.get(i) == Some(&'<') {
            // `<<<word`: a here-string, its word is input.
            *pending = Pending::RedirectTarget;
            return i + 1;
        }
        let strip_tabs = chars.get(i) == Some(&'-');
        if strip_tabs {
            i += 1;
        }
        *pending = Pending::HereDoc { strip_tabs };
        return i;
    }
    if matches!(chars.get(i), Some('>' | '|')) || (first == '<' && chars.get(i) == Some(&'>')) {
        i += 1;
    }
    if chars.get(i) == Some(&'&') {
        i += 1;
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '-') {
            i += 1;
        }
        if i > start {
            // `>&2`, `<&-`: duplicates or closes a descriptor; no target word.
            return i;
        }
    }
    *pending = Pending::RedirectTarget;
    i
}

/// Skips the bodies of the here-documents opened on the line that just ended; returns where the
/// next line of script starts.
fn skip_here_docs(chars: &[char], mut i: usize, here_docs: &mut Vec<(String, bool)>) -> usize {
    for (delimiter, strip_tabs) in here_docs.drain(..) {
        while i < chars.len() {
            let end = chars[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |p| i + p);
            let line: String = chars[i..end].iter().collect();
            let line = if strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line.as_str()
            };
            let done = line == delimiter;
            i = (end + 1).min(chars.len());
            if done {
                break;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ];
        for (script, want) in cases {
            assert_eq!(executable_summary(script), *want, "{script:?}");
        }
    }

    #[test]
    fn arguments_never_appear() {
        let script = "FOO=topsecretvalue curl -u admin:hunter2xyz --data 'p=qwertyuiop' https://h";
        let summary = executable_summary(script);
        assert_eq!(summary, "curl (5 args)");
        for fragment in ["topsecret", "hunter2", "qwerty", "admin", "https"] {
            assert!(!summary.contains(fragment), "{summary}");
        }
    }

    #[test]
    fn long_names_are_cut() {
        let name = "a".repeat(100);
        let summary = executable_summary(&format!("{name} x"));
        assert_eq!(summary, format!("{}… (1 arg)", "a".repeat(MAX_NAME_CHARS)));
    }

    #[test]
    fn unterminated_quotes_and_groups_do_not_panic() {
        for script in [
            "echo 'abc",
            "echo \"abc",
            "echo $(abc",
            "echo `abc",
            "x\\",
            "a >",
            "<<",
            "$'a\\",
        ] {
            let _ = executable_summary(script);
        }
    }
}
