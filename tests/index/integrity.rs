//! An index that was damaged, is of another format version or was built with another model:
//! refused with the file named, or failing only what the damage touched, never a wrong answer.

use super::*;

#[test]
fn a_corrupted_file_checked_whole_is_refused_on_open_with_its_name() {
    let dir = index_copy("corrupt");
    let lexical = std::fs::read_dir(dir.join("lexical/tools")).unwrap().map(|e| e.unwrap().path());
    let biggest = lexical.max_by_key(|p| std::fs::metadata(p).unwrap().len()).unwrap();
    for file in [dir.join("graph.bin"), dir.join("catalog.bin"), dir.join("blocks.bin"), biggest] {
        let written = std::fs::read(&file).unwrap();
        let mut bytes = written.clone();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x10;
        std::fs::write(&file, &bytes).unwrap();
        let err = toolsearch::IndexReader::open(&dir).unwrap_err();
        assert!(matches!(err, IndexError::Corrupted(ref p, _) if *p == file), "{}: {err}", file.display());
        assert!(err.to_string().contains(file.file_name().unwrap().to_str().unwrap()), "{err}");
        std::fs::write(&file, &written).unwrap();
    }
    toolsearch::IndexReader::open(&dir).unwrap();
}

/// A scratch copy, named `name`, of an index of the sample catalogue (to damage).
fn sample_copy(name: &str) -> std::path::PathBuf {
    let dir = common::scratch().join(name);
    copy_dir(&common::build(&common::sample_catalog(), &format!("{name}-source")), &dir);
    dir
}

/// Each block of `file` in `dir` damaged in turn (one byte flipped, the index opened afresh),
/// with what `met` says of the opened index: an error naming the file, or an answer.
fn each_block_damaged(dir: &Path, file: &str, mut met: impl FnMut(usize, &Engine)) {
    let path = dir.join(file);
    let written = std::fs::read(&path).unwrap();
    let blocks = written.len().div_ceil(4096);
    assert!(blocks > 3, "{file}: {blocks} blocks, too few to test");
    for b in 0..blocks {
        let mut bytes = written.clone();
        let at = (b * 4096 + 1234).min(written.len() - 1);
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        // Opening reads neither file: the damage is found when a block is first used.
        let engine = common::open(dir);
        met(b, &engine);
    }
    std::fs::write(&path, &written).unwrap();
}

#[test]
fn a_corrupted_vector_block_is_an_error_when_first_met_never_an_answer() {
    let dir = sample_copy("corrupt-vectors");
    let request = SearchToolsRequest { query: "latest share price for a ticker".into(), ..Default::default() };
    let tools = common::open(&dir).catalog().tools.len() as u32;
    each_block_damaged(&dir, "vectors.f16", |b, engine| {
        // Every search of this small index scans every tool row exactly, and a category
        // search every category row: the damaged block is met whichever it is.
        let err = match b * 4096 < tools as usize * 384 * 2 {
            true => engine.search_tool_by_category(&Principal::trusted(), &request).unwrap_err(),
            false => engine
                .search_nodes(
                    &Principal::trusted(),
                    &toolsearch::SearchNodesRequest { query: "music".into(), ..Default::default() },
                )
                .unwrap_err(),
        };
        assert!(
            err.message.contains("vectors.f16") && err.message.contains("block checksum"),
            "block {b}: {}",
            err.message
        );
    });
}

#[test]
fn a_corrupted_record_block_fails_the_records_in_it_and_no_other() {
    let dir = sample_copy("corrupt-records");
    let offsets = {
        let engine = common::open(&dir);
        let records = std::fs::read(dir.join("tools.json")).unwrap();
        let mut at = vec![0usize];
        at.extend(records.iter().enumerate().filter(|(_, &c)| c == b'\n').map(|(i, _)| i + 1));
        assert_eq!(at.len(), engine.catalog().tools.len() + 1);
        at
    };
    each_block_damaged(&dir, "tools.json", |b, engine| {
        let block = b * 4096..(b + 1) * 4096;
        for ord in 0..offsets.len() - 1 {
            let record = offsets[ord]..offsets[ord + 1];
            let touches = record.start < block.end && block.start < record.end;
            match engine.index().tool_record(ord as u32) {
                Ok(tool) => {
                    assert!(!touches, "block {b}: record {ord} read from a damaged block");
                    assert_eq!(tool.id, engine.catalog().tools[ord].id);
                }
                Err(e) => {
                    assert!(touches, "block {b}: record {ord} refused: {e}");
                    assert!(e.to_string().contains("tools.json"), "{e}");
                }
            }
        }
    });
}

#[test]
fn a_truncated_catalogue_file_is_refused() {
    let dir = index_copy("truncated");
    let f = dir.join("catalog.bin");
    let len = std::fs::metadata(&f).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&f).unwrap().set_len(len / 2).unwrap();
    let err = toolsearch::IndexReader::open(&dir).unwrap_err();
    assert!(err.to_string().contains("catalog.bin"), "{err}");
}

#[test]
fn a_damaged_tool_record_is_refused_by_its_size_or_named_when_read() {
    let dir = index_copy("bad-record");
    let records = dir.join("tools.json");
    let mut bytes = std::fs::read(&records).unwrap();
    let keep = bytes.clone();
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&records, &bytes).unwrap();
    let err = toolsearch::IndexReader::open(&dir).unwrap_err();
    assert!(err.to_string().contains("tools.json"), "{err}");

    // Same length, one record's JSON broken, opened without checksums: searching still works
    // (it reads only the lean table) and expanding that tool is an error naming the file,
    // never a panic or a wrong schema.
    let mut bytes = keep;
    let at = bytes.iter().position(|&b| b == b'{').unwrap();
    bytes[at] = b'#';
    std::fs::write(&records, &bytes).unwrap();
    let options = EngineOptions {
        open: OpenOptions { verify_checksums: false, ..OpenOptions::default() },
        ..EngineOptions::default()
    };
    let engine = Engine::with_embedder(&dir, common::embedder(), options).unwrap();
    let first = engine.catalog().tools[0].id.clone();
    let err = engine
        .expand_tool(&Principal::trusted(), &toolsearch::ExpandToolRequest { tool_id: first.clone() })
        .unwrap_err();
    assert!(err.message.contains("tools.json"), "{}", err.message);
    let second = engine.catalog().tools[1].id.clone();
    assert!(engine.expand_tool(&Principal::trusted(), &toolsearch::ExpandToolRequest { tool_id: second }).is_ok());
}

#[test]
fn an_index_of_another_format_version_is_refused() {
    let dir = index_copy("old-format");
    let meta = dir.join("meta.bin");
    let mut bytes = std::fs::read(&meta).unwrap();
    bytes[8..12].copy_from_slice(&0u32.to_le_bytes());
    std::fs::write(&meta, bytes).unwrap();
    let err = toolsearch::IndexReader::open(&dir).unwrap_err();
    assert!(matches!(err, IndexError::Version { found: 0, .. }), "{err}");
    assert!(err.to_string().contains("meta.bin"));
    // An upgrade rebuilds it in place: every file an older format wrote is known as the
    // index's own, so the build replaces it rather than refusing to clobber it.
    let catalog = toolsearch::load_path(&common::repo().join("tests/data/tools.jsonl"), None).unwrap();
    let options = toolsearch::BuildOptions::default();
    toolsearch::build_index(&catalog, common::embedder().as_ref(), &dir, &options).expect("rebuilt over it");
    assert!(toolsearch::IndexReader::open(&dir).is_ok());
}

/// Same vectors, different identity: the index must refuse a model it was not built with.
struct OtherModel(std::sync::Arc<toolsearch::OnnxEmbedder>);

impl Embedder for OtherModel {
    fn model_id(&self) -> &str {
        "other-model"
    }
    fn model_sha256(&self) -> &str {
        "0000000000000000000000000000000000000000000000000000000000000000"
    }
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, toolsearch::embed::EmbedError> {
        self.0.embed(texts)
    }
}

#[test]
fn an_index_built_with_another_model_is_refused() {
    let dir = common::build(&common::repo().join("tests/data/tools.jsonl"), "model-check");
    let other = std::sync::Arc::new(OtherModel(common::embedder()));
    let err = Engine::with_embedder(&dir, other, EngineOptions::default()).unwrap_err();
    assert!(err.to_string().contains("built with model"), "{err}");
}
