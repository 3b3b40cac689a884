//! Programs that run another program: the inner command is analysed as if it ran on its own, with
//! whatever the wrapper adds (a directory, an environment, arguments from stdin).

use spear_core::Refusal;

use crate::analysis::{Analysis, Cwd};
use crate::commands::builtins::join_literal;
use crate::commands::options::{Item, OptionSpec, has, operands, scan, values};
use crate::commands::{Call, Programs};
use crate::env_rules;
use crate::shell::walk::Stdin;
use crate::shell::word::Arg;

/// Shells whose syntax is bash's, or a subset of it.
const BASH_LIKE: &[&str] = &[
    "sh", "bash", "dash", "ash", "rbash", "yash", "posh", "ksh", "mksh", "ksh93", "lksh", "oksh",
    "pdksh",
];
/// Shells with syntax of their own: a script is still analysed for what bash would see, and is
/// `SHELL_COMPLEX` whatever it contains (zsh glob qualifiers, `${(e)...}` and the like run code).
const OTHER_SHELLS: &[&str] = &[
    "zsh",
    "fish",
    "csh",
    "tcsh",
    "nu",
    "elvish",
    "xonsh",
    "pwsh",
    "powershell",
    "rc",
    "es",
];

/// The wrappers and shells. A wrapper whose unknown option could take a value would run another
/// word as the command, so the common ones list their options.
pub(crate) const PROGRAMS: &[Programs] = &[
    Programs::harmless(
        &[
            "sudo",
            "doas",
            "pkexec",
            "su",
            "run0",
            "runuser",
            "setpriv",
            "sg",
            "newgrp",
            "capsh",
            "sudoedit",
            "setuidgid",
            "chpst",
            "gosu",
            "su-exec",
        ],
        privilege,
    ),
    Programs::harmless(BASH_LIKE, |a, c, cwd| {
        shell(a, c.name, c.args, cwd, c.stdin);
    }),
    Programs::harmless(OTHER_SHELLS, |a, c, cwd| {
        shell(a, c.name, c.args, cwd, c.stdin);
    }),
    Programs::harmless(&["env"], |a, c, cwd| env(a, c.args, cwd, c.stdin)),
    Programs::harmless(
        &[
            "nohup",
            "unbuffer",
            "caffeinate",
            "dbus-run-session",
            "catchsegv",
        ],
        no_options,
    ),
    Programs::complex(&["nice"], nice),
    Programs::complex(&["timeout"], timeout),
    Programs::harmless(&["stdbuf"], stdbuf),
    Programs::harmless(&["setsid"], setsid),
    Programs::harmless(&["ionice"], ionice),
    Programs::harmless(&["taskset"], taskset),
    Programs::harmless(&["chrt"], chrt),
    Programs::complex(&["time"], time),
    Programs::complex(&["watch"], watch),
    Programs::harmless(&["flock"], |a, c, cwd| flock(a, c.args, cwd, c.stdin)),
    Programs::complex(&["xargs"], xargs),
    Programs::harmless(
        &[
            "strace",
            "ltrace",
            "gdb",
            "valgrind",
            "perf",
            "uftrace",
            "heaptrack",
            "rr",
            "lldb",
        ],
        tracer,
    ),
    Programs::harmless(&["busybox", "toybox"], multicall),
];

/// Programs that change privileges: refused.
fn privilege(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let name = c.name;
    a.refuse(Refusal::privilege_change(name));
}

/// nohup, unbuffer...: the command after their options runs.
fn no_options(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    let rest = skip_options(args, &OptionSpec::posix("", &[]));
    run_inner(a, rest, cwd, stdin);
}

/// `nice [-n N] COMMAND`: COMMAND runs.
fn nice(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    // `-n N`, `--adjustment=N`, or the old form `-N`.
    let spec = OptionSpec::posix("n", &["adjustment"]).flags("0123456789", &[]);
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    run_inner(a, after_options(items), cwd, stdin);
}

/// `timeout [options] DURATION COMMAND`: COMMAND runs.
fn timeout(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    let spec = OptionSpec::posix("sk", &["signal", "kill-after"])
        .flags("v", &["preserve-status", "foreground", "verbose"]);
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    let mut rest = after_options(items);
    if !rest.is_empty() {
        rest.remove(0); // the duration
    }
    run_inner(a, rest, cwd, stdin);
}

/// `stdbuf [options] COMMAND`: COMMAND runs.
fn stdbuf(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    let rest = skip_options(
        args,
        &OptionSpec::posix("ioe", &["input", "output", "error"]),
    );
    run_inner(a, rest, cwd, stdin);
}

/// `setsid [options] COMMAND`: COMMAND runs.
fn setsid(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    run_inner(
        a,
        skip_options(args, &OptionSpec::posix("", &[])),
        cwd,
        stdin,
    );
}

/// `ionice [options] COMMAND`: COMMAND runs unless a process is named.
fn ionice(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    let items = scan(
        args,
        &OptionSpec::posix("cnpPuT", &["class", "classdata", "pid", "pgid", "uid"]),
    );
    if !has(&items, &["-p", "-P", "-u", "--pid", "--pgid", "--uid"]) {
        run_inner(a, operands(&items), cwd, stdin);
    }
}

/// `taskset [options] MASK COMMAND`: COMMAND runs unless a process is named.
fn taskset(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    let items = scan(args, &OptionSpec::posix("", &[]));
    if !has(&items, &["-p", "--pid"]) {
        let mut rest = operands(&items);
        if !rest.is_empty() {
            rest.remove(0); // the mask or CPU list
        }
        run_inner(a, rest, cwd, stdin);
    }
}

/// `chrt [options] PRIORITY COMMAND`: COMMAND runs unless a process is named.
fn chrt(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    let items = scan(
        args,
        &OptionSpec::posix("TPD", &["sched-runtime", "sched-period", "sched-deadline"]),
    );
    if !has(&items, &["-p", "--pid"]) {
        let mut rest = operands(&items);
        if !rest.is_empty() {
            rest.remove(0); // the priority
        }
        run_inner(a, rest, cwd, stdin);
    }
}

/// `time [-o FILE] COMMAND`: COMMAND runs; `-o` writes FILE.
fn time(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    let spec = OptionSpec::posix("of", &["output", "format"])
        .flags("apqv", &["append", "portability", "quiet", "verbose"]);
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    for out in values(&items, &["-o", "--output"]) {
        a.write_path(out, cwd, "time");
    }
    run_inner(a, operands(&items), cwd, stdin);
}

/// `watch COMMAND`: the words joined run as a script (`-x`: as a command).
fn watch(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    let spec = OptionSpec::posix("nq", &["interval", "equexit"]).flags(
        "bcdegprtwx",
        &[
            "beep",
            "color",
            "no-color",
            "differences",
            "errexit",
            "chgexit",
            "precise",
            "no-title",
            "no-wrap",
            "no-linewrap",
            "no-rerun",
            "exec",
        ],
    );
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    let inner = operands(&items);
    if has(&items, &["-x", "--exec"]) {
        run_inner(a, inner, cwd, stdin);
    } else {
        match join_literal(&inner) {
            Some(script) => a.analyse_nested(&script, cwd, "watch"),
            None => a.complex("watch runs a command known only at run time"),
        }
    }
}

/// Tracers and debuggers run a program spear cannot follow.
fn tracer(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    a.complex(format!(
        "`{name}` runs a program under a tracer or debugger"
    ));
    for arg in args {
        a.unknown_operand(arg, cwd);
    }
}

/// busybox and toybox run the applet named first.
fn multicall(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let stdin = c.stdin;
    if args
        .first()
        .and_then(Arg::lit)
        .is_some_and(|applet| !applet.starts_with('-'))
    {
        a.run_words(args.to_vec(), cwd, stdin.clone());
    }
}

/// Runs the inner command of a wrapper, in a copy of the directory (a wrapper's `cd` cannot move
/// the calling shell).
fn run_inner(a: &mut Analysis<'_>, words: Vec<Arg>, cwd: &Cwd, stdin: &Stdin) {
    let mut inner = cwd.clone();
    a.run_words(words, &mut inner, stdin.clone());
}

/// The arguments after the wrapper's own options.
fn skip_options(args: &[Arg], spec: &OptionSpec) -> Vec<Arg> {
    after_options(scan(args, spec))
}

/// The words from the first operand on (a wrapper's command), of a scan that stops at it.
fn after_options(items: Vec<Item>) -> Vec<Arg> {
    let mut rest = Vec::new();
    let mut started = false;
    for item in items {
        match item {
            Item::Operand(a) | Item::Unknown(a) => {
                started = true;
                rest.push(a);
            }
            Item::Opt { name, value } if started => {
                rest.push(Arg::Lit(name));
                rest.extend(value);
            }
            Item::Opt { .. } => {}
        }
    }
    rest
}

/// `sh -c SCRIPT`, `bash script.sh`, `bash <<EOF ... EOF`.
fn shell(a: &mut Analysis<'_>, name: &str, args: &[Arg], cwd: &Cwd, stdin: &Stdin) {
    let other_syntax = OTHER_SHELLS.contains(&name);
    let mut command_mode = false;
    let mut i = 0;
    while i < args.len() {
        let Some(text) = args[i].lit() else { break };
        if text == "--" || text == "-" {
            i += 1;
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            i += 1;
            match long {
                "rcfile" | "init-file" => {
                    a.complex(format!("`{name} --{long}` runs the commands of a file"));
                    i += 1;
                }
                "command" => command_mode = true,
                _ => {}
            }
            continue;
        }
        if !(text.starts_with('-') || text.starts_with('+')) || text.len() < 2 {
            break;
        }
        i += 1;
        for c in text[1..].chars() {
            match c {
                'c' => command_mode = true,
                'o' | 'O' => i += 1,
                _ => {}
            }
        }
        if name == "pwsh" || name == "powershell" {
            command_mode |=
                text.eq_ignore_ascii_case("-command") || text.eq_ignore_ascii_case("-c");
        }
    }
    if other_syntax {
        a.complex(format!(
            "{name} has syntax of its own that can run code bash analysis cannot see"
        ));
    }
    let operand = args.get(i);
    if command_mode {
        match operand.and_then(Arg::lit) {
            Some(script) => a.analyse_nested(script, cwd, &format!("{name} -c")),
            None => a.complex(format!("`{name} -c` runs a script known only at run time")),
        }
        return;
    }
    if let Some(file) = operand {
        a.complex(format!(
            "`{name} {}` runs the commands of a file",
            file.display()
        ));
        a.read_path(file, cwd);
        return;
    }
    match stdin {
        Stdin::Text(Some(script)) => {
            a.analyse_nested(script, cwd, &format!("{name} reading a here-document"));
        }
        _ => a.complex(format!("{name} reads the commands to run from its input")),
    }
}

/// `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]... [COMMAND [ARG]...]`.
fn env(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd, stdin: &Stdin) {
    let mut dir = cwd.clone();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let Some(text) = arg.lit() else {
            a.complex(format!("`env {}` is known only at run time", arg.display()));
            return;
        };
        if text == "--" {
            i += 1;
            break;
        }
        let (opt, attached) = match text.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v.to_owned())),
            _ => (text, None),
        };
        let take_value = |i: &mut usize| -> Option<Arg> {
            if let Some(v) = &attached {
                Some(Arg::Lit(v.clone()))
            } else {
                *i += 1;
                args.get(*i).cloned()
            }
        };
        match opt {
            "-S" | "--split-string" => {
                let Some(split) = take_value(&mut i) else {
                    return;
                };
                let rest: Vec<String> = args[i + 1..]
                    .iter()
                    .map(|x| shell_quote(x.display()))
                    .collect();
                match split.lit() {
                    Some(s) if !s.contains('$') => {
                        let script = format!("env {s} {}", rest.join(" "));
                        a.analyse_nested(&script, &dir, "env -S");
                    }
                    _ => a.complex("`env -S` splits a string known only at run time"),
                }
                return;
            }
            "-C" | "--chdir" => {
                if let Some(d) = take_value(&mut i) {
                    let mut moved = dir.clone();
                    crate::commands::builtins::change_dir(a, "cd", &[d], &mut moved);
                    dir = moved;
                }
            }
            "-u" | "--unset" | "-a" | "--argv0" => {
                let _ = take_value(&mut i);
            }
            _ if opt.starts_with('-') && opt.len() > 1 => {
                if let Some(rest) = opt.strip_prefix('-').filter(|r| !r.starts_with('-')) {
                    // `-iC DIR`, `-uNAME`...: a bundle ending in an option with a value.
                    if let Some(pos) = rest.find(['u', 'C', 'S']) {
                        let letter = &rest[pos..=pos];
                        let value = &rest[pos + 1..];
                        let mut sub = vec![Arg::Lit(format!("-{letter}"))];
                        if !value.is_empty() {
                            sub.push(Arg::Lit(value.to_owned()));
                        }
                        sub.extend_from_slice(&args[i + 1..]);
                        env(a, &sub, &dir, stdin);
                        return;
                    }
                }
            }
            _ => {
                if let Some((var, value)) = text.split_once('=') {
                    env_rules::check_env_assignment(
                        a,
                        var,
                        Some(&Arg::Lit(value.to_owned())),
                        "env",
                    );
                } else {
                    break;
                }
            }
        }
        i += 1;
    }
    let rest = args.get(i..).unwrap_or(&[]).to_vec();
    a.runs_in_place(&rest);
    run_inner(a, rest, &dir, stdin);
}

/// `flock [options] FILE COMMAND...`, `flock [options] FILE -c SCRIPT`, `flock [options] FD`.
fn flock(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd, stdin: &Stdin) {
    let items = scan(
        args,
        &OptionSpec::posix("wEc", &["timeout", "wait", "conflict-exit-code", "command"]),
    );
    let mut ops = operands(&items);
    if ops.is_empty() {
        return;
    }
    let lock = ops.remove(0);
    if !lock
        .lit()
        .is_some_and(|t| t.bytes().all(|b| b.is_ascii_digit()))
    {
        a.write_path(&lock, cwd, "flock");
    }
    if let Some(script) = values(&items, &["-c", "--command"]).last() {
        match script.lit() {
            Some(s) => a.analyse_nested(s, cwd, "flock -c"),
            None => a.complex("flock -c runs a script known only at run time"),
        }
    }
    run_inner(a, ops, cwd, stdin);
}

/// `xargs [options] [COMMAND [ARG]...]`: runs COMMAND (default `echo`) with arguments read from
/// its input, which are known only at run time.
fn xargs(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let spec = OptionSpec::posix(
        "adEeIiLlnPs",
        &[
            "arg-file",
            "delimiter",
            "eof",
            "replace",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
    )
    .flags(
        "0rtpxo",
        &[
            "null",
            "no-run-if-empty",
            "verbose",
            "interactive",
            "exit",
            "open-tty",
            "show-limits",
        ],
    );
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    for f in values(&items, &["-a", "--arg-file"]) {
        a.read_path(f, cwd);
    }
    let replace: Option<String> = items.iter().find_map(|it| match it {
        Item::Opt { name, value } if name == "-I" || name == "--replace" => {
            Some(value.as_ref().and_then(Arg::lit).unwrap_or("{}").to_owned())
        }
        Item::Opt { name, value: None } if name == "-i" => Some("{}".to_owned()),
        _ => None,
    });
    let mut inner = operands(&items);
    if inner.is_empty() {
        inner.push(Arg::Lit("echo".into()));
    }
    let from_input = Arg::unknown("(xargs input)");
    match replace {
        Some(r) => {
            let (program, rest) = inner.split_at(1);
            inner = [
                program.to_vec(),
                crate::commands::with_placeholders(rest, &r),
            ]
            .concat();
        }
        None => inner.push(from_input),
    }
    run_inner(a, inner, cwd, &Stdin::Pipe);
}

/// Quotes a word for a shell, so a script spear builds means what the words meant.
pub(crate) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
