//! Files a program writes beside the ones it is asked to: backups and derived names.
//!
//! Attack stopped: `sed -i'.git/hooks/*' s/x/x/ pre-commit` edits `pre-commit` and leaves its
//! original, attacker-written content as `.git/hooks/pre-commit`, a hook. GNU sed and perl replace
//! each `*` of the backup suffix with the file name as written, relative to the working directory
//! (checked against both); without a `*`, the suffix is appended.

use crate::analysis::{Analysis, Cwd};
use crate::shell::word::Arg;

/// The backup name of `file` for the in-place suffix `suffix` (GNU sed, perl, ruby).
pub(crate) fn backup_name(file: &str, suffix: &str) -> String {
    if suffix.contains('*') {
        suffix.replace('*', file)
    } else {
        format!("{file}{suffix}")
    }
}

/// Records the backup `program` makes of `file` with `suffix` as a write target. Nothing when the
/// suffix is empty (no backup).
pub(crate) fn write_backup(
    a: &mut Analysis<'_>,
    file: &Arg,
    suffix: &str,
    cwd: &Cwd,
    program: &str,
) {
    if suffix.is_empty() {
        return;
    }
    if let Some(name) = file.lit() {
        a.write_path(&Arg::Lit(backup_name(name, suffix)), cwd, program);
    } else {
        a.complex(format!("{program} writes a backup named at run time"));
        let raw = format!("{}{suffix}", file.display());
        a.write_path(
            &Arg::Dyn {
                raw,
                prefix: String::new(),
            },
            cwd,
            program,
        );
    }
}

/// The suffix GNU coreutils' `--backup`/`-b` appends: `-S SUFFIX`/`--suffix`, else `~`. A suffix
/// with a `/` is ignored by coreutils, which then uses `~`.
pub(crate) fn coreutils_suffix(suffix: Option<&str>) -> String {
    match suffix {
        Some(s) if !s.is_empty() && !s.contains('/') => s.to_owned(),
        _ => "~".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(backup_name("f", ".orig"), "f.orig");
        assert_eq!(backup_name("f", "bak/*.old"), "bak/f.old");
        assert_eq!(backup_name("sub/g", "x_*"), "x_sub/g");
        assert_eq!(
            backup_name("pre-commit", ".git/hooks/*"),
            ".git/hooks/pre-commit"
        );
        assert_eq!(coreutils_suffix(None), "~");
        assert_eq!(coreutils_suffix(Some(".prev")), ".prev");
        assert_eq!(coreutils_suffix(Some("/x")), "~");
    }
}
