//! [`OnnxEmbedder`]: all-MiniLM-L6-v2 on ONNX Runtime through fastembed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};
use sha2::{Digest, Sha256};

use crate::files::ModelFiles;
use crate::runtime::environment;
use crate::{normalize, EmbedError, Embedder, MODEL_ID};

/// How an [`OnnxEmbedder`] runs.
#[derive(Debug, Clone)]
pub struct EmbedderOptions {
    /// Independent sessions (each can embed concurrently with the others).
    pub sessions: usize,
    /// ONNX Runtime intra-op threads per session; `None` uses every core.
    pub intra_threads: Option<usize>,
    /// Tokens kept per text; longer texts are truncated.
    pub max_length: usize,
    /// Texts per model call when embedding many.
    pub batch_size: usize,
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        EmbedderOptions { sessions: 1, intra_threads: None, max_length: 256, batch_size: 32 }
    }
}

/// The ONNX embedder. `Send + Sync`: calls are spread over a pool of sessions.
pub struct OnnxEmbedder {
    sessions: Vec<Mutex<TextEmbedding>>,
    next: AtomicUsize,
    sha256: String,
    dimension: usize,
    batch_size: usize,
}

impl std::fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("sessions", &self.sessions.len())
            .field("dimension", &self.dimension)
            .finish()
    }
}

impl OnnxEmbedder {
    /// Loads the runtime and the model from `files`.
    pub fn load(files: &ModelFiles, options: EmbedderOptions) -> Result<OnnxEmbedder, EmbedError> {
        let env = environment(&files.ort_library)?;
        let read = |name: &str| -> Result<Vec<u8>, EmbedError> {
            let p = files.model_file(name)?;
            std::fs::read(&p).map_err(|e| EmbedError::Io(p, e))
        };
        let onnx = read("model.onnx")?;
        let sha256: String = Sha256::digest(&onnx).iter().map(|b| format!("{b:02x}")).collect();
        let tokenizer = TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let mut sessions = Vec::new();
        for _ in 0..options.sessions.max(1) {
            let model = UserDefinedEmbeddingModel::new(onnx.clone(), tokenizer.clone()).with_pooling(Pooling::Mean);
            let mut init =
                InitOptionsUserDefined::new().with_environment(env.clone()).with_max_length(options.max_length);
            if let Some(t) = options.intra_threads {
                init = init.with_intra_threads(t);
            }
            let session = TextEmbedding::try_new_from_user_defined(model, init)
                .map_err(|e| EmbedError::Runtime(e.to_string()))?;
            sessions.push(Mutex::new(session));
        }
        let mut embedder = OnnxEmbedder {
            sessions,
            next: AtomicUsize::new(0),
            sha256,
            dimension: 0,
            batch_size: options.batch_size.max(1),
        };
        embedder.dimension = embedder.run(&["dimension probe"])?.first().map_or(0, Vec::len);
        if embedder.dimension == 0 {
            return Err(EmbedError::Runtime("the model produced an empty vector".into()));
        }
        Ok(embedder)
    }

    /// Runs one model call on a free session (or waits for one).
    fn run(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.sessions.len();
        let mut guard = (0..n).find_map(|i| self.sessions[(start + i) % n].try_lock().ok());
        if guard.is_none() {
            guard = Some(self.sessions[start % n].lock().unwrap_or_else(|p| p.into_inner()));
        }
        let mut session = guard.expect("a session guard was just taken");
        let mut out = session.embed(texts, Some(texts.len().max(1))).map_err(|e| EmbedError::Runtime(e.to_string()))?;
        out.iter_mut().for_each(|v| normalize(v));
        Ok(out)
    }
}

impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn model_sha256(&self) -> &str {
        &self.sha256
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// Batches texts of similar length together (less padding), then restores input order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.len() <= self.batch_size {
            return self.run(texts);
        }
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            for (&i, v) in chunk.iter().zip(self.run(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}
