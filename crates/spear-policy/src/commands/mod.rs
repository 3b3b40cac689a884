//! What each program does with its arguments.
//!
//! The dispatcher tries the families in order; a program no family knows is `SHELL_COMPLEX` (its
//! effects cannot be known), and its absolute operands are vetted as reads.

pub(crate) mod archive;
pub(crate) mod awk;
pub(crate) mod backups;
pub(crate) mod build;
pub(crate) mod builtins;
pub(crate) mod git;
pub(crate) mod interpreters;
pub(crate) mod network;
pub(crate) mod options;
pub(crate) mod readers;
pub(crate) mod search;
pub(crate) mod sed;
pub(crate) mod system;
pub(crate) mod wrappers;
pub(crate) mod writers;

use std::path::Path;

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
    if builtins::analyse(a, name, &args, cwd, &stdin)
        || system::analyse(a, name, &args, cwd)
        || wrappers::analyse(a, name, &args, cwd, &stdin)
        || writers::analyse(a, name, &args, cwd)
        || search::analyse(a, name, &args, cwd)
        || archive::analyse(a, name, &args, cwd)
        || network::analyse(a, name, &args, cwd)
        || build::analyse(a, name, &args, cwd)
        || interpreters::analyse(a, name, &args, cwd, &stdin)
    {
        return;
    }
    match name {
        "git" => git::analyse(a, &args, cwd),
        "sed" | "gsed" => sed::analyse(a, &args, cwd),
        "awk" | "gawk" | "mawk" | "nawk" => awk::analyse(a, name, &args, cwd),
        _ => {
            if let Some(spec) = readers::find(name) {
                readers::analyse(a, name, spec, &args, cwd);
            } else {
                a.complex(format!(
                    "`{name}` is not a program spear knows, so what it does cannot be known"
                ));
                for arg in &args {
                    a.unknown_operand(arg, cwd);
                }
            }
        }
    }
}
