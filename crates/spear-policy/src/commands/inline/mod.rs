//! What an inline program (`python -c`, `python - <<EOF`, `node -e`, `ruby -e`, `perl -e`,
//! `php -r`) does with files, read from the calls it makes: the files it opens for reading, the
//! modules it requires by path, and the files it writes, each where the language takes a path
//! (the arguments of its file functions), never every string that looks like one (a URL path in a
//! dictionary, `path = '/admin/auth/foo'`, is no file).
//!
//! This is not what keeps a program in bounds: the mount is. An inline program is `SHELL_COMPLEX`
//! whatever it calls; SAFE runs it with the workspace read-only, where any write, seen here or
//! not, meets `EROFS`; ASK asks; AUTO stages its writes and judges them before the host sees one.
//! What this finds decides only what can be said before it runs: a write whose target is seen to
//! be in the workspace needs `workspace:write` (SAFE refuses it up front, naming the flag), one
//! seen outside every writable place is refused, and a read outside the roots is vetted as any
//! other read.

mod api;
mod lex;

use api::{Call, Role};
use lex::Tok;

/// The languages whose file calls are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    Node,
    Ruby,
    Perl,
    Php,
}

impl Lang {
    /// The language of an interpreter family (see `interpreters::family`); `None` for those whose
    /// file calls are not known (their programs name no path spear reads).
    pub(crate) fn of_family(family: &str) -> Option<Lang> {
        Some(match family {
            "python" => Lang::Python,
            "node" => Lang::Node,
            "ruby" => Lang::Ruby,
            "perl" => Lang::Perl,
            "php" => Lang::Php,
            _ => return None,
        })
    }
}

/// One thing a program does with a named file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Reads the file (or lists the directory, or loads the module) at this path.
    Read(String),
    /// Creates, changes or removes what is at this path.
    Write(String),
}

/// The file effects of `code`, in order, each with its path as written. A call whose path is not
/// a string literal (a variable, an interpolating string, a joined path) names no effect: what it
/// does is known only when it runs, under the mount.
pub(crate) fn file_effects(lang: Lang, code: &str) -> Vec<Effect> {
    let toks = lex::tokens(lang, code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if lang == Lang::Node
            && toks[i] == Tok::Ident("from".to_owned())
            && let Some(Tok::Str(Some(module))) = toks.get(i + 1)
            && module.starts_with(['.', '/'])
        {
            // `import x from './y.json'`
            out.push(Effect::Read(module.clone()));
        } else if let Tok::Ident(name) = &toks[i]
            && let Some(call) = api::lookup(lang, receiver(&toks, i).as_deref(), name)
        {
            let (args, next) = arguments(lang, &toks, i + 1, call.parens_optional);
            apply(lang, &call, &args, &toks, next, &mut out);
        }
        i += 1;
    }
    out.retain(|e| {
        let (Effect::Read(p) | Effect::Write(p)) = e;
        !p.is_empty() && !p.contains(['\0', '\n'])
    });
    out
}

/// The dotted name before the name at `i` (`os.path` before `exists`, `File` before `read`,
/// `fs.promises` before `readFile`), or `None` when it is called bare. A call on a value
/// (`x().read_text()`, `'a'.replace(...)`) has the receiver `"()"`/`"''"`, which no table names.
fn receiver(toks: &[Tok], i: usize) -> Option<String> {
    let mut parts = Vec::new();
    let mut k = i;
    loop {
        let sep = match (
            k.checked_sub(1).map(|j| &toks[j]),
            k.checked_sub(2).map(|j| &toks[j]),
        ) {
            (Some(Tok::Punct('.')), _) => 1,
            (Some(Tok::Punct(':')), Some(Tok::Punct(':')))
            | (Some(Tok::Punct('>')), Some(Tok::Punct('-'))) => 2,
            _ => break,
        };
        let Some(before) = k.checked_sub(sep + 1) else {
            break;
        };
        match &toks[before] {
            Tok::Ident(name) => {
                parts.push(name.clone());
                k = before;
            }
            Tok::Punct(')' | ']') => {
                parts.push("()".to_owned());
                break;
            }
            Tok::Str(_) => {
                parts.push("''".to_owned());
                break;
            }
            _ => break,
        }
    }
    if parts.is_empty() {
        return None;
    }
    parts.reverse();
    Some(parts.join("."))
}

/// One argument of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Arg<'t> {
    /// `name=` of a Python keyword argument.
    keyword: Option<&'t str>,
    /// Its tokens.
    toks: &'t [Tok],
}

impl Arg<'_> {
    /// The argument's value when it is one string literal.
    fn literal(&self) -> Option<&str> {
        match self.toks {
            [Tok::Str(Some(s))] => Some(s),
            _ => None,
        }
    }
}

/// The arguments of the call whose name ends before `start`, and the index after them: inside
/// `(...)`, or, where the language allows a call without parentheses (`unlink "x"`,
/// `File.write "x", s`), up to the end of the statement.
fn arguments(
    lang: Lang,
    toks: &[Tok],
    start: usize,
    parens_optional: bool,
) -> (Vec<Arg<'_>>, usize) {
    let parens = matches!(toks.get(start), Some(Tok::Punct('(')));
    let bare = parens_optional && matches!(lang, Lang::Perl | Lang::Ruby);
    if !(parens || bare) {
        return (Vec::new(), start);
    }
    let first = if parens { start + 1 } else { start };
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut from = first;
    let mut k = first;
    let end = loop {
        let Some(t) = toks.get(k) else {
            break k;
        };
        match t {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') if depth > 0 => depth -= 1,
            Tok::Punct(')' | ']' | '}' | ';') if depth == 0 => break k,
            Tok::Newline if depth == 0 && !parens => break k,
            Tok::Ident(w) if depth == 0 && !parens && ends_statement(w) => break k,
            Tok::Punct(',') if depth == 0 => {
                args.push(&toks[from..k]);
                from = k + 1;
            }
            _ => {}
        }
        k += 1;
    };
    if from < end {
        args.push(&toks[from..end]);
    }
    let args = args
        .into_iter()
        .map(|toks| match toks {
            [Tok::Ident(name), Tok::Punct('='), rest @ ..]
                if lang == Lang::Python && !matches!(rest.first(), Some(Tok::Punct('='))) =>
            {
                Arg {
                    keyword: Some(name.as_str()),
                    toks: rest,
                }
            }
            // Perl's `=>` and Ruby's `key:` hash arguments are options, never paths.
            _ => Arg {
                keyword: None,
                toks,
            },
        })
        .collect();
    (args, end + usize::from(parens))
}

/// Words that end a Perl or Ruby statement written without parentheses.
fn ends_statement(word: &str) -> bool {
    matches!(
        word,
        "or" | "and" | "if" | "unless" | "while" | "until" | "do" | "then" | "end"
    )
}

/// Records what `call`, with `args`, does; `next` is the token after the call (a Python `Path`'s
/// method follows there).
fn apply(
    lang: Lang,
    call: &Call,
    args: &[Arg<'_>],
    toks: &[Tok],
    next: usize,
    out: &mut Vec<Effect>,
) {
    let positional: Vec<&Arg<'_>> = args.iter().filter(|a| a.keyword.is_none()).collect();
    let path = |k: usize| {
        positional
            .get(k)
            .and_then(|a| a.literal())
            .map(str::to_owned)
    };
    match call.role {
        Role::Read(k) => out.extend(path(k).map(Effect::Read)),
        Role::Write(k) => out.extend(path(k).map(Effect::Write)),
        Role::WriteFrom(k) => {
            out.extend((k..positional.len()).filter_map(path).map(Effect::Write));
        }
        Role::Copy => {
            if positional.len() >= 2 {
                out.extend(path(0).map(Effect::Read));
                out.extend(path(positional.len() - 1).map(Effect::Write));
            }
        }
        Role::Module => {
            if let Some(p) = path(0).filter(|p| p.starts_with(['.', '/'])) {
                out.push(Effect::Read(p));
            }
        }
        Role::Open { path: at, mode } => {
            let keyword_path = args
                .iter()
                .find(|a| a.keyword == Some("file"))
                .and_then(|a| a.literal())
                .map(str::to_owned);
            let Some(p) = path(at).or(keyword_path) else {
                return;
            };
            let mode_arg = args
                .iter()
                .find(|a| a.keyword == Some("mode") || a.keyword == Some("flags"))
                .or_else(|| positional.get(mode).copied());
            out.push(match mode_arg.map(Arg::literal) {
                None => Effect::Read(p),
                Some(Some(m)) if !opens_for_writing(m) => Effect::Read(p),
                Some(_) => Effect::Write(p),
            });
        }
        Role::PerlOpen => perl_open(&positional, out),
        Role::PathObject => {
            if let Some(p) = path(0) {
                path_method(lang, &p, toks, next, out);
            }
        }
    }
}

/// Whether an `open` mode (`'w'`, `'a+'`, `"r+b"`, Node's `'wx'`, Perl's `'>'`) writes.
fn opens_for_writing(mode: &str) -> bool {
    mode.contains(['w', 'a', 'x', '+', '>'])
}

/// Perl's `open(FH, MODE, PATH)` and `open(FH, "MODE PATH")`: `<` or no mode reads; `>`, `>>`,
/// `+<` write; a pipe (`|`, `-|`) runs a command, whose effect is known only when it runs.
fn perl_open(args: &[&Arg<'_>], out: &mut Vec<Effect>) {
    match args {
        [_, mode, path, ..] => {
            let (Some(m), Some(p)) = (mode.literal(), path.literal()) else {
                return;
            };
            if m.contains('|') {
                return;
            }
            let effect = if m.contains(['>', '+']) {
                Effect::Write(p.to_owned())
            } else {
                Effect::Read(p.to_owned())
            };
            out.push(effect);
        }
        [_, spec] => {
            let Some(s) = spec.literal() else { return };
            let s = s.trim();
            if s.starts_with('|') || s.ends_with('|') {
                return;
            }
            let path = s.trim_start_matches(['<', '>', '+', '&', ' ']).trim();
            out.push(if s.starts_with(['>', '+']) {
                Effect::Write(path.to_owned())
            } else {
                Effect::Read(path.to_owned())
            });
        }
        _ => {}
    }
}

/// The method called on a Python `Path('p')` right after it (`.read_text()`, `.write_text(s)`,
/// `.open('w')`). Anything else (`/ 'x'`, a name bound for later) says nothing about `p`.
fn path_method(lang: Lang, path: &str, toks: &[Tok], next: usize, out: &mut Vec<Effect>) {
    let (Some(Tok::Punct('.')), Some(Tok::Ident(method))) = (toks.get(next), toks.get(next + 1))
    else {
        return;
    };
    match api::path_method(method) {
        Some(api::PathUse::Reads) => out.push(Effect::Read(path.to_owned())),
        Some(api::PathUse::Writes) => out.push(Effect::Write(path.to_owned())),
        Some(api::PathUse::Opens) => {
            let (args, _) = arguments(lang, toks, next + 2, false);
            let mode = args
                .iter()
                .find(|a| a.keyword == Some("mode"))
                .or_else(|| args.iter().find(|a| a.keyword.is_none()));
            out.push(match mode.map(Arg::literal) {
                None => Effect::Read(path.to_owned()),
                Some(Some(m)) if !opens_for_writing(m) => Effect::Read(path.to_owned()),
                Some(_) => Effect::Write(path.to_owned()),
            });
        }
        Some(api::PathUse::Renames) => {
            out.push(Effect::Write(path.to_owned()));
            let (args, _) = arguments(lang, toks, next + 2, false);
            if let Some(target) = args.first().and_then(Arg::literal) {
                out.push(Effect::Write(target.to_owned()));
            }
        }
        None => {}
    }
}

#[cfg(test)]
mod tests;
