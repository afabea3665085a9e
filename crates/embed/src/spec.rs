//! [`ModelSpec`]: what a model is and how its vectors are made, read from a
//! sentence-transformers export's own configs, or built in for the named models.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::EmbedError;

/// How token vectors become one text vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of the non-padding tokens (all-MiniLM-L6-v2 and most sentence-transformers).
    Mean,
    /// The first token (`[CLS]`): BGE, GTE, E5-style exports.
    Cls,
    /// The last non-padding token: decoder embedders (Qwen3-Embedding and the like).
    LastToken,
}

impl Pooling {
    /// The name recorded in an index (`mean`, `cls`, `lasttoken`).
    pub fn name(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
            Pooling::LastToken => "lasttoken",
        }
    }
}

/// A model: its identity and the choices its configs make. Built in for the named models
/// ([`ModelSpec::named`]) and read from a directory for any other ([`ModelSpec::read`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// Recorded in every index built with it (`sentence-transformers/all-MiniLM-L6-v2@int8`,
    /// or `local/DIRNAME` for a directory).
    pub id: String,
    /// Token pooling.
    pub pooling: Pooling,
    /// Whether the export ends in a `Normalize` module. The engine ranks by cosine, so vectors
    /// are scaled to unit length either way; recorded for what the model declares.
    pub normalize: bool,
    /// Tokens kept per text (`sentence_bert_config.json` `max_seq_length`, at most 512).
    pub max_length: usize,
    /// Put before every query (`prompts.query`).
    pub query_prompt: String,
    /// Put before every tool and node text (`prompts.document`, `passage` or `corpus`).
    pub passage_prompt: String,
    /// The output size the pooling config declares (`word_embedding_dimension`), checked
    /// against what the model produces.
    pub declared_dimension: Option<usize>,
}

/// The named models and the `models/` sub-directory each lives in.
pub const NAMED_MODELS: [(&str, &str); 2] = [("stock", crate::MODEL_DIR_NAME), ("tools", crate::TOOLS_MODEL_DIR_NAME)];

impl ModelSpec {
    /// The built-in spec of a named model: `stock` (all-MiniLM-L6-v2 int8) or `tools` (the
    /// same network trained for tool retrieval, int8). Both mean-pool, 256 tokens, no prompts.
    pub fn named(name: &str) -> Option<ModelSpec> {
        let id = match name {
            "stock" => crate::MODEL_ID,
            "tools" => crate::TOOLS_MODEL_ID,
            _ => return None,
        };
        Some(ModelSpec {
            id: id.to_owned(),
            pooling: Pooling::Mean,
            normalize: true,
            max_length: 256,
            query_prompt: String::new(),
            passage_prompt: String::new(),
            declared_dimension: Some(384),
        })
    }

    /// The named model an index's recorded id belongs to, if any.
    pub fn name_of(id: &str) -> Option<&'static str> {
        NAMED_MODELS.iter().map(|(n, _)| *n).find(|n| ModelSpec::named(n).is_some_and(|s| s.id == id))
    }

    /// Reads a sentence-transformers export in `dir`: the pooling module (`modules.json`, or
    /// `1_Pooling/config.json` without one), `Normalize`, `sentence_bert_config.json`'s
    /// `max_seq_length` and `config_sentence_transformers.json`'s prompts. Every problem names
    /// the file and field.
    pub fn read(dir: &Path) -> Result<ModelSpec, EmbedError> {
        if !dir.is_dir() {
            return Err(EmbedError::Config(dir.to_path_buf(), "not a directory".into()));
        }
        let modules = optional_json(&dir.join("modules.json"))?;
        let module_path = |kind: &str| -> Option<String> {
            modules.as_ref()?.as_array()?.iter().find_map(|m| {
                let t = m.get("type")?.as_str()?;
                (t.rsplit('.').next() == Some(kind))
                    .then(|| m.get("path").and_then(Value::as_str).unwrap_or("").to_owned())
            })
        };
        let pooling_dir = module_path("Pooling").unwrap_or_else(|| "1_Pooling".to_owned());
        let pooling_file = dir.join(&pooling_dir).join("config.json");
        let Some(pool) = optional_json(&pooling_file)? else {
            return Err(EmbedError::Config(
                pooling_file,
                "missing: the pooling config of a sentence-transformers export (save the model with \
                 SentenceTransformer.save, which writes modules.json and 1_Pooling/config.json)"
                    .into(),
            ));
        };
        let pooling = read_pooling(&pooling_file, &pool)?;
        let declared_dimension = ["embedding_dimension", "word_embedding_dimension"]
            .iter()
            .find_map(|k| pool.get(*k).and_then(Value::as_u64))
            .map(|d| d as usize);
        let normalize = module_path("Normalize").is_some();
        let bert = dir.join("sentence_bert_config.json");
        // sentence-transformers 5 writes `max_seq_length` here; 6 leaves it to the tokenizer's
        // `model_max_length`, which the tokenizer applies anyway.
        let max_length = match optional_json(&bert)?.as_ref().and_then(|v| v.get("max_seq_length")) {
            None | Some(Value::Null) => 512,
            Some(n) => n.as_u64().filter(|n| *n > 0).map(|n| n.min(512) as usize).ok_or_else(|| {
                EmbedError::Config(bert.clone(), format!("max_seq_length: expected a positive integer, got {n}"))
            })?,
        };
        let (query_prompt, passage_prompt) = read_prompts(&dir.join("config_sentence_transformers.json"))?;
        let with_prompt = pool.get("include_prompt").and_then(Value::as_bool).unwrap_or(true);
        if !with_prompt && pooling == Pooling::Mean && !(query_prompt.is_empty() && passage_prompt.is_empty()) {
            return Err(EmbedError::Config(
                pooling_file,
                "include_prompt: false with mean pooling and prompts is not supported (the prompt's tokens \
                 would have to be left out of the mean)"
                    .into(),
            ));
        }
        let name = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let name = name.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
        Ok(ModelSpec {
            id: format!("local/{name}"),
            pooling,
            normalize,
            max_length,
            query_prompt,
            passage_prompt,
            declared_dimension,
        })
    }
}

/// The pooling: `pooling_mode` (sentence-transformers 6: `mean`, `cls`, `lasttoken`), or one of
/// the older `pooling_mode_cls_token`, `pooling_mode_mean_tokens`, `pooling_mode_lasttoken`
/// set and no other mode.
fn read_pooling(file: &Path, pool: &Value) -> Result<Pooling, EmbedError> {
    let Some(fields) = pool.as_object() else {
        return Err(EmbedError::Config(file.to_path_buf(), "expected a JSON object".into()));
    };
    if let Some(mode) = fields.get("pooling_mode") {
        return match mode.as_str() {
            Some("mean") => Ok(Pooling::Mean),
            Some("cls") => Ok(Pooling::Cls),
            Some("lasttoken") => Ok(Pooling::LastToken),
            _ => Err(EmbedError::Config(
                file.to_path_buf(),
                format!(
                    "pooling_mode: {mode} is not supported; toolsearch supports \"mean\", \"cls\" and \"lasttoken\""
                ),
            )),
        };
    }
    let on: Vec<&str> = fields
        .iter()
        .filter(|(k, v)| k.starts_with("pooling_mode") && v.as_bool() == Some(true))
        .map(|(k, _)| k.as_str())
        .collect();
    match on.as_slice() {
        ["pooling_mode_mean_tokens"] => Ok(Pooling::Mean),
        ["pooling_mode_cls_token"] => Ok(Pooling::Cls),
        ["pooling_mode_lasttoken"] => Ok(Pooling::LastToken),
        [] => Err(EmbedError::Config(file.to_path_buf(), "no pooling_mode_* field is true".into())),
        [one] => Err(EmbedError::Config(
            file.to_path_buf(),
            format!("{one}: unsupported pooling; toolsearch supports mean, cls and lasttoken"),
        )),
        many => Err(EmbedError::Config(
            file.to_path_buf(),
            format!("{}: more than one pooling mode; toolsearch supports exactly one", many.join(", ")),
        )),
    }
}

/// The query and passage prompts of `config_sentence_transformers.json` (empty without one).
fn read_prompts(file: &Path) -> Result<(String, String), EmbedError> {
    let Some(config) = optional_json(file)? else { return Ok((String::new(), String::new())) };
    let prompts = match config.get("prompts") {
        None | Some(Value::Null) => return Ok((String::new(), String::new())),
        Some(Value::Object(p)) => p,
        Some(other) => {
            return Err(EmbedError::Config(file.to_path_buf(), format!("prompts: expected an object, got {other}")))
        }
    };
    let get = |names: &[&str]| -> Result<String, EmbedError> {
        for n in names {
            match prompts.get(*n) {
                None => continue,
                Some(Value::String(s)) => return Ok(s.clone()),
                Some(other) => {
                    return Err(EmbedError::Config(
                        file.to_path_buf(),
                        format!("prompts.{n}: expected a string, got {other}"),
                    ))
                }
            }
        }
        Ok(String::new())
    };
    Ok((get(&["query"])?, get(&["document", "passage", "corpus"])?))
}

/// A JSON file's value, `None` when the file does not exist.
fn optional_json(path: &Path) -> Result<Option<Value>, EmbedError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| EmbedError::Config(path.to_path_buf(), format!("invalid JSON: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EmbedError::Io(PathBuf::from(path), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn temp() -> PathBuf {
        let d = std::env::temp_dir().join(format!("ts-spec-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn reads_pooling_prompts_and_length_from_the_configs() {
        let d = temp();
        write(
            &d,
            "modules.json",
            r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
                {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
                {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]"#,
        );
        write(
            &d,
            "1_Pooling/config.json",
            r#"{"word_embedding_dimension": 32, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
        );
        write(&d, "sentence_bert_config.json", r#"{"max_seq_length": 1024}"#);
        write(&d, "config_sentence_transformers.json", r#"{"prompts": {"query": "query: ", "document": "passage: "}}"#);
        let s = ModelSpec::read(&d).unwrap();
        assert_eq!((s.pooling, s.normalize, s.max_length), (Pooling::Cls, true, 512));
        assert_eq!((s.query_prompt.as_str(), s.passage_prompt.as_str()), ("query: ", "passage: "));
        assert_eq!(s.declared_dimension, Some(32));
        assert!(s.id.starts_with("local/"));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_missing_or_unknown_pooling_is_an_error_naming_the_file_and_field() {
        let d = temp();
        let e = ModelSpec::read(&d).unwrap_err().to_string();
        assert!(e.contains("1_Pooling/config.json") && e.contains("missing"), "{e}");
        write(&d, "1_Pooling/config.json", r#"{"pooling_mode_max_tokens": true}"#);
        let e = ModelSpec::read(&d).unwrap_err().to_string();
        assert!(e.contains("pooling_mode_max_tokens") && e.contains("unsupported"), "{e}");
        write(&d, "1_Pooling/config.json", r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}"#);
        assert!(ModelSpec::read(&d).unwrap_err().to_string().contains("more than one"));
        write(&d, "1_Pooling/config.json", r#"{"pooling_mode": "max"}"#);
        let e = ModelSpec::read(&d).unwrap_err().to_string();
        assert!(e.contains("pooling_mode") && e.contains("\"max\"") && e.contains("not supported"), "{e}");
        write(&d, "1_Pooling/config.json", r#"{"pooling_mode_lasttoken": true}"#);
        assert_eq!(ModelSpec::read(&d).unwrap().pooling, Pooling::LastToken);
        write(&d, "config_sentence_transformers.json", r#"{"prompts": {"query": 3}}"#);
        let e = ModelSpec::read(&d).unwrap_err().to_string();
        assert!(e.contains("config_sentence_transformers.json") && e.contains("prompts.query"), "{e}");
        std::fs::remove_dir_all(d).unwrap();
    }
}
