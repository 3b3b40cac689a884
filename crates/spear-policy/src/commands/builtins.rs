//! Shell builtins: the ones that change the shell's state, run text as code, or evaluate names.
//!
//! Attacks stopped: a builtin that takes a variable NAME evaluates an array subscript in it as
//! arithmetic, and arithmetic runs command substitutions (`read 'a[$(touch x)]'`, `printf -v`,
//! `wait -p`, `test -v`, `declare`, `unset`), even through a variable (`a[i]` with
//! `i='b[$(cmd)]'`), so only a literal number subscript is inert. A builtin can also make a name
//! run something else later: `hash -p FILE name`, `enable -f lib.so name`, `unset -f` of a function
//! (the program of that name runs instead), or a variable that decides what runs (`read PATH`).

use std::path::Path;

use crate::analysis::{Analysis, Cwd};
use crate::commands::{Call, Programs};
use crate::env_rules;
use crate::shell::arith;
use crate::shell::walk::Stdin;
use crate::shell::word::Arg;

/// The builtins spear analyses specially. Their options run nothing and write no file, except
/// those each analyser handles.
pub(crate) const PROGRAMS: &[Programs] = &[
    Programs::harmless(&["cd", "pushd"], |a, c, cwd| {
        change_dir(a, c.name, c.args, cwd);
    }),
    Programs::harmless(&["popd"], |_, _, cwd| *cwd = Cwd::Unknown),
    Programs::harmless(&["eval"], eval),
    Programs::harmless(&["source", "."], source),
    Programs::harmless(&["exec"], exec),
    Programs::harmless(&["command", "builtin"], command),
    Programs::harmless(&["trap"], |a, c, cwd| trap(a, c.args, cwd)),
    Programs::harmless(&["printf"], printf),
    Programs::harmless(&["test", "["], |a, c, cwd| test(a, c.args, cwd)),
    Programs::harmless(&["read"], read),
    Programs::harmless(&["mapfile", "readarray"], mapfile),
    Programs::harmless(&["wait"], wait),
    Programs::harmless(&["getopts"], getopts),
    Programs::harmless(&["hash"], |a, c, cwd| hash(a, c.args, cwd)),
    Programs::harmless(&["enable"], |a, c, cwd| enable(a, c.args, cwd)),
    Programs::harmless(&["jobs"], |a, c, cwd| jobs(a, c.args, cwd, c.stdin)),
    Programs::harmless(
        &["export", "declare", "typeset", "local", "readonly"],
        |a, c, _| declare(a, c.name, c.args),
    ),
    Programs::harmless(&["unset"], |a, c, _| unset(a, c.args)),
    Programs::harmless(&["let"], let_),
    Programs::harmless(&["set"], set),
    Programs::harmless(
        &[
            "shopt", "alias", "unalias", "bind", "fc", "history", "complete", "compgen", "compopt",
            "coproc",
        ],
        shell_state,
    ),
    Programs::harmless(&["kill", "pkill", "killall"], |a, c, _| {
        a.complex(format!(
            "`{}` signals processes (only the sandbox's own are visible)",
            c.name
        ));
    }),
];

/// `eval ARGS`: the words joined are run as code.
fn eval(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    a.complex("eval runs text as code");
    if let Some(text) = join_literal(c.args) {
        a.analyse_nested(&text, cwd, "eval");
    }
}

/// `source FILE`: the commands of a file run in this shell.
fn source(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    a.complex(format!(
        "`{}` runs the commands of a file in this shell",
        c.name
    ));
    if let Some(file) = c.args.first() {
        a.read_path(file, cwd);
    }
}

/// `exec cmd args` replaces the shell with cmd; options -a NAME, -c, -l.
fn exec(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let mut rest = c.args;
    while let Some(first) = rest.first().and_then(Arg::lit) {
        match first {
            "-c" | "-l" | "-cl" | "-lc" => rest = &rest[1..],
            "-a" => rest = rest.get(2..).unwrap_or(&[]),
            "--" => {
                rest = &rest[1..];
                break;
            }
            _ => break,
        }
    }
    a.run_words(rest.to_vec(), cwd, c.stdin.clone());
}

/// `command [-pVv] cmd args` runs cmd (`-v`/`-V` only look it up); `builtin cmd args`.
fn command(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let mut rest = c.args;
    let mut lookup_only = false;
    while let Some(first) = rest.first().and_then(Arg::lit) {
        if c.name == "command" && first.starts_with('-') && first.len() > 1 {
            lookup_only |= first.contains('v') || first.contains('V');
            rest = &rest[1..];
        } else {
            break;
        }
    }
    if !lookup_only {
        a.run_words(rest.to_vec(), cwd, c.stdin.clone());
    }
}

/// `printf -v NAME` (or `-vNAME`) assigns; a subscript in NAME is evaluated.
fn printf(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let parsed = BuiltinArgs::scan(c.args, "v");
    for name in parsed.values('v') {
        assigned_name(a, "printf -v", name);
    }
    parsed.unknown_options_could_name(a, "printf");
}

/// `read [-a ARRAY] NAME...` assigns each NAME.
fn read(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let parsed = BuiltinArgs::scan(c.args, "adinNptu");
    for name in parsed.values('a').chain(parsed.operands.iter()) {
        assigned_name(a, "read", name);
    }
    parsed.unknown_options_could_name(a, "read");
}

/// `mapfile ARRAY` assigns ARRAY; `-C CALLBACK` runs code.
fn mapfile(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let name = c.name;
    let parsed = BuiltinArgs::scan(c.args, "dunOsCc");
    if parsed.has('C') {
        a.complex(format!("`{name} -C` runs a callback"));
    }
    for array in &parsed.operands {
        assigned_name(a, name, array);
    }
    parsed.unknown_options_could_name(a, name);
}

/// `wait -p NAME` assigns the id of the job that ended.
fn wait(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let parsed = BuiltinArgs::scan(c.args, "p");
    for name in parsed.values('p') {
        assigned_name(a, "wait -p", name);
    }
    parsed.unknown_options_could_name(a, "wait");
}

/// `getopts OPTSTRING NAME [ARG...]` assigns NAME (and OPTARG, OPTIND).
fn getopts(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    if let Some(var) = c.args.get(1) {
        assigned_name(a, "getopts", var);
    }
}

/// `let EXPR...` evaluates arithmetic, which can run command substitutions in subscripts.
fn let_(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    for arg in c.args {
        match arg.lit() {
            Some(expr) => a.check_arithmetic(expr, cwd),
            None => a.complex("let evaluates arithmetic known only at run time"),
        }
    }
}

/// `set -e`, `set -o pipefail`, `set -- args` change nothing outside the shell; `set -a`
/// (`-o allexport`) exports every later assignment.
fn set(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let mut words = c.args.iter().map(Arg::lit);
    let mut allexport = false;
    while let Some(word) = words.next() {
        match word {
            None => allexport = true,
            Some("--") => break,
            Some("-o") => {
                allexport |= words
                    .next()
                    .is_none_or(|o| o.is_none_or(|o| o == "allexport"));
            }
            Some(t) if t.starts_with('-') && !t.starts_with("--") => {
                allexport |= t.contains('a');
            }
            Some(_) => {}
        }
    }
    if allexport {
        a.allexport = true;
    }
}

/// `shopt`, `alias`, `bind`...: with arguments they change how the shell parses or runs later
/// commands.
fn shell_state(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    if !c.args.is_empty() || matches!(c.name, "fc") {
        a.complex(format!(
            "`{}` changes how the shell parses or runs later commands",
            c.name
        ));
    }
}

/// `cd DIR`: moves the shell, as bash's logical `cd` does (`..` folded lexically; the directory
/// entered is vetted as a read, so a `..` that leaves the roots is judged as the absolute path it
/// names); a directory known only at run time leaves the working directory unknown.
pub(crate) fn change_dir(a: &mut Analysis<'_>, name: &str, args: &[Arg], cwd: &mut Cwd) {
    let operands: Vec<&Arg> = args
        .iter()
        .filter(|x| {
            !x.lit()
                .is_some_and(|t| t.starts_with('-') && t.len() > 1 && t != "--")
        })
        .filter(|x| x.lit() != Some("--"))
        .collect();
    let Some(target) = operands.first() else {
        *cwd = match &a.policy.config().home {
            Some(h) if a.home_intact => Cwd::Known(h.clone()),
            _ => Cwd::Unknown,
        };
        return;
    };
    let Some(text) = target.lit() else {
        a.place(target, cwd);
        *cwd = Cwd::Unknown;
        return;
    };
    if text == "-" || (name == "pushd" && text.starts_with(['+', '-'])) {
        *cwd = Cwd::Unknown;
        return;
    }
    let path = Path::new(text);
    // Entering a directory outside the roots is a read of it: later commands list and read it
    // implicitly (`cd /etc && ls`, `cd ~/.ssh && cat *`).
    a.read_path(target, cwd);
    let next = if path.is_absolute() {
        Some(crate::paths::normalise(&a.policy.workspace().to_host(path)))
    } else {
        cwd.join(text).map(|p| crate::paths::normalise(&p))
    };
    *cwd = next.map_or(Cwd::Unknown, Cwd::Known);
}

/// `trap 'commands' SIGNAL`: the commands run later in this shell.
fn trap(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let rest: Vec<&Arg> = args
        .iter()
        .skip_while(|x| x.lit().is_some_and(|t| t.starts_with('-')))
        .collect();
    if rest.len() < 2 {
        return;
    }
    match rest[0].lit() {
        Some(action) => a.analyse_nested(action, cwd, "a trap"),
        None => a.complex("a trap runs commands known only at run time"),
    }
}

/// `test -v NAME` evaluates a subscript in NAME; file tests read their operand. An operator known
/// only at run time could be `-v`.
fn test(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let args: Vec<&Arg> = args.iter().filter(|x| x.lit() != Some("]")).collect();
    for (i, arg) in args.iter().enumerate() {
        let Some(op) = arg.lit() else {
            if let Some(next) = args.get(i + 1)
                && could_evaluate(next)
            {
                a.complex(format!(
                    "`test {}` could be `test -v`, which evaluates the subscript in {}",
                    arg.display(),
                    next.display()
                ));
            }
            continue;
        };
        match op {
            "-v" | "-R" => {
                if let Some(var) = args.get(i + 1) {
                    tested_name(a, "test -v", var);
                }
            }
            "-e" | "-f" | "-d" | "-r" | "-w" | "-x" | "-s" | "-L" | "-h" | "-b" | "-c" | "-p"
            | "-S" | "-g" | "-u" | "-k" | "-O" | "-G" | "-N" => {
                if let Some(operand) = args.get(i + 1) {
                    a.read_path(operand, cwd);
                }
            }
            _ => {}
        }
    }
}

/// `declare`/`export`/`local`...: each `NAME=value` follows the shell assignment rules; `-n`
/// (nameref) and `-i` (integer, evaluated as arithmetic) evaluate text; a subscript in NAME is
/// evaluated; a value written as text that reads `(...)` is parsed again as an array assignment
/// (`declare -a b='([$(cmd)]=1)'` runs `cmd`).
fn declare(a: &mut Analysis<'_>, name: &str, args: &[Arg]) {
    // `declare -x`, `typeset -x`, `local -x`, `readonly -x` export what they assign.
    let exports = args.iter().any(|x| {
        x.lit()
            .is_some_and(|t| t.starts_with('-') && !t.starts_with("--") && t.contains('x'))
    });
    for arg in args {
        let Some(text) = arg.lit() else {
            a.complex(format!("`{name}` declares names known only at run time"));
            continue;
        };
        if text.starts_with('-') || text.starts_with('+') {
            if text.contains(['n', 'i']) {
                a.complex(format!(
                    "`{name} {text}` evaluates values as names or arithmetic"
                ));
            }
            continue;
        }
        let (var, value) = match text.split_once('=') {
            Some((v, val)) => (v.trim_end_matches('+'), Some(Arg::Lit(val.to_owned()))),
            None => (text, None),
        };
        if evaluates(var) {
            a.complex(subscript_reason(name, var));
        }
        if let Some(v) = value.as_ref().and_then(Arg::lit)
            && v.starts_with('(')
            && !inert_compound(v)
        {
            a.complex(format!(
                "`{name} {var}={v}` is parsed again as an array assignment, whose words and \
                 subscripts can run commands"
            ));
        }
        let base = base_name(var);
        if name == "export" || exports {
            // An exported variable reaches every later command.
            env_rules::check_env_assignment(a, base, value.as_ref(), "later commands");
        } else {
            env_rules::check_shell_assignment(a, base, value.as_ref());
        }
    }
}

/// `unset [-f|-v|-n] NAME...`: a subscript in NAME is evaluated; unsetting a variable that decides
/// what runs changes later commands (`unset PATH` makes bash search its default path, which ends
/// in `.`); unsetting a function makes the program of that name run where the function ran.
/// Without `-v`, bash unsets a function when no variable has the name.
fn unset(a: &mut Analysis<'_>, args: &[Arg]) {
    let parsed = BuiltinArgs::scan(args, "");
    if parsed.unknown {
        a.complex("`unset` with an option known only at run time could unset anything");
    }
    let variables = !parsed.has('f');
    let functions = !parsed.has('v');
    for arg in &parsed.operands {
        let Some(var) = arg.lit() else {
            a.complex(format!(
                "`unset {}` unsets a name known only at run time",
                arg.display()
            ));
            a.functions.clear();
            continue;
        };
        if functions {
            a.functions.remove(var);
        }
        if !variables {
            continue;
        }
        if evaluates(var) {
            a.complex(subscript_reason("unset", var));
        }
        let base = base_name(var);
        if base == "HOME" {
            a.home_intact = false;
        }
        if base == "TMPDIR" {
            a.tmpdir_intact = false;
        }
        if env_rules::shell_assignment_matters(a.policy.config(), base, None) {
            a.complex(format!(
                "unsetting `{base}` can change how later commands are found or what they run"
            ));
        }
    }
}

/// `hash -p FILE NAME` makes NAME run FILE, whatever FILE is; the other forms only look names up
/// or forget them.
fn hash(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let parsed = BuiltinArgs::scan(args, "p");
    if parsed.unknown {
        a.complex("`hash` with an option known only at run time could be `hash -p`");
    }
    for file in parsed.values('p') {
        a.complex(format!(
            "`hash -p {}` makes a command name run that file, which spear cannot know; run the \
             file by its path instead",
            file.display()
        ));
        a.read_path(file, cwd);
    }
}

/// `enable -f FILE NAME` loads a builtin from a shared object (code spear cannot see); `enable
/// NAME`, `-n NAME` and `-d NAME` change whether NAME runs a builtin or a program. Without names it
/// only lists.
fn enable(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let parsed = BuiltinArgs::scan(args, "f");
    if parsed.unknown {
        a.complex("`enable` with an option known only at run time could load a shared object");
    }
    for file in parsed.values('f') {
        a.complex(format!(
            "`enable -f {}` loads a builtin from a shared object, code spear cannot see",
            file.display()
        ));
        a.read_path(file, cwd);
    }
    if parsed.has('d') || !parsed.operands.is_empty() {
        a.complex("`enable NAME` changes whether a name runs a builtin or a program");
    }
}

/// `jobs -x COMMAND ARGS...` runs COMMAND (with job specifications replaced by process ids); the
/// other forms only list jobs.
fn jobs(a: &mut Analysis<'_>, args: &[Arg], cwd: &mut Cwd, stdin: &Stdin) {
    let parsed = BuiltinArgs::scan(args, "");
    if parsed.unknown {
        a.complex(
            "`jobs` with an option known only at run time could be `jobs -x`, which runs a command",
        );
    }
    if parsed.has('x') {
        let words = crate::commands::with_placeholders(&parsed.operands, "%");
        let mut inner = cwd.clone();
        a.run_words(words, &mut inner, stdin.clone());
    }
}

/// The options of a builtin, read as bash's own getopt reads them: bundles (`-rp PROMPT`), a value
/// attached (`-vNAME`) or in the next word, `--` or the first operand ending the options.
#[derive(Debug, Default)]
struct BuiltinArgs {
    /// Each option letter, with its value when it takes one.
    opts: Vec<(char, Option<Arg>)>,
    /// The words after the options.
    operands: Vec<Arg>,
    /// A word known only at run time stood where an option could: what follows may be options
    /// too, so the operands are only what might be operands.
    unknown: bool,
}

impl BuiltinArgs {
    /// Scans `args`; `with_value` lists the letters that take a value.
    fn scan(args: &[Arg], with_value: &str) -> Self {
        let mut out = BuiltinArgs::default();
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            let Some(text) = arg.lit() else {
                if arg.could_be_option() {
                    out.unknown = true;
                }
                break;
            };
            if text == "--" {
                i += 1;
                break;
            }
            if !(text.starts_with('-') && text.len() > 1) {
                break;
            }
            i += 1;
            for (pos, c) in text[1..].char_indices() {
                if with_value.contains(c) {
                    let rest = &text[1 + pos + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).cloned()
                    } else {
                        Some(Arg::Lit(rest.to_owned()))
                    };
                    out.opts.push((c, value));
                    break;
                }
                out.opts.push((c, None));
            }
        }
        out.operands = args.get(i..).unwrap_or(&[]).to_vec();
        out
    }

    fn has(&self, letter: char) -> bool {
        self.opts.iter().any(|(c, _)| *c == letter)
    }

    fn values(&self, letter: char) -> impl Iterator<Item = &Arg> {
        self.opts
            .iter()
            .filter(move |(c, _)| *c == letter)
            .filter_map(|(_, v)| v.as_ref())
    }

    /// After an option known only at run time, any later word could be the NAME an option
    /// assigns (`printf "$fmt" 'a[$(cmd)]'` is `printf -v ...` when `$fmt` is `-v`).
    fn unknown_options_could_name(&self, a: &mut Analysis<'_>, what: &str) {
        if self.unknown && self.operands.iter().skip(1).any(could_evaluate) {
            a.complex(format!(
                "`{what}` has an option known only at run time, and a later word could be a \
                 variable it assigns"
            ));
        }
    }
}

/// Whether a variable NAME evaluates nothing: an identifier, or an element whose subscript is `@`,
/// `*` or arithmetic of literal numbers only (`a[0]`, `a[-1]`). Any other subscript is evaluated as
/// arithmetic, recursively through the values of variables it names, and can run commands.
pub(crate) fn inert_name(name: &str) -> bool {
    let (base, subscript) = match name.split_once('[') {
        Some((base, rest)) => match rest.strip_suffix(']') {
            Some(sub) => (base, Some(sub)),
            None => return false,
        },
        None => (name, None),
    };
    let identifier = base
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    identifier
        && subscript.is_none_or(|sub| {
            matches!(sub, "@" | "*") || (!sub.trim().is_empty() && arith::is_inert(sub))
        })
}

/// Whether a variable NAME has a subscript that bash evaluates (a NAME that is not a name at all is
/// an error, which runs nothing).
fn evaluates(name: &str) -> bool {
    name.contains('[') && !inert_name(name)
}

/// The variable of a NAME: `a` for `a[0]`.
fn base_name(name: &str) -> &str {
    name.split_once('[').map_or(name, |(base, _)| base)
}

/// The reason given for a NAME whose subscript is evaluated.
fn subscript_reason(what: &str, name: &str) -> String {
    format!(
        "`{what}` evaluates the subscript of `{name}` as arithmetic, which can run commands; \
         use a literal number as the subscript"
    )
}

/// Whether a word, used as a variable NAME, could evaluate code: known only at run time, or a
/// subscript that is not inert.
fn could_evaluate(arg: &Arg) -> bool {
    arg.lit()
        .is_none_or(|t| evaluates(t) || env_rules::may_matter(base_name(t), None))
}

/// A NAME a builtin assigns: its subscript is evaluated, and the variable may decide what later
/// commands run (`read PATH`, `printf -v PAGER`).
fn assigned_name(a: &mut Analysis<'_>, what: &str, arg: &Arg) {
    let Some(var) = arg.lit() else {
        a.complex(format!(
            "`{what}` assigns a variable named at run time, and a subscript in the name can run \
             commands"
        ));
        return;
    };
    tested_name(a, what, arg);
    env_rules::check_shell_assignment(a, base_name(var), None);
}

/// A NAME a builtin looks at (`test -v NAME`): its subscript is evaluated.
fn tested_name(a: &mut Analysis<'_>, what: &str, arg: &Arg) {
    match arg.lit() {
        Some(var) if !evaluates(var) => {}
        Some(var) => a.complex(subscript_reason(what, var)),
        None => a.complex(format!(
            "`{what}` looks at a variable named at run time, and a subscript in the name can run \
             commands"
        )),
    }
}

/// Whether the text of an array assignment `(...)` expands nothing when parsed again: words of
/// letters, digits and punctuation that is not special to the shell.
fn inert_compound(value: &str) -> bool {
    let Some(inner) = value.strip_prefix('(').and_then(|v| v.strip_suffix(')')) else {
        return false;
    };
    inner.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                ' ' | '\t' | '_' | '-' | '.' | ',' | ':' | '/' | '+' | '@' | '%'
            )
    })
}

/// The literal words joined by spaces, as `eval` does, if all are known.
pub(crate) fn join_literal(args: &[Arg]) -> Option<String> {
    let mut parts = Vec::with_capacity(args.len());
    for arg in args {
        parts.push(arg.lit()?);
    }
    Some(parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_evaluate_nothing() {
        for (name, inert) in [
            ("x", true),
            ("_x1", true),
            ("a[0]", true),
            ("a[-1]", true),
            ("a[1+2]", true),
            ("a[@]", true),
            ("a[*]", true),
            ("a[i]", false),
            ("a[$i]", false),
            ("a[$(id)]", false),
            ("a[`id`]", false),
            ("a[]", false),
            ("a[0", false),
            ("a[0]x", false),
            ("1a", false),
            ("", false),
        ] {
            assert_eq!(inert_name(name), inert, "{name}");
        }
        assert!(
            !evaluates("not a name"),
            "an invalid name is an error, not code"
        );
        assert!(evaluates("a[i]"));
    }

    #[test]
    fn builtin_options_read_as_bash_does() {
        let lits = |s: &[&str]| s.iter().map(|x| Arg::Lit((*x).into())).collect::<Vec<_>>();
        let parsed = BuiltinArgs::scan(&lits(&["-rp", "Name: ", "-aarr", "x", "-y"]), "ap");
        assert_eq!(
            parsed.values('p').collect::<Vec<_>>(),
            vec![&Arg::Lit("Name: ".into())]
        );
        assert_eq!(
            parsed.values('a').collect::<Vec<_>>(),
            vec![&Arg::Lit("arr".into())]
        );
        assert!(parsed.has('r'));
        assert_eq!(parsed.operands, lits(&["x", "-y"]));
        let parsed = BuiltinArgs::scan(&lits(&["--", "-v", "x"]), "v");
        assert_eq!(parsed.values('v').count(), 0);
        let parsed = BuiltinArgs::scan(&[Arg::unknown("$o"), Arg::Lit("x".into())], "v");
        assert!(parsed.unknown);
        assert_eq!(parsed.operands.len(), 2);
    }

    #[test]
    fn compound_values() {
        assert!(inert_compound("(1 2 3)"));
        assert!(inert_compound("(a.txt b-c/d)"));
        assert!(!inert_compound("($(id))"));
        assert!(!inert_compound("([0]=x)"));
        assert!(!inert_compound("(`id`)"));
        assert!(!inert_compound("(1 2"));
    }
}
