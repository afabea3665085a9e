//! Manifest parsing in every format: arbitrary text either loads into a catalogue whose
//! invariants hold, or is refused with an error naming the file; it never panics.
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use toolsearch_catalog::{parse_str, Format};

const FORMATS: [Option<&str>; 6] = [None, Some("manifest"), Some("jsonl"), Some("mcp"), Some("openai"), Some("anthropic")];
const NAMES: [&str; 3] = ["fuzz.json", "fuzz.jsonl", "fuzz"];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let format = FORMATS[selector as usize % FORMATS.len()].map(|f| Format::from_name(f).expect("known format"));
    let file = Path::new(NAMES[(selector as usize / FORMATS.len()) % NAMES.len()]);
    let text = String::from_utf8_lossy(rest);
    match parse_str(file, &text, format) {
        Ok(catalog) => {
            let mut ids = HashSet::new();
            for tool in &catalog.tools {
                assert!(!tool.id.trim().is_empty() && !tool.name.trim().is_empty(), "empty id or name accepted");
                assert!(ids.insert(tool.id.as_str()), "duplicate id {:?} accepted", tool.id);
                for path in &tool.paths {
                    let known = path.is_empty() || catalog.nodes.iter().any(|n| &n.path == path);
                    assert!(known, "tool {:?} under a missing node", tool.id);
                }
            }
            let mut paths = HashSet::new();
            for node in &catalog.nodes {
                assert!(paths.insert(&node.path), "duplicate node {:?}", node.path);
                if node.path.len() > 1 {
                    let parent = &node.path[..node.path.len() - 1];
                    assert!(catalog.nodes.iter().any(|n| n.path == parent), "node {:?} without parent", node.path);
                }
            }
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains(&file.display().to_string()), "error does not name the file: {message}");
        }
    }
});
