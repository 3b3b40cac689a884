//! HTML as readable text: html5ever's parse (through `scraper`, the tree a browser would build,
//! with its error recovery) and one iterative walk of that tree.
//!
//! What the walk writes:
//!
//! - the `<title>` first, then a blank line;
//! - headings as `# `..`###### ` lines, paragraphs, block quotes, tables and `<pre>` blocks
//!   set apart by blank lines; `<div>`-like blocks, table rows and list items on their own lines;
//! - list items as `- ` (or `1. ` in an `<ol>`, from its `start`), two spaces deeper per level of
//!   nesting; table cells of a row joined by ` | `; `<br>` as a line break; `<hr>` as `---`;
//! - a link as its text followed by ` [url]` (the URL resolved against `<base href>` or the
//!   page's own URL when given; only `http`, `https`, `mailto` and relative links are shown, and
//!   a link whose text is its URL is not repeated); an image as `[image: alt]` when it has alt text;
//! - whitespace collapsed to single spaces outside `<pre>`, kept as it is inside;
//! - nothing of `<script>`, `<style>`, `<noscript>`, `<template>`, `<svg>`, `<math>`, `<iframe>`,
//!   `<object>`, `<embed>`, `<canvas>`, `<audio>`, `<video>`, `<select>`, `<datalist>`, comments,
//!   or any element with the `hidden` attribute.
//!
//! The walk keeps no recursion and each node is visited once; the parse caps the tree's depth
//! (see `parse.rs`: html5ever's tree building is quadratic in the nesting depth), so the cost is
//! linear in the page.

use std::ops::ControlFlow;

use ego_tree::NodeRef;
use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};
use scraper::{Html, Node, node::Element};
use url::Url;

use super::MediaType;

/// The longest URL a link is shown with; a longer one (usually a `data:`-like blob or tracking
/// payload) is left out and the link's text stands alone.
const MAX_URL: usize = 2048;

/// An HTML document (already decoded) as readable text: see the module documentation.
///
/// `base` is the page's URL, used for relative links unless the page has a `<base href>`;
/// without either, relative links are shown as written.
pub fn to_text(html: &str, base: Option<&Url>) -> String {
    let doc = super::parse::parse_document(html);
    let mut walk = Walk::new(base.cloned());
    let root = doc.tree.root();
    let mut next = root.first_child();
    while let Some(node) = next {
        let descend = walk.open(node).is_continue();
        if descend && let Some(child) = node.first_child() {
            next = Some(child);
            continue;
        }
        if descend {
            walk.close(node);
        }
        let mut current = node;
        next = loop {
            if let Some(sibling) = current.next_sibling() {
                break Some(sibling);
            }
            match current.parent() {
                Some(parent) if parent.id() != root.id() => {
                    walk.close(parent);
                    current = parent;
                }
                _ => break None,
            }
        };
    }
    walk.finish()
}

/// The encoding an HTML body's `<meta charset>` or `<meta http-equiv="content-type">` names,
/// looked for in `head` (the body's first bytes), as the HTML standard's prescan would use it:
/// a UTF-16 label means UTF-8 (a document that reads as ASCII here is not UTF-16), and
/// `x-user-defined` means windows-1252.
pub fn meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    // windows-1252 maps every ASCII byte to itself, which is all the markup needs.
    let (prefix, _) = WINDOWS_1252.decode_without_bom_handling(head);
    let doc = Html::parse_document(&prefix);
    let label = doc.tree.nodes().find_map(|node| {
        let Node::Element(el) = node.value() else {
            return None;
        };
        if el.name() != "meta" {
            return None;
        }
        if let Some(charset) = el.attr("charset") {
            return Encoding::for_label(charset.trim().as_bytes());
        }
        let equiv = el.attr("http-equiv")?;
        if !equiv.trim().eq_ignore_ascii_case("content-type") {
            return None;
        }
        MediaType::parse(el.attr("content")?).encoding()
    })?;
    Some(match label.name() {
        "UTF-16LE" | "UTF-16BE" => UTF_8,
        "x-user-defined" => WINDOWS_1252,
        _ => label,
    })
}

/// Elements whose content is not text a reader sees.
fn skipped(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "noscript"
            | "template"
            | "svg"
            | "math"
            | "iframe"
            | "object"
            | "embed"
            | "canvas"
            | "audio"
            | "video"
            | "select"
            | "datalist"
    )
}

/// Elements that start and end a line.
fn line_block(name: &str) -> bool {
    matches!(
        name,
        "div"
            | "address"
            | "article"
            | "aside"
            | "details"
            | "summary"
            | "dialog"
            | "dl"
            | "dt"
            | "dd"
            | "fieldset"
            | "figcaption"
            | "footer"
            | "form"
            | "header"
            | "hgroup"
            | "legend"
            | "main"
            | "nav"
            | "section"
            | "caption"
            | "center"
            | "tr"
            | "li"
            | "ul"
            | "ol"
            | "menu"
            | "body"
            | "html"
    )
}

/// Elements set apart by a blank line.
fn paragraph_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "blockquote" | "table" | "pre" | "figure"
    )
}

/// One open list: `None` for bullets, `Some(n)` for the next number of an `<ol>`.
type List = Option<i64>;

/// The walk's state: the text so far and what is owed before the next visible character.
struct Walk {
    out: String,
    /// How many `\n` end `out`.
    trailing_newlines: usize,
    /// A space is owed before the next character (collapsed whitespace).
    space: bool,
    /// Line breaks owed before the next character: 1 starts a line, 2 leaves a blank line.
    newlines: usize,
    /// Written at the start of the next line's text (a list bullet, a heading's `#`).
    prefix: Option<String>,
    /// Open `<pre>` elements.
    pre: usize,
    /// Open lists, innermost last.
    lists: Vec<List>,
    /// Open table rows: how many cells each has started.
    rows: Vec<usize>,
    /// Open links: the URL to show and where their text starts in `out`.
    links: Vec<Option<(String, usize)>>,
    /// The first `<title>`'s text.
    title: Option<String>,
    /// What relative links resolve against.
    base: Option<Url>,
    /// A `<base href>` was seen (only the first counts).
    base_seen: bool,
}

impl Walk {
    fn new(base: Option<Url>) -> Walk {
        Walk {
            out: String::new(),
            trailing_newlines: 0,
            space: false,
            newlines: 0,
            prefix: None,
            pre: 0,
            lists: Vec::new(),
            rows: Vec::new(),
            links: Vec::new(),
            title: None,
            base,
            base_seen: false,
        }
    }

    /// Enters a node; `Break` means its children are not walked (and `close` is not called).
    fn open(&mut self, node: NodeRef<'_, Node>) -> ControlFlow<()> {
        match node.value() {
            Node::Text(text) => {
                self.text(text);
                ControlFlow::Continue(())
            }
            Node::Element(el) => self.open_element(node, el),
            // Comments, doctypes, processing instructions: nothing a reader sees.
            _ => ControlFlow::Break(()),
        }
    }

    fn open_element(&mut self, node: NodeRef<'_, Node>, el: &Element) -> ControlFlow<()> {
        let name = el.name();
        if name == "title" || name == "base" {
            self.head_element(node, el);
            return ControlFlow::Break(());
        }
        if skipped(name) || el.attr("hidden").is_some() {
            return ControlFlow::Break(());
        }
        if paragraph_block(name) {
            self.block(2);
        } else if line_block(name) {
            let nested = matches!(name, "ul" | "ol" | "menu" | "dl") && !self.lists.is_empty();
            let top_list = matches!(name, "ul" | "ol" | "menu" | "dl") && !nested;
            self.block(if top_list { 2 } else { 1 });
        }
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let level = usize::from(name.as_bytes()[1] - b'0');
                self.prefix = Some(format!("{} ", "#".repeat(level)));
            }
            "ul" | "menu" => self.lists.push(None),
            "ol" => {
                let start = el.attr("start").and_then(|s| s.trim().parse::<i64>().ok());
                self.lists.push(Some(start.unwrap_or(1)));
            }
            "li" => {
                let depth = self.lists.len().max(1);
                let bullet = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let b = format!("{n}. ");
                        *n = n.saturating_add(1);
                        b
                    }
                    _ => "- ".to_owned(),
                };
                self.prefix = Some(format!("{}{bullet}", "  ".repeat(depth - 1)));
            }
            "dd" => self.prefix = Some("  ".to_owned()),
            "pre" | "textarea" | "listing" | "xmp" | "plaintext" => self.pre += 1,
            "tr" => self.rows.push(0),
            "td" | "th" => {
                if let Some(cells) = self.rows.last_mut() {
                    *cells += 1;
                    if *cells > 1 {
                        self.space = false;
                        self.literal(" | ");
                    }
                }
            }
            "br" => self.line_break(),
            "hr" => {
                self.block(2);
                self.literal("---");
                self.block(2);
            }
            "img" => {
                if let Some(alt) = el.attr("alt").map(str::trim).filter(|a| !a.is_empty()) {
                    let alt = collapse(alt);
                    self.literal(&format!("[image: {alt}]"));
                }
            }
            "a" => {
                let link = el.attr("href").and_then(|href| self.link_url(href));
                self.links.push(link.map(|url| (url, self.out.len())));
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    /// Leaves an element whose children were walked.
    fn close(&mut self, node: NodeRef<'_, Node>) {
        let Node::Element(el) = node.value() else {
            return;
        };
        let name = el.name();
        match name {
            "ul" | "ol" | "menu" => {
                self.lists.pop();
            }
            "pre" | "textarea" | "listing" | "xmp" | "plaintext" => {
                self.pre = self.pre.saturating_sub(1);
            }
            "tr" => {
                self.rows.pop();
            }
            "a" => {
                if let Some(Some((url, start))) = self.links.pop() {
                    let shown = self.out.get(start..).unwrap_or("").trim();
                    if !shown.is_empty() && shown != url {
                        self.space = false;
                        self.literal(&format!(" [{url}]"));
                    }
                }
            }
            _ => {}
        }
        if paragraph_block(name) {
            self.block(2);
        } else if line_block(name) {
            let top_list = matches!(name, "ul" | "ol" | "menu" | "dl") && self.lists.is_empty();
            self.block(if top_list { 2 } else { 1 });
        }
        if matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "li" | "dd") {
            self.prefix = None;
        }
    }

    /// `<title>` (the first is the page's) and `<base href>` (the first counts).
    fn head_element(&mut self, node: NodeRef<'_, Node>, el: &Element) {
        if el.name() == "title" {
            if self.title.is_none() {
                let mut text = String::new();
                for child in node.children() {
                    if let Node::Text(t) = child.value() {
                        text.push_str(t);
                    }
                }
                let text = collapse(&text);
                if !text.is_empty() {
                    self.title = Some(text);
                }
            }
            return;
        }
        if self.base_seen {
            return;
        }
        self.base_seen = true;
        if let Some(href) = el.attr("href") {
            let resolved = match &self.base {
                Some(base) => base.join(href.trim()).ok(),
                None => Url::parse(href.trim()).ok(),
            };
            if let Some(url) = resolved.filter(|u| matches!(u.scheme(), "http" | "https")) {
                self.base = Some(url);
            }
        }
    }

    /// The URL a link is shown with, or `None` for one a reader cannot follow (fragment-only,
    /// `javascript:`, `data:` and other schemes) or an overlong one.
    fn link_url(&self, href: &str) -> Option<String> {
        let href = href.trim();
        if href.is_empty() || href.starts_with('#') || href.len() > MAX_URL {
            return None;
        }
        let parsed = match &self.base {
            Some(base) => base.join(href),
            None => Url::parse(href),
        };
        match parsed {
            Ok(url) if matches!(url.scheme(), "http" | "https" | "mailto") => {
                let shown = url.to_string();
                (shown.len() <= MAX_URL).then_some(shown)
            }
            // Relative, and nothing to resolve it against: as written.
            Err(url::ParseError::RelativeUrlWithoutBase) => Some(collapse(href)),
            // Another scheme (`javascript:`, `data:` ...), or not a URL.
            Ok(_) | Err(_) => None,
        }
    }

    /// Text from the document.
    fn text(&mut self, text: &str) {
        if self.pre > 0 {
            if text.is_empty() {
                return;
            }
            self.space = false;
            self.flush();
            self.out.push_str(text);
            self.count_trailing(text);
            return;
        }
        for c in text.chars() {
            if c.is_whitespace() {
                self.space = true;
            } else {
                if self.space || self.newlines > 0 || self.prefix.is_some() {
                    self.flush();
                }
                self.out.push(c);
                self.trailing_newlines = 0;
            }
        }
    }

    /// Text the walk adds (a separator, an image's alt, a link's URL), written like visible text.
    fn literal(&mut self, text: &str) {
        self.flush();
        self.out.push_str(text);
        self.count_trailing(text);
    }

    fn count_trailing(&mut self, text: &str) {
        let trailing = text.bytes().rev().take_while(|b| *b == b'\n').count();
        if trailing == text.len() {
            self.trailing_newlines += trailing;
        } else {
            self.trailing_newlines = trailing;
        }
    }

    /// Writes what is owed before a visible character: line breaks (and then the prefix), or a
    /// space.
    fn flush(&mut self) {
        if self.out.is_empty() {
            self.newlines = 0;
            self.space = false;
        }
        if self.newlines > 0 {
            for _ in self.trailing_newlines..self.newlines.min(2) {
                self.out.push('\n');
            }
            self.trailing_newlines = self.trailing_newlines.max(self.newlines.min(2));
            self.newlines = 0;
            self.space = false;
        }
        if let Some(prefix) = self.prefix.take() {
            if self.trailing_newlines == 0 && !self.out.is_empty() {
                self.out.push('\n');
            }
            self.out.push_str(&prefix);
            self.trailing_newlines = 0;
            self.space = false;
        }
        if self.space {
            if self.trailing_newlines == 0 {
                self.out.push(' ');
            }
            self.space = false;
        }
    }

    /// A block boundary: at least `n` line breaks before the next text (none at the start).
    fn block(&mut self, n: usize) {
        self.space = false;
        self.newlines = self.newlines.max(n);
    }

    /// `<br>`: a line break now (two in a row leave a blank line, no more).
    fn line_break(&mut self) {
        self.space = false;
        if self.out.is_empty() {
            return;
        }
        if self.newlines > 0 {
            self.flush();
        }
        if self.trailing_newlines < 2 {
            self.out.push('\n');
            self.trailing_newlines += 1;
        }
    }

    fn finish(mut self) -> String {
        let body_len = self.out.trim_end().len();
        self.out.truncate(body_len);
        match self.title {
            Some(title) if self.out.is_empty() => title,
            Some(title) => format!("{title}\n\n{}", self.out),
            None => self.out,
        }
    }
}

/// Whitespace runs as single spaces, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
