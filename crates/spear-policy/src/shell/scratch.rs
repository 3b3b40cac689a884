//! Scratch paths held in variables: `d=$(mktemp -d)`, `out=$TMPDIR/build`, `t=/tmp/x`, then
//! `tar -x -C "$d"` or `cp -r src "$out"`. A variable is known to hold such a path only where
//! nothing else can have set it, so a write through it is the private write it looks like (no
//! capability, the host never sees it), not a write "to a path known only at run time".
//!
//! What could make the value another one, each shut out here:
//! - another assignment anywhere in the script (a loop's next turn, a function, `bash -c`), or
//!   one made under a name built at run time (`eval`, `declare`, `printf -v`, `read`, ...): the
//!   name must appear only as `NAME=` once and as `$NAME`/`${NAME}` otherwise, and the script must
//!   hold none of the builtins that assign by a computed name;
//! - an assignment that may not have run where the variable is used (after `||`, in a branch, a
//!   loop, a subshell, a pipeline, a function): only one made in the script's own sequence, at
//!   its top level, counts (the walker says where it is);
//! - a value with `..`, or one holding a root (`/tmp` with the workspace at `/tmp/ws`): only a
//!   normal path in a private place that holds no root counts (the caller checks it).
//!
//! Whatever the classifier says, the mount still holds: a variable it got wrong leads to a write
//! that meets a read-only file system, or lands in the sandbox's own /tmp.

/// Builtins and keywords that can assign a variable whose name is computed at run time, or
/// replace the shell's variables wholesale.
const ASSIGNS_BY_COMPUTED_NAME: &[&str] = &[
    "eval",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "read",
    "mapfile",
    "readarray",
    "printf",
    "getopts",
    "source",
    "unset",
    "let",
];

/// Whether the script `script` sets the variable `name` only once, by `NAME=` (the assignment
/// being judged), reads it only as `$NAME` or `${NAME}`, and sets no variable by a computed name.
pub(crate) fn assigned_once(script: &str, name: &str) -> bool {
    let bytes = script.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut assignments = 0;
    let mut at = 0;
    while let Some(found) = script[at..].find(name) {
        let start = at + found;
        let end = start + name.len();
        at = end;
        if start > 0 && is_word(bytes[start - 1]) || bytes.get(end).copied().is_some_and(is_word) {
            continue;
        }
        let before = &script[..start];
        if before.ends_with('$') || (before.ends_with("${") && bytes.get(end) == Some(&b'}')) {
            continue;
        }
        // A word holding the name as an option letter (` -d`) or a path part (`src/d`,
        // `d.txt`) neither sets nor reads the variable.
        let option = before.ends_with('-')
            && before[..before.len() - 1]
                .chars()
                .next_back()
                .is_none_or(char::is_whitespace);
        if option || before.ends_with(['/', '.']) || matches!(bytes.get(end), Some(b'/' | b'.')) {
            continue;
        }
        if bytes.get(end) == Some(&b'=') && bytes.get(end + 1) != Some(&b'=') {
            assignments += 1;
            continue;
        }
        // Any other mention (`for NAME in`, `${NAME:=x}`, `(( NAME++ ))`, a word in a string):
        // not known.
        return false;
    }
    assignments == 1
        && !mentions_any(script, ASSIGNS_BY_COMPUTED_NAME)
        && !script.contains("${!")
        && !sources_a_file(script)
}

/// Whether `script` runs `. FILE` (a command word `.`, not `find .` or `a. b`).
fn sources_a_file(script: &str) -> bool {
    script.match_indices(". ").any(|(i, _)| {
        let before = script[..i].trim_end_matches([' ', '\t']);
        before.is_empty()
            || before.ends_with([';', '&', '|', '(', '{', '\n', '!'])
            || ["then", "do", "else"].iter().any(|k| before.ends_with(k))
    })
}

/// Whether `script` holds one of `words` as a whole word.
fn mentions_any(script: &str, words: &[&str]) -> bool {
    script
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .any(|w| words.contains(&w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_plain_assignment() {
        for (script, once) in [
            ("d=$(mktemp -d) && tar -x -C \"$d\" -f a.tar", true),
            ("d=$(mktemp -d); cp -r src \"${d}\"; ls $d/src", true),
            ("dd=1; d=$(mktemp -d); cp a \"$d\"", true),
            ("d=$(mktemp -d); d=/etc; cp a $d", false),
            ("d=$(mktemp -d); for d in /etc; do cp a $d; done", false),
            ("d=$(mktemp -d); x=d; eval \"$x=/etc\"; cp a $d", false),
            ("d=$(mktemp -d); read d; cp a $d", false),
            ("d=$(mktemp -d); printf -v d /etc; cp a $d", false),
            ("d=$(mktemp -d); : ${d:=/etc}", false),
            ("d=$(mktemp -d); echo d", false),
            ("d=$(mktemp -d); . ./env.sh; cp a $d", false),
            ("d=$(mktemp -d); echo ${!p}", false),
            ("[ \"$d\" == x ]; d=$(mktemp -d)", true),
            (
                "d=$(mktemp -d); find . -name '*.py' -exec cp {} \"$d\" \\;",
                true,
            ),
            ("d=$(mktemp -d) && . x.sh", false),
            ("d=$(mktemp -d) && ls -d src/d d.txt \"$d\"", true),
            ("d=$(mktemp -d); (( --d ))", false),
            ("d=$(mktemp -d); d+=/x", false),
        ] {
            assert_eq!(assigned_once(script, "d"), once, "{script}");
        }
    }
}
