//! TEMPORARY interface stub; replaced by the real store from branch tl-ckpt.
#![allow(missing_docs, clippy::missing_panics_doc, clippy::unused_self)]
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[error("store error")]
pub struct StoreError;

#[derive(Debug, Clone)]
pub struct OutputRef(pub String);

#[derive(Debug)]
pub struct Chunk {
    pub text: String,
    pub offset: u64,
    pub next_offset: Option<u64>,
    pub total: u64,
}

#[derive(Debug)]
pub struct ResultStore;

impl ResultStore {
    pub fn open(_base: &Path, _session: &str) -> Result<Self, StoreError> {
        todo!()
    }
    pub fn default_base(_x: Option<&Path>, _h: Option<&Path>) -> Option<PathBuf> {
        todo!()
    }
    pub fn put(&self, _bytes: &[u8]) -> Result<OutputRef, StoreError> {
        todo!()
    }
    pub fn read(&self, _r: &str, _offset: u64, _limit: u64) -> Result<Chunk, StoreError> {
        todo!()
    }
}
