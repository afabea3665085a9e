"""Writes the dialect fixtures: one catalogue per importer (MCP, OpenAI, Anthropic, native)
holding the same real-world schema forms, and cases.json with calls that must pass and calls
that must fail (with the field named) for each. Run by hand after editing FORMS:
    python3 tests/data/dialects/make.py
"""
import json, pathlib

HERE = pathlib.Path(__file__).parent
D4 = "http://json-schema.org/draft-04/schema#"

# name, description, schema (None: no schema at all), passing calls, failing calls as (args, field)
FORMS = [
    ("read_pdf", "Read pages of a PDF file (draft-04 bound, no $schema).",
     {"type": "object", "properties": {"path": {"type": "string"},
      "page": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}}, "required": ["path"]},
     [{"path": "a.pdf", "page": 1}], [({"path": "a.pdf", "page": 0}, "/page"), ({"page": 2}, "/")]),
    ("list_rows", "List rows with a limit, as zod-to-json-schema's OpenAPI 3 target writes it.",
     {"type": "object", "properties": {"limit": {"type": "number", "maximum": 100, "exclusiveMaximum": True}}},
     [{"limit": 99.5}], [({"limit": 100}, "/limit")]),
    ("old_search", "Search with a declared draft-04 schema and an id.",
     {"$schema": D4, "id": "urn:old-search", "type": "object",
      "properties": {"q": {"type": "string", "minLength": 1}}, "required": ["q"]},
     [{"q": "x"}], [({}, "/"), ({"q": ""}, "/q")]),
    ("set_mode", "Set a mode (draft-07 const and if/then).",
     {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "properties": {"mode": {"enum": ["fast", "safe"]}, "level": {"type": "integer"}},
      "if": {"properties": {"mode": {"const": "safe"}}}, "then": {"required": ["level"]}},
     [{"mode": "fast"}, {"mode": "safe", "level": 2}], [({"mode": "safe"}, "/"), ({"mode": "slow"}, "/mode")]),
    ("make_tree", "Create a tree of folders (recursive $ref through $defs).",
     {"type": "object", "$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"},
      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["name"]}},
      "properties": {"root": {"$ref": "#/$defs/node"}}, "required": ["root"]},
     [{"root": {"name": "a", "children": [{"name": "b"}]}}], [({"root": {"children": [{"name": "b"}]}}, "/root")]),
    ("tag_item", "Tag an item (definitions, boolean subschemas).",
     {"type": "object", "definitions": {"tag": {"type": "string", "maxLength": 8}},
      "properties": {"tag": {"$ref": "#/definitions/tag"}, "extra": True, "never": False}},
     [{"tag": "red", "extra": [1]}], [({"tag": "much-too-long"}, "/tag"), ({"never": 1}, "/never")]),
    ("move_piece", "Move a piece: a [column, row] pair (prefixItems).",
     {"type": "object", "properties": {"to": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
      "items": False}}},
     [{"to": ["e", 4]}], [({"to": ["e", "4"]}, "/to/1"), ({"to": ["e", 4, 1]}, "/to")]),
    ("pay", "Pay by card (dependentRequired, unevaluatedProperties).",
     {"type": "object", "allOf": [{"properties": {"card": {"type": "string"}}}],
      "properties": {"cvv": {"type": "string"}, "amount": {"type": "number"}},
      "dependentRequired": {"card": ["cvv"]}, "unevaluatedProperties": False},
     [{"card": "4111", "cvv": "123", "amount": 5}], [({"card": "4111"}, "/"), ({"amount": 1, "tip": 2}, "/")]),
    ("rename_user", "Rename a user; the nickname may be null (OpenAPI 3.0 nullable).",
     {"type": "object", "properties": {"name": {"type": "string"}, "nickname": {"type": "string", "nullable": True}}},
     [{"name": "a", "nickname": None}, {"nickname": "b"}], [({"nickname": 5}, "/nickname"), ({"name": None}, "/name")]),
    ("store_value", "Store any value (draft-03 type any).",
     {"type": "object", "properties": {"value": {"type": "any"}}, "required": ["value"]},
     [{"value": [1, {"a": None}]}, {"value": None}], [({}, "/")]),
    ("open_file", "Open a file; `path` is declared only inside allOf.",
     {"type": "object", "allOf": [{"properties": {"path": {"type": "string"}}}], "properties": {}, "required": ["path"]},
     [{"path": "/tmp/a"}], [({}, "/"), ({"path": 3}, "/path")]),
    ("annotated", "A tool whose schema carries annotations only (x-, deprecated, examples, an unknown format).",
     {"type": "object", "x-internal": True, "deprecated": True, "examples": [{"when": "soon"}],
      "properties": {"when": {"type": "string", "format": "fuzzy-date"}}},
     [{"when": "next tuesday"}], [({"when": 5}, "/when")]),
    ("create_table", "Create a table whose name must not start with tmp_ (ECMA-262 lookahead).",
     {"type": "object", "properties": {"table": {"type": "string", "pattern": "^(?!tmp_)[a-z_]+$"}}, "required": ["table"]},
     [{"table": "users"}], [({"table": "tmp_users"}, "/table")]),
    ("fetch_remote", "A tool whose schema refers to a remote schema (never fetched: validation off).",
     {"type": "object", "properties": {"doc": {"$ref": "https://example.com/schemas/doc.json"}}},
     [{"doc": {"anything": 1}}, {"doc": 5}], []),
    ("no_arguments", "A tool with no input schema at all.", None, [{}, {"any": "thing"}], []),
    ("files.read", "Read a file (a dotted name).", {"type": "object", "properties": {"p": {"type": "string"}}},
     [{"p": "a"}], [({"p": 1}, "/p")]),
    ("docs/search", "Search the docs (a name with a slash).", {"type": "object", "properties": {}}, [{}], []),
    ("send mail", "Send an e-mail (a name with a space).", {"type": "object", "properties": {}}, [{}], []),
    ("météo", "Weather forecast for a French town (a non-ASCII name).", {"type": "object", "properties": {}}, [{}], []),
    ("undocumented_tool", "", {"type": "object", "properties": {"widget_id": {"type": "string"}}}, [{}], []),
]
DUPLICATE = "read_pdf"


def server_tools(fmt):
    tools = []
    for name, desc, schema, *_ in FORMS + [(DUPLICATE, "A second read_pdf (duplicate name).", {"type": "object"})]:
        if fmt == "mcp":
            t = {"name": name, "description": desc}
            if schema is not None:
                t["inputSchema"] = schema
        elif fmt == "anthropic":
            t = {"name": name, "description": desc}
            if schema is not None:
                t["input_schema"] = schema
        else:  # openai
            f = {"name": name, "description": desc}
            if schema is not None:
                f["parameters"] = schema
            t = {"type": "function", "function": f}
        tools.append(t)
    return tools


def main():
    (HERE / "mcp.json").write_text(json.dumps({"realworld": {"tools": server_tools("mcp")}}, indent=1, ensure_ascii=False) + "\n")
    (HERE / "anthropic.json").write_text(json.dumps(server_tools("anthropic"), indent=1, ensure_ascii=False) + "\n")
    (HERE / "openai.json").write_text(json.dumps(server_tools("openai"), indent=1, ensure_ascii=False) + "\n")
    manifest = {"tools": []}
    for name, desc, schema, *_ in FORMS:
        t = {"id": "realworld." + name, "name": name, "path": "realworld", "description": desc}
        if schema is not None:
            t["args_schema"] = schema
        manifest["tools"].append(t)
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    cases = [{"name": n, "pass": p, "fail": [{"args": a, "field": f} for a, f in fails],
              "validated": schema is not None and n != "fetch_remote"}
             for n, _, schema, p, fails in FORMS]
    (HERE / "cases.json").write_text(json.dumps({"duplicate": DUPLICATE, "cases": cases}, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
