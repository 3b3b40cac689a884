//! The status of a pipeline as an agent expects it: pipefail, except that a stage ended by
//! SIGPIPE because a later stage stopped reading is not a failure.
//!
//! spear runs scripts with `pipefail`, so that `grep x missing | wc -l` fails as it should. But
//! pipefail alone also fails `cat big.txt | head -3`: `head` exits after three lines, `cat` is
//! killed by SIGPIPE on its next write, and its status 141 becomes the pipeline's. An agent reads
//! that as a failure and retries. Bash has no option for "pipefail, but not SIGPIPE", so
//! [`tolerate_sigpipe`] rewrites each pipeline of two or more stages `a | b` into
//! `{ a | b || __spear_pipefail "${PIPESTATUS[@]}"; }`: when the pipeline succeeds nothing changes;
//! when it fails, the function computes pipefail's status again, skipping a 141 of every stage but
//! the last. The group keeps the pipeline's place in `&&`, `||`, `!`, `time`, `&` and `if`, and
//! `set -e` still stops at a pipeline that really failed.
//!
//! What is not rewritten, and keeps plain pipefail: pipelines inside command substitutions and
//! nested `bash -c` strings (the parser does not expand them), a pipeline whose last stage holds
//! a here-document (the text after it belongs to the document), and every pipeline of a script
//! that reads `PIPESTATUS` itself (the rewrite would change what it sees). A script the parser
//! cannot read, or whose rewrite does not parse back, runs unchanged.

use brush_parser::ast::{self, AndOr, Command, CompoundCommand, SourceLocation};

use crate::shell::pipefail_prelude::{PIPEFAIL_FUNCTION, PRELUDE};
use crate::shell::walk::parse;

/// The text to hand to `bash -o pipefail -c` for the script an agent wrote: `script` with its
/// pipelines rewritten by [`tolerate_sigpipe`], or `script` itself.
pub fn script_to_run(script: &str) -> String {
    tolerate_sigpipe(script).unwrap_or_else(|| script.to_owned())
}

/// Inserted after a rewritten pipeline's last stage.
const CLOSE: &str = " || __spear_pipefail \"${PIPESTATUS[@]}\"; }";

/// The script to run instead of `script` so that a SIGPIPE'd producer does not fail its
/// pipeline, or `None` when it runs as written (nothing to rewrite, or the rewrite is unsafe).
///
/// brush-parser's source spans are incomplete (a redirection has none), so the edges of each
/// pipeline are computed from the words it holds, a pipeline whose edges are not all known is
/// left alone, and the result is checked against the original: it must parse, and hold the same
/// simple commands, word for word, and the same pipelines. Any doubt runs the script as written.
pub fn tolerate_sigpipe(script: &str) -> Option<String> {
    if script.contains("PIPESTATUS") || script.contains("__spear_") || !script.contains('|') {
        return None;
    }
    let program = parse(script).ok()?;
    let mut spans = Vec::new();
    for list in &program.complete_commands {
        list_spans(list, &mut spans);
    }
    if spans.is_empty() {
        return None;
    }
    // The parser counts characters; edits are made at byte offsets.
    let bytes: Vec<usize> = script
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(script.len()))
        .collect();
    let mut edits: Vec<(usize, &str)> = Vec::with_capacity(spans.len() * 2);
    for (start, end) in spans {
        edits.push((*bytes.get(start)?, "{ "));
        edits.push((*bytes.get(end)?, CLOSE));
    }
    // From the end, so that earlier offsets stay valid; at one offset, closing before opening.
    edits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.len().cmp(&b.1.len())));
    let mut out = script.to_owned();
    for (at, text) in edits {
        if !out.is_char_boundary(at) {
            return None;
        }
        out.insert_str(at, text);
    }
    let rewritten = format!("{PRELUDE}{out}");
    let again = parse(&rewritten).ok()?;
    (shape(&program, false) == shape(&again, true)).then_some(rewritten)
}

/// What the rewrite must keep: every simple command as written, in order, and the number of
/// stages of every pipeline.
#[derive(Debug, Default, PartialEq, Eq)]
struct Shape {
    commands: Vec<String>,
    pipelines: Vec<usize>,
}

/// The shape of `program`; with `rewritten`, the function the rewrite adds and its calls are
/// left out.
fn shape(program: &ast::Program, rewritten: bool) -> Shape {
    let mut out = Shape::default();
    let mut visit = ShapeVisit {
        out: &mut out,
        rewritten,
    };
    for list in &program.complete_commands {
        visit.list(list);
    }
    out
}

struct ShapeVisit<'a> {
    out: &'a mut Shape,
    rewritten: bool,
}

impl ShapeVisit<'_> {
    fn list(&mut self, list: &ast::CompoundList) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first);
            for next in &and_or.additional {
                match next {
                    AndOr::And(p) | AndOr::Or(p) => self.pipeline(p),
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline) {
        let ours = self.rewritten
            && pipeline.seq.len() == 1
            && matches!(&pipeline.seq[0], Command::Simple(s)
                if s.word_or_name.as_ref().is_some_and(|w| w.value == PIPEFAIL_FUNCTION));
        if ours {
            return;
        }
        if pipeline.seq.len() > 1 {
            self.out.pipelines.push(pipeline.seq.len());
        }
        for cmd in &pipeline.seq {
            match cmd {
                Command::Simple(s) => self.out.commands.push(s.to_string()),
                Command::Compound(c, r) => {
                    if let Some(r) = r {
                        self.out.commands.push(r.to_string());
                    }
                    self.compound(c);
                }
                Command::Function(def) => {
                    if !(self.rewritten && def.fname.value == PIPEFAIL_FUNCTION) {
                        self.out.commands.push(format!("{}()", def.fname.value));
                        let ast::FunctionBody(body, r) = &def.body;
                        if let Some(r) = r {
                            self.out.commands.push(r.to_string());
                        }
                        self.compound(body);
                    }
                }
                Command::ExtendedTest(t, _) => self.out.commands.push(t.expr.to_string()),
            }
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) {
        match compound {
            CompoundCommand::BraceGroup(g) => self.list(&g.list),
            CompoundCommand::Subshell(s) => self.list(&s.list),
            CompoundCommand::ArithmeticForClause(f) => self.list(&f.body.list),
            CompoundCommand::ForClause(f) => self.list(&f.body.list),
            CompoundCommand::CaseClause(c) => {
                for item in &c.cases {
                    if let Some(body) = &item.cmd {
                        self.list(body);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition);
                self.list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond);
                    }
                    self.list(&e.body);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0);
                self.list(&w.1.list);
            }
            CompoundCommand::Arithmetic(a) => self.out.commands.push(a.to_string()),
            CompoundCommand::Coprocess(c) => self.out.commands.push(c.to_string()),
        }
    }
}

/// The character spans (start, end) of every pipeline of two or more stages in `list` whose
/// edges are known.
fn list_spans(list: &ast::CompoundList, out: &mut Vec<(usize, usize)>) {
    for ast::CompoundListItem(and_or, _) in &list.0 {
        pipeline_spans(&and_or.first, out);
        for next in &and_or.additional {
            match next {
                AndOr::And(p) | AndOr::Or(p) => pipeline_spans(p, out),
            }
        }
    }
}

fn pipeline_spans(pipeline: &ast::Pipeline, out: &mut Vec<(usize, usize)>) {
    for cmd in &pipeline.seq {
        command_spans(cmd, out);
    }
    if pipeline.seq.len() < 2 {
        return;
    }
    let (Some(first), Some(last)) = (pipeline.seq.first(), pipeline.seq.last()) else {
        return;
    };
    if let (Some(start), Some(end)) = (stage_start(first), stage_end(last)) {
        out.push((start, end));
    }
}

/// Where the first stage begins, when its first token has a known place: a word, an assignment
/// or a compound command (a leading redirection has none).
fn stage_start(cmd: &Command) -> Option<usize> {
    match cmd {
        Command::Simple(s) => match s.prefix.as_ref().and_then(|p| p.0.first()) {
            Some(ast::CommandPrefixOrSuffixItem::AssignmentWord(a, _)) => Some(a.loc.start.index),
            Some(ast::CommandPrefixOrSuffixItem::Word(w)) => Some(w.loc.as_ref()?.start.index),
            Some(_) => None,
            None => Some(s.word_or_name.as_ref()?.loc.as_ref()?.start.index),
        },
        Command::Compound(c, _) => Some(c.location()?.start.index),
        Command::Function(_) | Command::ExtendedTest(..) => None,
    }
}

/// Where the last stage ends: the furthest end of the words it holds, when every one of its
/// items has a known place. A here-document ends the line, so nothing can follow it there.
fn stage_end(cmd: &Command) -> Option<usize> {
    let items: Vec<&ast::CommandPrefixOrSuffixItem>;
    let mut end = 0;
    match cmd {
        Command::Simple(s) => {
            items = s
                .prefix
                .iter()
                .flat_map(|p| p.0.iter())
                .chain(s.suffix.iter().flat_map(|p| p.0.iter()))
                .collect();
            if let Some(w) = &s.word_or_name {
                end = end.max(w.loc.as_ref()?.end.index);
            }
        }
        Command::Compound(c, redirects) => {
            if c.to_string().contains("<<") {
                return None;
            }
            end = c.location()?.end.index;
            for r in redirects.iter().flat_map(|l| l.0.iter()) {
                end = end.max(redirect_end(r)?);
            }
            return Some(end);
        }
        Command::Function(_) | Command::ExtendedTest(..) => return None,
    }
    for item in items {
        let at = match item {
            ast::CommandPrefixOrSuffixItem::Word(w) => w.loc.as_ref()?.end.index,
            ast::CommandPrefixOrSuffixItem::AssignmentWord(a, _) => a.loc.end.index,
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirect_end(r)?,
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(..) => return None,
        };
        end = end.max(at);
    }
    (end > 0).then_some(end)
}

/// Where a redirection ends, when its target is a word with a known place.
fn redirect_end(r: &ast::IoRedirect) -> Option<usize> {
    let (ast::IoRedirect::File(
        _,
        _,
        ast::IoFileRedirectTarget::Filename(word) | ast::IoFileRedirectTarget::Duplicate(word),
    )
    | ast::IoRedirect::HereString(_, word)
    | ast::IoRedirect::OutputAndError(word, _)) = r
    else {
        return None;
    };
    Some(word.loc.as_ref()?.end.index)
}

fn command_spans(cmd: &Command, out: &mut Vec<(usize, usize)>) {
    match cmd {
        Command::Simple(_) | Command::ExtendedTest(..) => {}
        Command::Compound(compound, _) => compound_spans(compound, out),
        Command::Function(def) => compound_spans(&def.body.0, out),
    }
}

fn compound_spans(compound: &CompoundCommand, out: &mut Vec<(usize, usize)>) {
    match compound {
        CompoundCommand::BraceGroup(g) => list_spans(&g.list, out),
        CompoundCommand::Subshell(s) => list_spans(&s.list, out),
        CompoundCommand::ArithmeticForClause(f) => list_spans(&f.body.list, out),
        CompoundCommand::ForClause(f) => list_spans(&f.body.list, out),
        CompoundCommand::CaseClause(c) => {
            for item in &c.cases {
                if let Some(body) = &item.cmd {
                    list_spans(body, out);
                }
            }
        }
        CompoundCommand::IfClause(i) => {
            list_spans(&i.condition, out);
            list_spans(&i.then, out);
            for e in i.elses.iter().flatten() {
                if let Some(cond) = &e.condition {
                    list_spans(cond, out);
                }
                list_spans(&e.body, out);
            }
        }
        CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
            list_spans(&w.0, out);
            list_spans(&w.1.list, out);
        }
        CompoundCommand::Arithmetic(_) | CompoundCommand::Coprocess(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `script` (rewritten when the rewrite applies) with `bash -o pipefail -c` and returns
    /// its status and stdout.
    fn run(script: &str) -> (i32, String) {
        let text = tolerate_sigpipe(script).unwrap_or_else(|| script.to_owned());
        let out = std::process::Command::new("bash")
            .args(["-o", "pipefail", "-c", &text])
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn statuses_as_an_agent_expects_them() {
        for (script, status, stdout) in [
            // A producer ended by SIGPIPE: not a failure.
            ("seq 1 1000000 | head -1", 0, "1\n"),
            ("yes | head -2 | wc -l", 0, "2\n"),
            ("seq 1 1000000 | head -1 && echo next", 0, "1\nnext\n"),
            (
                "set -e; seq 1 1000000 | head -1; echo after",
                0,
                "1\nafter\n",
            ),
            (
                "if seq 1 1000000 | head -1 >/dev/null; then echo yes; fi",
                0,
                "yes\n",
            ),
            ("f() { seq 1 1000000 | head -1; }; f", 0, "1\n"),
            (
                "for i in 1 2; do seq 1 1000000 | head -1; done",
                0,
                "1\n1\n",
            ),
            ("(seq 1 1000000 | head -1)", 0, "1\n"),
            ("{ seq 1 1000000 | head -1; } | cat", 0, "1\n"),
            ("time seq 1 1000000 | head -1 2>/dev/null", 0, "1\n"),
            ("seq 1 1000000 | head -1 & wait", 0, "1\n"),
            (
                "x=$(echo é) ; seq 1 1000000 | head -1; echo $x",
                0,
                "1\né\n",
            ),
            // A stage that really fails still fails the pipeline.
            ("false | cat", 1, ""),
            ("grep x /nonexistent 2>/dev/null | wc -l", 2, "0\n"),
            ("true | false", 1, ""),
            ("exit 3 | cat", 3, ""),
            ("seq 1 1000000 | head -1 | false", 1, ""),
            ("! true | false", 0, ""),
            ("set -e; false | cat; echo unreached", 1, ""),
            ("false | cat || echo handled", 0, "handled\n"),
            // The last stage's own SIGPIPE stays a failure.
            ("echo | sh -c 'kill -PIPE $$'", 141, ""),
            // A here-document in the first stage is kept whole.
            ("cat <<EOF | head -1\na\nb\nEOF", 0, "a\n"),
        ] {
            assert_eq!(
                run(script),
                (status, stdout.to_owned()),
                "{script}\nrewritten: {:?}",
                tolerate_sigpipe(script)
            );
        }
    }

    #[test]
    fn what_runs_as_written() {
        for script in [
            "echo no pipeline",
            "echo 'a | b'",
            "false | cat; echo ${PIPESTATUS[0]}",
            "cat x | cat <<EOF\nbody\nEOF",
            "if then fi | (",
        ] {
            assert_eq!(tolerate_sigpipe(script), None, "{script}");
        }
    }

    #[test]
    fn line_numbers_of_messages_stay_the_script_s() {
        let (_, out) = run("true | true\necho $LINENO | cat");
        assert_eq!(out, "2\n");
    }
}
