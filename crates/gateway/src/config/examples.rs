//! `toolsearch.examples`: sample requests for upstream tools, checked when the config is read
//! (so a bad one is an error naming it, not a tool quietly left out of the index).

use std::collections::BTreeMap;

use toolsearch_catalog::limits::{MAX_EXAMPLES, MAX_EXAMPLE_BYTES};

/// Checks each entry of `toolsearch.examples`: its key a tool id `SERVER.TOOL` of a server the
/// config has (`is_server`), its requests non-empty text within the catalogue's bounds.
pub(super) fn check(examples: &BTreeMap<String, Vec<String>>, is_server: impl Fn(&str) -> bool) -> Result<(), String> {
    for (id, requests) in examples {
        let at = format!("toolsearch.examples.{id:?}");
        match id.split_once('.') {
            Some((server, tool)) if !tool.is_empty() && is_server(server) => {}
            Some((server, tool)) if !tool.is_empty() => {
                return Err(format!("{at}: {server:?} is not a server of this config"));
            }
            _ => return Err(format!("{at}: name a tool as SERVER.TOOL (e.g. \"memory.create_entities\")")),
        }
        if requests.len() > MAX_EXAMPLES {
            return Err(format!("{at}: {} requests, over the limit of {MAX_EXAMPLES}", requests.len()));
        }
        for (i, r) in requests.iter().enumerate() {
            if r.trim().is_empty() || r.chars().any(char::is_control) {
                return Err(format!("{at}[{i}]: give a request as text, one line, not empty"));
            }
            if r.len() > MAX_EXAMPLE_BYTES {
                return Err(format!("{at}[{i}]: {} bytes, over the limit of {MAX_EXAMPLE_BYTES}", r.len()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(id: &str, requests: &[&str]) -> BTreeMap<String, Vec<String>> {
        BTreeMap::from([(id.to_owned(), requests.iter().map(|r| r.to_string()).collect())])
    }

    #[test]
    fn a_tool_of_a_configured_server_with_short_requests_passes() {
        let memory = |s: &str| s == "memory";
        assert_eq!(check(&of("memory.create_entities", &["save what we learned about a person"]), memory), Ok(()));
        let err = |id: &str, r: &[&str]| check(&of(id, r), memory).unwrap_err();
        assert!(err("notes.add", &["x"]).contains(r#"toolsearch.examples."notes.add": "notes" is not a server"#));
        assert!(err("memory", &["x"]).contains("name a tool as SERVER.TOOL"));
        assert!(err("memory.", &["x"]).contains("name a tool as SERVER.TOOL"));
        assert!(err("memory.read_graph", &["ok", " "]).contains(r#""memory.read_graph"[1]: give a request"#));
        assert!(err("memory.read_graph", &["a\nb"]).contains("one line"));
        assert!(err("memory.read_graph", &[&"x".repeat(MAX_EXAMPLE_BYTES + 1)]).contains("over the limit of 2048"));
        assert!(err("memory.read_graph", &["x"; MAX_EXAMPLES + 1]).contains("33 requests, over the limit of 32"));
    }
}
