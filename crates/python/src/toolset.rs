//! `NativeToolSet`: the disclosure runtime over an index for the Python package's `ToolSet`:
//! the definitions the model sees, and its tool calls, started and finished across the GIL.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use serde_json::Value;
use toolsearch::{Embedder, Engine, EngineOptions, Principal};

use crate::Model;

/// The disclosure runtime over an index: what the model sees, and its tool calls.
#[pyclass(frozen)]
pub(crate) struct NativeToolSet {
    live: Arc<toolsearch::disclosure::LiveCatalog>,
    set: Mutex<toolsearch::disclosure::ToolSet>,
    pending: Mutex<HashMap<u64, toolsearch::disclosure::PendingCall>>,
    next: std::sync::atomic::AtomicU64,
}

fn outcome_json(o: &toolsearch::disclosure::Outcome) -> String {
    serde_json::json!({"text": o.text, "is_error": o.is_error, "added": o.added, "removed": o.removed}).to_string()
}

#[pymethods]
impl NativeToolSet {
    /// A tool set over the index at `path`, configured by `config` (JSON, the `toolset` of a
    /// `serve` config), for a caller holding `scopes` (trusted when `None`), prepared for it.
    #[new]
    #[pyo3(signature = (path, model, config, scopes=None))]
    fn new(
        py: Python<'_>,
        path: String,
        model: &Model,
        config: &str,
        scopes: Option<Vec<String>>,
    ) -> PyResult<NativeToolSet> {
        let mut config: toolsearch::disclosure::ToolSetConfig =
            serde_json::from_str(config).map_err(|e| PyValueError::new_err(format!("toolset config: {e}")))?;
        config.principal = scopes.map_or_else(Principal::trusted, Principal::with_scopes);
        let embedder: Arc<dyn Embedder> = model.0.clone();
        let dir = PathBuf::from(path);
        let engine = py
            .detach(|| {
                let engine = Engine::with_embedder(&dir, embedder, EngineOptions::default())?;
                // Its views whole before its first request, as a server prepares its caller.
                engine.prepare_for([&config.principal]);
                Ok::<_, toolsearch::EngineError>(engine)
            })
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        let live = toolsearch::disclosure::LiveCatalog::new(engine);
        let set = toolsearch::disclosure::ToolSet::new(live.clone(), Arc::default(), config)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(NativeToolSet { live, set: Mutex::new(set), pending: Mutex::default(), next: Default::default() })
    }

    /// Opens the index again with `model`, the one it now records (another process changed
    /// it): the set answers from the new one, what it had unfolded and expanded kept; the
    /// visible names that changed, as `{"added", "removed"}` JSON. An index that does not open
    /// raises `OSError`, the one before kept.
    fn reload(&self, py: Python<'_>, model: &Model) -> PyResult<String> {
        let embedder: Arc<dyn Embedder> = model.0.clone();
        py.detach(|| self.live.reload_with(embedder)).map_err(|e| PyOSError::new_err(e.to_string()))?;
        let change = py.detach(|| self.set.lock().unwrap_or_else(|p| p.into_inner()).refresh());
        Ok(serde_json::json!({"added": change.added, "removed": change.removed}).to_string())
    }

    /// The definitions the model may see now, in `dialect` (`openai`, `openai-responses`,
    /// `anthropic`, `gemini`, `mcp`), as JSON.
    fn definitions(&self, dialect: &str) -> PyResult<String> {
        let dialect = toolsearch::disclosure::Dialect::from_name(dialect).ok_or_else(|| {
            PyValueError::new_err(format!(
                "dialect {dialect:?}: use openai, openai-responses, anthropic, gemini or mcp"
            ))
        })?;
        let set = self.set.lock().unwrap_or_else(|p| p.into_inner());
        Ok(toolsearch::disclosure::render(&set.visible(), dialect).to_string())
    }

    /// The system-prompt snippet that explains the tools.
    fn system_prompt(&self) -> String {
        self.set.lock().unwrap_or_else(|p| p.into_inner()).system_prompt()
    }

    /// Starts a model's tool call: `{"done": OUTCOME}` when the tool set answered it (discovery,
    /// a facade, a refusal), or `{"run": {"token", "tool_id", "arguments"}}` for the host to
    /// run, then `finish`.
    fn begin(&self, py: Python<'_>, name: &str, arguments: &str) -> PyResult<String> {
        let arguments: Value = serde_json::from_str(arguments).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let step = py.detach(|| self.set.lock().unwrap_or_else(|p| p.into_inner()).begin_call(name, &arguments));
        Ok(match step {
            toolsearch::disclosure::Step::Done(o) => format!("{{\"done\":{}}}", outcome_json(&o)),
            toolsearch::disclosure::Step::Run(p) => {
                let token = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let run = serde_json::json!({"run": {"token": token, "tool_id": p.tool_id, "arguments": p.arguments}});
                self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(token, p);
                run.to_string()
            }
        })
    }

    /// Finishes the call `token` with the host's result (`ok` and its text); the outcome.
    fn finish(&self, token: u64, ok: bool, text: String) -> PyResult<String> {
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&token);
        let Some(pending) = pending else {
            return Err(PyValueError::new_err(format!("no pending call {token}")));
        };
        let result = if ok { Ok(text) } else { Err(toolsearch::ToolFailure::Failed(text)) };
        Ok(outcome_json(&self.set.lock().unwrap_or_else(|p| p.into_inner()).finish_call(pending, result)))
    }

    /// Ends one interaction (unfolded facades fold back, as configured); the change as JSON.
    fn end_interaction(&self) -> String {
        let change = self.set.lock().unwrap_or_else(|p| p.into_inner()).end_interaction();
        serde_json::to_string(&change).unwrap_or_default()
    }

    /// The audit trail, one JSON object per line.
    fn audit(&self) -> String {
        self.set.lock().unwrap_or_else(|p| p.into_inner()).audit().to_jsonl()
    }
}
