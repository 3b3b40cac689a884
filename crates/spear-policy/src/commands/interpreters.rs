//! Language interpreters. Running code is `SHELL_COMPLEX`; an inline program (`python -c`, `perl -e`,
//! `node -e`, `ruby -e`...) is also searched for the paths it names, each treated as a write target,
//! so `python3 -c "open('/etc/x','w')"` is refused as a write outside the roots.

use crate::analysis::{Analysis, Cwd};
use crate::commands::build;
use crate::shell::walk::Stdin;
use crate::shell::word::Arg;

/// Handles `name` if it is an interpreter. Returns false otherwise.
pub(crate) fn analyse(
    a: &mut Analysis<'_>,
    name: &str,
    args: &[Arg],
    cwd: &Cwd,
    stdin: &Stdin,
) -> bool {
    let family = family(name);
    let Some(family) = family else { return false };
    let version_only = args.len() == 1
        && matches!(
            args[0].lit(),
            Some("--version" | "-V" | "-v" | "-version" | "--help" | "-h")
        );
    if version_only {
        return true;
    }
    let inline_flags: &[&str] = match family {
        "python" => &["-c"],
        "node" => &["-e", "--eval", "-p", "--print"],
        "perl" => &["-e", "-E"],
        "ruby" | "lua" | "julia" | "Rscript" | "tclsh" => &["-e"],
        "php" => &["-r"],
        _ => &[],
    };
    let mut i = 0;
    let mut saw_program = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(t) = arg.lit() else {
            a.complex(format!("{name} runs code known only at run time"));
            saw_program = true;
            break;
        };
        let inline = inline_flags.iter().find_map(|f| {
            if t == *f {
                Some(None)
            } else if t.len() > f.len() && t.starts_with(f) && f.len() == 2 && family != "perl" {
                Some(Some(t[f.len()..].to_owned()))
            } else {
                None
            }
        });
        if let Some(attached) = inline {
            let code = attached.or_else(|| {
                i += 1;
                args.get(i - 1).and_then(Arg::lit).map(str::to_owned)
            });
            a.complex(format!("`{name} {t}` runs an inline program"));
            match code {
                Some(code) => named_paths(a, name, &code, cwd),
                None => a.complex(format!(
                    "{name} runs an inline program known only at run time"
                )),
            }
            saw_program = true;
            continue;
        }
        if family == "python" && t == "-m" {
            let module = args.get(i).and_then(Arg::lit).unwrap_or("");
            python_module(a, name, module, args.get(i + 1..).unwrap_or(&[]), cwd);
            return true;
        }
        if family == "node" && matches!(t, "--check" | "-c") {
            for f in &args[i..] {
                a.read_path(f, cwd);
            }
            return true;
        }
        if family == "perl" && t.starts_with("-i") || family == "ruby" && t.starts_with("-i") {
            // In-place editing rewrites the file operands.
            for f in args[i..].iter().filter(|x| !x.display().starts_with('-')) {
                a.write_path(f, cwd, &format!("{name} -i"));
            }
            continue;
        }
        if t.starts_with('-') && t != "-" {
            // Options with a separate value.
            if matches!(
                (family, t),
                ("python", "-W" | "-X" | "-Q")
                    | ("node", "-r" | "--require" | "--import" | "--loader")
                    | ("perl", "-I" | "-M")
                    | ("ruby", "-I" | "-r")
                    | ("php", "-d" | "-c" | "-f" | "-S" | "-t")
            ) {
                i += 1;
            }
            if family == "php" && t == "-S" {
                a.complex("`php -S` runs a web server");
            }
            continue;
        }
        if saw_program {
            // Arguments to an inline program: strings, not code.
            break;
        }
        a.complex(format!("`{name} {t}` runs a program from a file"));
        a.read_path(arg, cwd);
        saw_program = true;
        break;
    }
    if !saw_program {
        match stdin {
            Stdin::Text(Some(code)) => {
                a.complex(format!("{name} runs the program in its here-document"));
                named_paths(a, name, code, cwd);
            }
            _ => a.complex(format!("{name} runs a program read from its input")),
        }
    }
    true
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
            build::analyse(a, "pip", rest, cwd);
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

/// Treats every path an inline program names as a write target: string literals that look like
/// paths (absolute, `~/`, `./`, a relative path with a `/`, or a file name with an extension).
fn named_paths(a: &mut Analysis<'_>, name: &str, code: &str, cwd: &Cwd) {
    for literal in string_literals(code) {
        let trimmed = literal.trim_start_matches(['<', '>', '+', '|', '&', ' ']);
        if looks_like_path(trimmed) {
            let expanded = match (trimmed.strip_prefix("~/"), &a.policy.config().home) {
                (Some(rest), Some(home)) => home.join(rest).to_string_lossy().into_owned(),
                _ => trimmed.to_owned(),
            };
            a.write_path(
                &Arg::Lit(expanded),
                cwd,
                &format!("{name}'s inline program"),
            );
        }
    }
}

fn looks_like_path(s: &str) -> bool {
    if s.is_empty() || s.len() > 4096 || s.contains(['\n', '{', '}', '%', '$']) || s.contains("://")
    {
        return false;
    }
    if s.starts_with('/') || s.starts_with("~/") || s.starts_with("./") || s.starts_with("../") {
        return true;
    }
    if s.contains(' ') {
        return false;
    }
    let has_dir = s.contains('/');
    let has_ext = std::path::Path::new(s).extension().is_some_and(|e| {
        !e.is_empty()
            && e.len() <= 8
            && e.to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_alphanumeric())
    });
    let first_is_word = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    first_is_word && (has_dir || has_ext) && !s.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// The contents of quoted string literals (`'...'`, `"..."`, `` `...` ``) in a program, with simple
/// backslash escapes resolved.
fn string_literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        if c == '\'' || c == '"' || c == '`' {
            let mut s = String::new();
            let mut closed = false;
            while let Some(d) = chars.next() {
                if d == '\\' {
                    if let Some(e) = chars.next() {
                        s.push(e);
                    }
                    continue;
                }
                if d == c {
                    closed = true;
                    break;
                }
                s.push(d);
            }
            if closed {
                out.push(s);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_paths() {
        assert_eq!(string_literals("open('/etc/x','w')"), vec!["/etc/x", "w"]);
        assert_eq!(string_literals(r#"print("a\"b")"#), vec!["a\"b"]);
        for (s, path) in [
            ("/etc/x", true),
            ("~/.bashrc", true),
            ("data.json", true),
            ("src/main.rs", true),
            ("w", false),
            ("hello world", false),
            ("1.5", false),
            ("%s.txt", false),
            ("https://x.invalid/a.txt", false),
            ("utf-8", false),
        ] {
            assert_eq!(looks_like_path(s), path, "{s}");
        }
        assert_eq!(family("python3.11"), Some("python"));
        assert_eq!(family("cat"), None);
    }
}
