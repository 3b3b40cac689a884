//! Shell builtins: the ones that change the shell's state, run text as code, or evaluate names.

use std::path::{Component, Path};

use spear_core::Refusal;

use crate::analysis::{Analysis, Cwd};
use crate::env_rules;
use crate::shell::walk::Stdin;
use crate::shell::word::Arg;

/// Handles `name` if it is a builtin spear analyses specially. Returns false otherwise.
pub(crate) fn analyse(
    a: &mut Analysis<'_>,
    name: &str,
    args: &[Arg],
    cwd: &mut Cwd,
    stdin: &Stdin,
) -> bool {
    match name {
        "cd" | "pushd" => change_dir(a, name, args, cwd),
        "popd" => *cwd = Cwd::Unknown,
        "eval" => {
            a.complex("eval runs text as code");
            if let Some(text) = join_literal(args) {
                a.analyse_nested(&text, cwd, "eval");
            }
        }
        "source" | "." => {
            a.complex(format!(
                "`{name}` runs the commands of a file in this shell"
            ));
            if let Some(file) = args.first() {
                a.read_path(file, cwd);
            }
        }
        "exec" => {
            // `exec cmd args` replaces the shell with cmd; options -a NAME, -c, -l.
            let mut rest = args;
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
            a.run_words(rest.to_vec(), cwd, stdin.clone());
        }
        "command" | "builtin" => {
            let mut rest = args;
            let mut lookup_only = false;
            while let Some(first) = rest.first().and_then(Arg::lit) {
                if name == "command" && first.starts_with('-') && first.len() > 1 {
                    lookup_only |= first.contains('v') || first.contains('V');
                    rest = &rest[1..];
                } else {
                    break;
                }
            }
            if !lookup_only {
                a.run_words(rest.to_vec(), cwd, stdin.clone());
            }
        }
        "trap" => trap(a, args, cwd),
        "printf" => {
            // `printf -v NAME` assigns; a subscript in NAME is evaluated.
            if let Some(pos) = args.iter().position(|x| x.lit() == Some("-v")) {
                name_argument(a, "printf -v", args.get(pos + 1));
            }
        }
        "test" | "[" => test(a, args, cwd),
        "read" | "mapfile" | "readarray" => read_like(a, name, args),
        "export" | "declare" | "typeset" | "local" | "readonly" => declare(a, name, args),
        "unset" => {
            for arg in args {
                if arg.lit().is_none_or(|t| t.contains('[')) {
                    a.complex("unset evaluates an array subscript, which can run commands");
                }
            }
        }
        "let" => {
            for arg in args {
                match arg.lit() {
                    Some(expr) => a.check_arithmetic(expr, cwd),
                    None => a.complex("let evaluates arithmetic known only at run time"),
                }
            }
        }
        "set" => {
            // `set -e`, `set -o pipefail`, `set -- args` change nothing outside the shell.
        }
        "shopt" | "alias" | "unalias" | "enable" | "bind" | "fc" | "history" | "complete"
        | "compgen" | "compopt" | "coproc" => {
            if !args.is_empty() || matches!(name, "fc") {
                a.complex(format!(
                    "`{name}` changes how the shell parses or runs later commands"
                ));
            }
        }
        "kill" | "pkill" | "killall" => {
            a.complex(format!(
                "`{name}` signals processes (only the sandbox's own are visible)"
            ));
        }
        _ => return false,
    }
    true
}

/// `cd DIR`: moves the shell. A relative `..` is refused like any other; a directory known only at
/// run time leaves the working directory unknown.
fn change_dir(a: &mut Analysis<'_>, name: &str, args: &[Arg], cwd: &mut Cwd) {
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
    if !path.is_absolute() && path.components().any(|c| c == Component::ParentDir) {
        a.refuse(Refusal::parent_traversal(text));
        *cwd = Cwd::Unknown;
        return;
    }
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

/// `test -v NAME` evaluates a subscript in NAME; file tests read their operand.
fn test(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let args: Vec<&Arg> = args.iter().filter(|x| x.lit() != Some("]")).collect();
    for (i, arg) in args.iter().enumerate() {
        let Some(op) = arg.lit() else { continue };
        match op {
            "-v" | "-R" => name_argument(a, "test -v", args.get(i + 1).copied()),
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

/// `read NAME...`, `mapfile NAME`: names with subscripts are evaluated; `mapfile -C` runs a
/// callback.
fn read_like(a: &mut Analysis<'_>, name: &str, args: &[Arg]) {
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        match arg.lit() {
            Some(opt) if opt.starts_with('-') && opt.len() > 1 => {
                if opt.contains('C') && name != "read" {
                    a.complex("mapfile -C runs a callback");
                }
                // Options with a value: read -a -d -i -n -N -p -t -u; mapfile -d -n -O -s -t -u -C -c.
                if opt.ends_with(['a', 'd', 'i', 'n', 'N', 'p', 't', 'u', 'O', 's', 'C', 'c'])
                    && opt.len() == 2
                {
                    if opt == "-a" {
                        name_argument(a, name, args.get(i));
                    }
                    i += 1;
                }
            }
            _ => name_argument(a, name, Some(arg)),
        }
    }
}

/// `declare`/`export`/`local`...: each `NAME=value` follows the shell assignment rules; `-n`
/// (nameref) and `-i` (integer, evaluated as arithmetic) evaluate text.
fn declare(a: &mut Analysis<'_>, name: &str, args: &[Arg]) {
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
        if var.contains('[') {
            a.complex(format!("`{name}` evaluates the array subscript in {var}"));
        }
        if name == "export" {
            // An exported variable reaches every later command.
            env_rules::check_env_assignment(a, var, value.as_ref(), "later commands");
        } else {
            env_rules::check_shell_assignment(a, var, value.as_ref());
        }
    }
}

/// A variable name argument: a subscript is evaluated as arithmetic, which can run commands.
fn name_argument(a: &mut Analysis<'_>, what: &str, arg: Option<&Arg>) {
    match arg.and_then(Arg::lit) {
        Some(n) if !n.contains('[') => {}
        _ => a.complex(format!(
            "`{what}` evaluates an array subscript, which can run commands"
        )),
    }
}

/// The literal words joined by spaces, as `eval` does, if all are known.
pub(crate) fn join_literal(args: &[Arg]) -> Option<String> {
    let mut parts = Vec::with_capacity(args.len());
    for arg in args {
        parts.push(arg.lit()?);
    }
    Some(parts.join(" "))
}
