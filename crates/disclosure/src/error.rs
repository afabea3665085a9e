//! Errors building or driving a tool set (not tool-call failures, which are results the model sees).

use std::path::PathBuf;

/// Why a tool set, facade or replay could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DisclosureError {
    /// Facade settings that cannot be used.
    #[error("facade {facade}: {field}: {message}")]
    Facade {
        /// The facade (its node path or name).
        facade: String,
        /// The offending setting.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// Facades that contain each other.
    #[error("facade cycle: {}", .0.join(" -> "))]
    FacadeCycle(Vec<String>),
    /// Facades nested deeper than allowed.
    #[error("facade {facade} nests {depth} levels deep; at most {max} are allowed")]
    FacadeTooDeep {
        /// The outermost facade of the chain.
        facade: String,
        /// Its nesting depth.
        depth: usize,
        /// The bound.
        max: usize,
    },
    /// A facade lists a tool the catalogue does not have.
    #[error("facade {facade}: tool {tool:?} is not in the catalogue")]
    UnknownInnerTool {
        /// The facade.
        facade: String,
        /// The missing tool id.
        tool: String,
    },
    /// A facade nests a facade that does not exist.
    #[error("facade {facade}: inner facade {inner:?} does not exist")]
    UnknownInnerFacade {
        /// The facade.
        facade: String,
        /// The missing facade's name.
        inner: String,
    },
    /// Discovery settings that cannot be used.
    #[error("discovery {0}")]
    Discovery(String),
    /// A pinned tool the catalogue does not have.
    #[error("pinned tool {0:?} is not in the catalogue")]
    UnknownPinnedTool(String),
    /// Folding a facade that is not unfolded.
    #[error("facade {0:?} is not unfolded")]
    NotUnfolded(String),
    /// Model tool calls asked for in a dialect no model API speaks (`mcp`).
    #[error("dialect {0}: tool calls come from a model API: use openai, openai-responses, anthropic or gemini")]
    NotAModelApi(&'static str),
    /// Tools registered at run time that are not a manifest object.
    #[error("registered tools must be a manifest object {{\"tools\": [...]}}")]
    NotAManifest,
    /// The engine could not be opened.
    #[error(transparent)]
    Engine(#[from] toolsearch_query::EngineError),
    /// The index could not be rebuilt.
    #[error(transparent)]
    Index(#[from] toolsearch_index::IndexError),
    /// A registered tool was not a valid manifest entry.
    #[error(transparent)]
    Catalog(#[from] toolsearch_catalog::CatalogError),
    /// A replay script line that cannot be run.
    #[error("{file}:{line}: {message}")]
    Script {
        /// The script.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}
