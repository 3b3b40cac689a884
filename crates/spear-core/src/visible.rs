//! Terminal control sequences shown as text.
//!
//! What spear returns to a client (a command's output, a file's content, a fetched page, a path
//! in a refusal) is data, and a client may print it on a terminal or hand it to one. Attack
//! stopped: an OSC 52 sequence (`ESC ] 52 ; c ; BASE64 BEL`) in a fetched page or a file that
//! writes the user's clipboard when the client shows the result, CSI sequences that move the
//! cursor, clear the screen or rewrite what was shown, and the same through the C1 forms
//! (U+009B is a CSI by itself).
//!
//! [`escape_controls`] shows every C0 and C1 control character (U+0000–U+001F, U+007F–U+009F) as
//! `\u{1b}`, the form spear's confirmations use ([`push_escaped`]), except:
//! - newline and tab, which are text;
//! - a carriage return right before a newline (a CRLF line ending, common in files): it moves
//!   nothing that the newline does not. A lone carriage return returns the cursor to the start of
//!   the line, so that what follows overwrites what was shown (`rm -rf /\rls`): it is escaped.
//!
//! Text without a control character is returned unchanged, byte for byte. Invalid UTF-8 never
//! reaches here: spear decodes output and files lossily (a lone byte is U+FFFD, which is not a
//! control), so a raw C1 byte (0x9B) is already harmless; its UTF-8 form (C2 9B) is escaped.
//!
//! The escaped form is not ambiguous with what the text already held as long as the reader knows
//! where escaping happened: a result says, per field, how many characters were escaped, and a
//! field with none is exactly the text.

/// Whether `c` is shown escaped when the next character is `next`.
fn is_escaped(c: char, next: Option<char>) -> bool {
    match c {
        '\n' | '\t' => false,
        '\r' => next != Some('\n'),
        _ => c.is_control(),
    }
}

/// Appends `c` to `out` as `\u{XX}` (lower-case hexadecimal, as Rust's `char::escape_unicode`).
pub fn push_escaped(out: &mut String, c: char) {
    out.extend(c.escape_unicode());
}

/// Whether `text` holds a character [`escape_controls`] would escape. Reads bytes: a C0 control
/// or DEL is one byte below 0x20 or 0x7F, a C1 control is `0xC2 0x80..=0x9F` in UTF-8.
pub fn has_controls(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let control = match b {
            b'\n' | b'\t' => false,
            b'\r' => bytes.get(i + 1) != Some(&b'\n'),
            0x00..=0x1f | 0x7f => true,
            0xc2 => bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)),
            _ => false,
        };
        if control {
            return true;
        }
        i += 1;
    }
    false
}

/// `text` with its control characters shown escaped (see the module's doc) and how many were,
/// or `None` when it holds none (then `text` is what to return, unchanged).
pub fn escape_controls(text: &str) -> Option<(String, usize)> {
    if !has_controls(text) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 64);
    let mut count = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if is_escaped(c, chars.peek().copied()) {
            push_escaped(&mut out, c);
            count += 1;
        } else {
            out.push(c);
        }
    }
    Some((out, count))
}

/// Escapes `text` in place; returns how many characters were escaped (0: unchanged).
pub fn escape_controls_in(text: &mut String) -> usize {
    match escape_controls(text) {
        Some((escaped, count)) => {
            *text = escaped;
            count
        }
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_and_text_is_kept() {
        let cases: &[(&str, Option<(&str, usize)>)] = &[
            ("plain text\nwith lines\tand tabs\n", None),
            ("crlf line\r\nnext\r\n", None),
            ("é ü 中文 😀 \u{a0} \u{ad}", None),
            ("\u{fffd}", None),
            (
                "a\u{1b}]52;c;aGk=\u{7}b",
                Some(("a\\u{1b}]52;c;aGk=\\u{7}b", 2)),
            ),
            ("\u{1b}[2J\u{1b}[H", Some(("\\u{1b}[2J\\u{1b}[H", 2))),
            ("x\u{9b}31m", Some(("x\\u{9b}31m", 1))),
            (
                "\u{85}\u{80}\u{9f}\u{7f}\u{0}",
                Some(("\\u{85}\\u{80}\\u{9f}\\u{7f}\\u{0}", 5)),
            ),
            ("rm -rf /\rls", Some(("rm -rf /\\u{d}ls", 1))),
            ("end\r", Some(("end\\u{d}", 1))),
            ("\r\r\n", Some(("\\u{d}\r\n", 1))),
            ("bell\u{7}", Some(("bell\\u{7}", 1))),
        ];
        for (text, want) in cases {
            let got = escape_controls(text);
            let got = got.as_ref().map(|(s, n)| (s.as_str(), *n));
            assert_eq!(got, *want, "{text:?}");
            assert_eq!(has_controls(text), want.is_some(), "{text:?}");
            if let Some((escaped, _)) = want {
                assert!(!has_controls(escaped), "{escaped:?} still has controls");
            }
        }
    }

    #[test]
    fn every_c0_and_c1_control_is_escaped_and_nothing_else() {
        for c in (0..=0x0010_ffff_u32).filter_map(char::from_u32) {
            let text = format!("a{c}b");
            let escaped = escape_controls(&text).is_some();
            let control = c.is_control() && c != '\n' && c != '\t';
            assert_eq!(escaped, control, "U+{:04X}", c as u32);
        }
    }
}
