//! `search_files {pattern, path?, glob?, case_insensitive?, max_results?}`: a regular expression
//! over the workspace's files with ripgrep's crates, honouring ignore files, capped, and never
//! following a link (see [`crate::search`]).

use schemars::JsonSchema;
use serde::Deserialize;
use spear_core::{ToolResult, ToolStatus};

use crate::Effect;
use crate::context::CallContext;
use crate::search::{SearchError, SearchRequest, render, search};
use crate::spec::ALL_MODES;
use crate::tool::{Access, Call, Outcome, Prepared, Resolved, ToolArgs, Typed};
use spear_core::ExecutionMode;

/// The most matches one call may ask for.
const MAX_RESULTS_CEILING: usize = 10_000;

/// Arguments of `search_files`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchFilesArgs {
    /// A regular expression (Rust `regex` syntax), matched line by line.
    pub pattern: String,
    /// The file or directory to search (default: where spear was started).
    #[serde(default)]
    pub path: Option<String>,
    /// Only files matching this glob (`*.rs`, `src/**/*.ts`).
    #[serde(default)]
    pub glob: Option<String>,
    /// Match regardless of case.
    #[serde(default)]
    pub case_insensitive: Option<bool>,
    /// At most this many matches (default 200, at most 10000).
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// The `search_files` tool.
pub type SearchFiles = Typed<SearchFilesArgs>;

impl ToolArgs for SearchFilesArgs {
    const NAME: &'static str = "search_files";
    const DESCRIPTION: &'static str = "Search the workspace's files for a regular expression, as ripgrep does (ignored \
        and hidden files skipped, binary files skipped). Returns `path:line:text` lines. \
        `glob` filters file names (`*.rs`) or paths (`src/**/*.ts`).";
    const EFFECT: Effect = Effect::Read;
    const MODES: &'static [ExecutionMode] = ALL_MODES;
    const IDEMPOTENT: bool = true;

    fn validate(self) -> Result<Call, String> {
        if let Some(n) = self.max_results
            && !(1..=MAX_RESULTS_CEILING).contains(&n)
        {
            return Err(format!(
                "invalid arguments for search_files: `max_results` must be 1 to {MAX_RESULTS_CEILING}"
            ));
        }
        Ok(Call::Tool(Box::new(self)))
    }
}

impl Prepared for SearchFilesArgs {
    fn access(&self) -> Access {
        Access {
            reads: self.path.iter().cloned().collect(),
            writes: Vec::new(),
            removes: Vec::new(),
        }
    }

    fn target(&self) -> String {
        self.path.clone().unwrap_or_else(|| ".".into())
    }

    fn describe(&self) -> String {
        format!("search_files {:?} in {}", self.pattern, self.target())
    }

    fn run(self: Box<Self>, cx: &CallContext<'_>, _paths: &Resolved) -> Outcome {
        let request = SearchRequest {
            pattern: self.pattern,
            path: self.path,
            glob: self.glob,
            case_insensitive: self.case_insensitive.unwrap_or(false),
            max_results: self.max_results.unwrap_or(cx.limits.search_results),
        };
        match search(cx.workspace, cx.fs, &request) {
            Ok(out) => {
                let mut result = ToolResult::new(ToolStatus::Ok);
                result.exit_code = Some(0);
                result.truncated = out.truncated;
                result.stdout = render(&out);
                Outcome::of(result)
            }
            Err(e) => {
                let status = match &e {
                    SearchError::InvalidPath { .. } => ToolStatus::InvalidPath,
                    SearchError::NotFound { .. } => ToolStatus::NotFound,
                    _ => ToolStatus::Failed,
                };
                Outcome::of(ToolResult {
                    reason: Some(e.to_string()),
                    ..ToolResult::new(status)
                })
            }
        }
    }
}
