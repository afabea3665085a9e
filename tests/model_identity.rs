//! What an index records of its model (#63): the same weights with other prompts, another
//! max length or another tokenizer give other vectors, so an index records each, refuses a
//! model that differs in one (naming both), and a rebuild embeds every document again; an
//! index of a format that did not record one opens without that check.
//!
//! The model is tests/models/tiny-cls (see models.rs), copied and changed in the scratch
//! directory.

#[path = "common/mod.rs"]
mod common;

use std::process::{Command, Output};

use common::index_format::downgrade;
use serde_json::json;

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).output().expect("binary runs")
}

/// Indexes the sample catalogue into `at` with `model`, returning the build's report.
fn index(at: &str, model: &str) -> serde_json::Value {
    let catalogue = common::sample_catalog();
    let out = toolsearch(&["index", catalogue.to_str().unwrap(), "--out", at, "--model", model, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Asserts a build embedded every document of the sample catalogue again (`false`) or reused
/// every one (`true`).
fn assert_reused(report: &serde_json::Value, reused: bool) {
    let expected = if reused { (json!(244), json!(0)) } else { (json!(0), json!(244)) };
    assert_eq!((&report["reused"], &report["embedded"]), (&expected.0, &expected.1), "{report}");
}

/// The index at `at`, written back as `version` (before it recorded one part of its model's
/// identity), opens and answers without that check; a rebuild over it with the local model
/// `local` embeds everything again (its part may have been another), while one with `stock`,
/// whose part comes with its weights, reuses every vector.
fn an_older_format_opens_and_only_a_named_model_reuses_it(at: &str, version: u32, local: &str) {
    let idx = std::path::Path::new(at);
    downgrade(idx, version);
    assert!(toolsearch(&["search", at, "send an email"]).status.success());
    assert_reused(&index(at, local), false);
    index(at, "stock");
    downgrade(idx, version);
    assert_reused(&index(at, "stock"), true);
}

/// The same weights with other prompts give other vectors: an index records its model's
/// prompts, refuses the model once its prompts are changed (naming both), and a rebuild with
/// it embeds every document again, as one over an index that did not record its prompts does.
#[test]
fn an_index_records_its_models_prompts_and_refuses_other_ones() {
    let tiny = common::copy_model("tiny-cls", "prompted");
    let idx = common::scratch().join("prompted-index");
    let (at, model) = (idx.to_str().unwrap(), tiny.to_str().unwrap());
    index(at, model);
    let meta = toolsearch::index::IndexMeta::read(&idx).unwrap();
    assert_eq!(meta.model_prompts, Some(("query: ".to_owned(), "passage: ".to_owned())));

    let config = tiny.join("config_sentence_transformers.json");
    let text = std::fs::read_to_string(&config).unwrap().replace("\"query: \"", "\"search_query: \"");
    std::fs::write(&config, text).unwrap();
    let out = toolsearch(&["search", at, "send an email"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "answered with other prompts");
    assert!(err.contains("query prompt \"query: \"") && err.contains("query prompt \"search_query: \""), "{err}");
    assert_reused(&index(at, model), false);
    assert!(toolsearch(&["search", at, "send an email"]).status.success());
    // An index of the format before prompts were recorded opens without that check, but its
    // vectors are not reused by a model that has prompts: they may be other prompts'.
    an_older_format_opens_and_only_a_named_model_reuses_it(at, 9, model);
}

#[test]
fn an_index_records_its_models_max_length_and_refuses_another() {
    // The same weights reading fewer tokens of a text give other vectors for a long one.
    let tiny = common::copy_model("tiny-cls", "short");
    let set_length = |n: u32| {
        let path = tiny.join("sentence_bert_config.json");
        let mut config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        config["max_seq_length"] = json!(n);
        std::fs::write(&path, config.to_string()).unwrap();
    };
    let idx = common::scratch().join("short-index");
    let (at, model) = (idx.to_str().unwrap(), tiny.to_str().unwrap());
    set_length(64);
    index(at, model);
    assert_eq!(toolsearch::index::IndexMeta::read(&idx).unwrap().model_max_length, Some(64));
    set_length(128);
    let out = toolsearch(&["search", at, "send an email"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "answered with another max length");
    assert!(err.contains("max length 64") && err.contains("max length 128"), "{err}");
    assert_reused(&index(at, model), false);
    // An index of the format before the max length was recorded opens without that check; its
    // vectors are reused only by a named model, whose length is its own.
    an_older_format_opens_and_only_a_named_model_reuses_it(at, 10, model);
}

/// The same weights behind an edited tokenizer split text otherwise: an index records a
/// fingerprint of how its model's tokenizer splits probe texts, refuses the model once that
/// or its vocabulary changes (naming both), and a rebuild embeds every document again; the same tokenizer saved
/// again (other spacing, other key order) keeps its fingerprint and still opens the index.
#[test]
fn an_index_records_its_models_tokenizer_and_refuses_another() {
    let tiny = common::copy_model("tiny-cls", "retokenized");
    let idx = common::scratch().join("retokenized-index");
    let (at, model) = (idx.to_str().unwrap(), tiny.to_str().unwrap());
    let tokenizer_of = || toolsearch::index::IndexMeta::read(&idx).unwrap().model_tokenizer.expect("recorded");
    index(at, model);
    let built = tokenizer_of();
    let path = tiny.join("tokenizer.json");
    let mut tokenizer: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let saved_again = serde_json::to_string_pretty(&tokenizer).unwrap();
    assert_ne!(saved_again, std::fs::read_to_string(&path).unwrap(), "other bytes");
    std::fs::write(&path, saved_again).unwrap();
    assert!(toolsearch(&["search", at, "send an email"]).status.success(), "refused a tokenizer saved again");
    assert_reused(&index(at, model), true);

    // Case kept: capital letters now give other tokens.
    tokenizer["normalizer"]["lowercase"] = json!(false);
    std::fs::write(&path, tokenizer.to_string()).unwrap();
    let out = toolsearch(&["search", at, "send an email"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "answered with another tokenizer");
    assert_eq!(err.matches(", tokenizer ").count(), 2, "{err}");
    assert!(err.contains(&format!("tokenizer {}", &built[..12])), "{err}");
    assert_reused(&index(at, model), false);
    let cased = tokenizer_of();
    assert_ne!(cased, built);
    // A word added to the vocabulary, which no probe text holds: still another tokenizer.
    tokenizer["model"]["vocab"]["zzzz"] = json!(97);
    std::fs::write(&path, tokenizer.to_string()).unwrap();
    let out = toolsearch(&["search", at, "send an email"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(&format!("tokenizer {}", &cased[..12])), "{err}");
    // An index of the format before the tokenizer was recorded opens without that check; its
    // vectors are reused only by a named model, whose tokenizer comes with its weights.
    an_older_format_opens_and_only_a_named_model_reuses_it(at, 11, model);
}

/// A model released between uses (as a one-shot build does once it has embedded everything)
/// is loaded again from its files when next needed: weights or a tokenizer that changed in the
/// meantime are refused, naming the file, rather than mixed into vectors of the first load.
#[test]
fn a_model_whose_files_change_while_in_use_is_refused_on_reload() {
    use toolsearch::embed::{Embedder, EmbedderOptions, ModelFiles, OnnxEmbedder};
    let tiny = common::copy_model("tiny-cls", "in-use");
    let files = ModelFiles::choose(None, Some(tiny.to_str().unwrap())).unwrap();
    let embedder = OnnxEmbedder::load(&files, EmbedderOptions::default()).unwrap();
    let first = embedder.embed_one("send an email").unwrap();
    embedder.release();
    assert_eq!(embedder.embed_one("send an email").unwrap(), first, "the same files load the same model");

    let path = tiny.join("tokenizer.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let mut tokenizer: serde_json::Value = serde_json::from_str(&original).unwrap();
    tokenizer["normalizer"]["lowercase"] = json!(false);
    std::fs::write(&path, tokenizer.to_string()).unwrap();
    embedder.release();
    let err = embedder.embed_one("send an email").unwrap_err().to_string();
    assert!(err.contains("tokenizer.json: the tokenizer changed while in use"), "{err}");

    std::fs::write(&path, original).unwrap();
    let weights = tiny.join("model.onnx");
    let mut bytes = std::fs::read(&weights).unwrap();
    bytes.extend_from_slice(b"\0");
    std::fs::write(&weights, bytes).unwrap();
    let err = embedder.embed_one("send an email").unwrap_err().to_string();
    assert!(err.contains("model.onnx: the model changed while in use"), "{err}");
}
