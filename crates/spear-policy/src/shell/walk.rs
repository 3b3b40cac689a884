//! Walks a parsed script and analyses every simple command it can run.
//!
//! Shape rules: anything that runs in a subshell (pipelines, `( )`, `&`, substitutions) gets a copy
//! of the working directory; a `cd` inside a branch or loop leaves the directory unknown afterwards.
//! A script that cannot be parsed is `SHELL_COMPLEX`, never `READ_ONLY`.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::Parser;
use brush_parser::ast::{
    self, AndOr, Assignment, AssignmentName, AssignmentValue, Command, CommandPrefixOrSuffixItem,
    CompoundCommand, ExtendedTestExpr, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect,
    SeparatorOperator,
};

use crate::analysis::{Analysis, Cwd, MAX_COMMANDS, MAX_DEPTH};
use crate::commands::{self, Invocation};
use crate::env_rules;
use crate::shell::pipefail_prelude::PIPEFAIL_FUNCTION;
use crate::shell::word::{Arg, parser_options};

/// Where a command's standard input comes from, for programs that read a script from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stdin {
    /// Whatever the caller gave the script.
    Inherited,
    /// The previous command of a pipeline.
    Pipe,
    /// A here-document or here-string; `Some` when its text is fully known.
    Text(Option<String>),
    /// A file.
    File,
}

impl Analysis<'_> {
    /// Parses and analyses `script` in the current shell: a `cd` moves `cwd`.
    pub(crate) fn analyse_script(&mut self, script: &str, cwd: &mut Cwd) {
        match parse(script) {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.walk_list(list, cwd);
                }
            }
            Err(why) => {
                if self.depth == 0 {
                    self.found.runs.unparsed();
                }
                self.complex(format!("the script cannot be parsed ({why})"));
            }
        }
    }

    /// Analyses `script` as it runs in a subshell or another shell (`$(...)`, `bash -c`): its
    /// directory changes do not come back. Depth-limited.
    pub(crate) fn analyse_nested(&mut self, script: &str, cwd: &Cwd, what: &str) {
        if self.depth >= MAX_DEPTH {
            self.complex(format!("{what} is nested too deeply to analyse"));
            return;
        }
        self.depth += 1;
        let mut inner = cwd.clone();
        self.analyse_script(script, &mut inner);
        self.depth -= 1;
    }

    /// A process substitution's commands: run in a subshell, as arguments of the command that
    /// holds them (not top-level commands of the script).
    fn walk_substitution(&mut self, list: &ast::CompoundList, cwd: &Cwd) {
        self.substitutions += 1;
        self.walk_list(list, &mut cwd.clone());
        self.substitutions -= 1;
    }

    fn walk_list(&mut self, list: &ast::CompoundList, cwd: &mut Cwd) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            if matches!(sep, SeparatorOperator::Async) {
                let mut background = cwd.clone();
                self.branch += 1;
                self.walk_and_or(and_or, &mut background);
                self.branch -= 1;
            } else {
                self.walk_and_or(and_or, cwd);
            }
        }
    }

    fn walk_and_or(&mut self, list: &ast::AndOrList, cwd: &mut Cwd) {
        self.walk_pipeline(&list.first, cwd);
        // What runs after `&&` or `||` may not run at all.
        self.branch += 1;
        for next in &list.additional {
            match next {
                AndOr::And(p) => self.walk_pipeline(p, cwd),
                AndOr::Or(p) => {
                    // Runs only if what came before failed: afterwards either directory may hold.
                    let before = cwd.clone();
                    self.walk_pipeline(p, cwd);
                    if *cwd != before {
                        *cwd = Cwd::Unknown;
                    }
                }
            }
        }
        self.branch -= 1;
    }

    fn walk_pipeline(&mut self, pipeline: &ast::Pipeline, cwd: &mut Cwd) {
        if pipeline.seq.len() == 1 {
            self.walk_command(&pipeline.seq[0], cwd, Stdin::Inherited);
            return;
        }
        // Each command of a pipeline runs in a subshell of its own.
        self.branch += 1;
        for (i, cmd) in pipeline.seq.iter().enumerate() {
            let mut sub = cwd.clone();
            let stdin = if i == 0 {
                Stdin::Inherited
            } else {
                Stdin::Pipe
            };
            self.walk_command(cmd, &mut sub, stdin);
        }
        self.branch -= 1;
    }

    fn walk_command(&mut self, cmd: &Command, cwd: &mut Cwd, stdin: Stdin) {
        match cmd {
            Command::Simple(simple) => self.walk_simple(simple, cwd, stdin),
            Command::Compound(compound, redirects) => {
                let mut stdin = stdin;
                for r in redirects.iter().flat_map(|l| l.0.iter()) {
                    self.redirect(r, cwd, &mut stdin);
                }
                self.walk_compound(compound, cwd);
            }
            Command::Function(def) => self.define_function(def, cwd),
            Command::ExtendedTest(test, redirects) => {
                let mut stdin = stdin;
                for r in redirects.iter().flat_map(|l| l.0.iter()) {
                    self.redirect(r, cwd, &mut stdin);
                }
                self.walk_extended_test(&test.expr, cwd);
            }
        }
    }

    /// Knows `__spear_pipefail` as spear's own: the script began with spear's SIGPIPE prelude.
    pub(crate) fn define_spear_pipefail(&mut self) {
        self.functions.insert(PIPEFAIL_FUNCTION.to_owned(), false);
        self.spear_functions.push(PIPEFAIL_FUNCTION);
    }

    /// Whether `words` call spear's own `__spear_pipefail`, still defined as the prelude
    /// defines it: spear's status computation, which the executable summary leaves out.
    fn calls_spear_pipefail(&self, words: &[Arg]) -> bool {
        matches!(words.first(), Some(Arg::Lit(name))
            if name == PIPEFAIL_FUNCTION
                && self.spear_functions.contains(&PIPEFAIL_FUNCTION)
                && self.functions.contains_key(PIPEFAIL_FUNCTION))
    }

    fn define_function(&mut self, def: &ast::FunctionDefinition, cwd: &Cwd) {
        let name = def.fname.value.clone();
        // The script's own definition: from here on the name runs the script's body.
        self.spear_functions.retain(|f| *f != name);
        let mut body_cwd = cwd.clone();
        let ast::FunctionBody(body, redirects) = &def.body;
        let mut stdin = Stdin::Inherited;
        for r in redirects.iter().flat_map(|l| l.0.iter()) {
            self.redirect(r, &body_cwd.clone(), &mut stdin);
        }
        self.defining.push(name.clone());
        self.walk_compound(body, &mut body_cwd);
        self.defining.pop();
        self.functions.insert(name, body_cwd != *cwd);
    }

    fn walk_compound(&mut self, compound: &CompoundCommand, cwd: &mut Cwd) {
        // Only a `{ ...; }` group runs its list once, in this shell, as a sequence.
        let sequence = matches!(compound, CompoundCommand::BraceGroup(_));
        if !sequence {
            self.branch += 1;
        }
        self.walk_compound_body(compound, cwd);
        if !sequence {
            self.branch -= 1;
        }
    }

    fn walk_compound_body(&mut self, compound: &CompoundCommand, cwd: &mut Cwd) {
        match compound {
            CompoundCommand::BraceGroup(group) => self.walk_list(&group.list, cwd),
            CompoundCommand::Subshell(sub) => self.walk_list(&sub.list, &mut cwd.clone()),
            CompoundCommand::Arithmetic(a) => self.check_arithmetic(&a.expr.value, cwd),
            CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.check_arithmetic(&e.value, cwd);
                }
                self.walk_branch(&f.body.list, cwd);
            }
            CompoundCommand::ForClause(f) => {
                // `for PATH in /tmp; do ls; done` assigns the loop variable.
                env_rules::check_shell_assignment(self, &f.variable_name, None);
                for w in f.values.iter().flatten() {
                    let _ = self.eval_word(&w.value, cwd);
                }
                self.walk_branch(&f.body.list, cwd);
            }
            CompoundCommand::CaseClause(c) => {
                let _ = self.eval_word(&c.value.value, cwd);
                let before = cwd.clone();
                for item in &c.cases {
                    for p in &item.patterns {
                        let _ = self.eval_word(&p.value, &before);
                    }
                    if let Some(body) = &item.cmd {
                        self.walk_branch(body, cwd);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.walk_branch(&i.condition, cwd);
                self.walk_branch(&i.then, cwd);
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.walk_branch(cond, cwd);
                    }
                    self.walk_branch(&e.body, cwd);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.walk_branch(&w.0, cwd);
                self.walk_branch(&w.1.list, cwd);
            }
            CompoundCommand::Coprocess(c) => {
                self.walk_command(&c.body, &mut cwd.clone(), Stdin::Pipe);
            }
        }
    }

    /// A list that may run zero or more times: a `cd` in it leaves the directory unknown.
    fn walk_branch(&mut self, list: &ast::CompoundList, cwd: &mut Cwd) {
        let mut inner = cwd.clone();
        self.walk_list(list, &mut inner);
        if inner != *cwd {
            *cwd = Cwd::Unknown;
        }
    }

    fn walk_extended_test(&mut self, expr: &ExtendedTestExpr, cwd: &Cwd) {
        use brush_parser::ast::{BinaryPredicate as B, UnaryPredicate as U};
        match expr {
            ExtendedTestExpr::And(a, b) | ExtendedTestExpr::Or(a, b) => {
                self.walk_extended_test(a, cwd);
                self.walk_extended_test(b, cwd);
            }
            ExtendedTestExpr::Not(e) | ExtendedTestExpr::Parenthesized(e) => {
                self.walk_extended_test(e, cwd);
            }
            ExtendedTestExpr::UnaryTest(pred, w) => {
                let arg = self.eval_word_single(&w.value, cwd);
                match pred {
                    U::ShellVariableIsSetAndAssigned | U::ShellVariableIsSetAndNameRef => {
                        if arg
                            .lit()
                            .is_none_or(|n| !crate::commands::builtins::inert_name(n))
                        {
                            self.complex(
                                "[[ -v ]] evaluates an array subscript, which can run commands",
                            );
                        }
                    }
                    U::StringHasZeroLength
                    | U::StringHasNonZeroLength
                    | U::ShellOptionEnabled
                    | U::FdIsOpenTerminal => {}
                    _ => self.read_path(&arg, cwd),
                }
            }
            ExtendedTestExpr::BinaryTest(pred, l, r) => {
                let left = self.eval_word_single(&l.value, cwd);
                let right = self.eval_word_single(&r.value, cwd);
                let arithmetic = matches!(
                    pred,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                );
                if arithmetic {
                    for side in [&left, &right] {
                        match side.lit() {
                            Some(text) => self.check_arithmetic(text, cwd),
                            None => self.complex(
                                "[[ ... -eq ... ]] evaluates its operands as arithmetic, which can \
                                 run commands",
                            ),
                        }
                    }
                }
                if matches!(
                    pred,
                    B::FilesReferToSameDeviceAndInodeNumbers
                        | B::LeftFileIsNewerOrExistsWhenRightDoesNot
                        | B::LeftFileIsOlderOrDoesNotExistWhenRightDoes
                ) {
                    self.read_path(&left, cwd);
                    self.read_path(&right, cwd);
                }
            }
        }
    }

    fn walk_simple(&mut self, simple: &ast::SimpleCommand, cwd: &mut Cwd, stdin: Stdin) {
        self.commands_seen += 1;
        if self.commands_seen > MAX_COMMANDS {
            self.complex("the script runs more commands than spear analyses");
            return;
        }
        let mut stdin = stdin;
        let mut words: Vec<Arg> = Vec::new();
        let mut assignments: Vec<(&Assignment, Option<Arg>)> = Vec::new();
        let prefix = simple.prefix.iter().flat_map(|p| p.0.iter());
        let suffix = simple.suffix.iter().flat_map(|s| s.0.iter());
        for item in prefix {
            match item {
                CommandPrefixOrSuffixItem::AssignmentWord(assignment, _) => {
                    let value = self.eval_assignment(assignment, cwd);
                    assignments.push((assignment, value));
                }
                other => self.prefix_or_suffix_item(other, cwd, &mut stdin, &mut words),
            }
        }
        if let Some(name) = &simple.word_or_name {
            words.extend(self.eval_word(&name.value, cwd));
        }
        for item in suffix {
            self.prefix_or_suffix_item(item, cwd, &mut stdin, &mut words);
        }

        if self.depth == 0 && self.substitutions == 0 && !self.calls_spear_pipefail(&words) {
            self.found.runs.command(&words);
        }
        if words.is_empty() {
            for (a, value) in &assignments {
                self.shell_assignment(a, value.as_ref());
                self.track_scratch(assignment_name(a), value.as_ref());
            }
            return;
        }
        for (a, value) in &assignments {
            let name = assignment_name(a);
            env_rules::check_env_assignment(self, name, value.as_ref(), words[0].display());
        }
        self.run_words(words, cwd, stdin);
    }

    /// Runs an evaluated command line: the first word names the program.
    pub(crate) fn run_words(&mut self, mut words: Vec<Arg>, cwd: &mut Cwd, stdin: Stdin) {
        if words.is_empty() {
            return;
        }
        let name_arg = words.remove(0);
        let Some(name) = name_arg.lit().map(str::to_owned) else {
            self.complex(format!(
                "the command name `{}` is known only at run time",
                name_arg.display()
            ));
            for w in &words {
                self.unknown_operand(w, cwd);
            }
            return;
        };
        if self.defining.contains(&name) {
            // A function that calls itself (`:(){ :|:& };:`) runs without bound.
            self.complex(format!("the function `{name}` calls itself"));
            return;
        }
        if let Some(&changes_cwd) = self.functions.get(&name) {
            // Its body was analysed where it was defined.
            if changes_cwd {
                *cwd = Cwd::Unknown;
            }
            return;
        }
        commands::analyse(
            self,
            Invocation {
                name,
                args: words,
                stdin,
            },
            cwd,
        );
    }

    fn prefix_or_suffix_item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        cwd: &Cwd,
        stdin: &mut Stdin,
        words: &mut Vec<Arg>,
    ) {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r, cwd, stdin),
            CommandPrefixOrSuffixItem::Word(w) => words.extend(self.eval_word(&w.value, cwd)),
            CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
                // An assignment-looking word after the command name is an ordinary argument
                // (`env FOO=1 cmd`, `make CC=gcc`).
                words.extend(self.eval_word(&w.value, cwd));
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                self.walk_substitution(&sub.list, cwd);
                words.push(Arg::unknown("/dev/fd/63"));
            }
        }
    }

    fn eval_assignment(&mut self, a: &Assignment, cwd: &Cwd) -> Option<Arg> {
        if let AssignmentName::ArrayElementName(_, index) = &a.name {
            self.check_arithmetic(index, cwd);
        }
        match &a.value {
            AssignmentValue::Scalar(w) => Some(self.eval_word_single(&w.value, cwd)),
            AssignmentValue::Array(items) => {
                for (key, value) in items {
                    if let Some(k) = key {
                        // `b=([i]=1)`: an indexed array's subscript is arithmetic, evaluated
                        // through the value of `i` (`i='x[$(cmd)]'` runs `cmd`).
                        let _ = self.eval_word_single(&k.value, cwd);
                        self.check_arithmetic(&k.value, cwd);
                    }
                    let _ = self.eval_word(&value.value, cwd);
                }
                None
            }
        }
    }

    /// `NAME=value` with no command: a variable of this shell. Names that change how later commands
    /// are found or run make the script `SHELL_COMPLEX`.
    fn shell_assignment(&mut self, a: &Assignment, value: Option<&Arg>) {
        let name = assignment_name(a);
        env_rules::check_shell_assignment(self, name, value);
    }

    /// Applies one redirection: what it writes, what it reads, what it runs, and where stdin comes
    /// from.
    pub(crate) fn redirect(&mut self, r: &IoRedirect, cwd: &Cwd, stdin: &mut Stdin) {
        match r {
            IoRedirect::File(fd, kind, target) => {
                let is_stdin = fd.is_none_or(|n| n == 0);
                match target {
                    IoFileRedirectTarget::Filename(w) => {
                        for arg in self.eval_word(&w.value, cwd) {
                            match kind {
                                IoFileRedirectKind::Read | IoFileRedirectKind::DuplicateInput
                                    if self.bash_socket(&arg) => {}
                                IoFileRedirectKind::Read => {
                                    self.read_path(&arg, cwd);
                                    if is_stdin {
                                        *stdin = Stdin::File;
                                    }
                                }
                                IoFileRedirectKind::DuplicateInput => self.read_path(&arg, cwd),
                                IoFileRedirectKind::Write
                                | IoFileRedirectKind::Append
                                | IoFileRedirectKind::Clobber
                                | IoFileRedirectKind::ReadAndWrite
                                | IoFileRedirectKind::DuplicateOutput => {
                                    self.redirect_write(&arg, cwd);
                                }
                            }
                        }
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::Duplicate(w) => {
                        let arg = self.eval_word_single(&w.value, cwd);
                        match arg.lit() {
                            Some(t) if is_fd_word(t) => {}
                            Some(_) if self.bash_socket(&arg) => {}
                            Some(_) if matches!(kind, IoFileRedirectKind::DuplicateInput) => {
                                self.read_path(&arg, cwd);
                            }
                            // `>&file` writes stdout and stderr to `file`.
                            _ => self.redirect_write(&arg, cwd),
                        }
                    }
                    IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                        self.walk_substitution(&sub.list, cwd);
                        if is_stdin && matches!(kind, IoFileRedirectKind::Read) {
                            *stdin = Stdin::Pipe;
                        }
                    }
                }
            }
            IoRedirect::HereDocument(fd, doc) => {
                let text = if doc.requires_expansion {
                    self.eval_heredoc(&doc.doc.value, cwd)
                } else {
                    Some(doc.doc.value.clone())
                };
                if fd.is_none_or(|n| n == 0) {
                    *stdin = Stdin::Text(text);
                }
            }
            IoRedirect::HereString(fd, w) => {
                let arg = self.eval_word_single(&w.value, cwd);
                if fd.is_none_or(|n| n == 0) {
                    *stdin = Stdin::Text(arg.lit().map(|s| format!("{s}\n")));
                }
            }
            IoRedirect::OutputAndError(w, _) => {
                for arg in self.eval_word(&w.value, cwd) {
                    self.redirect_write(&arg, cwd);
                }
            }
        }
    }

    /// A redirection that writes. `/dev/null`, `/dev/stdout` and `/dev/stderr` discard or pass
    /// through and need no write access; everything else is a write target.
    fn redirect_write(&mut self, arg: &Arg, cwd: &Cwd) {
        if arg.lit().is_some_and(is_discard_device) || self.bash_socket(arg) {
            return;
        }
        self.write_path(arg, cwd, "a redirection");
    }
}

impl Analysis<'_> {
    /// `/dev/tcp/HOST/PORT` and `/dev/udp/HOST/PORT` in a redirection are sockets bash opens, not
    /// files: they need the network, whichever way the redirection is written (`>`, `<`, `<>`,
    /// `>&`, `&>`, `exec 3<>`, on a compound command or a function).
    fn bash_socket(&mut self, arg: &Arg) -> bool {
        let text = match arg {
            Arg::Lit(t) | Arg::Glob(t) => t.as_str(),
            Arg::Dyn { prefix, .. } => prefix.as_str(),
        };
        let socket = ["/dev/tcp/", "/dev/udp/"]
            .into_iter()
            .find(|prefix| text.starts_with(prefix));
        if let Some(prefix) = socket {
            self.needs(spear_core::Capability::Network);
            // Not "only reads": the reason names the connection the redirection opens.
            self.runs(&format!(
                "{} (a network connection bash opens)",
                prefix.trim_end_matches('/')
            ));
        }
        socket.is_some()
    }
}

/// Targets that discard output or pass it to the caller's own streams.
pub(crate) fn is_discard_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/fd/1" | "/dev/fd/2"
    )
}

/// `>&2`, `<&0`, `>&-`, `2>&1-`: fd duplication or closing, not a file.
fn is_fd_word(t: &str) -> bool {
    let digits = t.strip_suffix('-').unwrap_or(t);
    t == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

fn assignment_name(a: &Assignment) -> &str {
    match &a.name {
        AssignmentName::VariableName(n) | AssignmentName::ArrayElementName(n, _) => n,
    }
}

/// Scripts longer than this are not analysed (`SHELL_COMPLEX`).
const MAX_SCRIPT_BYTES: usize = 1 << 20;

/// Deepest nesting of unclosed `(` handed to the parser. brush-parser's PEG grammar backtracks
/// exponentially on nested openings (`((` may open arithmetic or two subshells), and the cost
/// compounds across unclosed groups: found by the `classify_script` fuzz target, measured at half a
/// second for 24 open parentheses and minutes for 32, whether in one run or in several
/// (`((((((((x` four times). Real scripts nest four or five deep at most.
const MAX_PAREN_DEPTH: usize = 8;

/// Parses a script with brush-parser, refusing inputs that would take it too long or too deep.
/// A panic inside the parser is caught and reported as a parse failure, so hostile input cannot
/// take the harness down.
pub(crate) fn parse(script: &str) -> Result<ast::Program, String> {
    if script.len() > MAX_SCRIPT_BYTES {
        return Err(format!("it is longer than {MAX_SCRIPT_BYTES} bytes"));
    }
    // Deeply nested input can exhaust the stack of a recursive-descent parser, which no catch
    // can recover from: refuse to parse beyond a nesting bound instead.
    if nesting_depth(script) > 64 {
        return Err("nesting is too deep".into());
    }
    // brush-parser 0.4 reads a here-document's delimiter forever, allocating as it goes, when
    // the `<<` is followed by nothing but whitespace that includes a form feed or a carriage
    // return (`<<\r `, `<< \f `: 4 bytes took spear past 20 GB in a minute; found by the
    // `classify_script` fuzz target). Such a script is not parsed (so it is judged complex and
    // runs confined like any); real scripts do not mix the two.
    if script.contains("<<") && script.contains(['\r', '\x0c']) {
        return Err("it has a here-document and a form feed or carriage return".into());
    }
    if paren_depth(script) > MAX_PAREN_DEPTH {
        return Err(format!(
            "it nests parentheses more than {MAX_PAREN_DEPTH} deep"
        ));
    }
    let options = parser_options();
    let result = catch_unwind(AssertUnwindSafe(|| {
        Parser::new(Cursor::new(script), &options).parse_program()
    }));
    match result {
        Ok(Ok(program)) => Ok(program),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the parser failed".into()),
    }
}

/// The deepest nesting of `(` not yet closed, counting every parenthesis (quoted ones too, which
/// can only make the bound stricter).
fn paren_depth(script: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in script.bytes() {
        match b {
            b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// An upper bound on the bracket nesting of a script (`(`, `{` and `[` count).
fn nesting_depth(script: &str) -> usize {
    let mut depth = 0usize;
    let mut max = 0usize;
    for b in script.bytes() {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each would have brush-parser allocate without end (gigabytes a second); they are refused
    /// before it sees them. The positive controls: the same here-documents without the odd
    /// whitespace, and the odd whitespace without a here-document, parse.
    #[test]
    fn a_here_document_with_a_form_feed_or_carriage_return_is_not_parsed() {
        for script in [
            "<<\r ",
            "<< \u{c} ",
            "<<- \u{c} ",
            "cat <<\r",
            "x <<EOF\r\ny\r\nEOF",
        ] {
            assert!(parse(script).is_err(), "{script:?}");
        }
        for script in [
            "cat <<EOF\nx\nEOF",
            "cat << EOF\nx\nEOF",
            "printf 'a\r\n'",
            "echo \u{c}",
        ] {
            assert!(parse(script).is_ok(), "{script:?}");
        }
    }

    #[test]
    fn fd_words() {
        for (t, fd) in [
            ("1", true),
            ("2-", true),
            ("-", true),
            ("10", true),
            ("file", false),
            ("1x", false),
            ("", false),
        ] {
            assert_eq!(is_fd_word(t), fd, "{t:?}");
        }
    }

    #[test]
    fn paren_depths() {
        assert_eq!(paren_depth("echo $((1 + (2)))"), 3);
        assert_eq!(paren_depth("( ( ( (ls) ) ) )"), 4);
        assert_eq!(paren_depth("(a) (b) (c)"), 1);
        assert_eq!(paren_depth(&"((((x\n".repeat(4)), 16);
        let start = std::time::Instant::now();
        for hostile in [
            "( ".repeat(40),
            format!("{}hash x", "(".repeat(47)),
            format!("h {}", "|(((((((( x ".repeat(4)),
            "((((((((x\n".repeat(4),
            "h{ ((((((((\n".repeat(4),
        ] {
            assert!(
                parse(&hostile).is_err(),
                "{hostile:?} is refused before parsing"
            );
        }
        assert!(start.elapsed().as_secs() < 1, "refusals are immediate");
        assert!(parse("((i++)); (cd x && (ls)); echo $(( (1+2) * (3) ))").is_ok());
        assert!(
            parse(&"(((((((( x ))))))))\n".repeat(50)).is_ok(),
            "closed groups are fine"
        );
    }

    #[test]
    fn discard_devices() {
        assert!(is_discard_device("/dev/null"));
        assert!(!is_discard_device("/dev/sda"));
        assert!(!is_discard_device("/dev/null/x"));
    }
}
