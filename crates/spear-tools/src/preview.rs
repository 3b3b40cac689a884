//! The preview of a long output: its head and tail, with a line in between saying how much was
//! cut and how to read it.

/// `text` cut to at most `max_chars` characters (plus the marker line) keeping the first and last
/// parts, and how many characters were cut. `marker` gets the count and returns the line put in
/// between.
pub fn cut(text: &str, max_chars: usize, marker: impl FnOnce(usize) -> String) -> (String, usize) {
    let total = text.chars().count();
    if total <= max_chars {
        return (text.to_owned(), 0);
    }
    let head_chars = max_chars * 2 / 5;
    let tail_chars = max_chars - head_chars;
    let head_end = text
        .char_indices()
        .nth(head_chars)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail_chars)
        .map_or(text.len(), |(i, _)| i);
    let cut = total - head_chars - tail_chars;
    let mut out = String::with_capacity(head_end + (text.len() - tail_start) + 200);
    out.push_str(&text[..head_end]);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker(cut));
    out.push('\n');
    out.push_str(&text[tail_start..]);
    (out, cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept() {
        assert_eq!(cut("abc", 3, |_| unreachable!()), ("abc".into(), 0));
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let text: String = (0..1000u32)
            .map(|i| char::from(b'a' + u8::try_from(i % 26).unwrap()))
            .collect();
        let (out, n) = cut(&text, 100, |n| format!("[{n} cut]"));
        assert_eq!(n, 900);
        assert!(out.starts_with(&text[..40]));
        assert!(out.ends_with(&text[940..]));
        assert!(out.contains("\n[900 cut]\n"));
    }

    #[test]
    fn multibyte_boundaries() {
        let text = "é".repeat(500);
        let (out, n) = cut(&text, 10, |n| format!("<{n}>"));
        assert_eq!(n, 490);
        assert_eq!(out, format!("{}\n<490>\n{}", "é".repeat(4), "é".repeat(6)));
    }
}
