//! [`OnnxEmbedder`]: a sentence-transformers ONNX export on ONNX Runtime through fastembed
//! (mean and CLS pooling are fastembed's; last-token pooling reads fastembed's raw output).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use fastembed::{InitOptionsUserDefined, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};
use sha2::{Digest, Sha256};

use crate::files::ModelFiles;
use crate::runtime::environment;
use crate::spec::Pooling;
use crate::{normalize, EmbedError, Embedder};

/// How an [`OnnxEmbedder`] runs.
#[derive(Debug, Clone)]
pub struct EmbedderOptions {
    /// Independent sessions (each can embed concurrently with the others).
    pub sessions: usize,
    /// ONNX Runtime intra-op threads per session; `None` uses every core this process may run
    /// on, its CPU quota and affinity included (fastembed sizes it by `available_parallelism`,
    /// not the host's cores as ONNX Runtime would): what a search wants, a query embeds
    /// 1.5-1.8x faster on two cores than on one (docs/latency.md).
    pub intra_threads: Option<usize>,
    /// Tokens kept per text; longer texts are truncated. `None`: the model's own
    /// (`max_seq_length`; 256 for the named models).
    pub max_length: Option<usize>,
    /// Most texts per model call when embedding many.
    pub batch_size: usize,
    /// Most padded tokens per model call (texts x the longest text's tokens): what bounds the
    /// model's activations, so a build's memory depends on neither the catalogue's size nor
    /// its descriptions' length.
    pub batch_tokens: usize,
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        EmbedderOptions {
            sessions: 1,
            intra_threads: None,
            max_length: None,
            batch_size: 64,
            batch_tokens: BATCH_TOKENS,
        }
    }
}

/// The default token budget of a model call. Measured on this model (docs/build-memory.md,
/// "Index build memory and throughput"): small calls are both faster per token and far
/// leaner than large ones; 512 padded tokens beat 256, 1,024, 2,048 and 4,096, and one
/// session on every core matched two single-threaded sessions at half their memory.
pub const BATCH_TOKENS: usize = 512;

/// The ONNX embedder. `Send + Sync`: calls are spread over a pool of sessions. A session
/// released by [`Embedder::release`] is loaded again (and its weights checked against the
/// same sha256) when next needed.
pub struct OnnxEmbedder {
    sessions: Vec<Mutex<Option<TextEmbedding>>>,
    files: ModelFiles,
    options: EmbedderOptions,
    next: AtomicUsize,
    sha256: String,
    tokenizer: String,
    source: Option<String>,
    dimension: usize,
    batch_size: usize,
    batch_tokens: usize,
    /// Whether the model runs on every core: worked out once, at load (the count of cores reads
    /// the cgroup's quota), not on every search that asks.
    every_core: bool,
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
        let (first, sha256, tokenizer) = open_session(files, &options, None)?;
        let mut sessions = vec![Mutex::new(Some(first))];
        for _ in 1..options.sessions.max(1) {
            sessions.push(Mutex::new(Some(open_session(files, &options, Some((&sha256, &tokenizer)))?.0)));
        }
        let max_length = options.max_length.unwrap_or(files.spec.max_length);
        let mut embedder = OnnxEmbedder {
            sessions,
            files: files.clone(),
            next: AtomicUsize::new(0),
            sha256,
            tokenizer,
            source: files.spec.id.starts_with("local/").then(|| {
                let dir = files.model_dir.canonicalize().unwrap_or_else(|_| files.model_dir.clone());
                dir.display().to_string()
            }),
            dimension: 0,
            batch_size: options.batch_size.max(1),
            batch_tokens: options.batch_tokens.max(max_length),
            every_core: options
                .intra_threads
                .is_none_or(|threads| threads >= std::thread::available_parallelism().map_or(1, |n| n.get())),
            options,
        };
        embedder.dimension = embedder.run(&["dimension probe"])?.first().map_or(0, Vec::len);
        if embedder.dimension == 0 {
            return Err(EmbedError::Runtime("the model produced an empty vector".into()));
        }
        if let Some(declared) = files.spec.declared_dimension.filter(|d| *d != embedder.dimension) {
            return Err(EmbedError::Config(
                files.model_dir.join("1_Pooling/config.json"),
                format!(
                    "the pooling config declares {declared} dimensions but {} gives {}",
                    files.model_file("model.onnx").map(|p| p.display().to_string()).unwrap_or_default(),
                    embedder.dimension
                ),
            ));
        }
        Ok(embedder)
    }

    /// The session behind `guard`, loaded again if it was released.
    fn loaded<'a>(
        &self,
        guard: &'a mut MutexGuard<'_, Option<TextEmbedding>>,
    ) -> Result<&'a mut TextEmbedding, EmbedError> {
        if guard.is_none() {
            **guard = Some(open_session(&self.files, &self.options, Some((&self.sha256, &self.tokenizer)))?.0);
        }
        Ok(guard.as_mut().expect("a session was just loaded"))
    }

    /// Runs one model call on a free session (or waits for one).
    fn run(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.sessions.len();
        let mut guard = (0..n).find_map(|i| self.sessions[(start + i) % n].try_lock().ok());
        if guard.is_none() {
            guard = Some(self.sessions[start % n].lock().unwrap_or_else(|p| p.into_inner()));
        }
        let mut guard = guard.expect("a session guard was just taken");
        let session = self.loaded(&mut guard)?;
        let batch = Some(texts.len().max(1));
        let mut out = match self.files.spec.pooling {
            Pooling::LastToken => session
                .transform(texts, batch)
                .and_then(|o| o.export_with_transformer(crate::pooling::last_token))
                .map_err(|e| EmbedError::Runtime(e.to_string()))?,
            _ => session.embed(texts, batch).map_err(|e| EmbedError::Runtime(e.to_string()))?,
        };
        out.iter_mut().for_each(|v| normalize(v));
        Ok(out)
    }

    /// Embeds `texts` with `prompt` before each.
    fn embed_prompted(&self, prompt: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if prompt.is_empty() {
            return self.embed_plain(texts);
        }
        let prompted: Vec<String> = texts.iter().map(|t| format!("{prompt}{t}")).collect();
        self.embed_plain(&prompted.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Tokens the model reads of each text (after truncation to `max_length`).
    fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>, EmbedError> {
        let mut guard = self.sessions[0].lock().unwrap_or_else(|p| p.into_inner());
        let session = self.loaded(&mut guard)?;
        texts
            .iter()
            .map(|t| {
                session.tokenizer.encode(*t, true).map(|e| e.len()).map_err(|e| EmbedError::Runtime(e.to_string()))
            })
            .collect()
    }
}

/// Loads one session from `files`, with the weights' sha256 and the tokenizer's fingerprint;
/// with `expect` (those two of the first load), weights or a tokenizer that changed since are
/// refused.
pub(crate) fn open_session(
    files: &ModelFiles,
    options: &EmbedderOptions,
    expect: Option<(&str, &str)>,
) -> Result<(TextEmbedding, String, String), EmbedError> {
    let env = environment(&files.ort_library)?;
    let read = |name: &str| -> Result<Vec<u8>, EmbedError> {
        let p = files.model_file(name)?;
        std::fs::read(&p).map_err(|e| EmbedError::Io(p, e))
    };
    let onnx = read("model.onnx")?;
    let sha256: String = Sha256::digest(&onnx).iter().map(|b| format!("{b:02x}")).collect();
    if let Some((want, _)) = expect.filter(|(w, _)| *w != sha256) {
        return Err(EmbedError::Runtime(format!(
            "{}: the model changed while in use (sha256 {sha256}, loaded as {want})",
            files.model_file("model.onnx").map(|p| p.display().to_string()).unwrap_or_default()
        )));
    }
    let special_tokens_map_file = match files.model_file("special_tokens_map.json") {
        Ok(_) => read("special_tokens_map.json")?,
        Err(_) => b"{}".to_vec(),
    };
    let tokenizer = TokenizerFiles {
        tokenizer_file: read("tokenizer.json")?,
        config_file: read("config.json")?,
        special_tokens_map_file,
        tokenizer_config_file: read("tokenizer_config.json")?,
    };
    let model = UserDefinedEmbeddingModel::new(onnx, tokenizer);
    let model = match files.spec.pooling {
        Pooling::Mean => model.with_pooling(fastembed::Pooling::Mean),
        Pooling::Cls => model.with_pooling(fastembed::Pooling::Cls),
        Pooling::LastToken => model,
    };
    let max_length = options.max_length.unwrap_or(files.spec.max_length);
    let mut init = InitOptionsUserDefined::new().with_environment(env).with_max_length(max_length);
    if let Some(t) = options.intra_threads {
        init = init.with_intra_threads(t);
    }
    let mut session = TextEmbedding::try_new_from_user_defined(model, init).map_err(|e| unloadable(files, e))?;
    // The weights' file, its parse and the copies made on the way are freed by now.
    crate::memory::give_back();
    let fingerprint = crate::fingerprint::tokenizer_fingerprint(&mut session)?;
    if let Some((_, want)) = expect.filter(|(_, w)| *w != fingerprint) {
        return Err(EmbedError::Runtime(format!(
            "{}: the tokenizer changed while in use (fingerprint {}, loaded as {})",
            files.model_file("tokenizer.json").map(|p| p.display().to_string()).unwrap_or_default(),
            &fingerprint[..12],
            &want[..want.len().min(12)]
        )));
    }
    Ok((session, sha256, fingerprint))
}

/// Why a model's files did not load, naming the file at fault where the error tells which: the
/// weights ONNX Runtime could not take, or the tokenizer's files.
fn unloadable(files: &ModelFiles, e: fastembed::Error) -> EmbedError {
    let name = match &e {
        fastembed::Error::Ort(_) | fastembed::Error::OrtBuilder(_) | fastembed::Error::OrtSession(_) => "model.onnx",
        fastembed::Error::TokenizerConfig(_) => "tokenizer.json",
        _ => return EmbedError::Runtime(e.to_string()),
    };
    match files.model_file(name) {
        Ok(path) => EmbedError::Config(path, format!("does not load: {e}")),
        Err(_) => EmbedError::Runtime(e.to_string()),
    }
}

/// Vectors of a worker's batches, by the index of their text.
type Embedded = Vec<(usize, Vec<f32>)>;

/// Splits text indices, sorted by token count, into model calls of at most `max_texts` texts
/// and `budget` padded tokens (a call pads every text to its longest).
pub(crate) fn plan_batches(tokens: &[usize], max_texts: usize, budget: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..tokens.len()).collect();
    order.sort_by_key(|&i| tokens[i]);
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for i in order {
        // Sorted ascending: this text is the longest of the batch if it joins.
        let padded = (current.len() + 1) * tokens[i].max(1);
        if !current.is_empty() && (current.len() == max_texts || padded > budget) {
            batches.push(std::mem::take(&mut current));
        }
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        &self.files.spec.id
    }

    fn pooling(&self) -> &str {
        self.files.spec.pooling.name()
    }

    fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    fn prompts(&self) -> (&str, &str) {
        (&self.files.spec.query_prompt, &self.files.spec.passage_prompt)
    }

    fn max_length(&self) -> Option<usize> {
        Some(self.options.max_length.unwrap_or(self.files.spec.max_length))
    }

    fn busies_every_core(&self) -> bool {
        self.every_core
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_prompted(&self.files.spec.passage_prompt, texts)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed_prompted(&self.files.spec.query_prompt, &[text])?;
        v.pop().ok_or_else(|| EmbedError::Runtime("model returned no vector".into()))
    }

    fn model_sha256(&self) -> &str {
        &self.sha256
    }

    fn tokenizer_fingerprint(&self) -> Option<&str> {
        Some(&self.tokenizer)
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// Frees every session; the next call loads them again.
    fn release(&self) {
        for s in &self.sessions {
            s.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
    }
}

impl OnnxEmbedder {
    /// Batches texts of similar token length together, each model call within the token
    /// budget, spread over the sessions (one thread each), then restores input order.
    fn embed_plain(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.len() <= 1 {
            return self.run(texts);
        }
        let batches = plan_batches(&self.token_counts(texts)?, self.batch_size, self.batch_tokens);
        let next = AtomicUsize::new(0);
        let work = || -> Result<Embedded, EmbedError> {
            let mut done = Vec::new();
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                let Some(batch) = batches.get(b) else { return Ok(done) };
                let input: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
                done.extend(batch.iter().copied().zip(self.run(&input)?));
            }
        };
        let workers = self.sessions.len().min(batches.len()).max(1);
        let results: Vec<Result<Embedded, EmbedError>> = if workers == 1 {
            vec![work()]
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..workers).map(|_| s.spawn(work)).collect();
                handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
            })
        };
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for r in results {
            for (i, v) in r? {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::plan_batches;

    #[test]
    fn batches_hold_similar_lengths_within_the_token_budget() {
        let tokens = [200, 10, 12, 250, 11, 13, 100, 9];
        let batches = plan_batches(&tokens, 3, 256);
        for b in &batches {
            let longest = b.iter().map(|&i| tokens[i]).max().unwrap();
            assert!(b.len() == 1 || b.len() * longest <= 256, "{b:?}");
            assert!(b.len() <= 3);
        }
        let mut all: Vec<usize> = batches.concat();
        all.sort_unstable();
        assert_eq!(all, (0..tokens.len()).collect::<Vec<_>>(), "every text once");
        // Short texts share calls, a text over the budget runs alone.
        assert_eq!(batches[0], [7, 1, 4]);
        assert!(batches.iter().any(|b| b == &[3]));
        assert!(plan_batches(&[], 4, 100).is_empty());
    }
}
