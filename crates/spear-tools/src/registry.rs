//! The registry: every tool spear offers, by name.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::{Tool, ToolSpec};

/// Every tool spear offers, by name. Which of them a caller sees is the exposure policy's call.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<&'static str, Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// The coding tools: `read_file`, `search_files`, `write_file`, `patch`, `delete_file`,
    /// `terminal` with `terminal_output` and `terminal_kill` for its background jobs, and
    /// `read_output` (the rest of an output the preview cut); and the web pair, `fetch_url` and
    /// `search_internet`, which a session lists only where it has the web (see
    /// [`crate::ToolExposurePolicy::withdrawn`]).
    pub fn coding() -> Self {
        let mut r = ToolRegistry::new();
        r.register(Arc::new(crate::tools::read_file::ReadFile::new()));
        r.register(Arc::new(crate::tools::search_files::SearchFiles::new()));
        r.register(Arc::new(crate::tools::write_file::WriteFile::new()));
        r.register(Arc::new(crate::tools::patch::PatchTool::new()));
        r.register(Arc::new(crate::tools::delete_file::DeleteFile::new()));
        r.register(Arc::new(crate::tools::terminal::Terminal::new()));
        r.register(Arc::new(crate::tools::terminal_job::TerminalOutput::new()));
        r.register(Arc::new(crate::tools::terminal_job::TerminalKill::new()));
        r.register(Arc::new(crate::tools::read_output::ReadOutput::new()));
        r.register(Arc::new(crate::tools::fetch_url::FetchUrl::new()));
        r.register(Arc::new(
            crate::tools::search_internet::SearchInternet::new(),
        ));
        r
    }

    /// Adds `tool`, replacing one of the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Every spec, by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|t| t.spec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A quick tool runs on an MCP server's event loop: one that ran a command, reached the
    /// network, asked the user or waited on the write lock would stall every other call.
    #[test]
    fn only_the_readers_of_files_and_stored_outputs_are_quick() {
        let registry = ToolRegistry::coding();
        let quick: Vec<&str> = registry
            .specs()
            .filter(|s| s.quick)
            .map(|s| s.name)
            .collect();
        assert_eq!(quick, ["read_file", "read_output"]);
        for spec in registry.specs().filter(|s| s.quick) {
            assert_eq!(spec.effect, crate::Effect::Read, "{}", spec.name);
            assert!(spec.web.is_none(), "{}", spec.name);
        }
    }
}
