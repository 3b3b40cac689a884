//! Tokens handed to one server at its start: `spear mcp --listen ADDR --token-file FILE` (`-`:
//! standard input). A program that starts a node for itself (the Python package's `spear.Node`,
//! a test) makes a fresh value, writes it to the server's standard input and forgets nothing in
//! the operator's store; a Kubernetes pod mounts its tokens from a Secret. Each token grants what
//! the server itself serves, for the server's life.
//!
//! Attacks stopped:
//! - a weak or mistyped token: one shorter than [`TOKEN_FILE_MIN`] characters, or holding a
//!   character a header cannot carry, refuses the server at start, naming the line;
//! - the values lingering in memory, where a core dump or `/proc/PID/mem` of a crash would show
//!   them: only their SHA-256 hashes are kept once the file is read;
//! - a timing oracle on the comparison: hashes are compared in constant time, every one of them;
//! - a file that never ends (a pipe, `/dev/zero`): at most [`TOKEN_FILE_MAX`] bytes are read.
//!
//! Keeping the file out of every sandbox's view is the caller's part (the server adds it to the
//! paths it masks, as it does the TLS key).

use std::io::Read as _;
use std::path::Path;

use sha2::Digest as _;
use subtle::ConstantTimeEq as _;

/// The fewest characters a token of the file may have: 32, as `openssl rand -hex 16` prints.
pub const TOKEN_FILE_MIN: usize = 32;
/// The most characters a token of the file may have.
const TOKEN_MAX: usize = 4096;
/// The most bytes read from the file (about a thousand tokens).
pub const TOKEN_FILE_MAX: u64 = 1 << 20;

/// The tokens of a token file, as hashes: one per line, blank lines and lines starting with `#`
/// ignored, at least one.
#[derive(Clone)]
pub struct TokenFile {
    hashes: Vec<[u8; 32]>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenFile")
            .field("tokens", &self.hashes.len())
            .finish()
    }
}

/// Why a token file cannot be used; never repeats a value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("the token file {path} cannot be read: {why}")]
    Read {
        /// The path as given (`-` for standard input).
        path: String,
        /// What the system said.
        why: String,
    },
    /// The file is larger than [`TOKEN_FILE_MAX`].
    #[error("the token file {path} is larger than {TOKEN_FILE_MAX} bytes")]
    TooLarge {
        /// The path as given.
        path: String,
    },
    /// The file is not UTF-8.
    #[error("the token file is not UTF-8 text")]
    NotText,
    /// The file holds no token.
    #[error(
        "the token file holds no token: write one per line (for example the output of `openssl \
         rand -hex 32`)"
    )]
    Empty,
    /// A line's token is shorter than [`TOKEN_FILE_MIN`] characters.
    #[error(
        "line {line} of the token file is {len} characters long, under the {TOKEN_FILE_MIN} a \
         token needs: make one with `openssl rand -hex 32`"
    )]
    TooShort {
        /// The line, from 1.
        line: usize,
        /// Its length in characters.
        len: usize,
    },
    /// A line's token is longer than the server takes.
    #[error("line {line} of the token file is over {TOKEN_MAX} characters long")]
    TooLong {
        /// The line, from 1.
        line: usize,
    },
    /// A line holds a character that an `Authorization` header cannot carry as a token (a space,
    /// a control character, anything outside printable ASCII).
    #[error(
        "line {line} of the token file holds a character a bearer token cannot have (only \
         printable ASCII without spaces)"
    )]
    BadCharacter {
        /// The line, from 1.
        line: usize,
    },
}

impl TokenFile {
    /// The tokens of `text`: one per line (a trailing `\r` and the line's surrounding spaces
    /// dropped), blank lines and `#` comments ignored. Pure.
    ///
    /// # Errors
    /// The first line that is not a usable token, or [`TokenFileError::Empty`].
    pub fn parse(text: &str) -> Result<Self, TokenFileError> {
        let mut hashes = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let token = line.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
            if token.is_empty() || token.starts_with('#') {
                continue;
            }
            let line = index + 1;
            if !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(TokenFileError::BadCharacter { line });
            }
            if token.len() < TOKEN_FILE_MIN {
                return Err(TokenFileError::TooShort {
                    line,
                    len: token.len(),
                });
            }
            if token.len() > TOKEN_MAX {
                return Err(TokenFileError::TooLong { line });
            }
            hashes.push(sha2::Sha256::digest(token.as_bytes()).into());
        }
        if hashes.is_empty() {
            return Err(TokenFileError::Empty);
        }
        Ok(Self { hashes })
    }

    /// Reads and parses `path`, or standard input for `-`, to its end (at most
    /// [`TOKEN_FILE_MAX`] bytes).
    ///
    /// # Errors
    /// The file cannot be read, is too large, is not text, or holds no usable token.
    pub fn read(path: &Path) -> Result<Self, TokenFileError> {
        let shown = path.display().to_string();
        let failed = |e: std::io::Error| TokenFileError::Read {
            path: shown.clone(),
            why: e.to_string(),
        };
        let mut bytes = Vec::new();
        if path == Path::new("-") {
            std::io::stdin()
                .lock()
                .take(TOKEN_FILE_MAX + 1)
                .read_to_end(&mut bytes)
                .map_err(failed)?;
        } else {
            std::fs::File::open(path)
                .and_then(|f| f.take(TOKEN_FILE_MAX + 1).read_to_end(&mut bytes))
                .map_err(failed)?;
        }
        if bytes.len() as u64 > TOKEN_FILE_MAX {
            return Err(TokenFileError::TooLarge { path: shown });
        }
        let text = String::from_utf8(bytes).map_err(|_| TokenFileError::NotText)?;
        Self::parse(&text)
    }

    /// How many tokens the file holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Never true: a token file holds at least one token.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Which token `presented` is (its position among the file's tokens, from 1), or none. Every
    /// stored hash is compared, in constant time.
    #[must_use]
    pub fn verify(&self, presented: &str) -> Option<usize> {
        let hash: [u8; 32] = sha2::Sha256::digest(presented.as_bytes()).into();
        let mut found = None;
        for (index, stored) in self.hashes.iter().enumerate() {
            if bool::from(stored.ct_eq(&hash)) {
                found = Some(index + 1);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "spear_Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA";

    #[test]
    fn each_token_is_known_by_its_position_and_nothing_else_is_accepted() {
        let file = TokenFile::parse(&format!("# tokens\n\n{A}\r\n  {B}  \n")).unwrap();
        assert_eq!(file.len(), 2);
        assert_eq!(file.verify(A), Some(1));
        assert_eq!(file.verify(B), Some(2));
        for wrong in [
            "",
            "x",
            &A[1..],
            &format!("{A} "),
            &A.to_uppercase(),
            "# tokens",
        ] {
            assert_eq!(file.verify(wrong), None, "{wrong:?}");
        }
    }

    #[test]
    fn a_file_that_is_not_a_list_of_usable_tokens_is_refused_naming_its_line() {
        let cases: &[(&str, TokenFileError)] = &[
            ("", TokenFileError::Empty),
            ("# only a comment\n\n", TokenFileError::Empty),
            ("short\n", TokenFileError::TooShort { line: 1, len: 5 }),
            (
                &format!("{A}\n{}\n", &A[..31]),
                TokenFileError::TooShort { line: 2, len: 31 },
            ),
            (
                &format!("{A}\n\n{A} {A}\n"),
                TokenFileError::BadCharacter { line: 3 },
            ),
            (
                &format!("{A}\u{e9}\n"),
                TokenFileError::BadCharacter { line: 1 },
            ),
            (
                &format!("{A}\u{7}\n"),
                TokenFileError::BadCharacter { line: 1 },
            ),
            (&"a".repeat(4097), TokenFileError::TooLong { line: 1 }),
        ];
        for (text, want) in cases {
            assert_eq!(TokenFile::parse(text).unwrap_err(), *want, "{text:?}");
        }
        // The positive control: the longest and the shortest accepted.
        assert!(TokenFile::parse(&"a".repeat(4096)).is_ok());
        assert!(TokenFile::parse(A).is_ok());
    }

    #[test]
    fn a_refusal_never_repeats_the_token() {
        let secret = "s3cr3t-value";
        let message = TokenFile::parse(secret).unwrap_err().to_string();
        assert!(!message.contains(secret), "{message}");
        assert!(!format!("{:?}", TokenFile::parse(A).unwrap()).contains(A));
    }

    #[test]
    fn a_file_is_read_to_its_end_and_a_huge_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, format!("{A}\n")).unwrap();
        assert_eq!(TokenFile::read(&path).unwrap().verify(A), Some(1));
        std::fs::write(
            &path,
            "a".repeat(usize::try_from(TOKEN_FILE_MAX).unwrap() + 1),
        )
        .unwrap();
        assert!(matches!(
            TokenFile::read(&path),
            Err(TokenFileError::TooLarge { .. })
        ));
        assert!(matches!(
            TokenFile::read(&dir.path().join("missing")),
            Err(TokenFileError::Read { .. })
        ));
        std::fs::write(&path, b"\xff\xfe").unwrap();
        assert_eq!(TokenFile::read(&path).unwrap_err(), TokenFileError::NotText);
    }
}
