//! Splitting a program's arguments into options and operands, the way getopt does.
//!
//! Attacks stopped: `sort --outp=x` is `sort --output=x` (GNU accepts unique prefixes of long
//! options); `-ro x` is `-r -o x`; `-ox` is `-o x`; an operand that is a run-time value or a glob
//! can turn into an option when it expands, so it is reported as [`Item::Unknown`].

use crate::shell::word::Arg;

/// How a program takes its options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptionSpec {
    /// Short options that take a value (`"nco"` for `-n N`, `-c N`, `-o F`).
    pub short_values: &'static str,
    /// Long options that take a value, without `--`.
    pub long_values: &'static [&'static str],
    /// Long options without a value: the ones that matter to the analysis (so prefixes resolve
    /// to them) and, for a program whose unknown options are not harmless, every other one it
    /// accepts.
    pub long_flags: &'static [&'static str],
    /// Short options without a value, listed for a program whose unknown options are not
    /// harmless (see [`unknown_options`]).
    pub short_flags: &'static str,
    /// Whether unique prefixes of long options are accepted (`getopt_long`).
    pub gnu_prefixes: bool,
    /// Whether options end at the first operand (POSIX order, wrappers).
    pub stop_at_operand: bool,
}

impl OptionSpec {
    /// A GNU-style spec.
    pub(crate) const fn gnu(
        short_values: &'static str,
        long_values: &'static [&'static str],
        long_flags: &'static [&'static str],
    ) -> Self {
        OptionSpec {
            short_values,
            long_values,
            long_flags,
            short_flags: "",
            gnu_prefixes: true,
            stop_at_operand: false,
        }
    }

    /// A spec where options end at the first operand.
    pub(crate) const fn posix(
        short_values: &'static str,
        long_values: &'static [&'static str],
    ) -> Self {
        OptionSpec {
            short_values,
            long_values,
            long_flags: &[],
            short_flags: "",
            gnu_prefixes: true,
            stop_at_operand: true,
        }
    }

    /// The same spec with the flags (options without a value) the program accepts: `short` and
    /// `long`, which replace [`OptionSpec::long_flags`] (so they include the ones that matter).
    pub(crate) const fn flags(self, short: &'static str, long: &'static [&'static str]) -> Self {
        OptionSpec {
            short_flags: short,
            long_flags: long,
            ..self
        }
    }

    /// Whether the program has the option `name` (`-x` or `--name`, canonical): it is listed, or
    /// it is `--help` or `--version`, which only print.
    pub(crate) fn knows(&self, name: &str) -> bool {
        if let Some(long) = name.strip_prefix("--") {
            return matches!(long, "help" | "version")
                || self.long_values.contains(&long)
                || self.long_flags.contains(&long);
        }
        let mut letters = name.chars().skip(1);
        match (letters.next(), letters.next()) {
            (Some(c), None) => self.short_values.contains(c) || self.short_flags.contains(c),
            _ => false,
        }
    }

    /// Resolves a long option name (without `--`) to its canonical name.
    fn canonical(&self, name: &str) -> String {
        let known = self.long_values.iter().chain(self.long_flags.iter());
        if known.clone().any(|k| *k == name) || !self.gnu_prefixes || name.is_empty() {
            return name.to_owned();
        }
        let mut matches = known.filter(|k| k.starts_with(name));
        match (matches.next(), matches.next()) {
            (Some(one), None) => (*one).to_owned(),
            _ => name.to_owned(),
        }
    }
}

/// One argument after scanning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// `-x` or `--name`, with its value if it takes one.
    Opt {
        /// `-x` or `--name` (canonical).
        name: String,
        /// The value, attached or the next argument.
        value: Option<Arg>,
    },
    /// An operand.
    Operand(Arg),
    /// A word known only at run time (or a glob) where an option could stand.
    Unknown(Arg),
}

impl Item {
    /// Whether this is the option `name` (`-o` or `--output`).
    pub(crate) fn is(&self, names: &[&str]) -> bool {
        matches!(self, Item::Opt { name, .. } if names.contains(&name.as_str()))
    }
}

/// Scans `args` by `spec`.
pub(crate) fn scan(args: &[Arg], spec: &OptionSpec) -> Vec<Item> {
    let mut items = Vec::with_capacity(args.len());
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if options_done {
            items.push(Item::Operand(arg.clone()));
            continue;
        }
        let Some(text) = arg.lit() else {
            if arg.could_be_option() {
                items.push(Item::Unknown(arg.clone()));
            } else {
                items.push(Item::Operand(arg.clone()));
                options_done = spec.stop_at_operand;
            }
            continue;
        };
        if text == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(Arg::Lit(v.to_owned()))),
                None => (long, None),
            };
            let canonical = spec.canonical(name);
            // Matched only as a prefix: the program may have an option of exactly this name (with
            // an optional argument) that spear does not list. The next word is then taken both as
            // the value and as an operand, so neither reading can hide a path.
            let by_prefix = canonical != name;
            let value = if attached.is_some() {
                attached
            } else if spec.long_values.contains(&canonical.as_str()) {
                let v = args.get(i).cloned();
                i += 1;
                if by_prefix && let Some(next) = &v {
                    items.push(Item::Operand(next.clone()));
                }
                v
            } else {
                None
            };
            items.push(Item::Opt {
                name: format!("--{canonical}"),
                value,
            });
            continue;
        }
        if text.len() > 1 && text.starts_with('-') {
            let body = &text[1..];
            for (pos, c) in body.char_indices() {
                if spec.short_values.contains(c) {
                    let rest = &body[pos + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        let v = args.get(i).cloned();
                        i += 1;
                        v
                    } else {
                        Some(Arg::Lit(rest.to_owned()))
                    };
                    items.push(Item::Opt {
                        name: format!("-{c}"),
                        value,
                    });
                    break;
                }
                items.push(Item::Opt {
                    name: format!("-{c}"),
                    value: None,
                });
            }
            continue;
        }
        items.push(Item::Operand(arg.clone()));
        options_done = spec.stop_at_operand;
    }
    items
}

/// The operands of scanned items, in order.
pub(crate) fn operands(items: &[Item]) -> Vec<Arg> {
    items
        .iter()
        .filter_map(|it| match it {
            Item::Operand(a) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

/// The values of every occurrence of the options `names`.
pub(crate) fn values<'a>(
    items: &'a [Item],
    names: &'a [&str],
) -> impl Iterator<Item = &'a Arg> + 'a {
    items.iter().filter_map(move |it| match it {
        Item::Opt {
            name,
            value: Some(v),
        } if names.contains(&name.as_str()) => Some(v),
        _ => None,
    })
}

/// The options among `items` that `spec` does not list (see [`OptionSpec::knows`]).
pub(crate) fn unknown_options<'i>(
    items: &'i [Item],
    spec: &'i OptionSpec,
) -> impl Iterator<Item = &'i str> + 'i {
    items.iter().filter_map(move |it| match it {
        Item::Opt { name, .. } if !spec.knows(name) => Some(name.as_str()),
        _ => None,
    })
}

/// Whether any of the options `names` is present.
pub(crate) fn has(items: &[Item], names: &[&str]) -> bool {
    items.iter().any(|it| it.is(names))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(s: &[&str]) -> Vec<Arg> {
        s.iter().map(|x| Arg::Lit((*x).into())).collect()
    }

    const SORT: OptionSpec =
        OptionSpec::gnu("ot", &["output", "temporary-directory"], &["reverse"]);

    #[test]
    fn bundles_attached_and_prefixes() {
        let items = scan(
            &lits(&["-ro", "out", "in", "--outp=x", "-oy", "--", "-z"]),
            &SORT,
        );
        assert_eq!(
            items,
            vec![
                Item::Opt {
                    name: "-r".into(),
                    value: None
                },
                Item::Opt {
                    name: "-o".into(),
                    value: Some(Arg::Lit("out".into()))
                },
                Item::Operand(Arg::Lit("in".into())),
                Item::Opt {
                    name: "--output".into(),
                    value: Some(Arg::Lit("x".into()))
                },
                Item::Opt {
                    name: "-o".into(),
                    value: Some(Arg::Lit("y".into()))
                },
                Item::Operand(Arg::Lit("-z".into())),
            ]
        );
    }

    #[test]
    fn long_value_takes_next_argument() {
        let items = scan(&lits(&["--output", "f", "a"]), &SORT);
        assert_eq!(values(&items, &["--output"]).count(), 1);
        assert_eq!(operands(&items), lits(&["a"]));
    }

    #[test]
    fn runtime_words_may_be_options() {
        let args = vec![Arg::unknown("$o"), Arg::Glob("*".into())];
        let items = scan(&args, &SORT);
        assert!(items.iter().all(|i| matches!(i, Item::Unknown(_))));
    }

    #[test]
    fn posix_stops_at_first_operand() {
        let spec = OptionSpec::posix("n", &[]);
        let items = scan(&lits(&["-n", "5", "cmd", "-x"]), &spec);
        assert_eq!(operands(&items), lits(&["cmd", "-x"]));
    }

    #[test]
    fn a_prefix_match_keeps_the_next_word_as_an_operand_too() {
        let spec = OptionSpec::gnu("", &["time-style"], &[]);
        let items = scan(&lits(&["--time", "/x"]), &spec);
        assert!(
            items.contains(&Item::Operand(Arg::Lit("/x".into()))),
            "{items:?}"
        );
        assert_eq!(values(&items, &["--time-style"]).count(), 1);
        // An exact match takes its value only.
        let items = scan(&lits(&["--time-style", "iso"]), &spec);
        assert!(operands(&items).is_empty());
    }

    #[test]
    fn options_a_spec_does_not_list_are_unknown() {
        let spec = SORT.flags("rn", &["reverse", "numeric-sort"]);
        let items = scan(
            &lits(&[
                "-rn",
                "-q",
                "--rev",
                "--compress-program=sh",
                "--help",
                "-ox",
                "f",
            ]),
            &spec,
        );
        assert_eq!(
            unknown_options(&items, &spec).collect::<Vec<_>>(),
            vec!["-q", "--compress-program"]
        );
    }

    #[test]
    fn ambiguous_prefix_is_kept() {
        let spec = OptionSpec::gnu("", &["output", "outdir"], &[]);
        let items = scan(&lits(&["--out=x"]), &spec);
        assert!(items[0].is(&["--out"]));
    }
}
