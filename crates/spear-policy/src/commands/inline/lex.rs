//! Tokens of an inline program, as much of each language's syntax as finding its file calls needs:
//! names, string literals (with whether their value is known), punctuation and line ends, with
//! comments dropped. Never fails: text it does not understand becomes punctuation.

use super::Lang;

/// Most tokens read from one program; what follows is not looked at (a program that large is
/// judged by what its first part shows, and the mount confines the rest).
const MAX_TOKENS: usize = 200_000;

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A name: an identifier, with a sigil for Perl, PHP and JavaScript variables (`$fh`) and
    /// Ruby's `?`/`!` suffix (`exist?`).
    Ident(String),
    /// A string literal: `Some(value)` when its value is known as written, `None` when it
    /// interpolates (`f"{x}"`, `` `${x}` ``, `"#{x}"`, Perl's `"$dir/x"`).
    Str(Option<String>),
    /// Any other character outside strings and comments (numbers are runs of these).
    Punct(char),
    /// The end of a line (ends a call without parentheses in Perl and Ruby).
    Newline,
}

/// The tokens of `code` in language `lang`.
pub(crate) fn tokens(lang: Lang, code: &str) -> Vec<Tok> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() && out.len() < MAX_TOKENS {
        let c = chars[i];
        if c == '\n' {
            out.push(Tok::Newline);
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if let Some(end) = comment_end(lang, &chars, i) {
            i = end;
        } else if let Some((tok, end)) = string(lang, &chars, i) {
            out.push(tok);
            i = end;
        } else if is_name_start(lang, c) {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            if lang == Lang::Ruby && i < chars.len() && matches!(chars[i], '?' | '!') {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

/// Where a name starts: a letter or `_`, or a variable's sigil before one.
fn is_name_start(lang: Lang, c: char) -> bool {
    c.is_alphabetic()
        || c == '_'
        || (c == '$' && matches!(lang, Lang::Perl | Lang::Php | Lang::Node))
}

/// The index after the comment starting at `i`, if one does.
fn comment_end(lang: Lang, chars: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| chars.get(k).copied();
    let line_end = |from: usize| {
        chars[from..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(chars.len(), |p| from + p)
    };
    let hash = matches!(lang, Lang::Python | Lang::Ruby | Lang::Perl | Lang::Php);
    let slashes = matches!(lang, Lang::Node | Lang::Php);
    match (at(i), at(i + 1)) {
        // Perl's `$#array` is no comment.
        (Some('#'), _) if hash && !(lang == Lang::Perl && i > 0 && chars[i - 1] == '$') => {
            Some(line_end(i))
        }
        (Some('/'), Some('/')) if slashes => Some(line_end(i)),
        (Some('/'), Some('*')) if slashes => {
            let mut k = i + 2;
            while k + 1 < chars.len() && !(chars[k] == '*' && chars[k + 1] == '/') {
                k += 1;
            }
            Some((k + 2).min(chars.len()))
        }
        _ => None,
    }
}

/// The string literal starting at `i`, with the index after it: `None` when none starts there
/// (or it is never closed).
fn string(lang: Lang, chars: &[char], i: usize) -> Option<(Tok, usize)> {
    let (prefix, quote_at) = match lang {
        Lang::Python => python_prefix(chars, i)?,
        _ => (String::new(), i),
    };
    let quote = *chars.get(quote_at)?;
    let quotes: &[char] = match lang {
        Lang::Node => &['\'', '"', '`'],
        _ => &['\'', '"'],
    };
    if !quotes.contains(&quote) {
        return None;
    }
    let triple = lang == Lang::Python
        && chars.get(quote_at + 1) == Some(&quote)
        && chars.get(quote_at + 2) == Some(&quote);
    let raw = prefix.contains(['r', 'R']);
    let mut k = quote_at + if triple { 3 } else { 1 };
    let mut value = String::new();
    let mut escaped_any = false;
    loop {
        let c = *chars.get(k)?;
        if c == '\\' {
            let next = *chars.get(k + 1)?;
            if raw {
                value.push(c);
            }
            value.push(next);
            escaped_any = true;
            k += 2;
            continue;
        }
        if c == quote
            && (!triple || (chars.get(k + 1) == Some(&quote) && chars.get(k + 2) == Some(&quote)))
        {
            k += if triple { 3 } else { 1 };
            break;
        }
        if c == '\n' && !triple && quote != '`' && lang != Lang::Perl && lang != Lang::Ruby {
            // An unclosed one-line string: not a literal after all.
            return None;
        }
        value.push(c);
        k += 1;
    }
    let interpolates = match (lang, quote) {
        (Lang::Python, _) => prefix.contains(['f', 'F']) && value.contains('{'),
        (Lang::Node, '`') => value.contains("${"),
        (Lang::Ruby, '"') => value.contains("#{"),
        (Lang::Perl | Lang::Php, '"') => value.contains(['$', '@']) || escaped_any,
        _ => false,
    };
    Some((Tok::Str((!interpolates).then_some(value)), k))
}

/// A Python string prefix (`r`, `b`, `f`, `rb`, ... in either case) at `i` followed by a quote:
/// the prefix and where the quote is. Without a prefix, the quote is at `i`.
fn python_prefix(chars: &[char], i: usize) -> Option<(String, usize)> {
    let mut k = i;
    while k < chars.len()
        && k - i < 2
        && matches!(chars[k], 'r' | 'R' | 'b' | 'B' | 'u' | 'U' | 'f' | 'F')
    {
        k += 1;
    }
    // A prefix is one only right before a quote and not inside a longer name (`href'` is no
    // string prefix in valid Python either way).
    if k > i && !matches!(chars.get(k), Some('\'' | '"')) {
        return None;
    }
    if k > i && i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    Some((chars[i..k].iter().collect(), k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(lang: Lang, code: &str) -> Vec<Option<String>> {
        tokens(lang, code)
            .into_iter()
            .filter_map(|t| match t {
                Tok::Str(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn strings_by_language() {
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            strs(Lang::Python, r#"open('a.txt', "w") # 'not.txt'"#),
            vec![s("a.txt"), s("w")]
        );
        assert_eq!(strs(Lang::Python, r"open(r'a\b')"), vec![s(r"a\b")]);
        assert_eq!(strs(Lang::Python, "open(f'{d}/x')"), vec![None]);
        assert_eq!(strs(Lang::Python, "open(f'x.txt')"), vec![s("x.txt")]);
        assert_eq!(
            strs(Lang::Python, "'''a\n'b'\n''' + \"c\""),
            vec![s("a\n'b'\n"), s("c")]
        );
        assert_eq!(
            strs(Lang::Node, "x(`${d}/a`, `b`) // 'c'"),
            vec![None, s("b")]
        );
        assert_eq!(strs(Lang::Node, "/* 'a' */ 'b'"), vec![s("b")]);
        assert_eq!(strs(Lang::Ruby, "File.read(\"#{d}/a\") # 'x'"), vec![None]);
        assert_eq!(
            strs(Lang::Perl, r#"open(F, ">$d/x"); 'y'"#),
            vec![None, s("y")]
        );
        assert_eq!(strs(Lang::Perl, "$#a; 'k'"), vec![s("k")]);
        assert_eq!(strs(Lang::Php, "# 'no'\n'yes'"), vec![s("yes")]);
        // An unclosed string is not one.
        assert_eq!(
            strs(Lang::Python, "print('a)\nx"),
            Vec::<Option<String>>::new()
        );
    }

    #[test]
    fn names_and_punctuation() {
        assert_eq!(
            tokens(Lang::Ruby, "File.exist?(x)"),
            vec![
                Tok::Ident("File".into()),
                Tok::Punct('.'),
                Tok::Ident("exist?".into()),
                Tok::Punct('('),
                Tok::Ident("x".into()),
                Tok::Punct(')'),
            ]
        );
        assert_eq!(
            tokens(Lang::Perl, "$fh\n")[..2],
            [Tok::Ident("$fh".into()), Tok::Newline]
        );
    }
}
