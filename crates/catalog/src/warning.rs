//! Warnings: what a loader tolerated instead of refusing the catalogue (a schema it cannot
//! validate, a duplicate name, a description cut to the limit, a tool left out in lenient
//! mode). Each names the tool and where it is, and is printed by `index`, listed in its
//! `--json` report and in the gateway's status.

use serde::{Deserialize, Serialize};

/// What kind of thing a [`CatalogWarning`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// The tool is indexed, but its argument schema cannot be compiled: its calls are passed
    /// on without local validation.
    Unvalidated,
    /// A second tool of the same name in one server: the first is kept, this one left out.
    DuplicateName,
    /// A description longer than the limit: the rest is cut off.
    Truncated,
    /// The tool is not a tool at all (lenient loading only, as in the gateway): left out.
    Skipped,
    /// A provider-defined tool in an OpenAI or Anthropic list: one the provider runs (OpenAI's
    /// `web_search`, `file_search`, `mcp`; Anthropic's `web_search_20250305`), one whose schema
    /// is the provider's own (Anthropic's `bash_20250124`, `text_editor_...`), or one taking
    /// free-form text (an OpenAI `custom` tool). It has no argument schema to index or check
    /// calls against, so it is left out.
    ProviderDefined,
}

/// One warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogWarning {
    /// What kind.
    pub kind: WarningKind,
    /// The tool's id (or name, when it has no id yet), if the warning is about one tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Where: the file and a JSON pointer or line (`catalog.json at /tools/3/args_schema/...`).
    pub at: String,
    /// What, in words.
    pub message: String,
}

impl std::fmt::Display for CatalogWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.tool {
            Some(t) => write!(f, "{}: tool {t:?}: {}", self.at, self.message),
            None => write!(f, "{}: {}", self.at, self.message),
        }
    }
}
