//! awk: the program can run commands (`system()`, `cmd | getline`, `print | "cmd"`), write files
//! (`print > "file"`), and load code (`@load`, `@include`, `-f`, `-i`, `-l`). gawk's `-i inplace`
//! rewrites the input files.

use crate::analysis::{Analysis, Cwd};
use crate::commands::{Call, Programs};
use crate::shell::word::Arg;

/// What an awk program does besides printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct AwkEffects {
    /// `system("...")` commands with a literal argument.
    pub system: Vec<String>,
    /// Why the program runs something spear cannot see (pipes, `system` of an expression).
    pub runs: Option<String>,
    /// Files written by `print > "file"` / `>>`.
    pub writes: Vec<String>,
    /// A redirection to a file named by an expression.
    pub writes_unknown: bool,
    /// Files read by `getline < "file"`.
    pub reads: Vec<String>,
    /// Why the program could not be understood.
    pub unknown: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Str(String),
    Regex,
    Num,
    Op(String),
    Newline,
}

/// awk: options load code, write files and edit in place; an option spear does not know is
/// `SHELL_COMPLEX`.
pub(crate) const PROGRAMS: &[Programs] =
    &[Programs::complex(&["awk", "gawk", "mawk", "nawk"], analyse)];

/// Analyses the awk command line.
pub(crate) fn analyse(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let name = c.name;
    let mut line = scan_command_line(a, c, cwd);
    if !line.program_given {
        if line.operands.is_empty() {
            return;
        }
        let p = line.operands.remove(0);
        match p.lit() {
            Some(text) => line.program = Some(text.to_owned()),
            None => {
                a.complex(format!("{name} runs a program known only at run time"));
            }
        }
    }
    if let Some(text) = &line.program {
        program_effects(a, name, text, cwd);
    }
    operand_effects(a, &line.operands, line.in_place, cwd);
}

/// What awk's command line says: the program (from `-e`, or the first operand), whether a file
/// gives it, whether `-i inplace` rewrites the inputs, and the operands.
#[derive(Default)]
struct AwkLine {
    /// The program text from `-e`/`--source`, or the first operand.
    program: Option<String>,
    /// Whether an option gave the program (`-e`, `-f`, `-E`), so the first operand is not it.
    program_given: bool,
    /// Whether `-i inplace` rewrites the input files.
    in_place: bool,
    /// The operands: input files, `var=value` assignments, the program when no option gave it.
    operands: Vec<Arg>,
}

/// Reads awk's options and operands; an option that loads code or writes a file is judged as it
/// is met.
fn scan_command_line(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &Cwd) -> AwkLine {
    let args = c.args;
    let mut line = AwkLine::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(t) = arg.lit() else {
            if line.operands.is_empty() && !line.program_given && arg.could_be_option() {
                a.complex(format!(
                    "`{}` is known only at run time and could be an awk option",
                    arg.display()
                ));
            }
            line.operands.push(arg.clone());
            continue;
        };
        if !line.operands.is_empty()
            || line.program_given && !t.starts_with('-')
            || t == "-"
            || !t.starts_with('-')
        {
            line.operands.push(arg.clone());
            continue;
        }
        if t == "--" {
            line.operands.extend(args[i..].iter().cloned());
            break;
        }
        let (opt, attached) = split_option(t);
        line.option(a, c, cwd, &opt, attached.as_deref(), &mut i);
    }
    line
}

/// An option word split into the option and the value attached to it: `--name=value`, `-Xvalue`.
fn split_option(t: &str) -> (String, Option<String>) {
    if let Some(long) = t.strip_prefix("--") {
        match long.split_once('=') {
            Some((long_name, inline)) => (format!("--{long_name}"), Some(inline.to_owned())),
            None => (t.to_owned(), None),
        }
    } else {
        // `-X` and what is attached to it, split by characters: the option letter may be any
        // character, not one byte.
        let mut chars = t.chars();
        let dash = chars.next().unwrap_or('-');
        let letter = chars.next().map(String::from).unwrap_or_default();
        let rest = chars.as_str();
        (
            format!("{dash}{letter}"),
            (!rest.is_empty()).then(|| rest.to_owned()),
        )
    }
}

impl AwkLine {
    /// Applies the option `opt` (its value attached, or the argument at `i`, which it consumes):
    /// one arm per awk option.
    fn option(
        &mut self,
        a: &mut Analysis<'_>,
        c: &Call<'_>,
        cwd: &Cwd,
        opt: &str,
        attached: Option<&str>,
        i: &mut usize,
    ) {
        let (name, args) = (c.name, c.args);
        let value = |i: &mut usize| {
            attached.map(|v| Arg::Lit(v.to_owned())).or_else(|| {
                *i += 1;
                args.get(*i - 1).cloned()
            })
        };
        match opt {
            "-F" | "--field-separator" | "-v" | "--assign" => {
                let _ = value(i);
            }
            "-f" | "--file" | "-E" | "--exec" => {
                self.program_given = true;
                a.complex(format!(
                    "`{name} {opt}` runs a program from a file spear does not read"
                ));
                if let Some(f) = value(i) {
                    a.read_path(&f, cwd);
                }
            }
            "-e" | "--source" => {
                self.program_given = true;
                match value(i).as_ref().and_then(Arg::lit) {
                    Some(source) => {
                        self.program = Some(self.program.take().map_or_else(
                            || source.to_owned(),
                            |earlier| format!("{earlier}\n{source}"),
                        ));
                    }
                    None => a.complex(format!("{name} runs a program known only at run time")),
                }
            }
            "-i" | "--include" => match value(i).as_ref().and_then(Arg::lit) {
                Some("inplace" | "inplace.awk") => self.in_place = true,
                _ => a.complex(format!(
                    "`{name} -i` includes a source file spear does not read"
                )),
            },
            "-l" | "--load" => {
                let _ = value(i);
                a.complex(format!("`{name} -l` loads a compiled extension"));
            }
            // Optional attached file names: dump, pretty-print and profile output.
            "-d" | "--dump-variables" | "-o" | "--pretty-print" | "-p" | "--profile" => {
                let default = match opt {
                    "-d" | "--dump-variables" => "awkvars.out",
                    // `-o`/`--pretty-print` and `-p`/`--profile` share a default.
                    _ => "awkprof.out",
                };
                let file = attached.unwrap_or(default).to_owned();
                a.write_path(&Arg::Lit(file), cwd, name);
            }
            // Flags that only change parsing, output or diagnostics.
            "-b"
            | "--characters-as-bytes"
            | "-c"
            | "--traditional"
            | "-C"
            | "--copyright"
            | "-g"
            | "--gen-pot"
            | "-h"
            | "--help"
            | "-L"
            | "--lint"
            | "-M"
            | "--bignum"
            | "-N"
            | "--use-lc-numeric"
            | "-n"
            | "--non-decimal-data"
            | "-O"
            | "--optimize"
            | "-P"
            | "--posix"
            | "-r"
            | "--re-interval"
            | "-s"
            | "--no-optimize"
            | "-S"
            | "--sandbox"
            | "-t"
            | "--lint-old"
            | "-V"
            | "--version"
            | "-D"
            | "--debug" => {}
            // mawk's and gawk's `-W` carries implementation options, among them `exec FILE`.
            _ => c.unknown_option(a, opt),
        }
    }
}

/// What the awk program text does: the commands it runs, the files it writes and reads.
fn program_effects(a: &mut Analysis<'_>, name: &str, text: &str, cwd: &Cwd) {
    let effects = parse_program(text);
    if let Some(why) = &effects.unknown {
        a.complex(format!("the {name} program {why}"));
    }
    if let Some(why) = &effects.runs {
        a.complex(format!("the {name} program {why}"));
    }
    for cmd in &effects.system {
        a.analyse_nested(cmd, cwd, "awk system()");
    }
    for w in &effects.writes {
        if !matches!(w.as_str(), "/dev/stdout" | "/dev/stderr" | "-") {
            a.write_path(&Arg::Lit(w.clone()), cwd, name);
        }
    }
    for r in &effects.reads {
        if !matches!(r.as_str(), "-" | "/dev/stdin") {
            a.read_path(&Arg::Lit(r.clone()), cwd);
        }
    }
    if effects.writes_unknown {
        a.mutates(format!(
            "the {name} program writes to a file named at run time"
        ));
        a.complex(format!(
            "the {name} program writes to a file named at run time"
        ));
    }
}

/// The operands: `var=value` assigns, everything else is an input file (rewritten by `-i
/// inplace`).
fn operand_effects(a: &mut Analysis<'_>, operands: &[Arg], in_place: bool, cwd: &Cwd) {
    for op in operands {
        // `var=value` operands assign; everything else is an input file.
        if op
            .lit()
            .is_some_and(|t| t.contains('=') && !t.starts_with(['/', '.']))
        {
            continue;
        }
        if in_place {
            a.write_path(op, cwd, "awk -i inplace");
        } else if op.lit() != Some("-") {
            a.read_path(op, cwd);
        }
    }
}

/// Parses an awk program and lists what it runs and writes.
pub(crate) fn parse_program(text: &str) -> AwkEffects {
    let mut fx = AwkEffects::default();
    let toks = match tokenize(text) {
        Ok(t) => t,
        Err(why) => {
            fx.unknown = Some(why);
            return fx;
        }
    };
    let is_op = |t: Option<&Tok>, s: &str| matches!(t, Some(Tok::Op(o)) if o == s);
    for (i, tok) in toks.iter().enumerate() {
        match tok {
            Tok::Ident(id) if id == "system" => {
                if let (Some(Tok::Op(open)), Some(Tok::Str(cmd))) =
                    (toks.get(i + 1), toks.get(i + 2))
                    && open == "("
                    && is_op(toks.get(i + 3), ")")
                {
                    fx.system.push(cmd.clone());
                    fx.runs
                        .get_or_insert_with(|| "runs a command with system()".into());
                } else {
                    fx.runs = Some("runs a command built at run time with system()".into());
                }
            }
            Tok::Op(o) if o == "|" || o == "|&" => {
                fx.runs = Some("pipes to or from a command".into());
            }
            Tok::Ident(id) if id == "getline" => {
                // `getline < "file"` and `getline var < "file"` read a file.
                let mut j = i + 1;
                if matches!(toks.get(j), Some(Tok::Ident(_))) {
                    j += 1;
                }
                if is_op(toks.get(j), "<")
                    && let Some(Tok::Str(file)) = toks.get(j + 1)
                {
                    fx.reads.push(file.clone());
                }
            }
            Tok::Op(o) if o == "@" => {
                if matches!(toks.get(i + 1), Some(Tok::Ident(n)) if n == "load" || n == "include") {
                    fx.runs = Some("loads code with @load or @include".into());
                }
            }
            Tok::Ident(id) if id == "print" || id == "printf" => {
                let mut depth = 0i32;
                let mut j = i + 1;
                while let Some(t) = toks.get(j) {
                    match t {
                        Tok::Op(o) if o == "(" || o == "[" => depth += 1,
                        Tok::Op(o) if o == ")" || o == "]" => depth -= 1,
                        Tok::Op(o) if (o == ";" || o == "}") && depth <= 0 => break,
                        Tok::Newline if depth <= 0 => break,
                        Tok::Op(o) if (o == ">" || o == ">>") && depth == 0 => {
                            match toks.get(j + 1) {
                                Some(Tok::Str(file)) if !matches!(toks.get(j + 2), Some(Tok::Op(c)) if c != ";" && c != "}" && c != ")") =>
                                {
                                    fx.writes.push(file.clone());
                                }
                                _ => fx.writes_unknown = true,
                            }
                            break;
                        }
                        _ => {}
                    }
                    j += 1;
                }
            }
            _ => {}
        }
    }
    fx
}

/// Splits an awk program into tokens, telling regular expressions from division by what precedes
/// them.
fn tokenize(text: &str) -> Result<Vec<Tok>, String> {
    let s: Vec<char> = text.chars().collect();
    let mut toks: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match c {
            ' ' | '\t' | '\r' => i += 1,
            '\\' if s.get(i + 1) == Some(&'\n') => i += 2,
            '\n' => {
                toks.push(Tok::Newline);
                i += 1;
            }
            '#' => {
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                toks.push(Tok::Str(string_literal(&s, &mut i)?));
            }
            '/' if regex_allowed(toks.last()) => {
                i += 1;
                skip_regex(&s, &mut i)?;
                toks.push(Tok::Regex);
            }
            _ if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == '_') {
                    i += 1;
                }
                toks.push(Tok::Ident(s[start..i].iter().collect()));
            }
            _ if c.is_ascii_digit() || c == '.' => {
                while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == '.') {
                    i += 1;
                }
                toks.push(Tok::Num);
            }
            _ => {
                let two: String = s[i..(i + 2).min(s.len())].iter().collect();
                let op = if [
                    "||", "&&", ">>", "|&", "==", "!=", "<=", ">=", "++", "--", "+=", "-=", "*=",
                    "/=", "%=", "^=", "**",
                ]
                .contains(&two.as_str())
                {
                    two
                } else {
                    c.to_string()
                };
                i += op.chars().count();
                toks.push(Tok::Op(op));
            }
        }
    }
    Ok(toks)
}

/// Reads a string literal after its opening quote, up to and past the closing one; `s[*i]` is the
/// first character inside.
fn string_literal(s: &[char], i: &mut usize) -> Result<String, String> {
    let mut out = String::new();
    loop {
        match s.get(*i) {
            None | Some('\n') => return Err("has an unterminated string".into()),
            Some('"') => {
                *i += 1;
                break;
            }
            Some('\\') => {
                match s.get(*i + 1) {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(&e) => out.push(e),
                    None => return Err("has an unterminated string".into()),
                }
                *i += 2;
            }
            Some(&ch) => {
                out.push(ch);
                *i += 1;
            }
        }
    }
    Ok(out)
}

/// Skips a regular expression after its opening `/`, up to and past the closing one (a `/` in a
/// bracket expression does not close it).
fn skip_regex(s: &[char], i: &mut usize) -> Result<(), String> {
    let mut in_class = false;
    loop {
        match s.get(*i) {
            None | Some('\n') => {
                return Err("has an unterminated regular expression".into());
            }
            Some('\\') => *i += 2,
            Some('[') => {
                in_class = true;
                *i += 1;
            }
            Some(']') => {
                in_class = false;
                *i += 1;
            }
            Some('/') if !in_class => {
                *i += 1;
                break;
            }
            Some(_) => *i += 1,
        }
    }
    Ok(())
}

/// A `/` starts a regular expression where an operand is expected.
fn regex_allowed(prev: Option<&Tok>) -> bool {
    match prev {
        None | Some(Tok::Newline) => true,
        Some(Tok::Op(o)) => !matches!(o.as_str(), ")" | "]" | "++" | "--"),
        Some(Tok::Ident(id)) => {
            matches!(id.as_str(), "print" | "printf" | "return" | "in" | "case")
        }
        Some(Tok::Str(_) | Tok::Regex | Tok::Num) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_letters_may_be_any_character() {
        // Found by the classify_script fuzz target: byte slicing split a multi-byte character.
        let fx = crate::tests_support::fixture();
        let a = fx
            .policy
            .classify_script("nawk -\u{fffd}\u{fffd}o x.txt", &fx.ws);
        assert_eq!(
            a.class,
            spear_core::CommandClass::ShellComplex,
            "an unknown option: {}",
            a.reason
        );
        let a = fx
            .policy
            .classify_script("mawk -W exec prog.awk data.txt", &fx.ws);
        assert_eq!(
            a.class,
            spear_core::CommandClass::ShellComplex,
            "{}",
            a.reason
        );
        let a = fx
            .policy
            .classify_script("awk -F: '{print $1}' data.txt", &fx.ws);
        assert_eq!(a.class, spear_core::CommandClass::ReadOnly, "{}", a.reason);
    }

    #[test]
    fn table() {
        let fx = |p: &str| parse_program(p);
        assert_eq!(fx("{print $1}"), AwkEffects::default());
        assert_eq!(fx("$1 > 5 {print}"), AwkEffects::default());
        assert_eq!(
            fx("/a|b/ {print}"),
            AwkEffects::default(),
            "| inside a regex is not a pipe"
        );
        assert_eq!(fx("{ n = $1 / 2; print n }"), AwkEffects::default());
        assert_eq!(fx("BEGIN{system(\"touch x\")}").system, vec!["touch x"]);
        assert!(fx("{system($0)}").runs.is_some());
        assert!(fx("{print | \"sh\"}").runs.is_some());
        assert!(fx("BEGIN{\"id\" | getline x}").runs.is_some());
        assert!(fx("BEGIN{\"id\" |& getline x}").runs.is_some());
        assert_eq!(fx("{print > \"out.txt\"}").writes, vec!["out.txt"]);
        assert_eq!(fx("{print $1 >> \"/etc/x\"; next}").writes, vec!["/etc/x"]);
        assert!(fx("{print > $2}").writes_unknown);
        assert!(fx("{print > \"a\" $2}").writes_unknown);
        assert_eq!(fx("{print ($1 > 2)}"), AwkEffects::default());
        assert!(fx("@load \"ext\"").runs.is_some());
        assert_eq!(
            fx("BEGIN{while((getline l < \"/etc/shadow\")>0) print l}").reads,
            vec!["/etc/shadow"]
        );
        assert_eq!(fx("BEGIN{getline < \"in.txt\"}").reads, vec!["in.txt"]);
        assert!(fx("{print \"unterminated}").unknown.is_some());
        assert_eq!(
            fx("# comment system(\"x\")\n{print}"),
            AwkEffects::default()
        );
    }
}
