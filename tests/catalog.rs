//! Catalogue loading and validation: every error names the file, where in it, and the field.

use std::path::Path;

use toolsearch::catalog::{parse_str, Format, Location};
use toolsearch::CatalogError;

fn manifest(text: &str) -> Result<toolsearch::Catalog, CatalogError> {
    parse_str(Path::new("tools.json"), text, None)
}

fn jsonl(text: &str) -> Result<toolsearch::Catalog, CatalogError> {
    parse_str(Path::new("tools.jsonl"), text, None)
}

const TOOL: &str = r#"{"id": "a.one", "name": "one", "path": "A/B", "description": "Does one thing. Then more.", "args_schema": {"type": "object"}}"#;

#[test]
fn the_sample_catalogue_is_valid_and_large_enough() {
    let c =
        toolsearch::load_path(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample-catalog.json"), None).unwrap();
    assert!(c.tools.len() >= 150, "{}", c.tools.len());
    assert!(c.nodes.iter().any(|n| n.path.len() == 3));
    assert!(c.tools.iter().all(|t| t.details.args_schema.value()["type"] == "object"));
    assert!(c.tools.iter().any(|t| t.paths.len() > 1), "some tool sits under two paths");
}

#[test]
fn malformed_json_names_line_and_column() {
    let e = manifest("{\n  \"tools\": [\n    {\"id\": \"x\",,}\n  ]\n}").unwrap_err();
    assert_eq!(e.location, Location::Line { line: 3, column: 16 });
    assert!(e.to_string().starts_with("tools.json:3:16: "), "{e}");
}

#[test]
fn duplicate_ids_are_reported_with_both_places() {
    let e = manifest(&format!(r#"{{"tools": [{TOOL}, {TOOL}]}}"#)).unwrap_err();
    assert_eq!(e.location, Location::Pointer("/tools/1/id".into()));
    assert_eq!(e.field.as_deref(), Some("id"));
    assert!(e.message.contains("duplicate tool id \"a.one\"") && e.message.contains("/tools/0"), "{e}");
}

#[test]
fn unknown_group_is_reported_with_the_declared_ones() {
    let text = r#"{"groups": [{"id": "gh"}], "tools": [{"id": "x", "name": "x", "group": "github"}]}"#;
    let e = manifest(text).unwrap_err();
    assert_eq!(e.location, Location::Pointer("/tools/0/group".into()));
    assert!(e.message.contains("unknown group \"github\"") && e.message.contains("gh"), "{e}");
}

#[test]
fn a_pending_group_is_read_and_a_wrong_one_is_named_by_its_field() {
    let group = |g: &str| format!(r#"{{"groups": [{g}], "tools": [{{"id": "x", "name": "x"}}]}}"#);
    let ok =
        r#"{"id": "s", "visibility": "conditional", "check": "up", "pending": {"prefix": "s.", "requires": ["r"]}}"#;
    let c = manifest(&group(ok)).unwrap();
    let pending = c.groups[0].pending.as_ref().unwrap();
    assert_eq!((pending.prefix.as_str(), pending.requires.as_slice()), ("s.", &["r".to_owned()][..]));
    for (g, field, says) in [
        (r#"{"id": "s", "pending": {"prefix": "s."}}"#, "pending", "only a conditional group can be pending"),
        (r#"{"id": "s", "visibility": "conditional", "check": "up", "pending": {}}"#, "pending/prefix", "is missing"),
        (
            r#"{"id": "s", "visibility": "conditional", "check": "up", "pending": {"prefix": "s.", "scope": []}}"#,
            "",
            "unknown field `scope`",
        ),
    ] {
        let e = manifest(&group(g)).unwrap_err();
        assert!(e.message.contains(says), "{g}: {e}");
        if !field.is_empty() {
            assert_eq!(e.location, Location::Pointer(format!("/groups/0/{field}")), "{g}: {e}");
        }
    }
}

#[test]
fn a_schema_with_a_malformed_keyword_is_indexed_unvalidated_with_its_pointer() {
    // Real servers ship such schemas and real clients call their tools: the tool is kept, its
    // calls go to the upstream unchecked, and the warning points at the bad keyword.
    let text = r#"{"tools": [{"id": "x", "name": "x", "args_schema": {"type": "object", "properties": {"n": {"type": "int"}}}}]}"#;
    let catalog = manifest(text).unwrap();
    assert_eq!(catalog.tools.len(), 1);
    let w = &catalog.warnings[0];
    assert_eq!(w.kind, toolsearch::catalog::WarningKind::Unvalidated);
    assert_eq!(w.tool.as_deref(), Some("x"));
    assert!(w.at.ends_with("/tools/0/args_schema/properties/n/type"), "{w}");
}

#[test]
fn empty_id_or_name_is_refused() {
    let e = manifest(r#"{"tools": [{"id": "  ", "name": "x"}]}"#).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("id"));
    let e = manifest(r#"{"tools": [{"id": "x"}]}"#).unwrap_err();
    assert_eq!((e.field.as_deref(), e.message.as_str()), (Some("name"), "is missing or empty"));
}

#[test]
fn a_misspelt_field_is_refused_not_ignored() {
    let e = manifest(r#"{"tools": [{"id": "x", "name": "x", "descripton": "typo"}]}"#).unwrap_err();
    assert_eq!(e.location, Location::Pointer("/tools/0/descripton".into()));
}

#[test]
fn over_long_text_is_refused_with_the_limit_and_a_long_description_is_cut() {
    let big = "x".repeat(toolsearch::catalog::limits::MAX_TEXT_BYTES + 1);
    let e = manifest(&format!(r#"{{"tools": [{{"id": "x", "name": "x", "usage_notes": "{big}"}}]}}"#)).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("usage_notes"));
    assert!(e.message.contains("over the limit"), "{e}");
    let ten_mb = "y".repeat(10 * 1024 * 1024);
    let catalog =
        manifest(&format!(r#"{{"tools": [{{"id": "x", "name": "x", "description": "{ten_mb}"}}]}}"#)).unwrap();
    assert_eq!(catalog.tools[0].details.description.len(), toolsearch::catalog::limits::MAX_DESCRIPTION_BYTES);
    assert_eq!(catalog.warnings[0].kind, toolsearch::catalog::WarningKind::Truncated);
}

#[test]
fn empty_files_and_non_object_manifests_are_refused() {
    assert!(manifest("  \n").unwrap_err().message.contains("empty"));
    assert!(manifest("[1, 2]").unwrap_err().message.contains("JSON object"));
    assert!(manifest(r#"{"tools": []}"#).unwrap_err().message.contains("at least one tool"));
}

#[test]
fn duplicate_node_paths_and_empty_segments_are_refused() {
    let e = manifest(r#"{"nodes": [{"path": "A/B"}, {"path": ["A", "B"]}], "tools": [{"id": "x", "name": "x"}]}"#)
        .unwrap_err();
    assert_eq!(e.location, Location::Pointer("/nodes/1/path".into()));
    let e = manifest(r#"{"tools": [{"id": "x", "name": "x", "paths": [["A", ""]]}]}"#).unwrap_err();
    assert_eq!(e.location, Location::Pointer("/tools/0/paths/0".into()));
}

#[test]
fn missing_ancestors_are_created_and_summaries_derived() {
    let c = manifest(&format!(r#"{{"tools": [{TOOL}]}}"#)).unwrap();
    let paths: Vec<String> = c.nodes.iter().map(|n| n.path.join("/")).collect();
    assert_eq!(paths, ["A", "A/B"]);
    assert!(c.nodes.iter().all(|n| n.implicit));
    assert_eq!(c.tools[0].summary, "Does one thing.");
}

#[test]
fn json_lines_bench_format_loads_with_ignored_extra_fields() {
    let text = "{\"id\": \"Data::T::a\", \"name\": \"a\", \"description\": \"A.\", \"parameters\": {\"type\": \"object\", \"properties\": {}}, \"path\": [\"Data\", \"T\"], \"tags\": [\"x\"], \"meta\": {\"method\": \"GET\"}, \"extra\": 1}\n\n{\"id\": \"b\", \"name\": \"b\", \"parameters\": null, \"path\": []}\n";
    let c = jsonl(text).unwrap();
    assert_eq!(c.tools.len(), 2);
    assert_eq!(c.tools[0].paths, vec![vec!["Data".to_string(), "T".to_string()]]);
    assert_eq!(c.tools[1].paths, vec![Vec::<String>::new()]);
    assert_eq!(c.tools[1].details.args_schema.value()["type"], "object");
}

#[test]
fn json_lines_errors_name_the_line() {
    let e = jsonl("{\"id\": \"a\", \"name\": \"a\"}\nnot json\n").unwrap_err();
    assert!(matches!(e.location, Location::Line { line: 2, .. }), "{e:?}");
    let e = jsonl("{\"id\": \"a\", \"name\": \"a\"}\n{\"id\": \"a\", \"name\": \"b\"}\n").unwrap_err();
    assert_eq!(e.location, Location::Line { line: 2, column: 0 });
    assert!(e.message.contains("line 1"), "{e}");
}

#[test]
fn format_is_detected_by_extension_then_content() {
    assert_eq!(Format::detect(Path::new("x.jsonl"), ""), Format::Jsonl);
    assert_eq!(Format::detect(Path::new("x.json"), ""), Format::Manifest);
    assert_eq!(Format::detect(Path::new("x.txt"), "{\"id\":1}\n{\"id\":2}\n"), Format::Jsonl);
    assert_eq!(Format::detect(Path::new("x.txt"), "{\n \"tools\": []\n}"), Format::Manifest);
}

#[test]
fn a_wrongly_typed_field_is_named_by_its_path_and_a_schema_by_the_key_written() {
    let e = jsonl("{\"id\": \"a\", \"name\": \"a\"}\n{\"id\": \"b\", \"name\": \"b\", \"tags\": [\"x\", 1]}\n")
        .unwrap_err();
    assert_eq!((&e.location, e.field.as_deref()), (&Location::Line { line: 2, column: 0 }, Some("tags[1]")), "{e}");
    assert!(
        e.to_string().ends_with("tools.jsonl:2: field `tags[1]`: invalid type: integer `1`, expected a string"),
        "{e}"
    );
    let e = manifest(r#"{"tools": [{"id": "a", "name": "a", "tags": [1]}]}"#).unwrap_err();
    assert_eq!((e.location, e.field.as_deref()), (Location::Pointer("/tools/0/tags/0".into()), Some("tags")));
    // A schema is named by the key the file gave it, each alias and each foreign format's own.
    for key in ["parameters", "input_schema", "args_schema", "output_schema"] {
        let e = jsonl(&format!(r#"{{"id": "a", "name": "a", "{key}": "object"}}"#)).unwrap_err();
        assert_eq!(e.field.as_deref(), Some(key), "{e}");
    }
    let mcp = r#"{"tools": [{"name": "a", "inputSchema": [1]}]}"#;
    let e = parse_str(Path::new("mcp.json"), mcp, Some(Format::Mcp)).unwrap_err();
    assert_eq!(
        (e.location, e.field.as_deref()),
        (Location::Pointer("/tools/0/inputSchema".into()), Some("inputSchema"))
    );
    let openai = r#"[{"type": "function", "function": {"name": "a", "parameters": 5}}]"#;
    let e = parse_str(Path::new("openai.json"), openai, None).unwrap_err();
    assert_eq!(e.location, Location::Pointer("/0/function/parameters".into()), "{e}");
    // Text that is no JSON at all is said to be so, and YAML by name.
    let e = parse_str(Path::new("tools.yaml"), "tools:\n  - id: a\n", None).unwrap_err();
    assert!(
        e.message.starts_with("not JSON: a catalogue is a JSON manifest")
            && e.message.ends_with("YAML is not read: convert it to JSON"),
        "{e}"
    );
    let e = parse_str(Path::new("tools.txt"), "id,name\n", None).unwrap_err();
    assert!(e.message.starts_with("not JSON") && !e.message.contains("YAML"), "{e}");
    // JSON cut short is a JSON error, at its place.
    let e = manifest("{\"tools\": [\n").unwrap_err();
    assert!(e.message.starts_with("EOF while parsing"), "{e}");
}
