use serde_json::{json, Value};

use super::*;

fn on(schema: Value) -> SchemaValidator {
    let v = SchemaValidator::new(&schema);
    assert!(v.validation().is_on(), "{schema}: {}", v.validation().describe());
    v
}

fn accepts(v: &SchemaValidator, x: Value) {
    assert!(v.problems(&x, 5).is_empty(), "{x} should pass: {:?}", v.problems(&x, 5));
}

fn rejects(v: &SchemaValidator, x: Value, field: &str) {
    let p = v.problems(&x, 5);
    assert!(!p.is_empty(), "{x} should fail");
    assert!(p.iter().any(|p| p.starts_with(field)), "{x}: {p:?} should name {field}");
}

#[test]
fn draft04_boolean_exclusive_bounds_keep_their_meaning_without_schema() {
    let v = on(json!({"type":"object","properties":{"page":{"type":"integer","minimum":0,"exclusiveMinimum":true,
        "maximum":10,"exclusiveMaximum":true}}}));
    assert_eq!(v.validation(), &Validation::On(Dialect::Draft202012));
    accepts(&v, json!({"page": 1}));
    accepts(&v, json!({"page": 9}));
    rejects(&v, json!({"page": 0}), "/page");
    rejects(&v, json!({"page": 10}), "/page");
    // `false` is the plain inclusive bound.
    let v = on(json!({"type":"number","minimum":0,"exclusiveMinimum":false}));
    accepts(&v, json!(0));
    rejects(&v, json!(-1), "/");
}

#[test]
fn declared_draft04_is_validated_as_draft04() {
    let v = on(json!({"$schema":"http://json-schema.org/draft-04/schema#","id":"x","type":"object",
        "properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true}},"required":["n"]}));
    assert_eq!(v.validation(), &Validation::On(Dialect::Draft4));
    accepts(&v, json!({"n": 0.5}));
    rejects(&v, json!({"n": 0}), "/n");
    rejects(&v, json!({}), "/");
}

#[test]
fn each_declared_dialect_validates() {
    for (uri, d) in [
        ("http://json-schema.org/draft-06/schema#", Dialect::Draft6),
        ("http://json-schema.org/draft-07/schema#", Dialect::Draft7),
        ("https://json-schema.org/draft/2019-09/schema", Dialect::Draft201909),
        ("https://json-schema.org/draft/2020-12/schema", Dialect::Draft202012),
    ] {
        let v = on(json!({"$schema": uri, "type":"object","properties":{"q":{"type":"string","minLength":2}},
            "required":["q"], "additionalProperties": false}));
        assert_eq!(v.validation(), &Validation::On(d));
        accepts(&v, json!({"q": "ab"}));
        rejects(&v, json!({"q": "a"}), "/q");
        rejects(&v, json!({"q": "ab", "x": 1}), "/");
    }
}

#[test]
fn mixed_forms_keep_modern_keywords_strict() {
    // A draft-04 bound beside a draft-06 `const`: both hold.
    let v = on(json!({"type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true},
        "mode":{"const":"fast"}}}));
    rejects(&v, json!({"n": 0}), "/n");
    rejects(&v, json!({"mode": "slow"}), "/mode");
    accepts(&v, json!({"n": 1, "mode": "fast"}));
}

#[test]
fn definitions_defs_recursive_refs_and_boolean_subschemas() {
    let v = on(json!({"type":"object","definitions":{"node":{"type":"object","properties":{
        "name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/definitions/node"}}},
        "required":["name"]}},"properties":{"tree":{"$ref":"#/definitions/node"},"anything":true,"nothing":false}}));
    accepts(&v, json!({"tree":{"name":"a","children":[{"name":"b","children":[]}]}}));
    rejects(&v, json!({"tree":{"name":"a","children":[{"children":[]}]}}), "/tree/children/0");
    rejects(&v, json!({"nothing": 1}), "/nothing");
    accepts(&v, json!({"anything": [1, {"x": null}]}));
    let v = on(json!({"$defs":{"id":{"type":"integer"}},"type":"object","properties":{"id":{"$ref":"#/$defs/id"}}}));
    rejects(&v, json!({"id": "1"}), "/id");
}

#[test]
fn tuples_dependencies_and_unevaluated_properties() {
    let v = on(json!({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}));
    accepts(&v, json!(["a", 1]));
    rejects(&v, json!(["a", "b"]), "/1");
    rejects(&v, json!(["a", 1, 2]), "/");
    // The draft-04 tuple form means the same.
    let v = on(json!({"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}));
    rejects(&v, json!(["a", "b"]), "/1");
    rejects(&v, json!(["a", 1, 2]), "/");
    let v = on(json!({"type":"object","dependentRequired":{"card":["cvv"]}}));
    rejects(&v, json!({"card": "1"}), "/");
    accepts(&v, json!({"card": "1", "cvv": "2"}));
    let v = on(json!({"type":"object","dependencies":{"card":["cvv"],"tip":{"required":["amount"]}}}));
    rejects(&v, json!({"card": "1"}), "/");
    rejects(&v, json!({"tip": 1}), "/");
    accepts(&v, json!({"tip": 1, "amount": 2}));
    let v = on(json!({"type":"object","allOf":[{"properties":{"a":{"type":"string"}}}],
        "properties":{"b":{"type":"string"}},"unevaluatedProperties":false}));
    accepts(&v, json!({"a": "x", "b": "y"}));
    rejects(&v, json!({"a": "x", "c": 1}), "/");
}

#[test]
fn openapi_nullable_and_draft03_forms() {
    let v = on(json!({"type":"object","properties":{"s":{"type":"string","nullable":true},
        "e":{"type":"string","enum":["a","b"],"nullable":true},"t":{"type":"string"}}}));
    accepts(&v, json!({"s": null, "e": null}));
    accepts(&v, json!({"s": "x", "e": "a"}));
    rejects(&v, json!({"t": null}), "/t");
    rejects(&v, json!({"e": "c"}), "/e");
    let v = on(json!({"type":"object","properties":{"x":{"type":"any"},"y":{"type":["string","any"]}}}));
    accepts(&v, json!({"x": [1], "y": {"a": 1}}));
    let v = on(json!({"$schema":"http://json-schema.org/draft-03/schema#","type":"object",
        "properties":{"q":{"type":"string","required":true},"n":{"type":"number","divisibleBy":5}}}));
    rejects(&v, json!({}), "/");
    rejects(&v, json!({"q": "a", "n": 7}), "/n");
    accepts(&v, json!({"q": "a", "n": 10}));
}

#[test]
fn required_naming_a_property_declared_in_all_of_is_valid() {
    let v = on(json!({"type":"object","allOf":[{"properties":{"path":{"type":"string"}}}],"properties":{},
        "required":["path"]}));
    accepts(&v, json!({"path": "a"}));
    rejects(&v, json!({}), "/");
}

#[test]
fn unknown_keywords_and_formats_are_annotations_and_patterns_are_ecma262() {
    let v = on(json!({"type":"object","x-internal":true,"deprecated":true,"examples":[{}],
        "properties":{"f":{"type":"string","format":"made-up-format"},
        "p":{"type":"string","pattern":"^(?!tmp_)[a-z_]+$"},"d":{"type":"string","pattern":"^\\d{3}$"}}}));
    accepts(&v, json!({"f": "anything", "p": "data", "d": "123"}));
    rejects(&v, json!({"p": "tmp_x"}), "/p");
    rejects(&v, json!({"d": "12"}), "/d");
}

#[test]
fn what_cannot_compile_is_off_with_the_reason_and_pointer() {
    for (schema, what) in [
        (json!({"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}), "remote ref"),
        (json!({"type":"object","properties":{"x":{"$ref":"#/definitions/missing"}}}), "dangling ref"),
        (json!({"type":"object","properties":{"q":{"type":"string","pattern":"(unclosed"}}}), "pattern"),
        (json!({"type":"object","properties":{"n":{"type":"number","minimum":"abc"}}}), "minimum"),
        (json!({"type":"object","properties":{"a":{"type":"strin"}}}), "type"),
        (json!("object"), "not a schema"),
    ] {
        let v = SchemaValidator::new(&schema);
        let Validation::Off { reason, .. } = v.validation() else { panic!("{what}: should be off") };
        assert!(!reason.is_empty(), "{what}");
        assert!(v.validation().describe().starts_with("off: "), "{what}");
        assert!(v.problems(&json!({"anything": 1}), 5).is_empty(), "{what}: off accepts everything");
    }
}

#[test]
fn deep_nesting_is_off_not_a_stack_overflow() {
    let mut s = json!({"type":"string"});
    for _ in 0..200 {
        s = json!({"type":"object","properties":{"a": s}});
    }
    assert!(!SchemaValidator::new(&s).validation().is_on());
}
