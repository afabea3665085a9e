//! `toolsearch index --reuse INDEX` (`BuildOptions::reuse_from`, Python `build(reuse=...)`): a
//! build into a new directory takes the vectors of unchanged documents from another index, and
//! answers as a build that embedded them; an index that cannot give them is refused, naming it
//! and why, and nothing is written.

use std::path::Path;
use std::process::{Command, Output};

use super::common;

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).output().expect("binary runs")
}

/// Builds `catalogue` into `out` (with `extra` arguments); the report, or the failure's stderr.
fn index(catalogue: &Path, out: &Path, extra: &[&str]) -> Result<serde_json::Value, String> {
    let mut args = vec!["--json", "index", catalogue.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = toolsearch(&args);
    match o.status.success() {
        true => Ok(serde_json::from_slice(&o.stdout).unwrap()),
        false => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
    }
}

/// The ids and confidences `search` answers for `query`.
fn answers(index: &Path, query: &str) -> Vec<(String, String)> {
    let o = toolsearch(&["--json", "search", index.to_str().unwrap(), query]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let results = v["results"].as_array().cloned().unwrap_or_default();
    results.iter().map(|p| (p["tool_id"].to_string(), p["confidence"].to_string())).collect()
}

#[test]
fn a_build_into_a_new_directory_reuses_the_index_named_and_answers_as_a_fresh_one() {
    let dir = common::scratch().join("reuse-named");
    std::fs::create_dir_all(&dir).unwrap();
    let original = common::repo().join("tests/data/tools.jsonl");
    let first = dir.join("first");
    index(&original, &first, &[]).unwrap();

    // One tool described anew, one dropped, one added: the rest is the same text.
    let text = std::fs::read_to_string(&original).unwrap();
    let mut lines: Vec<String> = text.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
    lines[1] = lines[1].replace("Hour-by-hour forecast for the next 48 hours.", "Rain radar and hourly forecast.");
    lines.pop();
    lines.push(
        r#"{"id": "Weather::OpenSky::pollen", "name": "pollen", "description": "Pollen count for a city today.", "path": ["Weather", "OpenSky"]}"#
            .to_owned(),
    );
    let changed = dir.join("changed.jsonl");
    std::fs::write(&changed, lines.join("\n")).unwrap();

    // A calibration fitted to the first index goes with its vectors, as in a rebuild over it.
    let fitted = toolsearch::index::Calibration { scale: 2.5, margin_scale: 9.0, bias: -1.5 };
    toolsearch::index::IndexMeta::set_calibration(&first, &fitted).unwrap();

    let fresh = index(&changed, &dir.join("fresh"), &[]).unwrap();
    let reused = index(&changed, &dir.join("reused"), &["--reuse", first.to_str().unwrap()]).unwrap();
    let documents = fresh["embedded"].as_u64().unwrap();
    assert_eq!(fresh["reused"], 0, "{fresh}");
    // The changed tool and the new one; no category's text changed.
    assert_eq!((reused["embedded"].as_u64(), reused["reused"].as_u64()), (Some(2), Some(documents - 2)), "{reused}");
    let calibration = |at: &str| toolsearch::index::IndexMeta::read(&dir.join(at)).unwrap().calibration;
    assert_eq!((calibration("fresh"), calibration("reused")), (None, Some(fitted)));
    toolsearch::index::IndexMeta::set_calibration(&dir.join("fresh"), &fitted).unwrap();
    for query in ["rain radar", "pollen today", "current temperature in Oslo", "hourly forecast", "concerts"] {
        let (a, b) = (answers(&dir.join("fresh"), query), answers(&dir.join("reused"), query));
        assert!(!a.is_empty(), "{query}");
        assert_eq!(a, b, "{query}");
    }
}

#[test]
fn an_index_that_cannot_give_its_vectors_is_refused_naming_it_and_nothing_is_written() {
    let dir = common::scratch().join("reuse-refused");
    std::fs::create_dir_all(&dir).unwrap();
    let catalogue = common::repo().join("tests/data/tools.jsonl");
    let first = dir.join("first");
    index(&catalogue, &first, &[]).unwrap();
    let out = dir.join("out");

    // Another model.
    let err = index(&catalogue, &out, &["--reuse", first.to_str().unwrap(), "--model", "stock"]).unwrap_err();
    let named = format!("{}: its vectors cannot be reused: built with model", first.display());
    assert!(err.contains(&named), "{err}");
    assert!(
        err.contains("toolsearch/all-MiniLM-L6-v2-tools") && err.contains("sentence-transformers/all-MiniLM-L6-v2")
    );
    // No index there.
    let missing = dir.join("missing");
    let err = index(&catalogue, &out, &["--reuse", missing.to_str().unwrap()]).unwrap_err();
    assert!(err.contains(&format!("{}: its vectors cannot be reused: not an index", missing.display())), "{err}");
    // Vectors that do not match their checksum.
    let damaged = dir.join("damaged");
    common::copy_dir(&first, &damaged);
    let vectors = damaged.join("vectors.f16");
    let mut bytes = std::fs::read(&vectors).unwrap();
    bytes[100] ^= 0x55;
    std::fs::write(&vectors, bytes).unwrap();
    let err = index(&catalogue, &out, &["--reuse", damaged.to_str().unwrap()]).unwrap_err();
    assert!(err.contains("do not match their checksums"), "{err}");

    assert!(!out.exists(), "a refused build writes nothing");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 2, "no staging directory is left: {left:?}");
    // An index at the output is left as it was.
    index(&catalogue, &out, &[]).unwrap();
    let before = std::fs::read(out.join("meta.bin")).unwrap();
    assert!(index(&catalogue, &out, &["--reuse", missing.to_str().unwrap()]).is_err());
    assert_eq!(std::fs::read(out.join("meta.bin")).unwrap(), before);
}
