//! Decoding of bash ANSI-C quoting (`$'...'`).
//!
//! Attack stopped: `$'\x74ouch' /x` runs `touch`. A matcher that compares the raw text sees
//! `$'\x74ouch'`, an unknown word; decoding first means the word is matched as what bash runs.

/// Decodes the body of a `$'...'` word the way bash does.
pub(crate) fn decode(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                push_code(&mut out, value & 0xff);
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value = 0u32;
                let mut digits = 0;
                while digits < max {
                    match chars.peek().and_then(|d| d.to_digit(16)) {
                        Some(d) => {
                            value = value.wrapping_mul(16).wrapping_add(d);
                            chars.next();
                            digits += 1;
                        }
                        None => break,
                    }
                }
                if digits == 0 {
                    out.push('\\');
                    out.push(e);
                } else {
                    push_code(&mut out, value);
                }
            }
            'c' => match chars.next() {
                Some(ctl) => push_code(&mut out, u32::from(ctl) & 0x1f),
                None => out.push_str("\\c"),
            },
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// Pushes a code point; bytes that are not valid Unicode scalars become U+FFFD, which no program
/// name or option matches, so decoding can only make a word less likely to match a safe rule.
fn push_code(out: &mut String, code: u32) {
    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn table() {
        for (raw, decoded) in [
            (r"\x74ouch", "touch"),
            (r"\164ouch", "touch"),
            (r"\u0074ouch", "touch"),
            (r"\U00000074ouch", "touch"),
            (r"a\nb", "a\nb"),
            (r"\'", "'"),
            (r"\\", "\\"),
            (r"\q", "\\q"),
            (r"\x", "\\x"),
            (r"\cA", "\x01"),
            ("\\", "\\"),
            (r"-\x65xec", "-exec"),
        ] {
            assert_eq!(decode(raw), decoded, "{raw}");
        }
    }
}
