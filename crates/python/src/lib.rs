//! toolsearch-python: the native module (`toolsearch._native`) of the `toolsearch` Python
//! package: the engine, the indexer and the whole CLI, through PyO3.
//!
//! Key design decision: the boundary is narrow and JSON-shaped. The engine already speaks its
//! protocol as JSON (`Engine::handle`), so the module passes requests and answers as JSON text
//! and the Python layer (`python/toolsearch/`) turns them into typed objects and exceptions;
//! no protocol type is mirrored in Rust twice. Every call that does real work (loading the
//! model, building, searching, the CLI) releases the GIL.

mod provider;
mod toolset;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use serde_json::Value;
use toolsearch::embed::{EmbedderOptions, ModelFiles, ModelSpec, OnnxEmbedder};
use toolsearch::{BuildOptions, Embedder, Engine, EngineOptions, PrepareBehind, Principal};

/// mimalloc for the module's own allocations, as in the CLI (docs/scaling.md): an index's
/// open makes millions of small strings. Python's objects keep Python's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pyo3::create_exception!(_native, NativeProtocolError, pyo3::exceptions::PyException, "A protocol error, as JSON.");

/// Runs the `toolsearch` command line on `argv` (program name first); its exit status.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| toolsearch::cli::run_with(argv))
}

/// The model files: the ONNX Runtime library, the tokenizer directory and `model.onnx`, and
/// which model they are: a named one (`stock`, `tools`) or, with `local`, a sentence-transformers
/// export whose configs are in the tokenizer directory.
fn model_files(
    ort_library: String,
    tokenizer_dir: String,
    model_onnx: String,
    kind: &str,
) -> Result<ModelFiles, toolsearch::embed::EmbedError> {
    let model_dir = PathBuf::from(tokenizer_dir);
    let spec = match ModelSpec::named(kind) {
        Some(spec) => spec,
        None if kind == "local" => ModelSpec::read(&model_dir)?,
        None => return Err(toolsearch::embed::EmbedError::UnknownModel(kind.to_owned())),
    };
    Ok(ModelFiles {
        ort_library: PathBuf::from(ort_library),
        model_dir,
        model_onnx: Some(PathBuf::from(model_onnx)),
        spec,
    })
}

/// The model the index at `path` was built with: a named model's name or a local model's
/// directory (`None` when the index cannot be read or names neither; opening it says why).
#[pyfunction]
fn index_model(path: String) -> Option<String> {
    toolsearch::index::IndexMeta::read(std::path::Path::new(&path)).ok().and_then(|m| m.model_choice())
}

/// A loaded embedding model, shared by the indexes opened with it.
#[pyclass(frozen)]
struct Model(pub(crate) Arc<OnnxEmbedder>);

#[pymethods]
impl Model {
    /// Loads the model from its files (ONNX Runtime library, tokenizer directory, weights);
    /// `kind` is `stock`, `tools` or `local` (a sentence-transformers export's directory).
    #[new]
    #[pyo3(signature = (ort_library, tokenizer_dir, model_onnx, kind = "stock"))]
    fn new(
        py: Python<'_>,
        ort_library: String,
        tokenizer_dir: String,
        model_onnx: String,
        kind: &str,
    ) -> PyResult<Model> {
        let files =
            model_files(ort_library, tokenizer_dir, model_onnx, kind).map_err(|e| PyOSError::new_err(e.to_string()))?;
        py.detach(|| OnnxEmbedder::load(&files, EmbedderOptions::default()))
            .map(|e| Model(Arc::new(e)))
            .map_err(|e| PyOSError::new_err(e.to_string()))
    }

    /// The model's id, as an index built with it records it (e.g.
    /// `toolsearch/all-MiniLM-L6-v2-tools-2@int8`).
    #[getter]
    fn id(&self) -> String {
        self.0.model_id().to_owned()
    }
}

/// An open index: the engine over it.
#[pyclass(frozen)]
struct NativeIndex {
    engine: Arc<Engine>,
    path: PathBuf,
    embedder: Arc<dyn Embedder>,
    /// Engines over the same files with another confidence cutoff, opened when first asked for.
    cutoffs: Mutex<HashMap<u32, Arc<Engine>>>,
    /// Restricted callers being prepared behind their first request, as the MCP hub does.
    preparing: PrepareBehind,
}

impl NativeIndex {
    /// The engine answering with confidence cutoff `min` (the default one when `None`).
    fn with_cutoff(&self, min: Option<f32>) -> Result<Option<Arc<Engine>>, String> {
        let Some(min) = min else { return Ok(None) };
        let mut cache = self.cutoffs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = cache.get(&min.to_bits()) {
            return Ok(Some(e.clone()));
        }
        let options = EngineOptions { min_confidence: Some(min), ..EngineOptions::default() };
        let engine =
            Arc::new(Engine::with_embedder(&self.path, self.embedder.clone(), options).map_err(|e| e.to_string())?);
        if cache.len() >= 8 {
            cache.clear();
        }
        cache.insert(min.to_bits(), engine.clone());
        Ok(Some(engine))
    }
}

#[pymethods]
impl NativeIndex {
    /// Opens the index in `path` with `model`.
    /// `query_cache`: entries of the query caches (default: the engine's; 0 turns them off, for
    /// benchmarks).
    #[new]
    #[pyo3(signature = (path, model, query_cache=None))]
    fn new(py: Python<'_>, path: String, model: &Model, query_cache: Option<usize>) -> PyResult<NativeIndex> {
        let dir = PathBuf::from(path);
        let embedder: Arc<dyn Embedder> = model.0.clone();
        let mut options = EngineOptions::default();
        if let Some(n) = query_cache {
            options.query_cache = n;
        }
        let engine = py
            .detach(|| Engine::with_embedder(&dir, embedder.clone(), options))
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        Ok(NativeIndex {
            engine: Arc::new(engine),
            path: dir,
            embedder,
            cutoffs: Mutex::default(),
            preparing: PrepareBehind::default(),
        })
    }

    /// Runs `search_tool_by_category` for each query from Rust, without Python in the loop;
    /// the seconds it took (the baseline of `scripts/bench-python`).
    fn bench_search(&self, py: Python<'_>, queries: Vec<String>) -> f64 {
        py.detach(|| {
            let who = Principal::trusted();
            let start = std::time::Instant::now();
            for q in &queries {
                let _ = self.engine.handle(&who, "search_tool_by_category", serde_json::json!({"query": q}));
            }
            start.elapsed().as_secs_f64()
        })
    }

    /// Works out now what callers holding each of `scope_sets` may see, whole, as a server
    /// does for its tokens at start (`Ranker::prepare_for`): none of their requests then pays
    /// for it, or reads a posting of a tool hidden from them. Releases the GIL.
    fn prepare(&self, py: Python<'_>, scope_sets: Vec<Vec<String>>) {
        let callers: Vec<Principal> = scope_sets.into_iter().map(Principal::with_scopes).collect();
        py.detach(|| self.engine.prepare_for(&callers));
    }

    /// Whether what a caller holding `scopes` may see is worked out whole (`prepare`, or
    /// behind its first request).
    fn prepared(&self, scopes: Vec<String>) -> bool {
        self.engine.is_prepared_for(&Principal::with_scopes(scopes))
    }

    /// Prepares this index for the scope sets `other` (the index before a reload) keeps, so
    /// that a reload makes no caller's next request pay again. Releases the GIL.
    fn prepare_like(&self, py: Python<'_>, other: &NativeIndex) {
        let callers = other.engine.kept_callers();
        py.detach(|| self.engine.prepare_for(&callers));
    }

    /// Where the index is.
    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// One protocol call (`list`, `search_nodes`, `search_tool_by_category`, `expand_tool`,
    /// `check_call`) with `request` as JSON, for a caller with `scopes` (JSON list) or trusted
    /// (`None`); the answer as JSON, or `NativeProtocolError` with the error as JSON.
    #[pyo3(signature = (call, request, scopes=None, min_confidence=None))]
    fn handle(
        &self,
        py: Python<'_>,
        call: &str,
        request: &str,
        scopes: Option<Vec<String>>,
        min_confidence: Option<f32>,
    ) -> PyResult<String> {
        let other = py.detach(|| self.with_cutoff(min_confidence)).map_err(PyOSError::new_err)?;
        let engine = other.unwrap_or_else(|| self.engine.clone());
        let request: Value = serde_json::from_str(request).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let who = match scopes {
            Some(s) => Principal::with_scopes(s),
            None => Principal::trusted(),
        };
        let answer = py.detach(|| match call {
            "check_call" => {
                let req = serde_json::from_value(request).map_err(|e| {
                    toolsearch::ProtocolError::new(
                        toolsearch::ErrorCode::InvalidArgument,
                        format!("invalid arguments: {e}"),
                    )
                })?;
                engine.check_call(&who, &req).map(|()| Value::Null)
            }
            _ => engine.handle(&who, call, request),
        });
        // A scope set first met here is kept without its views' words (a request does not
        // pay the walk of every posting list): work them out behind it, once.
        self.preparing.behind(engine, &who);
        match answer {
            Ok(v) => Ok(v.to_string()),
            Err(e) => Err(NativeProtocolError::new_err(serde_json::to_string(&e).unwrap_or_default())),
        }
    }
}

/// Builds an index of the catalogue `files` (each in its format, detected unless `format`)
/// into `out`, atomically, taking unchanged documents' vectors from the index at `reuse`
/// when given; the build report as JSON. Bad input is a `ValueError` naming the file and field.
#[pyfunction]
#[pyo3(signature = (files, out, model, format=None, progress=false, reuse=None))]
fn build(
    py: Python<'_>,
    files: Vec<String>,
    out: String,
    model: &Model,
    format: Option<String>,
    progress: bool,
    reuse: Option<String>,
) -> PyResult<String> {
    let files: Vec<PathBuf> = files.into_iter().map(PathBuf::from).collect();
    let format = match format.as_deref() {
        None => None,
        Some(name) => match toolsearch::Format::from_name(name) {
            Some(format) => Some(format),
            None => {
                return Err(PyValueError::new_err(format!(
                    "format {name:?}: use manifest, jsonl, mcp, openai, anthropic or gemini"
                )))
            }
        },
    };
    let embedder = model.0.clone();
    py.detach(|| {
        let catalog =
            toolsearch::catalog::load_paths(&files, format).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let progress = toolsearch::cli::progress_bar(progress);
        let options = BuildOptions { progress, reuse_from: reuse.map(PathBuf::from), ..BuildOptions::default() };
        let report = toolsearch::build_index_owned(catalog, embedder.as_ref(), std::path::Path::new(&out), &options)
            .map_err(|e| match e {
                toolsearch::index::IndexError::Unreusable(..) => PyValueError::new_err(e.to_string()),
                e => PyOSError::new_err(e.to_string()),
            })?;
        let warnings: Vec<Value> =
            report.warnings.iter().map(|w| serde_json::to_value(w).unwrap_or_default()).collect();
        Ok(serde_json::json!({
            "tools": report.tools,
            "nodes": report.nodes,
            "embedded": report.embedded,
            "reused": report.reused,
            "seconds": report.total_seconds,
            "warnings": warnings,
        })
        .to_string())
    })
}

/// Fits a query adapter to the labelled queries in `labels` (queries.jsonl lines, or an audit
/// trail) and stores it in the index at `path` if it beats the unadapted ranking (unless
/// `dry_run`); the report as JSON. Too few labels is a `ValueError`.
#[pyfunction]
#[pyo3(signature = (path, model, labels, dry_run=false))]
fn learn(py: Python<'_>, path: String, model: &Model, labels: String, dry_run: bool) -> PyResult<String> {
    use toolsearch::eval::{labels_from_audit, learn_adapter, load_queries};
    let dir = PathBuf::from(path);
    let labels_path = PathBuf::from(labels);
    let embedder: Arc<dyn Embedder> = model.0.clone();
    py.detach(|| {
        let text = std::fs::read_to_string(&labels_path)
            .map_err(|e| PyOSError::new_err(format!("{}: {e}", labels_path.display())))?;
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let is_audit = serde_json::from_str::<Value>(first).is_ok_and(|v| v.get("event").is_some());
        let labels = if is_audit {
            labels_from_audit(&text)
                .map_err(|(line, e)| PyValueError::new_err(format!("{}:{line}: {e}", labels_path.display())))?
        } else {
            load_queries(&labels_path, None, None).map_err(|e| PyValueError::new_err(e.to_string()))?
        };
        let options = EngineOptions { use_adapter: false, ..EngineOptions::default() };
        let engine = Engine::with_embedder(&dir, embedder, options).map_err(|e| PyOSError::new_err(e.to_string()))?;
        let report = learn_adapter(&engine, &labels).map_err(|e| PyValueError::new_err(e.to_string()))?;
        if let (Some(a), false) = (&report.adapter, dry_run) {
            toolsearch::index::IndexMeta::set_adapter(&dir, Some(a.clone()))
                .map_err(|e| PyOSError::new_err(e.to_string()))?;
        }
        let mut out = serde_json::to_value(&report).map_err(|e| PyValueError::new_err(e.to_string()))?;
        out["learned"] = Value::Bool(report.adapter.is_some());
        out["stored"] = Value::Bool(report.adapter.is_some() && !dry_run);
        Ok(out.to_string())
    })
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(learn, m)?)?;
    m.add_function(wrap_pyfunction!(index_model, m)?)?;
    m.add_function(wrap_pyfunction!(provider::render_tool_search, m)?)?;
    m.add_function(wrap_pyfunction!(provider::model_calls, m)?)?;
    m.add_function(wrap_pyfunction!(provider::model_answer, m)?)?;
    m.add_class::<Model>()?;
    m.add_class::<NativeIndex>()?;
    m.add_class::<toolset::NativeToolSet>()?;
    m.add("NativeProtocolError", m.py().get_type::<NativeProtocolError>())?;
    Ok(())
}
