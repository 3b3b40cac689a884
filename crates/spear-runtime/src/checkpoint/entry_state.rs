//! What an entry was at one moment ([`EntryState`]), and how paths are kept in a manifest.
//!
//! Paths in manifests are bytes: a name that is valid UTF-8 is stored as a string, any other as
//! `{"hex": "..."}`, so every name a filesystem allows survives a round trip exactly.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The state of one workspace entry at one moment. Modes hold the permission bits (`0o777`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EntryState {
    /// Nothing there (nor a directory on the way to it).
    Absent,
    /// A regular file whose content is the blob `hash`.
    File {
        /// Permission bits.
        mode: u32,
        /// SHA-256 of the content, the blob's name.
        hash: String,
        /// Size of the content in bytes.
        size: u64,
    },
    /// A symbolic link (never followed).
    Symlink {
        /// The target as stored.
        #[serde(with = "path_bytes")]
        target: PathBuf,
    },
    /// A directory (only its mode: what is in it is recorded entry by entry).
    Dir {
        /// Permission bits.
        mode: u32,
    },
}

impl EntryState {
    /// A short description for messages: "a file of 12 bytes, mode 0644, sha256 1a2b3c4d5e6f".
    pub fn describe(&self) -> String {
        match self {
            EntryState::Absent => "nothing (absent)".to_owned(),
            EntryState::File { mode, hash, size } => format!(
                "a file of {size} bytes, mode {mode:04o}, sha256 {}",
                hash.get(..12).unwrap_or(hash)
            ),
            EntryState::Symlink { target } => {
                format!("a symbolic link to {}", target.display())
            }
            EntryState::Dir { mode } => format!("a directory, mode {mode:04o}"),
        }
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        matches!(self, EntryState::Dir { .. })
    }
}

/// Serde for a path as bytes: a string when it is UTF-8, else `{"hex": "..."}`.
pub(crate) mod path_bytes {
    use std::ffi::OsString;
    use std::fmt::Write;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::path::{Path, PathBuf};

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    #[serde(untagged)]
    enum Out<'a> {
        Text(&'a str),
        Bytes { hex: String },
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum In {
        Text(String),
        Bytes { hex: String },
    }

    /// Writes `path`.
    pub(crate) fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        match path.to_str() {
            Some(text) => Out::Text(text).serialize(s),
            None => Out::Bytes {
                hex: path
                    .as_os_str()
                    .as_bytes()
                    .iter()
                    .fold(String::new(), |mut out, b| {
                        let _ = write!(out, "{b:02x}");
                        out
                    }),
            }
            .serialize(s),
        }
    }

    /// Reads a path written by [`serialize`].
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        match In::deserialize(d)? {
            In::Text(text) => Ok(PathBuf::from(text)),
            In::Bytes { hex } => {
                let bytes = unhex(&hex)
                    .ok_or_else(|| serde::de::Error::custom("a path's hex is malformed"))?;
                Ok(PathBuf::from(OsString::from_vec(bytes)))
            }
        }
    }

    fn unhex(hex: &str) -> Option<Vec<u8>> {
        if !hex.len().is_multiple_of(2) {
            return None;
        }
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct P {
        #[serde(with = "path_bytes")]
        p: PathBuf,
    }

    #[test]
    fn paths_round_trip_including_non_utf8() {
        let cases = [
            PathBuf::from("src/main.rs"),
            PathBuf::from(""),
            PathBuf::from("dir/é €"),
            PathBuf::from(OsString::from_vec(b"bad\xff\xfename".to_vec())),
        ];
        for p in cases {
            let v = P { p };
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<P>(&json).unwrap(), v, "{json}");
        }
        let json = serde_json::to_string(&P {
            p: PathBuf::from(OsString::from_vec(vec![0xff])),
        })
        .unwrap();
        assert_eq!(json, r#"{"p":{"hex":"ff"}}"#);
        assert!(serde_json::from_str::<P>(r#"{"p":{"hex":"f"}}"#).is_err());
        assert!(serde_json::from_str::<P>(r#"{"p":{"hex":"zz"}}"#).is_err());
    }

    #[test]
    fn states_round_trip_and_describe() {
        let cases = [
            (EntryState::Absent, "nothing (absent)"),
            (
                EntryState::File {
                    mode: 0o644,
                    hash: "0123456789abcdef".repeat(4),
                    size: 12,
                },
                "a file of 12 bytes, mode 0644, sha256 0123456789ab",
            ),
            (
                EntryState::Symlink {
                    target: PathBuf::from("../x"),
                },
                "a symbolic link to ../x",
            ),
            (EntryState::Dir { mode: 0o755 }, "a directory, mode 0755"),
        ];
        for (state, want) in cases {
            assert_eq!(state.describe(), want);
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(serde_json::from_str::<EntryState>(&json).unwrap(), state);
        }
        assert_eq!(
            serde_json::to_string(&EntryState::Dir { mode: 0o700 }).unwrap(),
            r#"{"kind":"dir","mode":448}"#
        );
    }
}
