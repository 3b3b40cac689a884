//! Names the stores accept: content hashes (SHA-256, 64 lowercase hex digits), caller-given
//! ids (sessions, turns) and a workspace's store key. Pure.

use sha2::{Digest, Sha256};

/// Longest caller-given id.
pub(crate) const MAX_ID_LEN: usize = 64;

/// The SHA-256 of `bytes` as 64 lowercase hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// A SHA-256 fed piece by piece, for content read in chunks.
#[derive(Default)]
pub(crate) struct Hasher(Sha256);

impl Hasher {
    /// Feeds `bytes`.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest of everything fed, as 64 lowercase hex digits.
    pub(crate) fn finish(self) -> String {
        hex(&self.0.finalize())
    }
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Whether `s` is a content hash: exactly 64 lowercase hex digits.
///
/// Attack: a reference or manifest hash such as `../../.ssh/id_rsa` used as a file name in the
/// store; nothing but these 64 characters is ever joined to a store directory.
pub(crate) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `s` is a usable caller-given id: 1 to 64 of `A-Z a-z 0-9 - _`.
///
/// Attack: an id such as `..`, `a/../../x` or one with a NUL, used as a directory or file name.
pub(crate) fn is_valid_id(s: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// How many hex digits of the primary root's hash name a workspace's store (128 bits).
pub(crate) const WORKSPACE_KEY_LEN: usize = 32;

/// Whether `name` names a workspace's store: 32 lowercase hex digits.
pub(crate) fn is_store_key(name: &str) -> bool {
    name.len() == WORKSPACE_KEY_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_inputs() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut h = Hasher::default();
        h.update(b"a");
        h.update(b"bc");
        assert_eq!(h.finish(), sha256_hex(b"abc"));
    }

    #[test]
    fn hash_names_table() {
        let good = sha256_hex(b"x");
        let cases: &[(&str, bool)] = &[
            (&good, true),
            (&good[..63], false),
            ("", false),
            (
                "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
                false,
            ),
            (
                "../../../../../../../../../../../../../../../../.ssh/id_rsa.pub",
                false,
            ),
            (
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85/",
                false,
            ),
            (
                "g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                false,
            ),
        ];
        for (s, want) in cases {
            assert_eq!(is_sha256_hex(s), *want, "{s}");
        }
    }

    #[test]
    fn id_table() {
        let long = "a".repeat(MAX_ID_LEN);
        let too_long = "a".repeat(MAX_ID_LEN + 1);
        let cases: &[(&str, bool)] = &[
            ("s1", true),
            ("turn-0001_x", true),
            (&long, true),
            (&too_long, false),
            ("", false),
            (".", false),
            ("..", false),
            ("a/b", false),
            ("a b", false),
            ("a\0b", false),
            ("é", false),
        ];
        for (s, want) in cases {
            assert_eq!(is_valid_id(s), *want, "{s:?}");
        }
    }
}
