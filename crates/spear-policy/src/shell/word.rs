//! Words as bash would see them before running: quotes removed, `$'...'` decoded, `~` and braces
//! expanded, and every command substitution inside them analysed (it runs, whatever the word is
//! used for).

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ParserOptions;
use brush_parser::word::{
    self, BraceExpressionMember, BraceExpressionOrText, Parameter, ParameterExpr,
    ParameterTransformOp, TildeExpr, WordPiece, WordPieceWithSource,
};

use crate::analysis::{Analysis, Cwd};
use crate::shell::{ansi_c, arith};

/// Most words one brace expression may produce before the word is treated as unknown.
const MAX_BRACE_WORDS: usize = 256;

/// Most unquoted `{` one word may hold for brace expansion to be attempted; beyond it the word is
/// unknown. brush-parser's brace grammar backtracks exponentially on unmatched braces (about three
/// times the work per `{`: `echo {a,{a,{a,...` with 16 of them takes seconds, 30 would take days).
/// Quoted braces cost nothing (a quoted string is one piece), so `bash -c '...'` keeps its script.
const MAX_BRACE_OPENS: usize = 8;

/// A word after everything that can be known before the script runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    /// Fully known: quotes removed, escapes decoded, `~` expanded.
    Lit(String),
    /// Known text with unquoted glob characters: it expands to the names matching the pattern.
    Glob(String),
    /// Depends on something known only at run time. `prefix` is the known text before the first
    /// expansion.
    Dyn {
        /// The word as written.
        raw: String,
        /// The known text before the first run-time expansion.
        prefix: String,
    },
}

impl Arg {
    /// A word known only at run time, with no known prefix.
    pub(crate) fn unknown(raw: impl Into<String>) -> Arg {
        Arg::Dyn {
            raw: raw.into(),
            prefix: String::new(),
        }
    }

    /// The literal value, when fully known.
    pub(crate) fn lit(&self) -> Option<&str> {
        match self {
            Arg::Lit(s) => Some(s),
            Arg::Glob(_) | Arg::Dyn { .. } => None,
        }
    }

    /// The word for messages: the literal, the pattern, or the text as written.
    pub(crate) fn display(&self) -> &str {
        match self {
            Arg::Lit(s) | Arg::Glob(s) => s,
            Arg::Dyn { raw, .. } => raw,
        }
    }

    /// Whether, at run time, this word could turn into an option (`-x`, `--pre=...`): a run-time
    /// value, or a glob that could match a file whose name starts with `-`.
    ///
    /// Attack stopped: a file named `--pre=./evil.sh` in the workspace turns `rg foo *` into
    /// `rg foo --pre=./evil.sh ...`.
    pub(crate) fn could_be_option(&self) -> bool {
        match self {
            Arg::Lit(_) => false,
            Arg::Glob(p) => !p.starts_with(|c: char| c != '*' && c != '?' && c != '[' && c != '-'),
            Arg::Dyn { prefix, .. } => prefix.is_empty() || prefix.starts_with('-'),
        }
    }
}

pub(crate) fn parser_options() -> ParserOptions {
    ParserOptions::default()
}

/// Runs one of brush-parser's word parsers; a panic inside it becomes an error.
///
/// Attack: brush-parser 0.4 unwraps integer parses in its word grammar, so a word such as
/// `{9223372036854775808` (brace sequence) or `~99999999999999999999` (directory stack) panics
/// it; uncaught, any script would take the harness down.
fn guarded<T, E: std::fmt::Display>(parse: impl FnOnce() -> Result<T, E>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(parse)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the word parser failed".into()),
    }
}

/// [`word::parse`], with a panic as an error.
fn parse_word(raw: &str) -> Result<Vec<WordPieceWithSource>, String> {
    guarded(|| word::parse(raw, &parser_options()))
}

/// What one pass over word pieces produced.
#[derive(Default)]
struct Built {
    text: String,
    dynamic: bool,
    glob: bool,
    prefix_done: bool,
    prefix: String,
}

impl Built {
    fn push_known(&mut self, s: &str) {
        self.text.push_str(s);
        if !self.prefix_done {
            self.prefix.push_str(s);
        }
    }

    fn mark_dynamic(&mut self) {
        self.dynamic = true;
        self.prefix_done = true;
    }
}

impl Analysis<'_> {
    /// Evaluates a word as a command argument: brace expansion first (as bash does), then each
    /// alternative. Command substitutions inside are analysed in a subshell of `cwd`.
    pub(crate) fn eval_word(&mut self, raw: &str, cwd: &Cwd) -> Vec<Arg> {
        let Some(alternatives) = Self::brace_expand(raw) else {
            self.analyse_pieces_only(raw, cwd);
            return vec![Arg::unknown(raw.to_owned())];
        };
        alternatives
            .iter()
            .map(|alt| self.eval_alternative(alt, cwd, true))
            .collect()
    }

    /// Evaluates a word where no brace expansion or globbing happens (assignment values, here
    /// strings, redirection targets after the first expansion).
    pub(crate) fn eval_word_single(&mut self, raw: &str, cwd: &Cwd) -> Arg {
        self.eval_alternative(raw, cwd, false)
    }

    /// Evaluates a here-document body that undergoes expansion; returns its text if fully known.
    pub(crate) fn eval_heredoc(&mut self, body: &str, cwd: &Cwd) -> Option<String> {
        match guarded(|| word::parse_heredoc(body, &parser_options())) {
            Ok(pieces) => {
                let mut built = Built::default();
                self.walk_pieces(&pieces, cwd, &mut built, true);
                (!built.dynamic).then_some(built.text)
            }
            Err(e) => {
                self.complex(format!("a here-document cannot be parsed: {e}"));
                None
            }
        }
    }

    fn eval_alternative(&mut self, raw: &str, cwd: &Cwd, globbing: bool) -> Arg {
        let pieces = match parse_word(raw) {
            Ok(p) => p,
            Err(e) => {
                self.complex(format!("the word {raw:?} cannot be parsed: {e}"));
                return Arg::unknown(raw.to_owned());
            }
        };
        let mut built = Built::default();
        self.walk_pieces(&pieces, cwd, &mut built, false);
        if built.dynamic {
            Arg::Dyn {
                raw: raw.to_owned(),
                prefix: built.prefix,
            }
        } else if built.glob && globbing {
            Arg::Glob(built.text)
        } else {
            Arg::Lit(built.text)
        }
    }

    /// Used when brace expansion gave up: the word is unknown, but what it runs still counts.
    fn analyse_pieces_only(&mut self, raw: &str, cwd: &Cwd) {
        match parse_word(raw) {
            Ok(pieces) => {
                let mut built = Built::default();
                self.walk_pieces(&pieces, cwd, &mut built, false);
            }
            Err(e) => self.complex(format!("the word {raw:?} cannot be parsed: {e}")),
        }
    }

    fn walk_pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        cwd: &Cwd,
        built: &mut Built,
        quoted: bool,
    ) {
        for p in pieces {
            match &p.piece {
                WordPiece::Text(s) => {
                    if !quoted && has_glob_chars(s) {
                        built.glob = true;
                    }
                    built.push_known(s);
                }
                WordPiece::SingleQuotedText(s) => built.push_known(s),
                WordPiece::AnsiCQuotedText(s) => built.push_known(&ansi_c::decode(s)),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.walk_pieces(inner, cwd, built, true);
                }
                WordPiece::EscapeSequence(s) => built.push_known(&unescape(s, quoted)),
                WordPiece::TildeExpansion(t) => match (t, &self.policy.config().home) {
                    (TildeExpr::Home, Some(home)) if self.home_intact => {
                        built.push_known(&home.to_string_lossy());
                    }
                    (TildeExpr::UserHome(user), _) => match self.policy.user_home(user) {
                        Some(home) => built.push_known(&home.to_string_lossy()),
                        None => built.mark_dynamic(),
                    },
                    (TildeExpr::WorkingDir, _) if matches!(cwd, Cwd::Known(_)) => {
                        if let Cwd::Known(dir) = cwd {
                            built.push_known(&dir.to_string_lossy());
                        }
                    }
                    _ => built.mark_dynamic(),
                },
                WordPiece::ParameterExpansion(expr) => {
                    if let Some(value) = self.known_parameter(expr, cwd) {
                        built.push_known(&value);
                    } else {
                        self.check_parameter(expr, cwd);
                        built.mark_dynamic();
                    }
                }
                WordPiece::CommandSubstitution(script) => {
                    self.analyse_nested(script, cwd, "$(...)");
                    // `$(mktemp -d)` prints the path of the entry it made in the private /tmp.
                    match crate::commands::writers::mktemp_output(script)
                        .filter(|p| self.tmpdir_intact && self.is_scratch_path(p))
                    {
                        Some(path) => built.push_known(&path),
                        None => built.mark_dynamic(),
                    }
                }
                WordPiece::BackquotedCommandSubstitution(script) => {
                    self.analyse_nested(&unescape_backquoted(script), cwd, "`...`");
                    built.mark_dynamic();
                }
                WordPiece::ArithmeticExpression(expr) => {
                    self.check_arithmetic(&expr.value, cwd);
                    built.mark_dynamic();
                }
            }
        }
    }

    /// `$HOME`, `$TMPDIR` and `$PWD` are known while the script has not changed them.
    fn known_parameter(&self, expr: &ParameterExpr, cwd: &Cwd) -> Option<String> {
        let ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } = expr
        else {
            return None;
        };
        match (name.as_str(), cwd) {
            ("HOME", _) if self.home_intact => self
                .policy
                .config()
                .home
                .as_ref()
                .map(|h| h.to_string_lossy().into_owned()),
            // Every sandbox starts with TMPDIR=/tmp, its private /tmp (spear-sandbox's env).
            ("TMPDIR", _) if self.tmpdir_intact => Some(spear_core::SANDBOX_TMPDIR.to_owned()),
            ("PWD", Cwd::Known(dir)) => Some(dir.to_string_lossy().into_owned()),
            (other, _) => self.scratch_vars.get(other).cloned(),
        }
    }

    /// Analyses what a parameter expansion can run: nested words (defaults, alternatives,
    /// patterns) may hold command substitutions; subscripts and substring offsets are arithmetic;
    /// indirection and prompt expansion evaluate text known only at run time.
    fn check_parameter(&mut self, expr: &ParameterExpr, cwd: &Cwd) {
        use ParameterExpr as P;
        let (parameter, indirect, words) = parameter_parts(expr);
        // A substring's offset and length are arithmetic.
        if let P::Substring { offset, length, .. } = expr {
            self.check_arithmetic(&offset.value, cwd);
            if let Some(len) = length {
                self.check_arithmetic(&len.value, cwd);
            }
        }
        if indirect {
            self.complex(
                "an indirect expansion (${!name}) evaluates a name known only at run time",
            );
        }
        if let P::Transform {
            op: ParameterTransformOp::PromptExpand,
            ..
        } = expr
        {
            self.complex("prompt expansion (${x@P}) can run command substitutions");
        }
        if let Some(Parameter::NamedWithIndex { index, .. }) = parameter {
            self.check_arithmetic(index, cwd);
        }
        for w in words {
            let _ = self.eval_word_single(w, cwd);
        }
    }

    /// Arithmetic that is not inert is `SHELL_COMPLEX`; command substitutions in it are analysed.
    pub(crate) fn check_arithmetic(&mut self, expr: &str, cwd: &Cwd) {
        if arith::is_inert(expr) {
            return;
        }
        if expr.contains("$(") || expr.contains('`') {
            // Analyse what we can see; the whole expression is still complex.
            let _ = self.eval_word_single(&format!("\"{}\"", expr.replace('"', "\\\"")), cwd);
        }
        self.complex(
            "arithmetic evaluation can assign variables and evaluate their values as expressions, \
             which can run commands",
        );
    }

    /// Expands braces the way bash does, on the raw word. `None` when the expansion is too large,
    /// the word has too many braces to parse in reasonable time, or the parser fails.
    fn brace_expand(raw: &str) -> Option<Vec<String>> {
        if !raw.contains('{') {
            return Some(vec![raw.to_owned()]);
        }
        // Attack: `echo a{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{` would keep the classifier busy for days
        // (see MAX_BRACE_OPENS).
        if unquoted_braces(raw) > MAX_BRACE_OPENS {
            return None;
        }
        match catch_unwind(|| word::parse_brace_expansions(raw, &parser_options())) {
            Ok(Ok(Some(pieces))) => expand_pieces(&pieces),
            Ok(Ok(None) | Err(_)) => Some(vec![raw.to_owned()]),
            // The parser panicked (see `guarded`): what the word expands to is unknown.
            Err(_) => None,
        }
    }
}

/// The parts of a parameter expansion that can run code: the parameter (its subscript is
/// arithmetic), whether it is indirect, and the nested words (defaults, alternatives, patterns,
/// replacements). One arm per form of expansion.
#[allow(
    clippy::too_many_lines,
    reason = "a table: one arm per form of parameter expansion, naming the parts that can run code"
)]
fn parameter_parts(expr: &ParameterExpr) -> (Option<&Parameter>, bool, Vec<&str>) {
    use ParameterExpr as P;
    match expr {
        P::Parameter {
            parameter,
            indirect,
        }
        | P::ParameterLength {
            parameter,
            indirect,
        }
        | P::Transform {
            parameter,
            indirect,
            op: _,
        }
        | P::Substring {
            parameter,
            indirect,
            ..
        } => (Some(parameter), *indirect, vec![]),
        P::UseDefaultValues {
            parameter,
            indirect,
            default_value: w,
            ..
        }
        | P::AssignDefaultValues {
            parameter,
            indirect,
            default_value: w,
            ..
        }
        | P::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            error_message: w,
            ..
        }
        | P::UseAlternativeValue {
            parameter,
            indirect,
            alternative_value: w,
            ..
        }
        | P::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            pattern: w,
        }
        | P::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            pattern: w,
        }
        | P::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            pattern: w,
        }
        | P::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            pattern: w,
        }
        | P::UppercaseFirstChar {
            parameter,
            indirect,
            pattern: w,
        }
        | P::UppercasePattern {
            parameter,
            indirect,
            pattern: w,
        }
        | P::LowercaseFirstChar {
            parameter,
            indirect,
            pattern: w,
        }
        | P::LowercasePattern {
            parameter,
            indirect,
            pattern: w,
        } => (
            Some(parameter),
            *indirect,
            w.iter().map(String::as_str).collect(),
        ),
        P::ReplaceSubstring {
            parameter,
            indirect,
            pattern,
            replacement,
            ..
        } => {
            let mut w = vec![pattern.as_str()];
            w.extend(replacement.as_deref());
            (Some(parameter), *indirect, w)
        }
        P::VariableNames { .. } | P::MemberKeys { .. } => (None, false, vec![]),
    }
}

/// How many `{` of `raw` can open a brace expression: those outside quotes, escapes and
/// expansions, as brush-parser's word grammar splits the word (its brace grammar reads the same
/// pieces whole). Every `{` counts if the word does not parse.
fn unquoted_braces(raw: &str) -> usize {
    let Ok(pieces) = parse_word(raw) else {
        return raw.matches('{').count();
    };
    pieces
        .iter()
        .filter(|p| matches!(p.piece, WordPiece::Text(_) | WordPiece::TildeExpansion(_)))
        .map(|p| {
            raw.get(p.start_index..p.end_index)
                .map_or(usize::MAX, |s| s.matches('{').count())
        })
        .fold(0, usize::saturating_add)
}

fn expand_pieces(pieces: &[BraceExpressionOrText]) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    for piece in pieces {
        let alts: Vec<String> = match piece {
            BraceExpressionOrText::Text(t) => vec![t.clone()],
            BraceExpressionOrText::Expr(members) => {
                let mut alts = Vec::new();
                for m in members {
                    alts.extend(expand_member(m)?);
                    if alts.len() > MAX_BRACE_WORDS {
                        return None;
                    }
                }
                alts
            }
        };
        let mut next = Vec::with_capacity(out.len() * alts.len());
        for prefix in &out {
            for alt in &alts {
                next.push(format!("{prefix}{alt}"));
            }
        }
        if next.len() > MAX_BRACE_WORDS {
            return None;
        }
        out = next;
    }
    Some(out)
}

fn expand_member(member: &BraceExpressionMember) -> Option<Vec<String>> {
    match member {
        BraceExpressionMember::Child(pieces) => expand_pieces(pieces),
        BraceExpressionMember::NumberSequence {
            start,
            end,
            increment,
        } => {
            let step = increment.unsigned_abs().max(1);
            let count = start.abs_diff(*end) / step + 1;
            if count > MAX_BRACE_WORDS as u64 {
                return None;
            }
            let mut v = Vec::new();
            let mut i = *start;
            for _ in 0..count {
                v.push(i.to_string());
                i = if start <= end {
                    i.saturating_add_unsigned(step)
                } else {
                    i.saturating_sub_unsigned(step)
                };
            }
            Some(v)
        }
        BraceExpressionMember::CharSequence {
            start,
            end,
            increment,
        } => {
            let (s, e) = (u32::from(*start), u32::from(*end));
            let step = u32::try_from(increment.unsigned_abs().max(1)).unwrap_or(u32::MAX);
            let mut v = Vec::new();
            let mut i = s;
            loop {
                v.push(char::from_u32(i)?.to_string());
                if i == e || v.len() > MAX_BRACE_WORDS {
                    break;
                }
                let next = if s <= e {
                    i.checked_add(step)?
                } else {
                    i.checked_sub(step)?
                };
                if (s <= e && next > e) || (s > e && next < e) {
                    break;
                }
                i = next;
            }
            Some(v)
        }
    }
}

/// Unquoted `*`, `?`, a bracket expression (`[` with a later `]`), or an extglob opener. A lone
/// `[` (the test command) is not a pattern.
fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?'])
        || s.find('[').is_some_and(|open| s[open + 1..].contains(']'))
        || ["@(", "!(", "+("].iter().any(|p| s.contains(p))
}

/// A backslash escape outside single quotes. Unquoted: `\x` is `x`, `\<newline>` disappears.
/// Inside double quotes only `$`, `` ` ``, `"`, `\` and newline are escapable.
fn unescape(seq: &str, quoted: bool) -> String {
    let mut chars = seq.chars();
    match (chars.next(), chars.next()) {
        (Some('\\'), Some('\n')) => String::new(),
        (Some('\\'), Some(c)) if !quoted || matches!(c, '$' | '`' | '"' | '\\') => c.to_string(),
        _ => seq.to_owned(),
    }
}

/// Inside backquotes, `\$`, `` \` `` and `\\` stand for the character itself.
fn unescape_backquoted(script: &str) -> String {
    let mut out = String::with_capacity(script.len());
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && matches!(n, '$' | '`' | '\\')
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_option_injection() {
        assert!(Arg::Glob("*".into()).could_be_option());
        assert!(Arg::Glob("[-a]x".into()).could_be_option());
        assert!(!Arg::Glob("src/*.rs".into()).could_be_option());
        assert!(!Arg::Glob("./*".into()).could_be_option());
        assert!(Arg::unknown("$x").could_be_option());
        assert!(
            !Arg::Dyn {
                raw: "a$x".into(),
                prefix: "a".into()
            }
            .could_be_option()
        );
        assert!(
            !Arg::Lit("-x".into()).could_be_option(),
            "a literal option is seen as one"
        );
    }

    #[test]
    fn braces() {
        let expand = |w: &str| {
            let p = word::parse_brace_expansions(w, &parser_options())
                .unwrap()
                .unwrap();
            expand_pieces(&p).unwrap()
        };
        assert_eq!(expand("a{b,c}d"), vec!["abd", "acd"]);
        assert_eq!(expand("{/etc/shadow,x}"), vec!["/etc/shadow", "x"]);
        assert_eq!(expand("{1..3}"), vec!["1", "2", "3"]);
        assert_eq!(expand("{c..a}"), vec!["c", "b", "a"]);
        assert!(
            expand_pieces(
                &word::parse_brace_expansions("{1..100000}", &parser_options())
                    .unwrap()
                    .unwrap()
            )
            .is_none()
        );
    }

    #[test]
    fn word_parser_panics_are_errors() {
        // brush-parser 0.4 unwraps these integers and panics (found by fuzz/classify_script).
        for w in [
            "~99999999999999999999",
            "~+99999999999999999999",
            "~-99999999999999999999/x",
        ] {
            assert!(parse_word(w).is_err(), "{w}");
        }
        for w in ["{9223372036854775808", "x{99999999999999999999..1}y"] {
            assert_eq!(Analysis::brace_expand(w), None, "{w}");
        }
        // The parsers still work afterwards (brush-parser's word cache is not poisoned).
        assert!(parse_word("~/x").is_ok());
        assert_eq!(
            Analysis::brace_expand("{1..2}"),
            Some(vec!["1".into(), "2".into()])
        );
    }

    #[test]
    fn word_parser_panics_fail_closed() {
        use spear_core::CommandClass;
        use spear_workspace::{Workspace, WorkspaceConfig};

        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(&WorkspaceConfig::new(dir.path())).unwrap();
        let policy =
            crate::CommandPolicy::new(std::sync::Arc::new(ws), crate::PolicyConfig::new(None));
        for script in [
            "echo ~99999999999999999999",
            "x=~-99999999999999999999 ls",
            "rm {9223372036854775808..1}",
            "touch a{99999999999999999999..1}",
            "rm a{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{",
        ] {
            let class = policy.classify_script(script, dir.path()).class;
            assert_eq!(class, CommandClass::ShellComplex, "{script}");
        }
    }

    #[test]
    fn brace_parse_cost_is_bounded() {
        // Found by fuzz/classify_script: unmatched braces made brush-parser backtrack for hours.
        let start = std::time::Instant::now();
        for w in [
            "as ath/to/ou{{{{{{{{{{{{{{{{{{{{{{{{{{{tput_file.o",
            &"{a,".repeat(40),
            &"{1..1,".repeat(40),
        ] {
            assert_eq!(Analysis::brace_expand(w), None, "{w}");
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        // Up to the bound, braces still expand.
        assert_eq!(
            Analysis::brace_expand("{a,b}{c,d}{e,f}{g,h}").map(|v| v.len()),
            Some(16)
        );
        assert_eq!(
            Analysis::brace_expand(&"{".repeat(8)),
            Some(vec!["{".repeat(8)])
        );
        // Quoted, escaped or expanded braces cannot open an expression and do not count.
        for w in [
            "'{{{{{{{{{{{{{{{{{{{{'{a,b}",
            "\"{{{{{{{{{{{{{{{{{{{{\"{a,b}",
            "$'{{{{{{{{{{{{{{{{{{{{'{a,b}",
            "\\{\\{\\{\\{\\{\\{\\{\\{\\{\\{{a,b}",
            "${x:-{{{{{{{{{{{{{{{{{{{{}{a,b}",
        ] {
            assert_eq!(Analysis::brace_expand(w).map(|v| v.len()), Some(2), "{w}");
        }
        assert_eq!(unquoted_braces("'{{'{a,{b,c}}\"{\"~{{"), 4);
    }

    #[test]
    fn escapes() {
        assert_eq!(unescape("\\e", false), "e");
        assert_eq!(unescape("\\e", true), "\\e");
        assert_eq!(unescape("\\$", true), "$");
        assert_eq!(unescape("\\\n", false), "");
        assert_eq!(unescape_backquoted(r"echo \`id\` \$x"), "echo `id` $x");
    }
}
