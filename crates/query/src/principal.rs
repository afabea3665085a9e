//! Who is asking: the scopes a caller holds decide which tools exist for them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use toolsearch_catalog::Tool;

/// A caller. A tool whose `requires` are not all held is hidden: it never appears in an
/// answer, a count, a hint, a suggestion or an error text, and filtering happens before
/// ranking. Requests carry no principal (a model could claim anything); the host passes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// Scopes held; `None` for a trusted caller who sees every tool.
    scopes: Option<BTreeSet<String>>,
    /// Whether the catalogue itself is public knowledge. Then asking for a hidden tool by id
    /// gets `NOT_AUTHORIZED` naming the missing scopes (the caller could know the id exists);
    /// otherwise it gets `TOOL_NOT_FOUND`, exactly as for an id that does not exist.
    public_catalog: bool,
}

impl Principal {
    /// A caller who sees every tool (operators, the CLI without `--scopes`).
    pub fn trusted() -> Principal {
        Principal { scopes: None, public_catalog: false }
    }

    /// A caller holding exactly these scopes.
    pub fn with_scopes<S: Into<String>>(scopes: impl IntoIterator<Item = S>) -> Principal {
        let scopes =
            scopes.into_iter().map(Into::into).map(|s: String| s.trim().to_owned()).filter(|s| !s.is_empty()).collect();
        Principal { scopes: Some(scopes), public_catalog: false }
    }

    /// Declares the catalogue public (see [`Principal`]): hidden ids get `NOT_AUTHORIZED`.
    pub fn with_public_catalog(mut self, public: bool) -> Principal {
        self.public_catalog = public;
        self
    }

    /// Whether this caller may see and call `tool`.
    pub fn may_use(&self, tool: &Tool) -> bool {
        self.missing(tool).is_empty()
    }

    /// The scopes `tool` requires that this caller lacks.
    pub fn missing<'t>(&self, tool: &'t Tool) -> Vec<&'t str> {
        match &self.scopes {
            None => Vec::new(),
            Some(held) => tool.requires.iter().filter(|r| !held.contains(r.as_str())).map(String::as_str).collect(),
        }
    }

    /// Whether this caller holds every scope in `requires` (a trusted caller holds all).
    pub fn holds(&self, requires: &[String]) -> bool {
        match &self.scopes {
            None => true,
            Some(held) => requires.iter().all(|r| held.contains(r.as_str())),
        }
    }

    /// The scopes held, sorted (`None` for a trusted caller).
    pub fn scopes(&self) -> Option<&BTreeSet<String>> {
        self.scopes.as_ref()
    }

    pub(crate) fn public_catalog(&self) -> bool {
        self.public_catalog
    }
}

impl Default for Principal {
    fn default() -> Self {
        Principal::trusted()
    }
}
