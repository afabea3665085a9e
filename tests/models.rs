//! Any embedding model (#63): a sentence-transformers export read from its directory gives
//! the vectors sentence-transformers gives, an index records its model and opens with it
//! (the prompts, max length and tokenizer: model_identity.rs), bad model directories are refused
//! naming the file and field, an index of an older format (built with the stock model) still
//! opens and answers, and the five-set research model comes out of the clone's history as a
//! directory that answers.
//!
//! The models are tests/models/tiny-*, randomly initialised BERTs written by
//! tests/models/make_tiny.py beside the vectors sentence-transformers 6.2 gave for them.

#[path = "common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::index_format::downgrade;
use serde_json::json;
use toolsearch::embed::{Embedder, EmbedderOptions, ModelFiles, OnnxEmbedder};
use toolsearch::{Engine, EngineOptions, Principal, SearchToolsRequest};

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).output().expect("binary runs")
}

fn model(name: &str) -> PathBuf {
    common::repo().join("tests/models").join(name)
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * y).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn exports_give_the_vectors_sentence_transformers_gives() {
    for name in ["tiny-cls", "tiny-last"] {
        let dir = model(name);
        let files = ModelFiles::choose(None, Some(dir.to_str().unwrap())).unwrap();
        let embedder = OnnxEmbedder::load(&files, EmbedderOptions::default()).unwrap();
        assert_eq!(embedder.dimension(), 32);
        assert_eq!(embedder.pooling(), if name == "tiny-cls" { "cls" } else { "lasttoken" });
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
        let texts: Vec<&str> = expected["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        let want = |role: &str, i: usize| -> Vec<f64> {
            expected[role][i].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
        };
        let documents = embedder.embed(&texts).unwrap();
        for (i, text) in texts.iter().enumerate() {
            let query = embedder.embed_query(text).unwrap();
            let (q, d) = (cosine(&query, &want("query", i)), cosine(&documents[i], &want("document", i)));
            assert!(q >= 0.999 && d >= 0.999, "{name} {text:?}: query cosine {q:.5}, document cosine {d:.5}");
            // The texts' vectors differ, so matching is no accident of a constant model.
            if i > 0 {
                assert!(cosine(&documents[0], &want("document", i)) < 0.99, "{name}: vectors barely differ");
            }
            // The prompts are in the vectors: a query is not embedded as a document.
            let crossed = cosine(&query, &want("document", i));
            if name == "tiny-cls" {
                assert!(crossed < 0.999, "{name} {text:?}: the query prompt made no difference ({crossed:.5})");
            }
        }
    }
}

#[test]
fn an_index_records_its_model_and_refuses_another() {
    let idx = common::scratch().join("tiny-index");
    let catalogue = common::sample_catalog();
    let tiny = model("tiny-cls");
    let out = toolsearch(&[
        "index",
        catalogue.to_str().unwrap(),
        "--out",
        idx.to_str().unwrap(),
        "--model",
        tiny.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Queried without naming the model: the index names it.
    let out = toolsearch(&["search", idx.to_str().unwrap(), "send an email", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!answer["results"].as_array().unwrap().is_empty(), "{answer}");
    // Another model is refused, naming both.
    let out = toolsearch(&["search", idx.to_str().unwrap(), "send an email", "--model", "stock"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("local/tiny-cls") && err.contains("all-MiniLM-L6-v2"), "{err}");
    let engine = Engine::open_with(&idx, EngineOptions::default()).unwrap();
    assert_eq!(engine.embedder().model_id(), "local/tiny-cls");
}

#[test]
fn bad_model_directories_are_refused_naming_the_file_and_field() {
    let catalogue = common::sample_catalog();
    let build = |model: &str| -> String {
        let out = common::scratch().join("bad-model-index");
        let o = toolsearch(&["index", catalogue.to_str().unwrap(), "--out", out.to_str().unwrap(), "--model", model]);
        assert!(!o.status.success(), "{model}: built");
        assert!(!out.join("meta.bin").exists(), "{model}: an index was left");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let missing = common::copy_model("tiny-cls", "no-pooling");
    std::fs::remove_file(missing.join("modules.json")).unwrap();
    std::fs::remove_dir_all(missing.join("1_Pooling")).unwrap();
    let err = build(missing.to_str().unwrap());
    assert!(err.contains("1_Pooling/config.json") && err.contains("missing"), "{err}");

    let unknown = common::copy_model("tiny-cls", "max-pooling");
    std::fs::write(unknown.join("1_Pooling/config.json"), r#"{"embedding_dimension": 32, "pooling_mode": "max"}"#)
        .unwrap();
    let err = build(unknown.to_str().unwrap());
    assert!(err.contains("pooling_mode") && err.contains("\"max\"") && err.contains("not supported"), "{err}");

    let wide = common::copy_model("tiny-cls", "wide");
    std::fs::write(wide.join("1_Pooling/config.json"), r#"{"embedding_dimension": 48, "pooling_mode": "cls"}"#)
        .unwrap();
    let err = build(wide.to_str().unwrap());
    assert!(err.contains("1_Pooling/config.json") && err.contains("declares 48") && err.contains("32"), "{err}");

    let no_onnx = common::copy_model("tiny-cls", "no-onnx");
    std::fs::remove_file(no_onnx.join("model.onnx")).unwrap();
    let err = build(no_onnx.to_str().unwrap());
    assert!(err.contains("model.onnx") && err.contains("missing"), "{err}");

    // Weights ONNX Runtime cannot take (a download cut short) are named, not just described.
    let cut = common::copy_model("tiny-cls", "cut-onnx");
    let weights = std::fs::read(cut.join("model.onnx")).unwrap();
    std::fs::write(cut.join("model.onnx"), &weights[..weights.len() / 3]).unwrap();
    let err = build(cut.to_str().unwrap());
    let named = format!("{}: does not load", cut.join("model.onnx").display());
    assert!(err.contains(&named), "{err}");

    let err = build("no-such-model");
    assert!(err.contains("no-such-model") && err.contains("neither a named model"), "{err}");
}

#[test]
fn an_index_of_the_previous_format_opens_with_the_stock_model_and_answers() {
    // Built with the stock model, as every index was before `tools` became the default: it
    // opens with the model it records (not the default) and answers; so does the same index
    // written in the format before models were recorded.
    let dir = common::scratch().join("v8-index");
    let sample = common::sample_catalog();
    let out = toolsearch(&["--model", "stock", "index", sample.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for format in ["current", "version 11", "version 10", "version 9", "version 8"] {
        match format {
            "version 11" => downgrade(&dir, 11),
            "version 10" => downgrade(&dir, 10),
            "version 9" => downgrade(&dir, 9),
            "version 8" => downgrade(&dir, 8),
            _ => {}
        }
        let engine = Engine::open_with(&dir, EngineOptions::default()).unwrap();
        assert_eq!(engine.embedder().model_id(), toolsearch::embed::MODEL_ID, "{format}");
        // The answerability decision fitted for the stock model, not the default model's.
        assert_eq!(engine.options().answerability, toolsearch::Answerability::default(), "{format}");
        let request: SearchToolsRequest =
            serde_json::from_value(serde_json::json!({"query": "post a message in a slack channel", "limit": 3}))
                .unwrap();
        let answer = engine.search_tool_by_category(&Principal::trusted(), &request).unwrap();
        assert_eq!(answer.results[0].tool_id, "slack.post_message", "{format}");
        let out = toolsearch(&["search", dir.to_str().unwrap(), "post a message in a slack channel", "--json"]);
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer["results"][0]["tool_id"], "slack.post_message", "{format}");
    }
}

/// An index built with the default model is answered with the confidence map and the
/// answerability decision fitted for that model, unless the caller or the index sets its own.
#[test]
fn the_default_model_brings_its_own_confidence_and_answerability_fits() {
    let dir = common::build(&common::sample_catalog(), "default-model-fits");
    let engine = Engine::open_with(&dir, EngineOptions::default()).unwrap();
    assert_eq!(engine.embedder().model_id(), toolsearch::embed::TOOLS_MODEL_ID);
    let fitted = toolsearch::Answerability::for_model(toolsearch::embed::TOOLS_MODEL_ID);
    assert_ne!(fitted, toolsearch::Answerability::default());
    assert_eq!(engine.options().answerability, fitted);
    let mine = toolsearch::Answerability { threshold: 0.5, ..toolsearch::Answerability::default() };
    let engine = Engine::open_with(&dir, EngineOptions { answerability: mine, ..EngineOptions::default() }).unwrap();
    assert_eq!(engine.options().answerability, mine, "a caller's own decision is kept");
}

/// The gateway takes its model from its config (a directory relative to the config file):
/// it indexes its servers' tools with it and answers searches; a model it cannot find is a
/// config error naming the field.
#[test]
fn the_gateway_indexes_with_the_model_its_config_names() {
    use common::gateway::{client_steps, reference_server, HttpGateway};
    let dir = common::scratch().join("gateway-model");
    common::copy_model("tiny-cls", "gateway-model/tiny");
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let config =
        common::write_config(&dir, &json!({"mcpServers": {"memory": memory}, "toolsearch": {"model": "tiny"}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let out = client_steps(&gateway.url(), "-", &json!([["search_tool_by_category", {"query": "create entities"}]]));
    let text = out[0]["text"].as_str().unwrap();
    assert!(text.contains("memory."), "{text}");
    drop(gateway);
    let index = std::fs::read_dir(dir.join("state"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("meta.bin").is_file())
        .expect("the gateway's index in its state directory");
    let meta = toolsearch::index::IndexMeta::read(&index).unwrap();
    assert_eq!((meta.model_id.as_str(), meta.dimension, meta.model_pooling.as_str()), ("local/tiny", 32, "cls"));

    let bad = common::write_config(
        &dir.join("bad"),
        &json!({"mcpServers": {"memory": memory}, "toolsearch": {"model": "no-such-dir"}}),
    );
    let out = toolsearch(&["gateway", "--config", bad.to_str().unwrap(), "--check"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("toolsearch.model") && err.contains("no-such-dir"), "{err}");
}

/// Where the default model is not installed (a models directory with only the stock model, as
/// a bare `pip install .` has), the stock model stands in for it: the index records `stock`,
/// and the CLI says so.
#[test]
fn without_the_default_model_installed_the_stock_model_stands_in_and_says_so() {
    let models = common::scratch().join("stock-only-models");
    let repo_models = common::repo().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for name in [toolsearch::embed::ORT_LIB_NAME, toolsearch::embed::MODEL_DIR_NAME] {
        let _ = std::os::unix::fs::symlink(repo_models.join(name), models.join(name));
    }
    let out_dir = common::scratch().join("stock-stands-in");
    let sample = common::sample_catalog();
    let out = toolsearch(&[
        "--models",
        models.to_str().unwrap(),
        "index",
        sample.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the default model `tools` is not installed"));
    let meta = toolsearch::index::IndexMeta::read(&out_dir).unwrap();
    assert_eq!(meta.model_id, toolsearch::embed::MODEL_ID);
    // Asked for by name, a model that is not installed is an error, not a stand-in.
    let named = toolsearch(&[
        "--models",
        models.to_str().unwrap(),
        "--model",
        "tools",
        "index",
        sample.to_str().unwrap(),
        "--out",
        common::scratch().join("x").to_str().unwrap(),
    ]);
    assert!(!named.status.success());
}

/// The five-set research model comes out of the clone's history (scripts/research-model) as a
/// `--model DIR` directory that indexes and answers, recorded by its weights' sha256; a
/// directory already there is refused and left alone.
#[test]
fn the_research_model_is_written_from_history_and_answers() {
    let repo = common::repo();
    let in_history = Command::new("git")
        .current_dir(&repo)
        .args(["cat-file", "-e", "fe8b25669fe33fe18a66fb2c19f1680a3cb5fb02^{commit}"])
        .status()
        .is_ok_and(|s| s.success());
    if !in_history {
        eprintln!("skipped: commit fe8b256 is not in this clone's history (shallow clone)");
        return;
    }
    let dir = common::scratch().join("research-model");
    let _ = std::fs::remove_dir_all(&dir);
    let write = || Command::new(repo.join("scripts/research-model")).arg(&dir).output().expect("script runs");
    let out = write();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = write();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    assert!(dir.join("1_Pooling/config.json").is_file());

    let idx = common::scratch().join("research-index");
    let (catalogue, d, i) = (common::sample_catalog(), dir.to_str().unwrap(), idx.to_str().unwrap());
    let out = toolsearch(&["index", catalogue.to_str().unwrap(), "--out", i, "--model", d]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = toolsearch(&["search", i, "post a message to a slack channel", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["results"][0]["tool_id"], "slack.post_message", "{answer}");
    let engine = Engine::open_with(&idx, EngineOptions::default()).unwrap();
    assert!(engine.embedder().model_sha256().starts_with("baa5e4668caa"));
}

/// What an index keeps of the one it replaces is kept only for the model it was fitted to.
#[test]
fn a_rebuild_with_another_model_drops_the_calibration_and_adapter_fitted_to_the_old_one() {
    use toolsearch::index::{Calibration, IndexMeta, QueryAdapter};
    let idx = common::scratch().join("tiny-refit");
    let catalogue = common::sample_catalog();
    let build = |name: &str| {
        let tiny = model(name);
        let out = toolsearch(
            &["index", catalogue.to_str().unwrap(), "--out", idx.to_str().unwrap()]
                .into_iter()
                .chain(["--model", tiny.to_str().unwrap()])
                .collect::<Vec<_>>(),
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        IndexMeta::read(&idx).unwrap()
    };
    let d = build("tiny-cls").dimension;
    let calibration = Calibration { scale: 3.0, margin_scale: 1.0, bias: -1.0 };
    IndexMeta::set_calibration(&idx, &calibration).unwrap();
    let adapter = QueryAdapter {
        dimension: d,
        weights: vec![0.0; (d * d) as usize],
        method: "identity".into(),
        alpha: 0.5,
        trained_on: 1,
        heldout: 1,
        heldout_ndcg_before: 0.0,
        heldout_ndcg_after: 0.0,
    };
    IndexMeta::set_adapter(&idx, Some(adapter.clone())).unwrap();
    // The same model: both kept.
    let same = build("tiny-cls");
    assert_eq!((same.calibration, same.adapter), (Some(calibration), Some(adapter)));
    // The same weights pooled another way: another model. What was fitted to the old one's
    // scores and vectors is dropped, and querying with the old one is refused.
    let other = build("tiny-last");
    assert_eq!((other.dimension, &other.model_sha256), (d, &same.model_sha256), "one network, two poolings");
    assert_eq!((other.calibration, other.adapter), (None, None));
    let cls = model("tiny-cls");
    let out = toolsearch(&["search", idx.to_str().unwrap(), "send an email", "--model", cls.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("lasttoken pooling") && err.contains("cls pooling"), "{err}");
}
