//! Bad input, made at random: catalogues and gateway configs that are valid ones with a few
//! values swapped for odd ones (wrong types, huge numbers, empty or control-laden strings,
//! deep nesting), fields dropped or copied elsewhere, or the text cut short. Whatever comes in,
//! `toolsearch` never panics; a refusal names the file (and for a config, the field, in words:
//! never a Rust type, nor a token, environment value or header the config holds); a refused
//! build leaves nothing behind; a build that passes answers.
//!
//! The mutations are seeded (`TOOLSEARCH_FUZZ_SEED`, default 1; a failure prints its seed), so
//! a run is reproducible; set it to explore others.

#[path = "common/mod.rs"]
mod common;

use std::process::{Command, Output};

use serde_json::{json, Value};

/// A small seeded generator (xorshift64*): the tests need variety, not quality.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// The seed of this run.
fn seed() -> u64 {
    std::env::var("TOOLSEARCH_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1)
}

/// Values a field is swapped for.
fn odd_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(1e308),
        json!(u64::MAX),
        json!(-0.5),
        json!(""),
        json!("x".repeat(5000)),
        json!("a/../b"),
        json!("/"),
        json!("\u{0}\u{7f}é"),
        json!("${NOT_SET}"),
        json!("https://"),
        json!([]),
        json!({}),
        json!([[[[]]]]),
        json!(["a", "a"]),
        json!({"type": "object", "$ref": "#"}),
    ]
}

/// The JSON pointer of every value in `v` under `at`.
fn pointers(v: &Value, at: String, into: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            map.iter().for_each(|(k, x)| pointers(x, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), into))
        }
        Value::Array(items) => items.iter().enumerate().for_each(|(i, x)| pointers(x, format!("{at}/{i}"), into)),
        _ => {}
    }
    into.push(at);
}

/// `doc` with one to three values under `under` (a JSON pointer) swapped, dropped or copied
/// from elsewhere; as text, cut short one time in ten.
fn mutate(doc: &Value, under: &str, rng: &mut Rng) -> String {
    let mut doc = doc.clone();
    let odd = odd_values();
    for _ in 0..1 + rng.below(3) {
        let mut all = Vec::new();
        pointers(&doc, String::new(), &mut all);
        all.retain(|p| p.starts_with(under) && p.len() > under.len());
        if all.is_empty() {
            break;
        }
        let at = all[rng.below(all.len())].clone();
        let (parent, key) = at.rsplit_once('/').unwrap();
        let new = match rng.below(5) {
            0 | 1 => Some(odd[rng.below(odd.len())].clone()),
            2 => None,
            _ => doc.pointer(&all[rng.below(all.len())]).cloned(),
        };
        match (doc.pointer_mut(parent).unwrap(), new) {
            (Value::Object(map), None) => {
                map.remove(&key.replace("~1", "/").replace("~0", "~"));
            }
            (Value::Array(items), None) => {
                items.remove(key.parse::<usize>().unwrap());
            }
            (_, Some(new)) => *doc.pointer_mut(&at).unwrap() = new,
            _ => {}
        }
    }
    let text = serde_json::to_string_pretty(&doc).unwrap();
    match rng.below(10) {
        0 => text.char_indices().nth(rng.below(text.chars().count())).map_or(text.clone(), |(i, _)| text[..i].into()),
        _ => text,
    }
}

/// Runs `toolsearch` with `args`; asserts it ended by itself (no signal) with a code the CLI
/// documents and no panic, `case` naming the input on failure.
fn run(args: &[&str], case: &str) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).output().unwrap();
    ended_cleanly(&out, &format!("{case}: {args:?}"));
    out
}

/// Asserts `out` is of a run that ended by itself (no signal) with a code the CLI documents
/// and no panic.
fn ended_cleanly(out: &Output, case: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    assert!(code.is_some_and(|c| (0..=4).contains(&c)), "{case} ended with {:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{case} panicked: {stderr}");
}

/// Whether `text` names a Rust type: `struct Name`, `enum Name`, or a `path::To` one.
fn names_a_rust_type(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    let typed = words
        .windows(2)
        .any(|w| matches!(w[0], "struct" | "enum") && w[1].starts_with(|c: char| c.is_ascii_uppercase()));
    typed || text.split("::").count() > 1 && text.split("::").skip(1).any(|s| s.starts_with(char::is_alphabetic))
}

#[test]
fn a_mutated_catalogue_is_refused_naming_its_file_leaving_nothing_or_is_indexed_and_answers() {
    let dir = common::scratch().join("malformed-catalogues");
    std::fs::create_dir_all(&dir).unwrap();
    let mut sample: Value =
        serde_json::from_str(&std::fs::read_to_string(common::repo().join("data/sample-catalog.json")).unwrap())
            .unwrap();
    sample["tools"].as_array_mut().unwrap().truncate(8);
    sample["nodes"].as_array_mut().unwrap().truncate(6);
    let read =
        |p: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(common::repo().join(p)).unwrap()).unwrap() };
    let bases = [
        ("manifest", sample),
        ("openai", read("tests/data/openai-tools.json")),
        ("mcp", read("tests/data/mcp-servers.json")),
    ];
    let mut rng = Rng(seed().wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    for round in 0..10 {
        for (name, base) in &bases {
            let case = format!("seed {} round {round} {name}", seed());
            let file = dir.join(format!("{name}-{round}.json"));
            std::fs::write(&file, mutate(base, "", &mut rng)).unwrap();
            let out_dir = dir.join(format!("{name}-{round}.index"));
            let (file_arg, out_arg) = (file.to_str().unwrap(), out_dir.to_str().unwrap());
            let built = run(&["index", file_arg, "--out", out_arg], &case);
            if !built.status.success() {
                let stderr = String::from_utf8_lossy(&built.stderr);
                assert!(stderr.contains(file_arg), "{case}: the error names no file: {stderr}");
                assert!(!out_dir.exists(), "{case}: a refused build left {}", out_dir.display());
                continue;
            }
            let found = run(&["search", out_arg, "rename a symbol"], &case);
            assert!(
                matches!(found.status.code(), Some(0 | 3)),
                "{case}: search: {}",
                String::from_utf8_lossy(&found.stderr)
            );
            assert!(run(&["list", out_arg], &case).status.success(), "{case}: list");
        }
    }
}

/// The secret each config carries (a bearer token of its own, its database's password, and
/// each server an environment value or a header), which no output may show while it stays
/// where secrets go.
const SECRET: &str = "sekrit-7f3a9c";

/// Every gateway config the docs show (README and docs/*.md, whole ones: `mcpServers` and a
/// `toolsearch` section), its servers kept as written but made harmless: a command is `true`
/// (and `PATH` holds nothing else, see [`check`]), a URL is a closed port on loopback; each
/// carries [`SECRET`] (as a token, and in each server).
fn doc_configs() -> Vec<Value> {
    let mut found = Vec::new();
    for (_, text) in crate::docs::documents() {
        for (_, block) in crate::docs::json_fences(&text) {
            let Ok(mut config) = serde_json::from_str::<Value>(block) else { continue };
            if !config["toolsearch"].is_object() || !config["mcpServers"].is_object() {
                continue;
            }
            for server in config["mcpServers"].as_object_mut().unwrap().values_mut() {
                if server.get("url").is_some() {
                    server["url"] = json!("http://127.0.0.1:1/mcp");
                    server["headers"]["Authorization"] = json!(format!("Bearer {SECRET}"));
                } else {
                    server["command"] = json!("true");
                    server["env"]["API_KEY"] = json!(SECRET);
                }
            }
            config["toolsearch"]["tokens"][SECRET] = json!(["read-only"]);
            config["toolsearch"]["state"]["store"] = json!(format!("postgres://gw:{SECRET}@127.0.0.1:1/gateway"));
            found.push(config);
        }
    }
    found
}

/// `gateway --check` of `text` written to `DIR/config-ROUND.json`, with a `PATH` that holds
/// only `true` (so no mutated command can start anything else): the line of stderr that
/// reports a config error, if one does, and all it printed.
fn check(dir: &std::path::Path, round: usize, text: String, case: &str) -> (Option<String>, String) {
    let bin = dir.join("bin");
    if !bin.exists() {
        std::fs::create_dir_all(&bin).unwrap();
        let which = Command::new("sh").args(["-c", "command -v true"]).output().unwrap();
        let real = String::from_utf8(which.stdout).unwrap();
        std::os::unix::fs::symlink(real.trim(), bin.join("true")).unwrap();
    }
    let file = dir.join(format!("config-{round}.json"));
    std::fs::write(&file, text).unwrap();
    let state = dir.join(format!("state-{round}"));
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--check", "--config", file.to_str().unwrap(), "--state", state.to_str().unwrap()])
        .env("PATH", &bin)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    ended_cleanly(&out, case);
    let config_error = stderr.lines().find(|l| l.starts_with("error:") && !l.starts_with("error: not up"));
    let config_error = config_error.map(str::to_owned);
    let all = stderr + &String::from_utf8_lossy(&out.stdout);
    if let Some(line) = &config_error {
        assert!(line.contains(file.to_str().unwrap()), "{case}: the error names no file: {line}");
        assert!(!names_a_rust_type(line), "{case}: the error names a Rust type: {line}");
    }
    (config_error, all)
}

#[test]
fn a_mutated_gateway_config_is_refused_naming_its_file_and_field_in_words_never_its_secrets() {
    let dir = common::scratch().join("malformed-configs");
    std::fs::create_dir_all(&dir).unwrap();
    let bases = doc_configs();
    assert!(bases.len() >= 3, "the docs show whole configs: {}", bases.len());
    let mut rng = Rng(seed().wrapping_mul(0xd6e8_feb8_6659_fd93) | 1);
    let mut refused = 0;
    for round in 0..150 {
        let case = format!("seed {} round {round}", seed());
        let text = mutate(&bases[rng.below(bases.len())], "/toolsearch", &mut rng);
        refused += check_mutation(&dir, round, text, &case).0 as usize;
    }
    // The mutations reach the settings: most configs are refused, for what was changed.
    assert!(refused > 50, "only {refused} of 150 mutated configs were refused");
}

/// Whether [`SECRET`] stands in `text` (JSON) only where secrets go: a bearer token (a key of
/// `toolsearch.tokens`), the database URL, an environment value or a header. A mutation may have moved it out
/// (into a command, an argument), where it is no secret and may be shown.
fn secret_in_place(text: &str) -> bool {
    let Ok(doc) = serde_json::from_str::<Value>(text) else { return false };
    let mut all = Vec::new();
    pointers(&doc, String::new(), &mut all);
    let key_in_place = |p: &str| !p.contains(SECRET) || p.starts_with(&format!("/toolsearch/tokens/{SECRET}"));
    let value_in_place = |p: &str| {
        !doc.pointer(p).and_then(Value::as_str).is_some_and(|s| s.contains(SECRET))
            || matches!(p, "/toolsearch/state" | "/toolsearch/state/store")
            || p.split('/').any(|segment| matches!(segment, "env" | "headers"))
    };
    all.iter().all(|p| key_in_place(p) && value_in_place(p))
}

/// `gateway --check` of a mutation of a base, asserting that a secret left in place is not
/// shown: whether it was refused, and whether the secret was in place.
fn check_mutation(dir: &std::path::Path, round: usize, text: String, case: &str) -> (bool, bool) {
    let in_place = secret_in_place(&text);
    let (config_error, output) = check(dir, round, text, case);
    assert!(!(in_place && output.contains(SECRET)), "{case}: the output shows a secret: {output}");
    (config_error.is_some(), in_place)
}

#[test]
fn a_mutated_server_entry_is_refused_in_words_or_reported_and_its_secrets_are_never_shown() {
    let dir = common::scratch().join("malformed-servers");
    std::fs::create_dir_all(&dir).unwrap();
    let bases = doc_configs();
    let mut rng = Rng(seed().wrapping_mul(0x94d0_49bb_1331_11eb) | 1);
    let (mut refused, mut hidden) = (0, 0);
    for round in 0..120 {
        let case = format!("seed {} round {round}", seed());
        let text = mutate(&bases[rng.below(bases.len())], "/mcpServers", &mut rng);
        let (was_refused, in_place) = check_mutation(&dir, round, text, &case);
        refused += was_refused as usize;
        hidden += in_place as usize;
    }
    assert!(refused > 30, "only {refused} of 120 mutated server entries were refused");
    assert!(hidden > 60, "only {hidden} of 120 rounds kept their secrets in place");
}

/// A config cut short (a save cut off, a paste that lost its end) after it began to hold its
/// secrets is refused naming its file and where it ends; the error shows no secret, whole or cut.
#[test]
fn a_config_cut_short_is_refused_naming_where_it_ends_never_its_secrets() {
    let dir = common::scratch().join("malformed-cut");
    std::fs::create_dir_all(&dir).unwrap();
    let bases = doc_configs();
    let mut rng = Rng(seed().wrapping_mul(0xbf58_476d_1ce4_e5b9) | 1);
    let start = &SECRET[..6];
    for round in 0..60 {
        let case = format!("seed {} round {round}", seed());
        let text = serde_json::to_string_pretty(&bases[round % bases.len()]).unwrap();
        let first = text.find(start).unwrap() + start.len();
        let mut cut = first + rng.below(text.len() - 1 - first);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let (config_error, output) = check(&dir, round, text[..cut].to_owned(), &case);
        let line = config_error.unwrap_or_else(|| panic!("{case}: a config cut short was not refused: {output}"));
        assert!(line.contains("line "), "{case}: the error does not say where: {line}");
        assert!(!output.contains(start), "{case}: the output shows a secret: {output}");
    }
}

/// The checker of Rust type names is itself right.
#[test]
fn rust_type_names_are_recognised() {
    assert!(names_a_rust_type("expected struct GatewayLimits"));
    assert!(names_a_rust_type("Transport [toolsearch_gateway::child::ChildTransport] error"));
    assert!(!names_a_rust_type("expected an object; a struct field; listen on [::1]:80"));
}
