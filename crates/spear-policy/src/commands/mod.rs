//! What each program does with its arguments.
//!
//! Every program spear knows is listed once, in [`FAMILIES`]: each family (builtins, system,
//! wrappers, writers, ...) holds a `PROGRAMS` slice of name groups and the analyser of each group.
//! The dispatcher looks a name up once in an index of that table, so the order of the families does
//! not matter, and a name listed twice fails a test. A program no family knows is `SHELL_COMPLEX`
//! (its effects cannot be known), and its absolute operands are vetted as reads.
//!
//! Each entry also says what an option its analyser does not know means ([`UnknownOptions`]): for
//! a program that can run code or write files through options (find, tar, git, sort, sed...), an
//! unknown option could be one of those, so the command is `SHELL_COMPLEX`.

pub(crate) mod archive;
pub(crate) mod awk;
pub(crate) mod backups;
pub(crate) mod build;
pub(crate) mod builtins;
pub(crate) mod git;
pub(crate) mod inline;
pub(crate) mod interpreters;
pub(crate) mod network;
pub(crate) mod options;
pub(crate) mod readers;
pub(crate) mod search;
pub(crate) mod sed;
pub(crate) mod system;
pub(crate) mod workspace_code;
pub(crate) mod wrappers;
pub(crate) mod writers;

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use crate::analysis::{Analysis, Cwd};
use crate::shell::walk::Stdin;
use crate::shell::word::Arg;

/// One program about to run, after the shell has expanded its words.
pub(crate) struct Invocation {
    /// The program as written (a name or a path).
    pub name: String,
    /// Its arguments.
    pub args: Vec<Arg>,
    /// Where its standard input comes from.
    pub stdin: Stdin,
}

/// The command a program runs for each item it finds or reads (`find -exec ... {}`, `fd --exec`,
/// `xargs -I R`): a word holding the placeholder `marker` is known only at run time.
pub(crate) fn with_placeholders(words: &[Arg], marker: &str) -> Vec<Arg> {
    words
        .iter()
        .map(|w| {
            if w.display().contains(marker) {
                Arg::unknown(w.display())
            } else {
                w.clone()
            }
        })
        .collect()
}

/// Directories whose programs are the system's own; `/usr/bin/rm` is `rm`.
const SYSTEM_BIN_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// What an option the analyser of a program does not know means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnknownOptions {
    /// The program has no option that runs code, reads a file spear does not see or writes one,
    /// beyond those its analyser handles: an unknown option only changes what it prints.
    Harmless,
    /// The program has options that run code or write files. One spear does not know could be
    /// such an option (or take a value that shifts the operands), so the command is
    /// `SHELL_COMPLEX`: SAFE still runs it read-only, ASK confirms it.
    Complex,
}

/// One program call as its analyser sees it.
pub(crate) struct Call<'c> {
    /// The program's name (the base name of a system path: `/usr/bin/rm` is `rm`).
    pub name: &'c str,
    /// Its arguments.
    pub args: &'c [Arg],
    /// Where its standard input comes from.
    pub stdin: &'c Stdin,
    /// What an option its analyser does not know means, from its table entry.
    pub unknown_options: UnknownOptions,
}

impl Call<'_> {
    /// Reports each option of `items` that `spec` does not list, when the table says unknown
    /// options of this program are not harmless.
    ///
    /// Attack stopped: an option spear has not modelled (`sort --compress-program=sh`, a new
    /// `tar` option that runs a program) passing as a harmless flag.
    pub(crate) fn check_options(
        &self,
        a: &mut Analysis<'_>,
        items: &[options::Item],
        spec: &options::OptionSpec,
    ) {
        if self.unknown_options == UnknownOptions::Complex {
            for option in options::unknown_options(items, spec) {
                unknown_option(a, self.name, option);
            }
        }
    }
}

impl Call<'_> {
    /// Reports `option`, which the analyser does not know, when the table says unknown options of
    /// this program are not harmless (for analysers that read their options by hand).
    pub(crate) fn unknown_option(&self, a: &mut Analysis<'_>, option: &str) {
        if self.unknown_options == UnknownOptions::Complex {
            unknown_option(a, self.name, option);
        }
    }
}

/// Records that `program` was given `option`, which spear does not know, for a program whose
/// unknown options are not harmless.
pub(crate) fn unknown_option(a: &mut Analysis<'_>, program: &str, option: &str) {
    a.complex(format!(
        "`{program} {option}` is an option spear does not know, and {program} has options that \
         run programs, write files or choose what it runs"
    ));
}

/// An analyser: what one program does with its arguments.
pub(crate) type AnalyseFn = fn(&mut Analysis<'_>, &Call<'_>, &mut Cwd);

/// How a program of the table is analysed.
#[derive(Clone, Copy)]
pub(crate) enum Analyser {
    /// A function of its family.
    Fn(AnalyseFn),
    /// A read-only program described by its options ([`readers::Reader`]).
    Reader(readers::Reader),
}

/// How the names of a group match the program run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Naming {
    /// The name exactly.
    Exact,
    /// The name, or the name followed by a version (`python3.11` is `python`).
    Versioned,
    /// Any program whose name starts with one of the names (`mkfs.ext4`).
    Prefix,
}

/// A group of programs analysed the same way.
#[derive(Clone, Copy)]
pub(crate) struct Programs {
    /// The program names.
    pub names: &'static [&'static str],
    /// How the names match.
    pub naming: Naming,
    /// Their analyser.
    pub analyser: Analyser,
    /// What an option the analyser does not know means.
    pub unknown_options: UnknownOptions,
}

impl Programs {
    /// Programs whose unknown options only change what they print.
    pub(crate) const fn harmless(names: &'static [&'static str], analyse: AnalyseFn) -> Self {
        Programs {
            names,
            naming: Naming::Exact,
            analyser: Analyser::Fn(analyse),
            unknown_options: UnknownOptions::Harmless,
        }
    }

    /// Programs with options that run code or write files: an unknown option is `SHELL_COMPLEX`.
    pub(crate) const fn complex(names: &'static [&'static str], analyse: AnalyseFn) -> Self {
        Programs {
            unknown_options: UnknownOptions::Complex,
            ..Programs::harmless(names, analyse)
        }
    }

    /// Read-only programs described by their options; an unknown option only changes what they
    /// print.
    pub(crate) const fn reader(spec: readers::Reader) -> Self {
        Programs {
            names: spec.names,
            naming: Naming::Exact,
            analyser: Analyser::Reader(spec),
            unknown_options: UnknownOptions::Harmless,
        }
    }

    /// Read-only programs described by their options, with options that write files or run
    /// programs: an unknown option is `SHELL_COMPLEX`.
    pub(crate) const fn strict_reader(spec: readers::Reader) -> Self {
        Programs {
            unknown_options: UnknownOptions::Complex,
            ..Programs::reader(spec)
        }
    }

    /// The same programs, matched by `naming`.
    pub(crate) const fn named(self, naming: Naming) -> Self {
        Programs { naming, ..self }
    }
}

/// The program table: every family's programs. Each name appears once in it (a test checks).
pub(crate) static FAMILIES: &[&[Programs]] = &[
    builtins::PROGRAMS,
    system::PROGRAMS,
    wrappers::PROGRAMS,
    writers::PROGRAMS,
    search::PROGRAMS,
    archive::PROGRAMS,
    network::PROGRAMS,
    build::PROGRAMS,
    interpreters::PROGRAMS,
    git::PROGRAMS,
    sed::PROGRAMS,
    awk::PROGRAMS,
    readers::PROGRAMS,
];

/// The table by name, built on first use: exact and versioned names in a map, the few prefix
/// groups beside it.
struct Index {
    by_name: HashMap<&'static str, &'static Programs>,
    prefixed: Vec<&'static Programs>,
}

static INDEX: LazyLock<Index> = LazyLock::new(|| {
    let mut by_name = HashMap::new();
    let mut prefixed = Vec::new();
    for group in FAMILIES.iter().flat_map(|f| f.iter()) {
        if group.naming == Naming::Prefix {
            prefixed.push(group);
            continue;
        }
        for name in group.names {
            by_name.entry(*name).or_insert(group);
        }
    }
    Index { by_name, prefixed }
});

/// A name without a version at its end (`python3.11` is `python`).
fn unversioned(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

/// The table entry of a program name, if spear knows it.
pub(crate) fn lookup(name: &str) -> Option<&'static Programs> {
    let index = &*INDEX;
    if let Some(group) = index.by_name.get(name) {
        return Some(group);
    }
    let base = unversioned(name);
    if base != name
        && let Some(group) = index.by_name.get(base)
        && group.naming == Naming::Versioned
    {
        return Some(group);
    }
    index
        .prefixed
        .iter()
        .find(|g| g.names.iter().any(|p| name.starts_with(p)))
        .copied()
}

/// Analyses one program invocation.
pub(crate) fn analyse(a: &mut Analysis<'_>, inv: Invocation, cwd: &mut Cwd) {
    let Invocation { name, args, stdin } = inv;
    let program = if name.contains('/') {
        let path = Path::new(&name);
        let in_system_dir = path
            .parent()
            .is_some_and(|d| SYSTEM_BIN_DIRS.iter().any(|s| d == Path::new(s)));
        match path.file_name().map(|f| f.to_string_lossy().into_owned()) {
            Some(base) if in_system_dir => base,
            _ => {
                a.runs(&name);
                a.complex(format!(
                    "`{name}` is a program given by its path; spear cannot know what it does"
                ));
                a.read_path(&Arg::Lit(name.clone()), cwd);
                for arg in &args {
                    a.unknown_operand(arg, cwd);
                }
                return;
            }
        }
    } else {
        name
    };
    a.runs(&program);
    let name = program.as_str();
    let Some(group) = lookup(name) else {
        a.complex(format!(
            "`{name}` is not a program spear knows, so what it does cannot be known"
        ));
        for arg in &args {
            a.unknown_operand(arg, cwd);
        }
        return;
    };
    let call = Call {
        name,
        args: &args,
        stdin: &stdin,
        unknown_options: group.unknown_options,
    };
    match &group.analyser {
        Analyser::Fn(analyse) => analyse(a, &call, cwd),
        Analyser::Reader(spec) => readers::analyse(a, &call, spec, cwd),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Every (family, group) that claims `name`, by exact name, by version or by prefix.
    fn claims(name: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (f, family) in FAMILIES.iter().enumerate() {
            for (g, group) in family.iter().enumerate() {
                let claimed = group.names.iter().any(|n| match group.naming {
                    Naming::Exact => *n == name,
                    Naming::Versioned => *n == name || *n == unversioned(name),
                    Naming::Prefix => name.starts_with(n),
                });
                if claimed {
                    out.push((f, g));
                }
            }
        }
        out
    }

    #[test]
    fn each_program_name_is_listed_once() {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for group in FAMILIES.iter().flat_map(|f| f.iter()) {
            for name in group.names {
                *seen.entry(name).or_default() += 1;
            }
        }
        let twice: Vec<&str> = seen
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(name, _)| *name)
            .collect();
        assert!(twice.is_empty(), "listed more than once: {twice:?}");
        // No name is also claimed by another group's version or prefix rule, so no order
        // between the groups decides which analyser runs.
        let ambiguous: Vec<(&str, Vec<(usize, usize)>)> = seen
            .keys()
            .map(|name| (*name, claims(name)))
            .filter(|(_, c)| c.len() > 1)
            .collect();
        assert!(
            ambiguous.is_empty(),
            "claimed by several groups: {ambiguous:?}"
        );
    }

    /// Every program whose table entry says unknown options are not harmless is `SHELL_COMPLEX`
    /// with an option spear does not know, and the reason names the program and the option; a
    /// program whose unknown options are harmless stays as it was.
    #[test]
    fn unknown_options_mean_what_the_table_says() {
        use spear_core::CommandClass;
        let fx = crate::tests_support::fixture();
        let mut failures = Vec::new();
        for group in FAMILIES.iter().flat_map(|f| f.iter()) {
            if group.unknown_options != UnknownOptions::Complex {
                continue;
            }
            for name in group.names {
                // `command`, so that `time` is the program, not bash's keyword.
                let mut scripts = vec![format!("command {name} --spear-unknown-option x")];
                if *name == "git" {
                    scripts.push("git status --spear-unknown-option".to_owned());
                    scripts.push("git log -1 --spear-unknown-option".to_owned());
                }
                for script in scripts {
                    let a = fx.policy.classify_script(&script, &fx.ws);
                    if a.class != CommandClass::ShellComplex
                        || !a.reason.contains("--spear-unknown-option")
                        || !a.reason.contains(name)
                    {
                        failures.push(format!("{script}: {} ({})", a.class, a.reason));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        for script in [
            "ls --spear-unknown-option",
            "cat --spear-unknown-option README.md",
        ] {
            let a = fx.policy.classify_script(script, &fx.ws);
            assert_eq!(a.class, CommandClass::ReadOnly, "{script}: {}", a.reason);
        }
        for script in [
            "sort --compress-program=sh x",
            "sort --spear-unknown-option=1 x",
            "tar -xf a.tar --spear-unknown-option",
            "find . -name x -spear-unknown",
            "sed --spear-unknown-option -n p x",
            "git --spear-unknown-option status",
        ] {
            let a = fx.policy.classify_script(script, &fx.ws);
            assert_eq!(
                a.class,
                CommandClass::ShellComplex,
                "{script}: {}",
                a.reason
            );
        }
    }

    #[test]
    fn lookup_finds_versions_and_prefixes_only_where_declared() {
        let analysed_by = |name: &str| lookup(name).map(|g| g.names[0]);
        assert_eq!(analysed_by("python3.11"), Some("python"));
        assert_eq!(analysed_by("mkfs.ext4"), Some("mkfs"));
        assert_eq!(analysed_by("sha256sum"), Some("cat"));
        assert_eq!(analysed_by("cat2"), None);
        assert_eq!(analysed_by("no-such-program"), None);
        for (f, family) in FAMILIES.iter().enumerate() {
            for (g, group) in family.iter().enumerate() {
                for name in group.names {
                    if group.naming != Naming::Prefix {
                        let found =
                            lookup(name).map(|x| std::ptr::eq(x, &raw const FAMILIES[f][g]));
                        assert_eq!(found, Some(true), "{name}");
                    }
                }
            }
        }
    }
}
