//! A PDF's text, page by page, with lopdf.
//!
//! A PDF from the web is hostile input to a parser that was not written for it, so:
//!
//! - the work runs on a thread of its own with a [`STACK`] stack, joined at once: a panic in
//!   the library (they happen on malformed files) ends that thread only and becomes
//!   [`ExtractError::Pdf`], the same isolation `catch_unwind` gives, with a deeper stack than a
//!   runtime worker's for the parser's recursion (whose nesting lopdf itself bounds);
//! - every stream lopdf inflates while loading is bounded by [`MAX_STREAM`] (stops a
//!   decompression bomb in an object or cross-reference stream);
//! - each page's content, and each font map it reads, is bounded by [`MAX_PAGE_CONTENT`], and
//!   all pages together by [`MAX_TOTAL_CONTENT`] and [`MAX_PAGES`]: pages past a budget are not
//!   read and say so (stops a small file whose thousands of pages share one large stream from
//!   costing minutes);
//! - an encrypted PDF is refused by name rather than read as noise.
//!
//! Text comes from each page's content stream, read here with lopdf's parser and its font
//! encodings (`ToUnicode` maps included), as `page_text` describes. A page whose content could not be
//! decoded says so in place of its text, so page numbers stay true.

use std::collections::BTreeMap;
use std::thread;

use lopdf::content::Content;
use lopdf::{Document as PdfDocument, Encoding, LoadOptions, Object, ObjectId};

use super::ExtractError;

/// The largest size any one stream may inflate to while the file loads.
pub const MAX_STREAM: usize = 64 << 20;
/// The largest decoded content (or font map) one page may have.
pub const MAX_PAGE_CONTENT: usize = 16 << 20;
/// The decoded content all pages together may have; later pages are not read.
pub const MAX_TOTAL_CONTENT: usize = 256 << 20;
/// The most pages read; later pages are listed but not read.
pub const MAX_PAGES: usize = 20_000;
/// The stack of the thread that reads a PDF.
pub const STACK: usize = 64 << 20;

/// The text of each page of a PDF, page 1 first.
///
/// Guarantees: never panics and never unwinds into the caller; an unreadable, encrypted or
/// page-less file is an [`ExtractError::Pdf`] naming why; pages past a budget (see the module
/// documentation) are present, as a line saying they were not read.
pub fn pages(body: &[u8]) -> Result<Vec<String>, ExtractError> {
    thread::scope(|scope| {
        let reader = thread::Builder::new()
            .name("spear-web-pdf".to_owned())
            .stack_size(STACK)
            .spawn_scoped(scope, || read(body))
            .map_err(|e| ExtractError::Pdf(format!("no thread to read it on: {e}")))?;
        reader.join().unwrap_or_else(|_| {
            Err(ExtractError::Pdf(
                "the PDF reader failed on this file (it is malformed in a way the reader does not survive)"
                    .to_owned(),
            ))
        })
    })
}

fn read(body: &[u8]) -> Result<Vec<String>, ExtractError> {
    let options = LoadOptions {
        max_decompressed_size: Some(MAX_STREAM),
        ..LoadOptions::default()
    };
    let doc = PdfDocument::load_mem_with_options(body, options)
        .map_err(|e| ExtractError::Pdf(e.to_string()))?;
    if doc.is_encrypted() {
        return Err(ExtractError::Pdf(
            "it is encrypted (password-protected), so its text cannot be read".to_owned(),
        ));
    }
    let page_ids = doc.get_pages();
    if page_ids.is_empty() {
        return Err(ExtractError::Pdf("it has no pages".to_owned()));
    }
    let mut budget = MAX_TOTAL_CONTENT;
    let mut pages = Vec::with_capacity(page_ids.len());
    for (&number, &id) in &page_ids {
        if pages.len() >= MAX_PAGES {
            pages.push(format!(
                "[page {number} not read: only the first {MAX_PAGES} pages are]"
            ));
            continue;
        }
        if budget == 0 {
            pages.push(format!(
                "[page {number} not read: the pages before it used the reading budget of {} MiB of content]",
                MAX_TOTAL_CONTENT >> 20
            ));
            continue;
        }
        match page_text(&doc, id, budget.min(MAX_PAGE_CONTENT)) {
            Ok((text, used)) => {
                budget = budget.saturating_sub(used.max(1));
                pages.push(tidy(&text));
            }
            Err(e) => pages.push(format!(
                "[the text of page {number} could not be read: {e}]"
            )),
        }
    }
    Ok(pages)
}

/// One page's text and the size of its decoded content.
///
/// The content stream's text operators are read in order: strings shown (`Tj`, `TJ`, `'`,
/// `"`) through the current font's encoding, a line break where the text moves to another
/// line (`T*`, `'`, `"`, `Td`/`TD` with a vertical move, `Tm` to another baseline, the end of
/// a text object), a space where it moves along the line or a `TJ` adjustment leaves a gap
/// wider than a fifth of an em. Text in a font whose encoding lopdf cannot read is left out.
/// Text inside form `XObject`s is not read.
fn page_text(doc: &PdfDocument, id: ObjectId, limit: usize) -> lopdf::Result<(String, usize)> {
    let fonts = doc.get_page_fonts(id)?;
    let encodings: BTreeMap<Vec<u8>, Encoding<'_>> = fonts
        .into_iter()
        .filter_map(|(name, font)| {
            font.get_font_encoding_with_limit(doc, limit)
                .ok()
                .map(|e| (name, e))
        })
        .collect();
    let data = doc.get_page_content_with_limit(id, limit)?;
    let content = Content::decode(&data)?;
    let mut text = String::new();
    let mut font: Option<&Encoding<'_>> = None;
    let mut baseline: Option<f32> = None;
    for op in &content.operations {
        let operands = op.operands.as_slice();
        match op.operator.as_str() {
            "Tf" => {
                font = operands
                    .first()
                    .and_then(|o| o.as_name().ok())
                    .and_then(|n| encodings.get(n));
            }
            "Tj" => show(&mut text, font, operands.first()),
            "'" => {
                line(&mut text);
                show(&mut text, font, operands.first());
            }
            "\"" => {
                line(&mut text);
                show(&mut text, font, operands.get(2));
            }
            "TJ" => {
                for part in operands
                    .first()
                    .and_then(|o| o.as_array().ok())
                    .into_iter()
                    .flatten()
                {
                    match part {
                        Object::String(..) => show(&mut text, font, Some(part)),
                        // Thousandths of an em, subtracted from the position: a large negative
                        // adjustment is a gap between words.
                        other => {
                            if other.as_float().is_ok_and(|n| n < -200.0) {
                                space(&mut text);
                            }
                        }
                    }
                }
            }
            "Td" | "TD" => {
                let dy = operands
                    .get(1)
                    .and_then(|o| o.as_float().ok())
                    .unwrap_or(0.0);
                if dy.abs() > f32::EPSILON {
                    line(&mut text);
                } else {
                    space(&mut text);
                }
            }
            "Tm" => {
                let y = operands.get(5).and_then(|o| o.as_float().ok());
                match (baseline, y) {
                    (Some(before), Some(now)) if (before - now).abs() <= 0.5 => space(&mut text),
                    _ => line(&mut text),
                }
                baseline = y;
            }
            "T*" | "ET" => line(&mut text),
            "BT" => baseline = None,
            _ => {}
        }
    }
    Ok((text, data.len()))
}

/// A shown string, through the font's encoding (nothing when there is none).
fn show(text: &mut String, font: Option<&Encoding<'_>>, operand: Option<&Object>) {
    if let (Some(encoding), Some(Object::String(bytes, _))) = (font, operand) {
        // A string that does not decode is left out; the rest of the page still reads.
        let mut decoded = String::new();
        if encoding.write_to_string(bytes, &mut decoded).is_ok() {
            text.push_str(&decoded);
        }
    }
}

/// A line break, unless the text already ends one.
fn line(text: &mut String) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
}

/// A space, unless the text already ends in whitespace.
fn space(text: &mut String) {
    if !text.is_empty() && !text.ends_with(char::is_whitespace) {
        text.push(' ');
    }
}

/// Trailing spaces off each line, runs of blank lines down to one, the ends trimmed.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim_start().is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
            if blank {
                out.push('\n');
            }
        }
        blank = false;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_lines() {
        assert_eq!(tidy("  a  \n\n\n\nb \r\n\n"), "  a\n\nb");
        assert_eq!(tidy("\n\n"), "");
    }
}
