//! Invariants of the classifier, checked with proptest over scripts built from real command lines:
//! - requoting a word never changes the assessment (quotes are syntax, not meaning);
//! - adding a harmless redirection to /dev/null never makes a script less restricted;
//! - wrapping a script in `bash -c` or `sh -c` never makes it less restricted;
//! - running one more command after a script never makes it less restricted.

mod common;

use std::sync::OnceLock;

use common::{Fixture, rank};
use proptest::prelude::*;

/// Command lines as words, across every class.
const LINES: &[&[&str]] = &[
    &["ls", "-la"],
    &["cat", "README.md"],
    &["grep", "-rn", "TODO", "."],
    &["rg", "-n", "fn main", "src"],
    &["find", ".", "-name", "*.rs"],
    &["git", "log", "--oneline", "-5"],
    &["git", "status"],
    &["echo", "hello world"],
    &["wc", "-l", "src/main.rs"],
    &["sort", "payload.txt"],
    &["awk", "{print $1}", "payload.txt"],
    &["sed", "-n", "1,5p", "README.md"],
    &["jq", ".name", "package.json"],
    &["touch", "new.txt"],
    &["rm", "-rf", "target"],
    &["mkdir", "-p", "build/out"],
    &["cp", "README.md", "copy.md"],
    &["sed", "-i", "s/a/b/", "README.md"],
    &["sort", "-o", "sorted.txt", "payload.txt"],
    &["tar", "-xzf", "a.tgz"],
    &["cargo", "build"],
    &["git", "commit", "-m", "a message"],
    &["python3", "script.py"],
    &["python3", "-c", "print(1)"],
    &["npm", "test"],
    &["find", ".", "-exec", "rm", "{}", ";"],
    &["rg", "--pre", "./x.sh", "foo"],
    &["git", "-c", "core.pager=less", "log"],
    &["sed", "s/x/y/e", "README.md"],
    &["curl", "-sS", "https://example.com"],
    &["touch", "{CANARY}"],
    &["cp", "README.md", "/etc/motd"],
    &["cat", "/etc/shadow"],
    &["cat", "../secret"],
    &["sudo", "ls"],
    &["ssh", "host", "ls"],
    &["echo", "x"],
    &["sed", "-n", "w {CANARY}", "README.md"],
    &["awk", "BEGIN{system(\"touch {CANARY}\")}"],
    &["python3", "-c", "open('{CANARY}','w')"],
    &["find", ".", "-fprint", "{CANARY}"],
    &["env", "touch", "{CANARY}"],
    &["cat", "link-ssh/id_rsa"],
    &["git", "config", "core.pager", "cat"],
];

fn fixture() -> &'static Fixture {
    static FX: OnceLock<Fixture> = OnceLock::new();
    FX.get_or_init(Fixture::new)
}

/// Characters that need no quoting in any position of a word.
fn plain(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/:,+@%-".contains(c))
}

/// Renders `word` in one of several quoting styles that all mean the same word to bash.
fn quote(word: &str, style: u8) -> String {
    match style % 6 {
        0 if plain(word) => word.to_owned(),
        1 => format!(
            "\"{}\"",
            word.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('$', "\\$")
                .replace('`', "\\`")
        ),
        2 if !word.contains('\'') => {
            // Split in two single-quoted halves: 'ab''cd'.
            let mid = word
                .char_indices()
                .nth(word.chars().count() / 2)
                .map_or(word.len(), |(i, _)| i);
            format!("'{}''{}'", &word[..mid], &word[mid..])
        }
        3 => {
            // ANSI-C quoting with every letter as a hex escape.
            let body: String = word
                .chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        format!("\\x{:02x}", c as u32)
                    } else if c == '\'' || c == '\\' {
                        format!("\\{c}")
                    } else {
                        c.to_string()
                    }
                })
                .collect();
            format!("$'{body}'")
        }
        4 => {
            // Every character backslash-escaped, unquoted.
            word.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        format!("\\{c}")
                    } else if plain(&c.to_string()) {
                        c.to_string()
                    } else {
                        format!("\\{c}")
                    }
                })
                .collect()
        }
        _ => format!("'{}'", word.replace('\'', "'\\''")),
    }
}

fn render(line: &[&str], styles: &[u8]) -> String {
    let fx = fixture();
    line.iter()
        .zip(styles.iter().cycle())
        .map(|(w, s)| quote(&fx.sub(w), *s))
        .collect::<Vec<_>>()
        .join(" ")
}

fn assess(script: &str) -> (u8, bool, spear_core::CapabilitySet) {
    let a = fixture().classify(script);
    (rank(a.class), a.refusal.is_some(), a.capabilities)
}

fn line() -> impl Strategy<Value = &'static [&'static str]> {
    (0..LINES.len()).prop_map(|i| LINES[i])
}

fn styles() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..6, 1..6)
}

fn separator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["; ", " && ", " || ", " | ", "\n"])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn requoting_changes_nothing(line in line(), a in styles(), b in styles()) {
        let one = render(line, &a);
        let two = render(line, &b);
        prop_assert_eq!(assess(&one), assess(&two), "{} vs {}", one, two);
    }

    #[test]
    fn discarding_output_is_never_less_restricted(
        first in line(), second in line(), sep in separator(), styles in styles(),
        redirect in prop::sample::select(vec![" >/dev/null", " 2>/dev/null", " &>/dev/null", " 2>&1 >/dev/null", " >/dev/stderr"]),
        on_first in any::<bool>(),
    ) {
        let (x, y) = (render(first, &styles), render(second, &styles));
        let base = format!("{x}{sep}{y}");
        let with = if on_first { format!("{x}{redirect}{sep}{y}") } else { format!("{x}{sep}{y}{redirect}") };
        prop_assert!(assess(&with).0 >= assess(&base).0, "{:?} is less restricted than {:?}", with, base);
    }

    #[test]
    fn a_shell_wrapper_is_never_less_restricted(
        first in line(), second in line(), sep in separator(), styles in styles(),
        shell in prop::sample::select(vec!["bash -c", "sh -c", "bash -ec", "env bash -c", "timeout 5 sh -c"]),
    ) {
        let script = format!("{}{sep}{}", render(first, &styles), render(second, &styles));
        let wrapped = format!("{shell} {}", quote(&script, 5));
        let (inner, outer) = (assess(&script), assess(&wrapped));
        prop_assert!(outer.0 >= inner.0, "{:?} ({}) is less restricted than {:?} ({})", wrapped, outer.0, script, inner.0);
        prop_assert!(!inner.1 || outer.1, "a refusal must survive wrapping: {:?}", wrapped);
    }

    #[test]
    fn one_more_command_is_never_less_restricted(first in line(), second in line(), sep in separator(), styles in styles()) {
        let (x, y) = (render(first, &styles), render(second, &styles));
        let both = assess(&format!("{x}{sep}{y}")).0;
        prop_assert!(both >= assess(&x).0 && both >= assess(&y).0, "{:?} then {:?}", x, y);
    }
}

#[test]
fn the_quoting_styles_are_real() {
    // Positive control: the styles produce different texts that bash reads as the same word.
    let word = "touch";
    let rendered: Vec<String> = (0..6).map(|s| quote(word, s)).collect();
    assert_eq!(
        rendered,
        vec![
            "touch",
            "\"touch\"",
            "'to''uch'",
            "$'\\x74\\x6f\\x75\\x63\\x68'",
            "\\t\\o\\u\\c\\h",
            "'touch'"
        ]
    );
    for r in &rendered {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("printf %s {r}"))
            .output()
            .expect("bash runs");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            word,
            "bash reads {r} as {word}"
        );
    }
}
