//! html5ever's parse into scraper's tree, with the nesting depth capped.
//!
//! The HTML tree-building algorithm walks the stack of open elements for many start tags (is a
//! `<p>` in button scope?), so a page of nothing but nested `<div>`s costs time quadratic in its
//! length: 40,000 of them take seconds, the 1.6 million that fit in 8 MiB would take hours.
//! Browsers cap the depth (Blink at 512); html5ever does not, so this module does, between the
//! tokenizer and the tree builder: once the insertion point is [`MAX_DEPTH`] elements deep, a
//! start tag that would open another element is dropped (its text still reads, one level up).
//! Tags whose content the tokenizer reads as raw text (`<script>`, `<style>`, `<textarea>` ...)
//! are never dropped, so their content never turns into visible text; they cannot nest, so they
//! cannot deepen the tree. Pages under the cap parse exactly as html5ever parses them.
//!
//! The depth is the insertion point's depth in the tree, which follows the stack of open
//! elements within a small factor (foster parenting places some elements shallower than the
//! stack); that keeps the stack, and so each start tag's scan, within a constant bound. After
//! end tags the depth is the last insertion's until the next one (so near the cap a start tag
//! may be dropped one insertion early, never late by more than that).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use ego_tree::NodeId;
use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts};
use html5ever::{Attribute, LocalName, QualName, TokenizerResult};
use scraper::{Html, HtmlTreeSink};

/// The deepest the tree is built; deeper start tags are dropped.
pub(crate) const MAX_DEPTH: u32 = 512;

/// `html` parsed as a document, as html5ever parses it, with the depth capped at [`MAX_DEPTH`].
pub(crate) fn parse_document(html: &str) -> Html {
    let sink = DepthSink {
        inner: HtmlTreeSink::new(Html::new_document()),
        chain: RefCell::new(Vec::new()),
        current: Cell::new(0),
    };
    let builder = TreeBuilder::new(sink, TreeBuilderOpts::default());
    let tokenizer = Tokenizer::new(Capped { builder }, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // `Script` pauses the tokenizer for a script to run, `EncodingIndicator` for a `<meta
    // charset>` (the bytes were decoded before, see `meta_charset`): go on after either.
    while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
    tokenizer.end();
    tokenizer.sink.builder.sink.inner.finish()
}

/// Elements that never hold children (a start tag for one does not deepen the tree).
fn void(name: &LocalName) -> bool {
    matches!(
        &**name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "source"
            | "track"
            | "wbr"
            | "param"
            | "keygen"
            | "frame"
            | "basefont"
            | "bgsound"
    )
}

/// Elements whose content the tokenizer reads as raw text once the tree builder has seen the
/// start tag: dropping one would show its content (a script's source) as text.
fn raw_text(name: &LocalName) -> bool {
    matches!(
        &**name,
        "script"
            | "style"
            | "textarea"
            | "title"
            | "xmp"
            | "iframe"
            | "noembed"
            | "noframes"
            | "noscript"
            | "plaintext"
    )
}

/// The tokenizer's sink: the tree builder, behind the depth cap.
struct Capped {
    builder: TreeBuilder<NodeId, DepthSink>,
}

impl TokenSink for Capped {
    type Handle = NodeId;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<NodeId> {
        if let Token::TagToken(tag) = &token
            && tag.kind == TagKind::StartTag
            && self.builder.sink.current.get() >= MAX_DEPTH
            && !void(&tag.name)
            && !raw_text(&tag.name)
        {
            return TokenSinkResult::Continue;
        }
        self.builder.process_token(token, line_number)
    }

    fn end(&self) {
        self.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// scraper's sink, following the depth of the insertion point.
///
/// `chain` is the path from the document down to the last inserted element (its ancestors
/// first). An insertion under an element on the path cuts the path there and extends it, which
/// is O(1) amortised; an insertion elsewhere (foster parenting, a reparented node) rebuilds the
/// path from the tree, at most [`MAX_DEPTH`] + 1 steps.
struct DepthSink {
    inner: HtmlTreeSink,
    chain: RefCell<Vec<NodeId>>,
    /// The depth of the last inserted element (or of the parent of the last inserted text).
    current: Cell<u32>,
}

impl DepthSink {
    /// Cuts the path at `parent` (rebuilt from the tree when it is not on the path), then adds
    /// `child` below it when it is an element or other node.
    fn inserting(&self, parent: NodeId, child: &NodeOrText<NodeId>) {
        let mut chain = self.chain.borrow_mut();
        if parent == self.inner.get_document() {
            chain.clear();
        } else if let Some(at) = chain.iter().rposition(|id| *id == parent) {
            chain.truncate(at + 1);
        } else {
            chain.clear();
            let html = self.inner.0.borrow();
            if let Some(node) = html.tree.get(parent) {
                chain.extend(
                    node.ancestors()
                        .take(MAX_DEPTH as usize)
                        .filter(|a| a.parent().is_some())
                        .map(|a| a.id()),
                );
                chain.reverse();
                chain.push(parent);
            }
        }
        if let NodeOrText::AppendNode(id) = child {
            chain.push(*id);
        }
        self.current
            .set(u32::try_from(chain.len()).unwrap_or(u32::MAX));
    }

    /// The parent `node` has in the tree now.
    fn parent_of(&self, node: NodeId) -> Option<NodeId> {
        self.inner
            .0
            .borrow()
            .tree
            .get(node)
            .and_then(|n| n.parent())
            .map(|p| p.id())
    }
}

impl TreeSink for DepthSink {
    type Handle = NodeId;
    type Output = Html;
    type ElemName<'a> = <HtmlTreeSink as TreeSink>::ElemName<'a>;

    fn finish(self) -> Html {
        self.inner.finish()
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg);
    }

    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Self::ElemName<'a> {
        self.inner.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        self.inner.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        self.inserting(*parent, &child);
        self.inner.append(parent, child);
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        // Into the element's parent when it has one, else into `prev_element`.
        let parent = self.parent_of(*element).unwrap_or(*prev_element);
        self.inserting(parent, &child);
        self.inner
            .append_based_on_parent_node(element, prev_element, child);
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn mark_script_already_started(&self, node: &NodeId) {
        self.inner.mark_script_already_started(node);
    }

    fn pop(&self, node: &NodeId) {
        self.inner.pop(node);
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        if let Some(parent) = self.parent_of(*sibling) {
            self.inserting(parent, &new_node);
        }
        self.inner.append_before_sibling(sibling, new_node);
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs);
    }

    fn associate_with_form(
        &self,
        target: &NodeId,
        form: &NodeId,
        nodes: (&NodeId, Option<&NodeId>),
    ) {
        self.inner.associate_with_form(target, form, nodes);
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        // The path may now be wrong below `node`; the next insertion elsewhere rebuilds it.
        self.inner.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &NodeId) -> bool {
        self.inner
            .is_mathml_annotation_xml_integration_point(handle)
    }

    fn set_current_line(&self, line_number: u64) {
        self.inner.set_current_line(line_number);
    }

    fn allow_declarative_shadow_roots(&self, intended_parent: &NodeId) -> bool {
        self.inner.allow_declarative_shadow_roots(intended_parent)
    }

    fn attach_declarative_shadow(
        &self,
        location: &NodeId,
        template: &NodeId,
        attrs: &[Attribute],
    ) -> bool {
        self.inner
            .attach_declarative_shadow(location, template, attrs)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &NodeId) {
        self.inner
            .maybe_clone_an_option_into_selectedcontent(option);
    }
}
