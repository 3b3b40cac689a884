//! GNU sed: the script language can run commands (`e`, the `e` flag of `s`), write files (`w`,
//! `W`, the `w` flag of `s`) and read them (`r`, `R`); `-i` rewrites the input files.
//!
//! The script is parsed the way GNU sed 4.9 reads it (in a regular expression, a delimiter inside a
//! bracket expression is literal; in a replacement it is not). Anything the parser does not
//! recognise makes the command `SHELL_COMPLEX`. The tests check the parser against `sed --debug`.

use crate::analysis::{Analysis, Cwd};
use crate::commands::backups;
use crate::commands::{Call, Programs};
use crate::shell::word::Arg;

/// What a sed script does besides editing text.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SedEffects {
    /// `e COMMAND` texts (`None`: the pattern space is executed).
    pub exec: Vec<Option<String>>,
    /// Files written by `w`, `W` and `s///w`.
    pub writes: Vec<String>,
    /// Files read by `r` and `R`.
    pub reads: Vec<String>,
    /// Why the script could not be fully understood.
    pub unknown: Option<String>,
}

/// sed: `-i` and the script write files and run commands; an option spear does not know is
/// `SHELL_COMPLEX`.
pub(crate) const PROGRAMS: &[Programs] = &[Programs::complex(&["sed", "gsed"], analyse)];

/// GNU sed's long options without a value that change only how it reads and prints.
const LONG_FLAGS: &[&str] = &[
    "quiet",
    "silent",
    "regexp-extended",
    "separate",
    "unbuffered",
    "null-data",
    "zero-terminated",
    "debug",
    "posix",
    "follow-symlinks",
    "binary",
    "help",
    "version",
];

/// Analyses the sed command line.
pub(crate) fn analyse(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let mut line = SedLine::default();
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(t) = arg.lit() else {
            if !options_done && arg.could_be_option() {
                a.complex(format!(
                    "`{}` is known only at run time and could be a sed option",
                    arg.display()
                ));
            }
            line.operands.push(arg.clone());
            continue;
        };
        if options_done || t == "-" || !t.starts_with('-') {
            line.operands.push(arg.clone());
            continue;
        }
        if t == "--" {
            options_done = true;
            continue;
        }
        match t.strip_prefix("--") {
            Some(long) => line.long_option(a, c, cwd, t, long, &mut i),
            None => line.short_options(a, c, cwd, t, &mut i),
        }
    }
    if !line.script_given && !line.operands.is_empty() {
        let script = line.operands.remove(0);
        match script.lit() {
            Some(text) => line.scripts.push(text.to_owned()),
            None => a.complex("sed runs a script known only at run time"),
        }
    }
    let effects = parse_script(&line.scripts.join("\n"));
    if !line.sandbox {
        apply(a, &effects, cwd);
    }
    for op in &line.operands {
        if op.lit() == Some("-") {
            continue;
        }
        match &line.in_place {
            Some(suffix) => {
                a.write_path(op, cwd, "sed -i");
                backups::write_backup(a, op, suffix, cwd, "sed -i");
            }
            None => a.read_path(op, cwd),
        }
    }
}

/// What sed's options say: the scripts, whether one was given by an option, in-place editing,
/// `--sandbox`, and the operands.
#[derive(Default)]
struct SedLine {
    /// The scripts of `-e`/`--expression` (or the first operand), in order.
    scripts: Vec<String>,
    /// Whether an option gave a script (`-e`, `-f`), so the first operand is an input file.
    script_given: bool,
    /// `-i[SUFFIX]`: `None` when not editing in place; `Some("")` without a backup.
    in_place: Option<String>,
    /// `--sandbox`: the script's `e`, `r` and `w` commands are refused by sed itself.
    sandbox: bool,
    /// The operands: the input files (after the script, when no option gave it).
    operands: Vec<Arg>,
}

impl SedLine {
    /// A long option `t` (`long` without the dashes; GNU's unique prefixes accepted); a value not
    /// attached is the argument at `i`, which it consumes.
    fn long_option(
        &mut self,
        a: &mut Analysis<'_>,
        c: &Call<'_>,
        cwd: &Cwd,
        t: &str,
        long: &str,
        i: &mut usize,
    ) {
        let args = c.args;
        let (name, value) = match long.split_once('=') {
            Some((key, val)) => (key, Some(val.to_owned())),
            None => (long, None),
        };
        let take = |i: &mut usize| {
            value.clone().or_else(|| {
                *i += 1;
                args.get(*i - 1).and_then(Arg::lit).map(str::to_owned)
            })
        };
        match name {
            _ if "expression".starts_with(name) && name.len() >= 2 => {
                match take(i).inspect(|_| self.script_given = true) {
                    Some(script) => self.scripts.push(script),
                    None => a.complex("sed runs a script known only at run time"),
                }
            }
            _ if "file".starts_with(name) && name.len() >= 2 => {
                self.script_given = true;
                script_file(
                    a,
                    value.map(Arg::Lit).or_else(|| {
                        *i += 1;
                        args.get(*i - 1).cloned()
                    }),
                    cwd,
                );
            }
            _ if "in-place".starts_with(name) && name.len() >= 2 => {
                self.in_place = Some(value.clone().unwrap_or_default());
            }
            _ if "sandbox".starts_with(name) && name.len() >= 2 => self.sandbox = true,
            _ if "line-length".starts_with(name) && name.len() >= 2 && value.is_none() => {
                *i += 1;
            }
            _ if LONG_FLAGS
                .iter()
                .any(|f| f.starts_with(name) && name.len() >= 2) => {}
            _ => c.unknown_option(a, t),
        }
    }

    /// A bundle of short options: -n -E -r -s -u -z -b flags; -e SCRIPT, -f FILE, -l N take a
    /// value (attached or next, at `i`); -i takes an optional attached suffix and ends the bundle.
    fn short_options(
        &mut self,
        a: &mut Analysis<'_>,
        c: &Call<'_>,
        cwd: &Cwd,
        t: &str,
        i: &mut usize,
    ) {
        let args = c.args;
        let body = &t[1..];
        for (pos, flag) in body.char_indices() {
            let rest = &body[pos + flag.len_utf8()..];
            match flag {
                'e' | 'f' | 'l' => {
                    let value = if rest.is_empty() {
                        *i += 1;
                        args.get(*i - 1).cloned()
                    } else {
                        Some(Arg::Lit(rest.to_owned()))
                    };
                    self.script_given |= flag != 'l';
                    match flag {
                        'e' => match value.as_ref().and_then(Arg::lit) {
                            Some(script) => self.scripts.push(script.to_owned()),
                            None => a.complex("sed runs a script known only at run time"),
                        },
                        'f' => script_file(a, value, cwd),
                        _ => {}
                    }
                    break;
                }
                'i' => {
                    self.in_place = Some(rest.to_owned());
                    break;
                }
                'n' | 'E' | 'r' | 's' | 'u' | 'z' | 'b' => {}
                _ => c.unknown_option(a, &format!("-{flag}")),
            }
        }
    }
}

fn script_file(a: &mut Analysis<'_>, file: Option<Arg>, cwd: &Cwd) {
    a.complex("sed -f runs a script from a file spear does not read");
    if let Some(f) = file {
        a.read_path(&f, cwd);
    }
}

fn apply(a: &mut Analysis<'_>, effects: &SedEffects, cwd: &Cwd) {
    if let Some(why) = &effects.unknown {
        a.complex(format!("the sed script {why}"));
    }
    for e in &effects.exec {
        a.complex("the sed script runs a command (`e`)");
        if let Some(cmd) = e {
            a.analyse_nested(cmd, cwd, "sed e");
        }
    }
    for w in &effects.writes {
        if !matches!(w.as_str(), "/dev/stdout" | "/dev/stderr") {
            a.write_path(&Arg::Lit(w.clone()), cwd, "sed w");
        }
    }
    for r in &effects.reads {
        if r != "/dev/stdin" {
            a.read_path(&Arg::Lit(r.clone()), cwd);
        }
    }
}

/// Parses a sed script and lists what it runs, writes and reads.
pub(crate) fn parse_script(script: &str) -> SedEffects {
    let mut p = SedParser {
        s: script.as_bytes(),
        i: 0,
        fx: SedEffects::default(),
    };
    if let Err(why) = p.run() {
        p.fx.unknown = Some(why);
    }
    p.fx
}

struct SedParser<'s> {
    s: &'s [u8],
    i: usize,
    fx: SedEffects,
}

impl SedParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek();
        self.i += usize::from(c.is_some());
        c
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn rest_of_line(&mut self) -> String {
        let start = self.i;
        while !matches!(self.peek(), None | Some(b'\n')) {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    fn run(&mut self) -> Result<(), String> {
        loop {
            while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b';')) {
                self.i += 1;
            }
            if self.peek().is_none() {
                return Ok(());
            }
            self.address()?;
            self.skip_blanks();
            if self.peek() == Some(b',') {
                self.i += 1;
                self.skip_blanks();
                if matches!(self.peek(), Some(b'+' | b'~')) {
                    self.i += 1;
                }
                self.address()?;
            }
            self.skip_blanks();
            while self.peek() == Some(b'!') {
                self.i += 1;
                self.skip_blanks();
            }
            let takes_rest_of_line = self.command()?;
            if !takes_rest_of_line {
                self.end_of_command()?;
            }
        }
    }

    /// GNU sed refuses "extra characters after command": after a command only blanks, then `;`,
    /// a newline, `}`, `#` or the end may follow.
    fn end_of_command(&mut self) -> Result<(), String> {
        self.skip_blanks();
        match self.peek() {
            None | Some(b';' | b'\n' | b'}' | b'#') => Ok(()),
            Some(c) => Err(format!(
                "has `{}` after a command, which GNU sed rejects",
                char::from(c)
            )),
        }
    }

    fn address(&mut self) -> Result<(), String> {
        match self.peek() {
            Some(b'0'..=b'9') => {
                while matches!(self.peek(), Some(b'0'..=b'9' | b'~')) {
                    self.i += 1;
                }
            }
            Some(b'$') => self.i += 1,
            Some(b'/') => {
                self.i += 1;
                self.regex(b'/')?;
                self.address_flags();
            }
            Some(b'\\') => {
                self.i += 1;
                let d = self.bump().ok_or("ends inside an address")?;
                self.regex(d)?;
                self.address_flags();
            }
            _ => {}
        }
        Ok(())
    }

    fn address_flags(&mut self) {
        while matches!(self.peek(), Some(b'I' | b'M')) {
            self.i += 1;
        }
    }

    /// Skips a regular expression to the unescaped delimiter `d` (consumed). As in GNU sed, a
    /// delimiter inside a bracket expression (`[/]`) does not end it.
    fn regex(&mut self, d: u8) -> Result<(), String> {
        loop {
            match self.bump() {
                None => return Err("has an unterminated regular expression".into()),
                Some(b'\\') => {
                    self.bump();
                }
                Some(b'[') => self.bracket()?,
                Some(c) if c == d => return Ok(()),
                Some(b'\n') if d != b'\n' => {
                    return Err("has a newline inside an expression".into());
                }
                Some(_) => {}
            }
        }
    }

    /// Skips a bracket expression after its `[`: a `]` first (or after `^`) is literal, and
    /// `[:class:]`, `[=x=]`, `[.x.]` are skipped whole.
    fn bracket(&mut self) -> Result<(), String> {
        if self.peek() == Some(b'^') {
            self.i += 1;
        }
        if self.peek() == Some(b']') {
            self.i += 1;
        }
        loop {
            match self.bump() {
                None | Some(b'\n') => return Err("has an unterminated bracket expression".into()),
                Some(b']') => return Ok(()),
                Some(b'[') if matches!(self.peek(), Some(b':' | b'=' | b'.')) => {
                    let kind = self.bump().unwrap_or(b':');
                    loop {
                        match self.bump() {
                            None | Some(b'\n') => {
                                return Err("has an unterminated character class".into());
                            }
                            Some(c) if c == kind && self.peek() == Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            Some(_) => {}
                        }
                    }
                }
                Some(_) => {}
            }
        }
    }

    /// Skips to the unescaped delimiter `d` (consumed).
    fn delimited(&mut self, d: u8) -> Result<(), String> {
        loop {
            match self.bump() {
                None => return Err("has an unterminated regular expression".into()),
                Some(b'\\') => {
                    self.bump();
                }
                Some(c) if c == d => return Ok(()),
                Some(b'\n') if d != b'\n' => {
                    return Err("has a newline inside an expression".into());
                }
                Some(_) => {}
            }
        }
    }

    /// A label (of `:`, `b`, `t`, `T`): as in GNU sed 4.9, it ends at a blank, `;`, a newline or
    /// `}`, and the next command may follow directly (`:a e` runs `e`).
    fn label(&mut self) {
        self.skip_blanks();
        while !matches!(self.peek(), None | Some(b'\n' | b';' | b' ' | b'\t' | b'}')) {
            self.i += 1;
        }
    }

    /// Parses one command; returns whether it consumed the rest of its line.
    fn command(&mut self) -> Result<bool, String> {
        let Some(c) = self.bump() else {
            return Err("ends after an address".into());
        };
        let mut rest_of_line = false;
        match c {
            // A block may be followed directly by its first command.
            b'{' => rest_of_line = true,
            b'}' | b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'n' | b'N' | b'p' | b'P'
            | b'x' | b'z' | b'F' => {}
            b'l' | b'L' | b'q' | b'Q' => {
                self.skip_blanks();
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.i += 1;
                }
            }
            b'#' => {
                self.rest_of_line();
                rest_of_line = true;
            }
            b':' | b'b' | b't' | b'T' | b'v' => {
                self.label();
                rest_of_line = true;
            }
            b'a' | b'i' | b'c' => {
                rest_of_line = true;
                loop {
                    let line = self.rest_of_line();
                    if line.ends_with('\\') && self.peek() == Some(b'\n') {
                        self.i += 1;
                        continue;
                    }
                    break;
                }
            }
            b'r' | b'R' | b'w' | b'W' => {
                self.skip_blanks();
                let file = self.rest_of_line();
                if matches!(c, b'r' | b'R') {
                    self.fx.reads.push(file);
                } else {
                    self.fx.writes.push(file);
                }
                rest_of_line = true;
            }
            b'e' => {
                self.skip_blanks();
                let cmd = self.rest_of_line();
                self.fx.exec.push((!cmd.trim().is_empty()).then_some(cmd));
                rest_of_line = true;
            }
            b's' => rest_of_line = self.substitute()?,
            b'y' => {
                let d = self.bump().ok_or("ends inside y")?;
                self.delimited(d)?;
                self.delimited(d)?;
            }
            other => {
                return Err(format!(
                    "uses the command `{}`, which spear does not know",
                    char::from(other)
                ));
            }
        }
        Ok(rest_of_line)
    }

    /// Parses `s/re/replacement/flags`; returns whether a `w` flag took the rest of the line.
    fn substitute(&mut self) -> Result<bool, String> {
        let d = self.bump().ok_or("ends inside s")?;
        if d == b'\n' || d == b'\\' {
            return Err("uses an unusual delimiter".into());
        }
        self.regex(d)?;
        self.delimited(d)?;
        loop {
            match self.peek() {
                Some(b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9') => self.i += 1,
                Some(b'e') => {
                    self.i += 1;
                    self.fx.exec.push(None);
                }
                Some(b'w') => {
                    self.i += 1;
                    self.skip_blanks();
                    let file = self.rest_of_line();
                    self.fx.writes.push(file);
                    return Ok(true);
                }
                _ => return Ok(false),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multibyte_short_option() {
        // Found by fuzz/classify_script: `sed -é` sliced the bundle inside the `é` and panicked.
        use spear_core::CommandClass;
        use spear_workspace::{Workspace, WorkspaceConfig};

        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(&WorkspaceConfig::new(dir.path())).unwrap();
        let policy =
            crate::CommandPolicy::new(std::sync::Arc::new(ws), crate::PolicyConfig::new(None));
        let class = |script: &str| policy.classify_script(script, dir.path()).class;
        // An option sed does not have is one spear does not know: not harmless (issue 14).
        assert_eq!(class("sed -é s/a/b/ f"), CommandClass::ShellComplex);
        assert_eq!(class("sed -né s/a/b/ f"), CommandClass::ShellComplex);
        // The value of `-e` after a multibyte flag is still the script.
        assert_eq!(
            class("sed -ée '1e touch x' f"),
            class("sed -e '1e touch x' f")
        );
        assert_eq!(class("sed -é1 s/a/b/ f"), CommandClass::ShellComplex);
        assert_eq!(class("sed -n s/a/b/ f"), CommandClass::ReadOnly);
    }

    #[test]
    fn effects_table() {
        let exec = |s: &str| parse_script(s).exec;
        assert_eq!(exec("s/a/b/"), Vec::<Option<String>>::new());
        assert_eq!(exec("s/.*/touch x/e"), vec![None]);
        assert_eq!(exec("s|a|b|ge"), vec![None]);
        assert_eq!(exec("1e touch x"), vec![Some("touch x".to_owned())]);
        assert_eq!(exec("/x/e"), vec![None]);
        assert_eq!(
            exec("s/[/]/e/"),
            vec![],
            "GNU sed: a delimiter inside brackets is literal"
        );
        assert_eq!(exec("s/[/]/x/e"), vec![None]);
        assert_eq!(exec("s/[]/]/x/e"), vec![None]);
        assert_eq!(exec("s/[[:alpha:]/]/x/e"), vec![None]);
        assert_eq!(exec("s/a\\/b/c/;e id"), vec![Some("id".to_owned())]);
        assert_eq!(parse_script("w /tmp/out").writes, vec!["/tmp/out"]);
        assert_eq!(parse_script("s/a/b/w out.txt").writes, vec!["out.txt"]);
        assert_eq!(parse_script("$r /etc/passwd").reads, vec!["/etc/passwd"]);
        assert_eq!(parse_script("1!G;h;$!d").exec, vec![]);
        assert_eq!(parse_script("/start/,/end/{s/x/y/g;p}").unknown, None);
        assert_eq!(parse_script("a\\\nhello\\\nworld").unknown, None);
        assert_eq!(parse_script("y/abc/xyz/").unknown, None);
        assert!(parse_script("K").unknown.is_some());
        assert!(parse_script("s/a/b").unknown.is_some());
        assert_eq!(parse_script(":a;N;$!ba;s/\\n/ /g").unknown, None);
        assert_eq!(
            parse_script(":lbl;e").exec,
            vec![None],
            "GNU sed ends a label at `;`"
        );
        assert_eq!(parse_script(":lbl e").exec, vec![None], "and at a blank");
        assert_eq!(parse_script("b end e").exec, vec![None]);
        assert_eq!(
            parse_script(":x #c;e").exec,
            vec![],
            "a comment after a label"
        );
        assert_eq!(parse_script("0~3d").unknown, None);
        assert!(
            parse_script("s/.*/touch /tmp/x/e").unknown.is_some(),
            "GNU sed: unknown option to s"
        );
        assert!(parse_script("px").unknown.is_some());
        assert_eq!(parse_script("p ; p").unknown, None);
        assert_eq!(parse_script("/x/{p}").unknown, None);
        assert_eq!(parse_script("\\%x%d").unknown, None);
    }

    /// GNU sed as the oracle: in `--sandbox` mode it refuses, before running or opening anything,
    /// every script with an `e`, `r` or `w` in it. Whenever it does, the parser must have found the
    /// effect (or given up on the script). The oracle never runs a command or touches a file.
    mod oracle {
        use super::super::parse_script;
        use proptest::prelude::*;

        const ADDRESSES: &[&str] = &[
            "", "1", "$", "/re/", "\\%re%", "1,5", "/a/,/b/", "0~2", "2!", "/x/I", "/[/]/",
        ];
        const COMMANDS: &[&str] = &[
            "p",
            "d",
            "s/a/b/",
            "s/a/b/g",
            "s/a/b/e",
            "s|a|b|",
            "s/[/]/x/",
            "s/[/]/x/e",
            "s/a\\/b/c/",
            "y/ab/ba/",
            "e",
            "e echo",
            "w out",
            "r in",
            "s/a/b/w out",
            "=",
            "q",
            "q5",
            "l",
            "{p}",
            "{s/a/b/e}",
            "a text",
            ":lbl",
            "b lbl",
            "t",
            "N",
            "G",
            "h",
            "x",
            "z",
            "F",
            "s/x/[/",
            "s/\\//x/e",
            "s,/,x,e",
            "#c",
            "s/[]/]/x/e",
            "s/[[:alpha:]/]/x/",
            "W out",
            "R in",
            "v",
        ];
        const NOISE: &[char] = &[
            '/', '[', ']', '\\', 'e', ';', 'w', '{', '}', ' ', '\n', 's', 'r',
        ];

        fn sandbox_verdict(script: &str) -> Option<bool> {
            let out = std::process::Command::new("sed")
                .args(["--sandbox", "-n", "-e", script])
                .stdin(std::process::Stdio::null())
                .output()
                .expect("GNU sed is installed");
            if out.status.success() {
                return Some(false);
            }
            let err = String::from_utf8_lossy(&out.stderr);
            // Anything but the sandbox refusal is a syntax error: sed would not run it at all.
            err.contains("disabled in sandbox mode").then_some(true)
        }

        fn script() -> impl Strategy<Value = String> {
            let part = (0..ADDRESSES.len(), 0..COMMANDS.len())
                .prop_map(|(a, c)| format!("{}{}", ADDRESSES[a], COMMANDS[c]));
            let parts = prop::collection::vec(part, 1..4);
            let seps = prop::collection::vec(prop::sample::select(vec![";", "\n", " ; "]), 3);
            let noise = prop::collection::vec(
                (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
                0..3,
            );
            (parts, seps, noise).prop_map(|(parts, seps, noise)| {
                let mut s = String::new();
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        s.push_str(seps[i % seps.len()]);
                    }
                    s.push_str(p);
                }
                for (at, ch) in noise {
                    let mut chars: Vec<char> = s.chars().collect();
                    let pos = at.index(chars.len() + 1);
                    chars.insert(pos, NOISE[ch.index(NOISE.len())]);
                    s = chars.into_iter().collect();
                }
                s
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(400))]

            #[test]
            fn every_effect_gnu_sed_sees_is_seen(script in script()) {
                if let Some(true) = sandbox_verdict(&script) {
                    let fx = parse_script(&script);
                    let seen = !fx.exec.is_empty() || !fx.writes.is_empty() || !fx.reads.is_empty() || fx.unknown.is_some();
                    prop_assert!(seen, "GNU sed finds e/r/w in {:?}; the parser found {:?}", script, fx);
                }
            }
        }

        #[test]
        fn the_oracle_tells_effects_apart() {
            assert_eq!(sandbox_verdict("s/a/b/e"), Some(true));
            assert_eq!(sandbox_verdict("s/[/]/e/"), Some(false));
            assert_eq!(sandbox_verdict("s/.*/touch /tmp/x/e"), None);
        }
    }
}
