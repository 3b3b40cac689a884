//! The text a model reads: ripgrep's `path:line:text` lines, then what was left out. Pure.

use std::fmt::Write;

use super::model::SearchOutput;

/// Renders `out` as `path:line:text` lines (as `rg -n --no-heading` prints them), followed by a line
/// naming the skipped files when there are any, and a last line saying how to narrow the search
/// when it was truncated. With no match, one line says so and how many files were searched.
pub fn render(out: &SearchOutput) -> String {
    let mut text = String::new();
    for m in &out.matches {
        // Writing to a String cannot fail.
        let _ = writeln!(text, "{}:{}:{}", m.path, m.line, m.text);
    }
    if out.matches.is_empty() {
        let _ = writeln!(
            text,
            "no matches in {} file{}",
            out.files_searched,
            plural(out.files_searched)
        );
    }
    if !out.skipped.is_empty() {
        let _ = writeln!(text, "[not searched: {}]", out.skipped.join("; "));
    }
    if out.truncated {
        let _ = writeln!(
            text,
            "[truncated: more than {} matching lines; narrow the search with a more specific \
             pattern, a path, or a glob such as \"*.rs\"]",
            out.matches.len()
        );
    }
    text
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::SearchMatch;

    fn hit(path: &str, line: u64, text: &str) -> SearchMatch {
        SearchMatch {
            path: path.into(),
            line,
            text: text.into(),
        }
    }

    #[test]
    fn render_table() {
        let two = vec![
            hit("src/a.rs", 3, "fn main() {"),
            hit("b.rs", 10, "  main()"),
        ];
        let cases: Vec<(SearchOutput, &str)> = vec![
            (
                SearchOutput {
                    matches: two.clone(),
                    files_searched: 2,
                    ..SearchOutput::default()
                },
                "src/a.rs:3:fn main() {\nb.rs:10:  main()\n",
            ),
            (
                SearchOutput {
                    files_searched: 1,
                    ..SearchOutput::default()
                },
                "no matches in 1 file\n",
            ),
            (
                SearchOutput {
                    files_searched: 0,
                    skipped: vec!["big.log: larger than 64 MiB".into(), "x: y".into()],
                    ..SearchOutput::default()
                },
                "no matches in 0 files\n[not searched: big.log: larger than 64 MiB; x: y]\n",
            ),
            (
                SearchOutput {
                    matches: two,
                    truncated: true,
                    files_searched: 9,
                    skipped: Vec::new(),
                },
                "src/a.rs:3:fn main() {\nb.rs:10:  main()\n[truncated: more than 2 matching \
                 lines; narrow the search with a more specific pattern, a path, or a glob such \
                 as \"*.rs\"]\n",
            ),
        ];
        for (out, want) in cases {
            assert_eq!(render(&out), want);
        }
    }
}
