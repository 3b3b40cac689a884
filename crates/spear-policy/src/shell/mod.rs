//! Shell syntax: parsing with brush-parser, walking the tree, and evaluating words.

pub(crate) mod ansi_c;
pub(crate) mod arith;
pub(crate) mod pipe_status;
pub(crate) mod pipefail_prelude;
pub(crate) mod scratch;
pub(crate) mod walk;
pub(crate) mod word;
