//! TEMPORARY interface stub; replaced by the real logger from branch tl-audit.
#![allow(missing_docs, clippy::missing_panics_doc, clippy::unused_self)]
use spear_core::{CommandClass, ToolStatus};

#[derive(Debug, Default)]
pub struct AuditRecord {
    pub time: String,
    pub session: String,
    pub turn: Option<String>,
    pub event: String,
    pub tool: String,
    pub target: Option<String>,
    pub class: Option<CommandClass>,
    pub capabilities: Vec<String>,
    pub status: Option<ToolStatus>,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub changed_paths: Vec<String>,
    pub executable: Option<String>,
}
impl AuditRecord {
    pub fn now() -> Self {
        todo!()
    }
}
#[derive(Debug)]
pub struct AuditLogger;
#[derive(Debug, thiserror::Error)]
#[error("audit")]
pub struct AuditError;
impl AuditLogger {
    pub fn log(&self, _r: &AuditRecord) -> Result<(), AuditError> {
        todo!()
    }
}
pub fn executable_summary(_c: &str) -> String {
    todo!()
}
