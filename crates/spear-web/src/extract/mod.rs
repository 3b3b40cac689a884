//! A fetched body as text a model can read, and slices of it.
//!
//! (Interface fixed; the implementation lands with issue 16's extraction work.)

pub mod slice;

pub use slice::{Continuation, PageRange, Slice};

/// A body turned into text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Document {
    /// HTML as readable text, plain text, or JSON as it is.
    Text {
        /// The text.
        text: String,
        /// What it was.
        kind: TextKind,
    },
    /// A PDF, one string per page (page 1 first).
    Pdf {
        /// The pages' text.
        pages: Vec<String>,
    },
}

/// What a [`Document::Text`] was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// An HTML page, turned into readable text.
    Html,
    /// Plain text (`text/*` other than HTML).
    Plain,
    /// JSON, as it is.
    Json,
}

/// Why a body could not be made into text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    /// A content type `fetch_url` does not read.
    #[error(
        "the content type `{content_type}` is not one fetch_url reads (HTML, text, JSON, PDF); save it with `save_as` instead"
    )]
    Unsupported {
        /// The type, as the server named it (or `unknown`).
        content_type: String,
    },
    /// A PDF that could not be read.
    #[error("the PDF could not be read: {0}")]
    Pdf(String),
}
