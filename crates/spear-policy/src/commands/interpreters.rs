//! Language interpreters. Running code is `SHELL_COMPLEX`; an inline program (`python -c`, `perl -e`,
//! `node -e`, `ruby -e`...) is also read for the files its file calls name ([`inline`]): what it
//! reads is vetted as a read, what it writes as a write, so `python3 -c "open('data.json')"` runs
//! in SAFE and `python3 -c "open('/etc/x','w')"` is refused as a write outside the roots.

use std::ops::ControlFlow;

use crate::analysis::{Analysis, Cwd};
use crate::commands::{Call, Naming, Programs, build, inline, workspace_code};
use crate::shell::walk::Stdin;
use crate::shell::word::Arg;

/// The interpreters, each also under a versioned name (`python3.11`). Running code is
/// `SHELL_COMPLEX` whatever the options.
pub(crate) const PROGRAMS: &[Programs] = &[Programs::harmless(
    &[
        "python", "pypy", "pypy3", "node", "nodejs", "perl", "ruby", "irb", "php", "lua", "luajit",
        "julia", "Rscript", "R", "tclsh", "wish", "expect", "java", "jshell", "groovy", "kotlin",
        "scala", "clojure", "elixir", "erl", "escript", "ghci", "runghc", "ocaml", "guile",
        "racket", "sbcl", "swipl", "bb", "tsx", "ts-node",
    ],
    interpret,
)
.named(Naming::Versioned)];

/// Analyses an interpreter's command line: the program it runs (inline, a file, a module or its
/// input) and the files it edits in place.
fn interpret(a: &mut Analysis<'_>, call: &Call<'_>, cwd: &mut Cwd) {
    let (name, args, stdin) = (call.name, call.args, call.stdin);
    let Some(family) = family(name) else {
        a.complex(format!("`{name}` is not an interpreter spear knows"));
        return;
    };
    if let [only] = args
        && only
            .lit()
            .is_some_and(|flag| prints_and_exits(name, family, flag))
    {
        return;
    }
    let mut scan = InterpreterScan {
        name,
        family,
        args,
        i: 0,
        program_seen: false,
        in_place: None,
        safe_path: false,
    };
    while scan.i < args.len() {
        let arg = &args[scan.i];
        scan.i += 1;
        let Some(text) = arg.lit() else {
            if scan.program_seen {
                continue;
            }
            a.complex(format!("{name} runs code known only at run time"));
            return;
        };
        if scan.program_seen || text == "-" || !text.starts_with('-') {
            if scan.program_seen {
                // Operands of the program: files it reads, or rewrites with `-i`.
                if let Some(suffix) = &scan.in_place {
                    a.write_path(arg, cwd, &format!("{name} -i"));
                    crate::commands::backups::write_backup(
                        a,
                        arg,
                        suffix,
                        cwd,
                        &format!("{name} -i"),
                    );
                } else {
                    a.unknown_operand(arg, cwd);
                }
                continue;
            }
            if text == "-" {
                break;
            }
            a.complex(format!("`{name} {text}` runs a program from a file"));
            a.read_path(arg, cwd);
            scan.program_seen = true;
            continue;
        }
        let flow = match text.strip_prefix("--") {
            Some(long) => scan.long_option(a, text, long, cwd),
            None => scan.short_options(a, text, cwd),
        };
        if flow.is_break() {
            return;
        }
    }
    if !scan.program_seen {
        match stdin {
            Stdin::Text(Some(code)) => {
                a.complex(format!("{name} runs the program in its here-document"));
                program_files(a, name, family, code, cwd);
            }
            _ => a.complex(format!("{name} runs a program read from its input")),
        }
    }
}

/// Where the scan of an interpreter's arguments stands.
struct InterpreterScan<'c> {
    /// The interpreter as called.
    name: &'c str,
    /// Its family (`python`, `node`, `perl`...), which gives its options their meaning.
    family: &'static str,
    /// Its arguments.
    args: &'c [Arg],
    /// The index of the next argument.
    i: usize,
    /// Whether the program (inline or a file) has been met; what follows are its operands.
    program_seen: bool,
    /// `-i[SUFFIX]` of perl and ruby: `None` when not editing in place.
    in_place: Option<String>,
    /// Python's `-I` or `-P`: the current directory is not put on the module path.
    safe_path: bool,
}

impl InterpreterScan<'_> {
    /// A long option `text` (`--opt` or `--opt=value`, `long` without the dashes). `Break` when
    /// the analysis is over (`node --check` reads its operands and runs nothing).
    fn long_option(
        &mut self,
        a: &mut Analysis<'_>,
        text: &str,
        long: &str,
        cwd: &Cwd,
    ) -> ControlFlow<()> {
        let (name, family, args) = (self.name, self.family, self.args);
        let (opt, inline) = match long.split_once('=') {
            Some((o, v)) => (o, Some(v.to_owned())),
            None => (long, None),
        };
        match (family, opt) {
            ("node", "eval" | "print") => {
                let code = inline.or_else(|| {
                    self.i += 1;
                    args.get(self.i - 1).and_then(Arg::lit).map(str::to_owned)
                });
                inline_program(a, name, family, text, code.as_deref(), cwd);
                self.program_seen = true;
            }
            ("node", "check") => {
                for f in &args[self.i..] {
                    a.read_path(f, cwd);
                }
                return ControlFlow::Break(());
            }
            ("node", "require" | "import" | "loader" | "experimental-loader")
                if inline.is_none() =>
            {
                self.i += 1;
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    /// A bundle of short options, read letter by letter as the interpreter does. `Break` when the
    /// analysis is over (a module runs, or `-c` only checks syntax).
    fn short_options(&mut self, a: &mut Analysis<'_>, text: &str, cwd: &Cwd) -> ControlFlow<()> {
        let (name, family, args) = (self.name, self.family, self.args);
        let body: Vec<char> = text[1..].chars().collect();
        let mut pos = 0;
        while pos < body.len() {
            let flag = body[pos];
            pos += 1;
            let rest: String = body[pos..].iter().collect();
            let next_value = |i: &mut usize| -> Option<String> {
                if rest.is_empty() {
                    *i += 1;
                    args.get(*i - 1).and_then(Arg::lit).map(str::to_owned)
                } else {
                    Some(rest.clone())
                }
            };
            match letter(family, flag) {
                Letter::Code => {
                    let code = next_value(&mut self.i);
                    inline_program(a, name, family, text, code.as_deref(), cwd);
                    self.program_seen = true;
                    break;
                }
                Letter::Module => {
                    let module = next_value(&mut self.i).unwrap_or_default();
                    if !self.safe_path {
                        shadowed_module(a, name, &module, cwd);
                    }
                    python_module(a, name, &module, args.get(self.i..).unwrap_or(&[]), cwd);
                    return ControlFlow::Break(());
                }
                Letter::InPlace => {
                    self.in_place = Some(rest.clone());
                    break;
                }
                Letter::Digits => {
                    while pos < body.len() && body[pos].is_ascii_hexdigit() {
                        pos += 1;
                    }
                }
                Letter::Value => {
                    if rest.is_empty() && separate_value(family, flag) {
                        self.i += 1;
                    }
                    break;
                }
                Letter::Check => {
                    // `node -c FILE` checks syntax without running it.
                    for f in &args[self.i..] {
                        a.read_path(f, cwd);
                    }
                    return ControlFlow::Break(());
                }
                Letter::Flag => {
                    if family == "php" && flag == 'S' {
                        a.complex("`php -S` runs a web server");
                    }
                    if family == "python" && matches!(flag, 'I' | 'P') {
                        self.safe_path = true;
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// What a short option letter means to an interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Letter {
    /// The rest of the argument, or the next one, is a program (`-c`, `-e`).
    Code,
    /// The rest, or the next argument, names a module to run (`python -m`).
    Module,
    /// In-place editing; the rest of the argument is a backup suffix (`perl -i.bak`).
    InPlace,
    /// The rest of the argument (or, for some, the next one) is a value.
    Value,
    /// Followed by optional digits, then more letters (`perl -l`, `-0`, `-C`).
    Digits,
    /// Check syntax only.
    Check,
    /// A flag.
    Flag,
}

fn letter(family: &str, c: char) -> Letter {
    match (family, c) {
        ("python", 'c')
        | ("perl", 'e' | 'E')
        | ("ruby" | "lua" | "julia" | "Rscript" | "tclsh", 'e')
        | ("php", 'r')
        | ("node", 'e' | 'p') => Letter::Code,
        ("python", 'm') => Letter::Module,
        ("perl" | "ruby", 'i') => Letter::InPlace,
        ("node", 'c') => Letter::Check,
        ("perl", 'l' | '0' | 'C') | ("ruby", '0' | 'W' | 'T') => Letter::Digits,
        ("python", 'W' | 'X')
        | ("perl", 'I' | 'M' | 'm' | 'F' | 'x' | 'd' | 'D')
        | ("ruby", 'I' | 'r' | 'C' | 'E' | 'F' | 'x' | 'K')
        | ("php", 'd' | 'c' | 'f' | 'S' | 't' | 'z')
        | ("node", 'r')
        | ("lua", 'l') => Letter::Value,
        _ => Letter::Flag,
    }
}

/// Whether a value letter with nothing attached takes the next argument.
fn separate_value(family: &str, c: char) -> bool {
    matches!(
        (family, c),
        ("python", 'W' | 'X')
            | ("ruby", 'I' | 'r' | 'C' | 'E')
            | ("php", _)
            | ("node", 'r')
            | ("lua", 'l')
    )
}

/// Whether `flag`, alone, makes the interpreter `name` (of `family`) print its version or usage
/// and exit, reading no program.
///
/// Attack stopped: `tclsh -v < script.tcl` and `jshell -v <<< 'code'`: tclsh takes no version
/// flag and runs its input, jshell's `-v` is verbose and runs its input; `erl` passes unknown
/// flags on and starts a shell, `escript --version` runs a file named `--version`. Only the flags
/// each interpreter documents as printing and exiting count (checked by running them with a
/// program on their input where the interpreter was at hand: python, node, perl, tclsh, java,
/// jshell).
fn prints_and_exits(name: &str, family: &str, flag: &str) -> bool {
    const VERSION_HELP: &[&str] = &["--version", "--help"];
    const VERSION_V: &[&str] = &["--version", "-v", "--help", "-h"];
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let flags: &[&str] = match (family, base) {
        // python's `-v` is verbose, then it runs its input.
        ("python", _) => &["--version", "-V", "--help", "-h"],
        ("node" | "php" | "julia", _)
        | ("ruby", "irb")
        | ("other", "groovy" | "elixir" | "guile" | "swipl" | "tsx" | "ts-node") => VERSION_V,
        ("perl", _) => &["--version", "-v", "-V", "--help", "-h"],
        ("ruby", _) => &["--version", "--help", "-h"],
        ("lua", _) | ("tclsh", "expect") => &["-v"],
        ("Rscript", _) | ("other", "jshell" | "ghci" | "runghc" | "sbcl") => VERSION_HELP,
        ("other", "java") => &["-version", "--version", "-help", "--help", "-h"],
        ("other", "ocaml") => &["-version", "-vnum", "--version", "-v", "-help", "--help"],
        ("other", "bb" | "clojure") => &["--version"],
        _ => &[],
    };
    flags.contains(&flag)
}

/// `python -m MODULE` imports MODULE, and what it imports, from the current directory first.
fn shadowed_module(a: &mut Analysis<'_>, name: &str, module: &str, cwd: &Cwd) {
    let imports = match module {
        "pip" | "venv" | "virtualenv" | "ensurepip" => workspace_code::Imports::Any,
        "" => return,
        other => workspace_code::Imports::StandardLibrary(other),
    };
    a.workspace_code(&format!("{name} -m {module}"), cwd, |dir| {
        workspace_code::python_shadow(dir, imports)
    });
}

/// An inline program: `SHELL_COMPLEX`, and what its file calls name ([`program_files`]).
fn inline_program(
    a: &mut Analysis<'_>,
    name: &str,
    family: &str,
    flag: &str,
    code: Option<&str>,
    cwd: &Cwd,
) {
    a.complex(format!("`{name} {flag}` runs an inline program"));
    match code {
        Some(code) => program_files(a, name, family, code, cwd),
        None => a.complex(format!(
            "{name} runs an inline program known only at run time"
        )),
    }
}

/// The interpreter family of a program name (`python3.11` is python).
fn family(name: &str) -> Option<&'static str> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match base {
        "python" | "pypy" | "pypy3" => "python",
        "node" | "nodejs" => "node",
        "perl" => "perl",
        "ruby" | "irb" => "ruby",
        "php" => "php",
        "lua" | "luajit" => "lua",
        "julia" => "julia",
        "Rscript" | "R" => "Rscript",
        "tclsh" | "wish" | "expect" => "tclsh",
        "java" | "jshell" | "groovy" | "kotlin" | "scala" | "clojure" | "elixir" | "erl"
        | "escript" | "ghci" | "runghc" | "ocaml" | "guile" | "racket" | "sbcl" | "swipl"
        | "bb" | "tsx" | "ts-node" => "other",
        _ => return None,
    })
}

/// `python -m MODULE`: a few modules are known; the rest run code.
fn python_module(a: &mut Analysis<'_>, name: &str, module: &str, rest: &[Arg], cwd: &Cwd) {
    match module {
        "pip" => {
            build::pip(a, "pip", rest, cwd);
        }
        "venv" | "virtualenv" => match rest.iter().rfind(|x| !x.display().starts_with('-')) {
            Some(dir) => a.write_path(dir, cwd, &format!("{name} -m venv")),
            None => a.mutates("python -m venv creates an environment"),
        },
        "json.tool" => {
            let files: Vec<&Arg> = rest
                .iter()
                .filter(|x| !x.display().starts_with('-'))
                .collect();
            if let Some(input) = files.first() {
                a.read_path(input, cwd);
            }
            if let Some(output) = files.get(1) {
                a.write_path(output, cwd, "python -m json.tool");
            }
        }
        "py_compile" | "compileall" => {
            for f in rest.iter().filter(|x| !x.display().starts_with('-')) {
                a.write_path(f, cwd, &format!("{name} -m {module}"));
            }
            if rest.is_empty() {
                a.write_path(&Arg::Lit(".".into()), cwd, &format!("{name} -m {module}"));
            }
        }
        _ => {
            a.complex(format!("`{name} -m {module}` runs a module"));
            for arg in rest {
                a.unknown_operand(arg, cwd);
            }
        }
    }
}

/// What an inline program of the interpreter `name` (of `family`) does with the files it names
/// in its file calls ([`inline::file_effects`]): a file it opens for writing, writes or removes is
/// a write (a workspace write needs `workspace:write`, one outside every writable place is
/// refused), a file it reads or a module it requires by path is a read. Strings it only holds are
/// no paths. What the program does with paths known only when it runs is confined by the mount.
fn program_files(a: &mut Analysis<'_>, name: &str, family: &str, code: &str, cwd: &Cwd) {
    let Some(lang) = inline::Lang::of_family(family) else {
        return;
    };
    for effect in inline::file_effects(lang, code) {
        match effect {
            inline::Effect::Read(path) => a.read_path(&Arg::Lit(path), cwd),
            inline::Effect::Write(path) => {
                // A language that does not expand `~` writes a directory named `~`; judged as the
                // home's entry all the same, the stricter reading.
                let expanded = match (path.strip_prefix("~/"), &a.policy.config().home) {
                    (Some(rest), Some(home)) => home.join(rest).to_string_lossy().into_owned(),
                    _ => path,
                };
                a.write_path(
                    &Arg::Lit(expanded),
                    cwd,
                    &format!("{name}'s inline program"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(family("python3.11"), Some("python"));
        assert_eq!(family("cat"), None);
        // The table lists the same names the families know.
        for name in PROGRAMS.iter().flat_map(|p| p.names.iter()) {
            assert!(family(name).is_some(), "{name}");
        }
    }
}
