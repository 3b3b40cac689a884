//! Slicing: following the continuations from the start reads every character of a text, and
//! every page of a PDF, exactly once and in order (property tests), plus the edges.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use spear_web::extract::{Continuation, PageError, PageRange, slice_pages, slice_text};

/// Follows `slice_text`'s continuations from 0; returns the slices.
fn follow_text(text: &str, max_chars: usize) -> Vec<String> {
    let mut offset = 0;
    let mut slices = Vec::new();
    loop {
        let slice = slice_text(text, offset, max_chars);
        assert!(
            slice.text.chars().count() <= max_chars.max(1),
            "slice over max_chars"
        );
        match slice.continuation {
            Some(Continuation::Offset(next)) => {
                assert!(!slice.text.is_empty(), "no progress at {offset}");
                assert_eq!(
                    next,
                    offset + slice.text.chars().count(),
                    "next is not where the slice ended"
                );
                slices.push(slice.text);
                offset = next;
            }
            Some(other) => panic!("a text continued by {other}"),
            None => {
                slices.push(slice.text);
                return slices;
            }
        }
    }
}

/// Follows `slice_pages`'s continuations from `range`; returns the page numbers each slice's
/// headers name, in order, and checks each page's text sits under its own header.
fn follow_pages(pages: &[String], range: Option<PageRange>, max_chars: usize) -> Vec<u32> {
    let total = pages.len();
    let mut range = range;
    let mut seen = Vec::new();
    for _ in 0..=total {
        let slice = slice_pages(pages, range, max_chars).unwrap();
        let mut in_slice = 0;
        for line in slice.text.lines() {
            if let Some(rest) = line.strip_prefix("--- page ") {
                let (n, of) = rest
                    .strip_suffix(" ---")
                    .unwrap()
                    .split_once(" of ")
                    .unwrap();
                assert_eq!(of.parse::<usize>().unwrap(), total);
                seen.push(n.parse::<u32>().unwrap());
                in_slice += 1;
            } else if let Some(n) = line.strip_prefix("marker ") {
                assert_eq!(
                    Some(&n.parse::<u32>().unwrap()),
                    seen.last(),
                    "text under another page's header"
                );
            }
        }
        assert!(in_slice >= 1, "a slice without a page");
        let fits_whole = slice.text.chars().count() <= max_chars.max(1);
        assert!(
            fits_whole || (in_slice == 1 && slice.text.contains("is cut here")),
            "{}",
            slice.text
        );
        match slice.continuation {
            None => return seen,
            Some(Continuation::Pages(next)) => {
                assert_eq!(
                    next.first,
                    seen.last().unwrap() + 1,
                    "the continuation skips or repeats"
                );
                range = Some(next);
            }
            Some(other) => panic!("a PDF continued by {other}"),
        }
    }
    panic!("more slices than pages: no progress");
}

fn texts() -> impl Strategy<Value = String> {
    // ASCII, whitespace and line breaks, and characters of 2, 3 and 4 bytes.
    proptest::collection::vec(
        prop_oneof![
            4 => proptest::char::range('a', 'z'),
            2 => Just(' '),
            1 => Just('\n'),
            1 => Just('\t'),
            1 => Just('\u{e9}'),
            1 => Just('\u{65e5}'),
            1 => Just('\u{1f600}'),
            1 => Just('\u{a0}'),
        ],
        0..600,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #[test]
    fn text_slices_cover_every_character_once(text in texts(), max_chars in 0usize..80) {
        let slices = follow_text(&text, max_chars);
        prop_assert_eq!(slices.concat(), text);
    }

    #[test]
    fn text_slices_from_any_offset_cover_the_rest(text in texts(), offset in 0usize..700, max_chars in 1usize..50) {
        let slice = slice_text(&text, offset, max_chars);
        let count = text.chars().count();
        if offset >= count {
            prop_assert_eq!(slice.text, "");
            prop_assert_eq!(slice.continuation, None);
        } else {
            let rest: String = text.chars().skip(offset).collect();
            prop_assert!(rest.starts_with(&slice.text));
            prop_assert_eq!(slice.continuation.is_some(), slice.text.len() < rest.len());
        }
    }

    #[test]
    fn page_slices_cover_every_page_once_in_order(
        lengths in proptest::collection::vec(0usize..300, 1..40),
        max_chars in 0usize..400,
    ) {
        let pages: Vec<String> = lengths
            .iter()
            .enumerate()
            .map(|(i, len)| {
                let filler: String = "w\u{e9}rd \u{65e5}\n".chars().cycle().take(*len).collect();
                format!("marker {}\n{filler}", i + 1)
            })
            .collect();
        let seen = follow_pages(&pages, None, max_chars);
        let all: Vec<u32> = (1..=u32::try_from(pages.len()).unwrap()).collect();
        prop_assert_eq!(seen, all);
    }

    #[test]
    fn page_slices_of_a_range_cover_the_range(
        count in 1u32..40,
        a in 1u32..45,
        b in 1u32..45,
        max_chars in 1usize..300,
    ) {
        let pages: Vec<String> = (1..=count).map(|i| format!("marker {i}\n{}", "x ".repeat(i as usize * 7))).collect();
        let range = PageRange { first: a.min(b), last: a.max(b) };
        if range.first > count {
            let err = slice_pages(&pages, Some(range), max_chars).unwrap_err();
            prop_assert_eq!(err, PageError::OutOfRange { requested: range, total: count });
        } else {
            let seen = follow_pages(&pages, Some(range), max_chars);
            let want: Vec<u32> = (range.first..=range.last.min(count)).collect();
            prop_assert_eq!(seen, want);
        }
    }
}

#[test]
fn text_cut_prefers_a_line_then_a_word() {
    let text = "first line\nsecond line goes on";
    let slice = slice_text(text, 0, 13);
    assert_eq!(slice.text, "first line\n");
    assert_eq!(slice.continuation, Some(Continuation::Offset(11)));
    let slice = slice_text("one two three four", 0, 9);
    assert_eq!(slice.text, "one two ");
    // No boundary near the end: cut at exactly max_chars, never inside a character.
    let slice = slice_text("\u{1f600}\u{1f600}\u{1f600}\u{1f600}", 1, 2);
    assert_eq!(slice.text, "\u{1f600}\u{1f600}");
    assert_eq!(slice.continuation, Some(Continuation::Offset(3)));
    // A boundary far from the end does not shrink the slice to nothing much.
    let slice = slice_text("a bcdefghijklmnopqrstuvwxyz", 0, 20);
    assert_eq!(slice.text.chars().count(), 20);
    // Past the end: nothing, and no continuation.
    assert_eq!(slice_text("abc", 3, 10).text, "");
    assert_eq!(slice_text("abc", 99, 10).continuation, None);
    assert_eq!(slice_text("abc", 0, 10).continuation, None);
}

#[test]
fn page_slices_headers_cuts_and_errors() {
    let pages = vec!["alpha".to_owned(), String::new(), "gamma ".repeat(100)];
    let slice = slice_pages(&pages, None, 200).unwrap();
    assert_eq!(
        slice.text,
        "--- page 1 of 3 ---\nalpha\n\n--- page 2 of 3 ---\n(no text on this page: it may be a scanned image)"
    );
    assert_eq!(
        slice.continuation,
        Some(Continuation::Pages(PageRange { first: 3, last: 3 }))
    );
    assert_eq!(
        Continuation::Pages(PageRange { first: 3, last: 3 }).to_string(),
        "pages 3-3"
    );

    // Page 3 alone is longer than max_chars: cut, marked with what would read it whole.
    let slice = slice_pages(&pages, Some(PageRange { first: 3, last: 3 }), 300).unwrap();
    assert!(
        slice.text.starts_with("--- page 3 of 3 ---\ngamma gamma"),
        "{}",
        slice.text
    );
    assert!(
        slice.text.contains("[page 3 is cut here: "),
        "{}",
        slice.text
    );
    assert!(
        slice.text.contains("max_chars of at least 621"),
        "{}",
        slice.text
    );
    assert!(slice.text.chars().count() <= 300);
    assert_eq!(slice.continuation, None);

    // The range's last page past the end reads to the end.
    let slice = slice_pages(&pages, Some(PageRange { first: 1, last: 9 }), 10_000).unwrap();
    assert!(slice.text.contains("--- page 3 of 3 ---"));
    assert_eq!(slice.continuation, None);

    let err = slice_pages(&pages, Some(PageRange { first: 4, last: 4 }), 100).unwrap_err();
    assert_eq!(
        err.to_string(),
        "there is no page 4: the PDF has 3 pages, 1-3"
    );
    let err = slice_pages(&pages[..1], Some(PageRange { first: 2, last: 5 }), 100).unwrap_err();
    assert_eq!(
        err.to_string(),
        "there is no page 2: the PDF has 1 page, 1-1"
    );
    let err = slice_pages(&pages, Some(PageRange { first: 0, last: 2 }), 100).unwrap_err();
    assert_eq!(err, PageError::Invalid(PageRange { first: 0, last: 2 }));
    assert_eq!(slice_pages(&[], None, 100).unwrap_err(), PageError::NoPages);
}
