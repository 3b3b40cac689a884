//! How large a command line the kernel passes to a program, and the check that a command fits.
//!
//! `execve` fails with E2BIG ("Argument list too long") when one argument or environment string
//! is longer than `MAX_ARG_STRLEN` (32 pages), or when all of them together, with their
//! pointers, pass a quarter of the stack limit (2 MiB under the usual 8 MiB stack). A command
//! that does not fit would fail inside the sandbox, after bwrap has set it up, with words that
//! say nothing of what to do; [`check`] refuses it before anything starts. Pure.

use std::ffi::OsString;

/// The longest single word (argument or `NAME=VALUE`) the kernel passes, its NUL included: 32
/// pages of 4 KiB (`MAX_ARG_STRLEN`; larger pages only raise it).
pub const MAX_WORD_BYTES: usize = 32 * 4096;

/// The most bytes of words, their NULs and their pointers, arguments and environment together,
/// that spear hands to a program: the kernel's limit under an 8 MiB stack (2 MiB), less 64 KiB
/// for what is added on the way (bwrap's own words before the command, `PWD`).
pub const MAX_EXEC_BYTES: usize = 2 * 1024 * 1024 - 64 * 1024;

/// Whether `command` with `env` fits ([`MAX_WORD_BYTES`], [`MAX_EXEC_BYTES`]); if not, what is
/// too large, in words for the refusal.
pub fn check(command: &[OsString], env: &[(OsString, OsString)]) -> Result<(), String> {
    let pointer = std::mem::size_of::<usize>();
    let mut total = 0usize;
    for (i, word) in command.iter().enumerate() {
        let len = word.len() + 1;
        if len > MAX_WORD_BYTES {
            return Err(format!("word {i} of the command is {} bytes", word.len()));
        }
        total += len + pointer;
    }
    for (name, value) in env {
        let len = name.len() + 1 + value.len() + 1;
        if len > MAX_WORD_BYTES {
            return Err(format!(
                "the environment variable {} is {} bytes",
                name.to_string_lossy(),
                len - 1
            ));
        }
        total += len + pointer;
    }
    total += 2 * pointer;
    if total > MAX_EXEC_BYTES {
        return Err(format!(
            "the command's {} words and its environment are {total} bytes",
            command.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(sizes: &[usize]) -> Vec<OsString> {
        sizes
            .iter()
            .map(|n| OsString::from("x".repeat(*n)))
            .collect()
    }

    #[test]
    fn a_word_up_to_the_kernels_length_fits_and_one_byte_more_does_not() {
        let env = vec![(OsString::from("PATH"), OsString::from("/usr/bin"))];
        let cases: [(&str, Vec<OsString>, bool); 5] = [
            ("a script of 100 KiB", words(&[9, 2, 8, 2, 100 << 10]), true),
            ("the longest word", words(&[MAX_WORD_BYTES - 1]), true),
            ("one byte more", words(&[MAX_WORD_BYTES]), false),
            ("many words within the total", words(&[1000; 1500]), true),
            ("many words past the total", words(&[100_000; 21]), false),
        ];
        for (name, command, fits) in cases {
            assert_eq!(check(&command, &env).is_ok(), fits, "{name}");
        }
    }

    #[test]
    fn the_environment_counts_word_by_word_and_in_the_total() {
        let command = words(&[4]);
        let long = vec![(
            OsString::from("BIG"),
            OsString::from("v".repeat(MAX_WORD_BYTES)),
        )];
        let why = check(&command, &long).unwrap_err();
        assert!(why.contains("BIG"), "{why}");
        let many: Vec<(OsString, OsString)> = (0..30)
            .map(|i| {
                (
                    OsString::from(format!("V{i}")),
                    OsString::from("v".repeat(100_000)),
                )
            })
            .collect();
        assert!(check(&command, &many).is_err());
        assert!(check(&command, &many[..10]).is_ok(), "positive control");
    }
}
