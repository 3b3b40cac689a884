//! Whether an arithmetic expression is inert.
//!
//! Attack stopped: bash evaluates arithmetic recursively. `$((x))` evaluates the *value* of `x` as
//! an expression, and an array subscript such as `a[$(touch /x)]` inside it runs the command, even
//! when the text came from a single-quoted string or from stdin. So an arithmetic expression is
//! harmless only when it names no variable, assigns nothing and substitutes nothing.

/// True when `expr` holds only numbers (decimal, `0x..`, `base#digits`), operators, parentheses and
/// spaces: no identifier, no `$`, no backquote, no subscript, no assignment or increment.
// Each arm is one class of byte (separator, `!`, sign, `=`), kept apart for review.
#[allow(clippy::match_same_arms)]
pub(crate) fn is_inert(expr: &str) -> bool {
    let bytes = expr.as_bytes();
    let mut in_number = false;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'0'..=b'9' => in_number = true,
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'#' | b'@' if in_number => {}
            b' ' | b'\t' | b'\n' | b'(' | b')' | b'*' | b'/' | b'%' | b'<' | b'>' | b'&' | b'|'
            | b'^' | b'~' | b'?' | b':' | b',' => in_number = false,
            b'!' => in_number = false,
            b'+' | b'-' => {
                // `++` and `--` assign.
                if bytes.get(i + 1) == Some(&b) {
                    return false;
                }
                in_number = false;
            }
            b'=' => {
                // `==`, `!=`, `<=`, `>=` compare; any other `=` assigns (`=`, `+=`, `<<=` ...).
                let prev = i.checked_sub(1).map(|p| bytes[p]);
                let next = bytes.get(i + 1).copied();
                let compares = next == Some(b'=')
                    || (matches!(prev, Some(b'=' | b'!' | b'<' | b'>'))
                        && !(prev == Some(b'<') && i >= 2 && bytes[i - 2] == b'<')
                        && !(prev == Some(b'>') && i >= 2 && bytes[i - 2] == b'>'));
                if !compares {
                    return false;
                }
                in_number = false;
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::is_inert;

    #[test]
    fn table() {
        for (expr, inert) in [
            ("1+2", true),
            ("(3 * 4) % 5", true),
            ("0x1f + 16#ff", true),
            ("1 == 2", true),
            ("1 <= 2 && 3 >= 2", true),
            ("1 != 2", true),
            ("x", false),
            ("x+1", false),
            ("i++", false),
            ("--i", false),
            ("x=3", false),
            ("1<<=2", false),
            ("a[$(touch /x)]", false),
            ("$(id)", false),
            ("`id`", false),
            ("$x", false),
            ("a[1]", false),
        ] {
            assert_eq!(is_inert(expr), inert, "{expr}");
        }
    }
}
