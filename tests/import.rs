//! Importers: MCP tools/list results, OpenAI tools arrays and Anthropic tool definitions.

#[path = "common/mod.rs"]
mod common;

use std::path::PathBuf;

use toolsearch::{load_path, Format, Principal, SearchToolsRequest};

fn data(name: &str) -> PathBuf {
    common::repo().join("tests/data").join(name)
}

#[test]
fn an_mcp_tools_list_response_becomes_a_server_category() {
    let c = load_path(&data("mcp-filesystem.json"), None).unwrap();
    let ids: Vec<&str> = c.tools.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["mcp-filesystem.read_text_file", "mcp-filesystem.write_file", "mcp-filesystem.search_files"]);
    assert!(c.tools.iter().all(|t| t.paths == vec![vec!["mcp-filesystem".to_string()]]));
    assert_eq!(c.tools[0].details.args_schema.value()["required"][0], "path");
    assert_eq!(c.tools[0].details.meta.as_ref().unwrap().value()["annotations"]["readOnlyHint"], true);
    assert_eq!(c.tools[0].group.as_deref(), Some("mcp-filesystem"));
    assert_eq!(c.groups.len(), 1);
}

#[test]
fn a_map_of_mcp_servers_gives_one_category_per_server_with_its_description() {
    let c = load_path(&data("mcp-servers.json"), None).unwrap();
    let github = c.nodes.iter().find(|n| n.path == ["github"]).unwrap();
    assert_eq!(github.summary, "GitHub repositories, issues and pull requests.");
    assert!(c.tools.iter().any(|t| t.id == "postgres.query" && t.paths[0] == ["postgres"]));
    assert_eq!(c.tools.len(), 4);
}

#[test]
fn openai_and_anthropic_definitions_import_with_their_schemas() {
    let o = load_path(&data("openai-tools.json"), None).unwrap();
    assert_eq!(o.tools[0].id, "get_weather");
    assert_eq!(o.tools[0].details.args_schema.value()["additionalProperties"], false);
    assert_eq!(o.tools[0].summary, "Get current temperature for a given location.");
    let a = load_path(&data("anthropic-tools.json"), None).unwrap();
    assert_eq!(
        a.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["get_stock_price", "get_time", "translate_text"]
    );
    assert_eq!(a.tools[1].details.args_schema.value()["properties"]["timezone"]["type"], "string");
}

#[test]
fn an_explicit_format_that_does_not_fit_is_a_clear_error() {
    let e = load_path(&data("openai-tools.json"), Some(Format::Mcp)).unwrap_err();
    assert!(e.to_string().contains("openai-tools.json"), "{e}");
    let e = load_path(&data("anthropic-tools.json"), Some(Format::OpenAi)).unwrap_err();
    assert_eq!(e.location, toolsearch::catalog::Location::Pointer("/0".into()));
    assert!(e.message.contains("OpenAI tool"), "{e}");
    let e = load_path(&data("anthropic-tools.json"), Some(Format::Manifest)).unwrap_err();
    assert!(e.message.contains("JSON object") && e.message.contains("Anthropic tool list"), "{e}");
}

#[test]
fn an_array_that_is_no_tool_list_names_the_tool_that_breaks_it() {
    let load = |text: &str| toolsearch::catalog::parse_str(std::path::Path::new("t.json"), text, None).unwrap_err();
    let native = load(r#"[{"id": "a.b", "name": "b", "summary": "x"}]"#);
    assert!(
        native.to_string().starts_with(
            "t.json at /0: a JSON array is read as an OpenAI, Anthropic or MCP tool list, and no tool has their shape"
        ),
        "{native}"
    );
    assert!(native.message.ends_with("a native manifest is a JSON object: {\"tools\": [...]}"), "{native}");
    let mixed = load(r#"[{"name": "a", "input_schema": {}}, {"type": "function", "function": {"name": "b"}}]"#);
    assert!(mixed.to_string().starts_with("t.json at /1: this tool is not an Anthropic tool"), "{mixed}");
    assert_eq!(load("[]").to_string(), "t.json: is an empty tool list: there is nothing to index");
    // An error about the whole document names no place in it.
    assert_eq!(
        load("\"text\"").to_string(),
        "t.json: a manifest must be a JSON object with `tools` (and optionally `nodes`, `groups`)"
    );
}

#[test]
fn imported_catalogues_index_and_answer() {
    let dir = common::build(&data("mcp-servers.json"), "mcp");
    let engine = common::open(&dir);
    let r = engine
        .search_tool_by_category(
            &Principal::trusted(),
            // (In this 4-tool catalogue "open a bug report on github" is a near tie: the model and
            // BM25 both put search_code 0.01 ahead; the query below says what it wants.)
            &SearchToolsRequest { query: "report a bug as a new issue on github".into(), ..Default::default() },
        )
        .unwrap();
    assert_eq!(r.results[0].tool_id, "github.create_issue");
    assert_eq!(r.results[0].path, "github");
}

#[test]
fn one_file_per_server_merges_into_one_index() {
    let out = common::scratch().join("merged-servers");
    let files = [data("mcp-filesystem.json"), data("mcp-servers.json"), data("openai-tools.json")];
    let run = |files: &[PathBuf], out: &std::path::Path| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"));
        cmd.arg("index").args(files).arg("--out").arg(out).arg("--quiet");
        cmd.output().expect("binary runs")
    };
    let done = run(&files, &out);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let engine = common::open(&out);
    let mut servers: Vec<&str> = engine.catalog().groups.iter().map(|g| g.id.as_str()).collect();
    servers.sort();
    assert_eq!(servers, ["github", "mcp-filesystem", "postgres"]);
    assert_eq!(engine.catalog().tools.len(), 3 + 4 + load_path(&files[2], None).unwrap().tools.len());
    let r = engine
        .search_tool_by_category(
            &Principal::trusted(),
            &SearchToolsRequest { query: "overwrite an existing file with new content".into(), ..Default::default() },
        )
        .unwrap();
    assert_eq!(r.results[0].tool_id, "mcp-filesystem.write_file");

    // The same server twice: its tool ids clash, and the error names both files.
    let clash = run(&[data("mcp-filesystem.json"), data("mcp-filesystem.json")], &common::scratch().join("clash"));
    assert_eq!(clash.status.code(), Some(1));
    let err = String::from_utf8_lossy(&clash.stderr);
    assert!(
        err.contains("\"mcp-filesystem.read_text_file\" is also defined in") && err.contains("mcp-filesystem.json"),
        "{err}"
    );
    assert!(!common::scratch().join("clash").exists(), "nothing is written on error");
}

#[test]
fn a_registry_map_of_servers_to_tool_arrays_namespaces_each_server() {
    let dir = common::scratch().join("registry");
    std::fs::create_dir_all(&dir).unwrap();
    let tool = |name: &str, read_only: bool| {
        serde_json::json!({"name": name, "description": format!("{name} things."), "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": read_only}, "title": format!("The {name} tool")})
    };
    let registry = serde_json::json!({
        "github": [tool("status", true), tool("merge", false)],
        "gitlab": [tool("status", true)]
    });
    let file = dir.join("registry.json");
    std::fs::write(&file, registry.to_string()).unwrap();
    let c = load_path(&file, None).unwrap();
    let ids: Vec<&str> = c.tools.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["github.status", "github.merge", "gitlab.status"], "a repeated name is no clash across servers");
    assert!(c.tools[0].tags.contains(&"read-only".to_owned()), "annotations become tags: {:?}", c.tools[0].tags);
    assert!(!c.tools[1].tags.contains(&"read-only".to_owned()));
    assert_eq!(c.tools[0].details.meta.as_ref().unwrap().value()["title"], "The status tool");
}

#[test]
fn flat_openai_files_of_several_servers_merge_when_namespaced() {
    let dir = common::scratch().join("namespaced");
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    std::fs::copy(data("openai-tools.json"), &a).unwrap();
    std::fs::copy(data("openai-tools.json"), &b).unwrap();
    let bin = env!("CARGO_BIN_EXE_toolsearch");
    let run = |extra: &[String]| {
        std::process::Command::new(bin)
            .args(["index", a.to_str().unwrap(), b.to_str().unwrap(), "--out", dir.join("idx").to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap()
    };
    let clash = run(&[]);
    assert!(!clash.status.success(), "the same names in two flat files clash without a namespace");
    let ns = |f: &PathBuf, n: &str| format!("{}={n}", f.display());
    let ok = run(&["--namespace".into(), ns(&a, "crm"), "--namespace".into(), ns(&b, "mailer")]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let c = toolsearch::IndexReader::open(&dir.join("idx")).unwrap().catalog().clone();
    assert!(c.tools.iter().any(|t| t.id == "crm.get_weather") && c.tools.iter().any(|t| t.id == "mailer.get_weather"));
    assert!(c.nodes.iter().any(|n| n.path == ["crm"]));
    let bad = run(&["--namespace".into(), "nofile.json=x".into()]);
    assert!(!bad.status.success());
}

#[test]
fn tools_at_the_root_are_listed_at_the_root_beside_the_categories() {
    // An OpenAI or Anthropic catalogue puts every tool at the root; merged with a server's
    // tools, the root holds one category and those tools.
    for (file, extra) in [("openai-tools.json", None), ("anthropic-tools.json", Some("mcp-filesystem.json"))] {
        let out = common::scratch().join(format!("root-{file}"));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"));
        cmd.arg("index").arg(data(file)).args(extra.map(data)).arg("--out").arg(&out).arg("--quiet");
        let done = cmd.output().unwrap();
        assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
        let engine = common::open(&out);
        let at_root: Vec<String> = load_path(&data(file), None).unwrap().tools.iter().map(|t| t.id.clone()).collect();
        let listed = engine.list(&Principal::trusted(), &toolsearch::ListRequest::default()).unwrap();
        let mut ids: Vec<String> = listed.tools.iter().map(|t| t.tool_id.clone()).collect();
        ids.sort();
        let mut want = at_root.clone();
        want.sort();
        assert_eq!(ids, want, "{file}: every root tool, listed at /");
        assert_eq!(listed.nodes.len(), usize::from(extra.is_some()), "{file}: {:?}", listed.nodes);
        // Pages hold them too.
        let one = engine
            .list(&Principal::trusted(), &toolsearch::ListRequest { limit: Some(1), ..Default::default() })
            .unwrap();
        assert_eq!(one.nodes.len() + one.tools.len(), 1);
        assert!(one.next_cursor.is_some() || at_root.len() + listed.nodes.len() <= 1);
    }
    // The CLI says so too.
    let out = common::scratch().join("root-openai-tools.json");
    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch")).arg("list").arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success() && !text.contains("0 tools"), "{text}");
}

/// A server may list every tool with no schema at all: such a `tools/list` is read as one (an
/// MCP server's category, tools taking any arguments), bare or under `tools`; a tool with a
/// native manifest's fields keeps the list a manifest.
#[test]
fn a_tools_list_whose_tools_have_no_schema_is_read_as_mcp() {
    let parse = |text: &str| toolsearch::catalog::parse_str(std::path::Path::new("clock.json"), text, None);
    let listed = r#"{"tools": [{"name": "now", "description": "The current time."},
                               {"name": "uptime", "title": "Uptime", "description": "Time since boot."}]}"#;
    for text in [listed.to_owned(), serde_json::from_str::<serde_json::Value>(listed).unwrap()["tools"].to_string()] {
        let c = parse(&text).unwrap();
        let ids: Vec<&str> = c.tools.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["clock.now", "clock.uptime"], "{text}");
        assert!(c.tools.iter().all(|t| t.paths == vec![vec!["clock".to_string()]]));
    }
    let native = parse(r#"{"tools": [{"name": "now", "summary": "The current time."}]}"#).unwrap_err();
    assert_eq!(native.to_string(), "clock.json at /tools/0/id: field `id`: is missing or empty");
}

/// A catalogue parsed from `text` (as a file `t.json`), or the error's text.
fn parse(text: &str, format: Option<Format>) -> Result<toolsearch::Catalog, String> {
    toolsearch::catalog::parse_str(std::path::Path::new("t.json"), text, format).map_err(|e| e.to_string())
}

#[test]
fn responses_api_tools_import_and_provider_defined_ones_are_left_out_with_a_warning() {
    let doc = r#"{"tools": [
        {"type": "web_search"},
        {"type": "function", "name": "get_weather", "description": "Get the weather for a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
         "strict": true, "output_schema": {"type": "object", "properties": {"celsius": {"type": "number"}}}},
        {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp"},
        {"type": "custom", "name": "code_exec", "description": "Run Python code."},
        {"type": "function", "function": {"name": "send_email", "description": "Send an email.",
         "parameters": {"type": "object", "properties": {"to": {"type": "string"}}}}}
    ]}"#;
    let c = parse(doc, None).unwrap();
    assert_eq!(c.tools.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["get_weather", "send_email"]);
    let weather = &c.tools[0].details;
    assert_eq!(weather.args_schema.value()["required"][0], "city");
    assert_eq!(weather.result_schema.as_ref().unwrap().value()["properties"]["celsius"]["type"], "number");
    // What says the format is not metadata; what the author claimed is.
    assert_eq!(weather.meta.as_ref().unwrap().value(), serde_json::json!({"strict": true}));
    let left_out: Vec<(&str, Option<&str>)> = c
        .warnings
        .iter()
        .filter(|w| w.kind == toolsearch::catalog::WarningKind::ProviderDefined)
        .map(|w| (w.at.as_str(), w.tool.as_deref()))
        .collect();
    assert_eq!(
        left_out,
        [("t.json at /tools/0", None), ("t.json at /tools/2", None), ("t.json at /tools/3", Some("code_exec"))]
    );
    assert!(c.warnings[0].message.starts_with("\"web_search\" is a provider-defined tool"), "{}", c.warnings[0]);
    // Said explicitly, the same.
    assert_eq!(parse(doc, Some(Format::OpenAi)).unwrap().tools.len(), 2);
}

#[test]
fn older_functions_import_wherever_a_tool_list_stands_and_a_native_tool_stays_one() {
    let function = r#"{"name": "get_weather", "description": "Get the weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}"#;
    for doc in [format!("[{function}]"), format!(r#"{{"functions": [{function}]}}"#)] {
        let c = parse(&doc, None).unwrap_or_else(|e| panic!("{doc}: {e}"));
        assert_eq!(c.tools[0].id, "get_weather");
        assert_eq!(c.tools[0].details.args_schema.value()["properties"]["city"]["type"], "string");
    }
    // Under `tools` too, where a native tool would need an `id`; one with it stays native.
    assert_eq!(parse(&format!(r#"{{"tools": [{function}]}}"#), None).unwrap().tools[0].id, "get_weather");
    let native =
        r#"{"tools": [{"id": "w.get", "name": "get", "tags": ["weather"], "parameters": {"type": "object"}}]}"#;
    assert_eq!(parse(native, None).unwrap().tools[0].tags, ["weather"]);
    // Beside a Responses tool, a function of the older form is one of the list.
    let mixed = format!(r#"[{function}, {{"type": "function", "name": "b", "parameters": {{}}}}]"#);
    assert_eq!(parse(&mixed, None).unwrap().tools.len(), 2);
}

#[test]
fn anthropic_server_tools_are_left_out_and_custom_ones_kept() {
    let doc = r#"[
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
        {"name": "get_time", "description": "The time in a timezone.", "input_schema": {"type": "object"}},
        {"type": "bash_20250124", "name": "bash"},
        {"type": "custom", "name": "get_stock_price", "description": "A stock's price.",
         "input_schema": {"type": "object", "properties": {"ticker": {"type": "string"}}}}
    ]"#;
    let c = parse(doc, None).unwrap();
    assert_eq!(c.tools.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["get_time", "get_stock_price"]);
    assert!(c.tools[1].details.meta.is_none(), "the `custom` type is the format: {:?}", c.tools[1].details.meta);
    let names: Vec<_> = c.warnings.iter().map(|w| (w.at.as_str(), w.tool.as_deref().unwrap())).collect();
    assert_eq!(names, [("t.json at /0", "web_search"), ("t.json at /2", "bash")]);
}

#[test]
fn a_list_of_provider_defined_tools_only_is_refused_naming_them() {
    for doc in [
        r#"[{"type": "web_search"}, {"type": "code_interpreter", "container": {"type": "auto"}}]"#,
        r#"{"tools": [{"type": "web_search"}, {"type": "code_interpreter"}, {"type": "web_search"}]}"#,
    ] {
        assert_eq!(
            parse(doc, None).unwrap_err(),
            "t.json: every tool here is provider-defined, with no argument schema (web_search, code_interpreter): \
             toolsearch indexes function tools, and there are none",
            "{doc}"
        );
    }
}

#[test]
fn gemini_declarations_import_with_their_openapi_schemas_read_as_json_schema() {
    // A generateContent request: two tool objects of declarations, two of Google's own tools.
    let request = r#"{"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [
        {"functionDeclarations": [{"name": "get_weather", "description": "The weather in a city.",
            "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"},
                "days": {"type": "INTEGER", "nullable": true}}, "required": ["city"]},
            "response": {"type": "OBJECT", "properties": {"celsius": {"type": "NUMBER"}}}}]},
        {"googleSearch": {}},
        {"functionDeclarations": [{"name": "book_room", "description": "Book a meeting room.",
            "parametersJsonSchema": {"type": "object", "properties": {"room": {"type": "string"}},
                "additionalProperties": false}}]},
        {"codeExecution": {}}
    ]}"#;
    let c = parse(request, None).unwrap();
    assert_eq!(c.tools.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["get_weather", "book_room"]);
    let weather = &c.tools[0].details;
    assert_eq!(weather.args_schema.value()["properties"]["days"]["type"], serde_json::json!(["integer", "null"]));
    assert_eq!(weather.result_schema.as_ref().unwrap().value()["properties"]["celsius"]["type"], "number");
    assert_eq!(c.tools[1].details.args_schema.value()["additionalProperties"], false);
    let warned: Vec<(&str, &str)> =
        c.warnings.iter().map(|w| (w.at.as_str(), w.message.split(' ').next().unwrap())).collect();
    let expected = [
        ("t.json at /tools/1/googleSearch", "\"googleSearch\""),
        ("t.json at /tools/3/codeExecution", "\"codeExecution\""),
    ];
    assert_eq!(warned, expected);
    // Checked against as JSON Schema: the call check refuses a city that is no string.
    let v = toolsearch::catalog::SchemaValidator::new(&weather.args_schema.value());
    assert!(v.validation().is_on(), "{}", v.validation().describe());
    assert!(v.problems(&serde_json::json!({"city": "Oslo", "days": null}), 5).is_empty());
    assert_eq!(v.problems(&serde_json::json!({"city": 5}), 5).len(), 1);
}

#[test]
fn gemini_python_sdk_dumps_and_bare_declarations_import_too() {
    // `types.Tool(function_declarations=[...]).model_dump()`: snake_case, unset fields null.
    let dump = r#"[{"google_search": {"exclude_domains": null}, "function_declarations": [{"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "OBJECT", "properties": {"days": {"type": "ARRAY", "items": {"type": "INTEGER"},
            "max_items": 7, "min_items": null}}, "required": null}, "parameters_json_schema": null,
        "response": null, "behavior": null}], "code_execution": null}]"#;
    let c = parse(dump, None).unwrap();
    let warned: Vec<&str> = c.warnings.iter().map(|w| w.at.as_str()).collect();
    assert_eq!(warned, ["t.json at /0/google_search"], "beside the declarations, left out");
    let days = &c.tools[0].details.args_schema.value()["properties"]["days"];
    assert_eq!(days, &serde_json::json!({"type": "array", "items": {"type": "integer"}, "maxItems": 7}));
    // Declarations alone, their types in capitals, are Gemini's; `--format gemini` says so too.
    let bare =
        r#"[{"name": "get_weather", "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}}]"#;
    for format in [None, Some(Format::Gemini)] {
        let c = parse(bare, format).unwrap();
        assert_eq!(c.tools[0].details.args_schema.value()["properties"]["city"]["type"], "string");
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }
    // The SDK's dump of declarations alone, lower-case types: its null fields say whose it is;
    // its `ref`/`defs` are JSON Schema's `$ref`/`$defs`, so calls are checked through them.
    let sdk = r##"[{"name": "adopt", "description": null, "behavior": null, "response": null, "parameters_json_schema": null,
        "parameters": {"type": "object", "properties": {"pet": {"ref": "#/defs/Pet"}}, "required": ["pet"],
            "defs": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}}]"##;
    let c = parse(sdk, None).unwrap();
    let v = toolsearch::catalog::SchemaValidator::new(&c.tools[0].details.args_schema.value());
    assert!(v.problems(&serde_json::json!({"pet": {"name": "Rex"}}), 5).is_empty());
    assert_eq!(v.problems(&serde_json::json!({"pet": {}}), 5).len(), 1, "checked through the $ref");
    let c = toolsearch::catalog::parse_str_as(std::path::Path::new("t.json"), dump, None, Some("weather")).unwrap();
    assert_eq!((c.tools[0].id.as_str(), c.nodes[0].path.clone()), ("weather.get_weather", vec!["weather".to_owned()]));
    let one = r#"{"functionDeclarations": [{"name": "a", "parameters": {"type": "OBJECT"}}], "codeExecution": {}}"#;
    let c = parse(one, None).unwrap();
    assert_eq!((c.tools[0].id.as_str(), c.warnings[0].at.as_str()), ("a", "t.json at /codeExecution"));
    let e = parse(r#"{"tools": [{"functionDeclarations": [{"description": "no name"}]}]}"#, None).unwrap_err();
    assert!(e.starts_with("t.json at /tools/0/functionDeclarations/0: expected a Gemini function declaration"), "{e}");
}

#[test]
fn json_lines_of_openai_anthropic_and_mcp_tools_import_line_by_line() {
    let lines = [
        r#"{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {"type": "object"}}}"#,
        r#"{"type": "function", "name": "send_email", "description": "Send an email.", "parameters": {"type": "object"}}"#,
        r#"{"type": "web_search"}"#,
        r#"{"name": "get_time", "description": "The time.", "input_schema": {"type": "object"}}"#,
        "",
        r#"{"name": "read_file", "description": "Read a file.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}"#,
        r#"{"id": "native.tool", "name": "tool", "description": "A native line.", "parameters": {"type": "object"}}"#,
    ];
    let c = toolsearch::catalog::parse_str(std::path::Path::new("t.jsonl"), &lines.join("\n"), None).unwrap();
    let ids: Vec<&str> = c.tools.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["get_weather", "send_email", "get_time", "read_file", "native.tool"]);
    assert_eq!(c.tools[3].tags, ["read-only"]);
    assert_eq!(c.warnings.iter().map(|w| w.at.as_str()).collect::<Vec<_>>(), ["t.jsonl:3"]);
    // What has no shape of theirs and no id is still the native format's error, at its line.
    let e = toolsearch::catalog::parse_str(std::path::Path::new("t.jsonl"), r#"{"name": "x"}"#, None).unwrap_err();
    assert_eq!(e.to_string(), "t.jsonl:1: field `id`: is missing or empty");
}
