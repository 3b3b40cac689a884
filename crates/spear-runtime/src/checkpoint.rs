//! TEMPORARY interface stub; replaced by the real store from branch tl-ckpt.
#![allow(missing_docs, clippy::missing_panics_doc, clippy::unused_self)]
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use spear_workspace::{Location, Workspace, WorkspaceFs};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryState {
    Absent,
    File { mode: u32, hash: String, size: u64 },
    Symlink { target: PathBuf },
    Dir { mode: u32 },
}

#[derive(Debug, thiserror::Error)]
#[error("checkpoint error")]
pub struct CheckpointError;

#[derive(Debug, thiserror::Error)]
#[error("undo error")]
pub enum UndoError {
    Conflict(Vec<String>),
}

#[derive(Debug)]
pub struct UndoReport {
    pub restored: Vec<String>,
}

#[derive(Debug)]
pub struct CheckpointStore;
#[derive(Debug)]
pub struct TurnCheckpoint;

impl CheckpointStore {
    pub fn open(_dir: &Path) -> Result<Self, CheckpointError> {
        todo!()
    }
    pub fn default_dir(_x: Option<&Path>, _h: Option<&Path>, _ws: &Workspace) -> Option<PathBuf> {
        todo!()
    }
    pub fn put_blob(&self, _bytes: &[u8]) -> Result<String, CheckpointError> {
        todo!()
    }
    pub fn read_state(
        &self,
        _fs: &WorkspaceFs,
        _loc: &Location,
    ) -> Result<EntryState, CheckpointError> {
        todo!()
    }
    pub fn turn(&self, _id: &str) -> Result<TurnCheckpoint, CheckpointError> {
        todo!()
    }
    pub fn undo_last(&self, _ws: &Workspace, _fs: &WorkspaceFs) -> Result<UndoReport, UndoError> {
        todo!()
    }
    pub fn last_turn(&self) -> Option<String> {
        todo!()
    }
}
impl TurnCheckpoint {
    pub fn note_before(&mut self, _ws: &Workspace, _loc: &Location, _prior: EntryState) {}
    pub fn note_after(&mut self, _ws: &Workspace, _loc: &Location, _after: EntryState) {}
    pub fn save(&self) -> Result<(), CheckpointError> {
        todo!()
    }
    pub fn paths(&self) -> Vec<String> {
        todo!()
    }
}
impl CheckpointStore {
    pub fn restore_state(
        &self,
        _fs: &WorkspaceFs,
        _loc: &Location,
        _state: &EntryState,
    ) -> Result<(), CheckpointError> {
        todo!()
    }
}
