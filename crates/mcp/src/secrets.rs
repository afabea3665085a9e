//! Keeping credentials out of what the gateway says. Upstream command lines, URLs and stderr
//! often carry them (`postgresql://admin:pw@db/prod`, `--token=...`, `Authorization: Bearer
//! ...`): they never reach a client, and in the operator's log and status they are masked.
//! One masker serves the operator's log, upstream log messages relayed to clients
//! ([`mask_json`]: structured data masked by key at any depth) and the audit trail (its query
//! text and kept arguments).

use serde_json::Value;

/// Object keys whose values are credentials, whatever they hold (compared lower-cased, with
/// `-` as `_`).
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "authorization",
    "cookie",
    "set_cookie",
    "credential",
    "credentials",
    "private_key",
    "client_secret",
    "access_token",
    "refresh_token",
    "id_token",
    "session_token",
    "x_api_key",
    "proxy_authorization",
    "passphrase",
];

fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    SECRET_KEYS.contains(&k.as_str())
        || ["password", "secret", "_token", "api_key", "apikey"].iter().any(|s| k.ends_with(s))
}

/// `value` with every credential masked: the value of any key that names one (`SECRET_KEYS`,
/// at any depth) replaced by `***`, and every string passed through [`mask`].
pub fn mask_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(mask(s)),
        Value::Array(items) => Value::Array(items.iter().map(mask_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) && !v.is_null() { Value::String("***".into()) } else { mask_json(v) };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` with PEM and OpenSSH private key blocks cut to their armour lines.
fn mask_key_blocks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(begin) = rest.find("-----BEGIN ") {
        let head_end = rest[begin + 11..].find("-----").map(|i| begin + 11 + i + 5);
        let Some(head_end) = head_end.filter(|&e| rest[begin..e].contains("PRIVATE KEY")) else {
            out.push_str(&rest[..begin + 11]);
            rest = &rest[begin + 11..];
            continue;
        };
        out.push_str(&rest[..head_end]);
        out.push_str(" *** ");
        match rest[head_end..].find("-----END ") {
            Some(end) => rest = &rest[head_end + end..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// Whether `word` is a JWT: three base64url segments, the first a JSON header (`eyJ`).
fn is_jwt(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'));
    let parts: Vec<&str> = w.split('.').collect();
    w.starts_with("eyJ")
        && parts.len() == 3
        && parts[..2].iter().all(|p| p.len() >= 4)
        && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
}

/// `text` with anything that looks like a credential replaced by `***`: the password of a URL's
/// `user:password@`, the value after `token`, `key`, `secret`, `password`, `passwd`, `pwd`,
/// `pass`, `auth` or `credential` (as `NAME=value`, `NAME: value` or `--NAME value`, and `-p
/// value`), the word after "password" in prose, bearer or basic authorization values, and
/// tokens of well-known shapes wherever they stand (GitHub `ghp_...`, AWS `AKIA...`, Slack
/// `xoxb-...`, `sk-...` API keys).
pub fn mask(text: &str) -> String {
    let text = mask_key_blocks(text);
    let mut words: Vec<String> = Vec::new();
    let mut mask_next = false;
    let mut prose = false;
    let mut mysql = false;
    for word in text.split_inclusive(char::is_whitespace) {
        let core = word.trim_end();
        let tail = &word[core.len()..];
        if is_jwt(core) {
            words.push(format!("eyJ***{tail}"));
            continue;
        }
        // `mysql -phunter2`: the password glued to `-p`.
        mysql |= matches!(core.rsplit('/').next(), Some("mysql" | "mysqldump" | "mariadb" | "mysqladmin"));
        if mysql && core.len() > 2 && core.starts_with("-p") && !core.starts_with("-p=") {
            words.push(format!("-p***{tail}"));
            continue;
        }
        let scheme = core.eq_ignore_ascii_case("bearer") || core.eq_ignore_ascii_case("basic");
        let bare = core.trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase();
        if prose && PROSE_FILLERS.contains(&bare.as_str()) {
            words.push(word.to_owned());
            continue;
        }
        if (mask_next || prose) && !core.is_empty() && !scheme {
            words.push(format!("***{tail}"));
            (mask_next, prose) = (false, false);
            continue;
        }
        let (masked, next) = mask_word(core);
        mask_next = next;
        prose = !next && PROSE_NAMES.contains(&bare.as_str());
        words.push(format!("{}{tail}", mask_shapes(&masked)));
    }
    words.concat()
}

/// Words after which prose names a secret: "the password hunter2", "passphrase is x".
const PROSE_NAMES: &[&str] = &["password", "passwd", "passphrase", "pwd"];
/// Words that may stand between such a name and its value.
const PROSE_FILLERS: &[&str] = &["is", "was", "of", "to", "set", "as", "now", "="];

/// Prefixes of tokens whose shape gives them away, with the fewest characters after them.
const SHAPES: &[(&str, usize)] = &[
    ("ghp_", 16),
    ("gho_", 16),
    ("ghu_", 16),
    ("ghs_", 16),
    ("ghr_", 16),
    ("github_pat_", 16),
    ("glpat-", 16),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xapp-", 10),
    ("sk-", 20),
    ("sk_live_", 10),
    ("sk_test_", 10),
    ("rk_live_", 10),
    ("rk_test_", 10),
    ("whsec_", 10),
    ("hf_", 20),
    ("npm_", 20),
    ("pypi-", 20),
    ("AIza", 30),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("glptt-", 16),
    ("SG.", 20),
    ("AKIA", 16),
    ("ASIA", 16),
];

/// `word` with every token of a known shape ([`SHAPES`]) masked, prefix kept.
fn mask_shapes(word: &str) -> String {
    let token_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    'outer: while !rest.is_empty() {
        for (prefix, least) in SHAPES {
            // A prefix counts at the start of a token, not inside a word ("task-..." is no key).
            let at_start = out.chars().last().is_none_or(|c| !token_char(c));
            if at_start && rest.starts_with(prefix) {
                let after = &rest[prefix.len()..];
                let run = after.find(|c: char| !token_char(c)).unwrap_or(after.len());
                let aws = *prefix == "AKIA" || *prefix == "ASIA";
                let fits = if aws {
                    run >= *least && after[..*least].chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                } else {
                    run >= *least
                };
                if fits {
                    out.push_str(prefix);
                    out.push_str("***");
                    rest = &after[run..];
                    continue 'outer;
                }
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

const SECRET_NAMES: &[&str] = &["token", "key", "secret", "password", "passwd", "pwd", "auth", "credential"];

fn is_secret_name(name: &str) -> bool {
    let n = name.trim_start_matches('-').to_ascii_lowercase();
    let n = n.trim_end_matches([':', '=']);
    !n.is_empty() && (SECRET_NAMES.iter().any(|s| n.ends_with(s) || n.starts_with(s)) || n.ends_with("pass"))
}

/// One whitespace-free word masked; `true` when the next word is a secret value (after
/// `--token`, `Bearer`, `password:`).
fn mask_word(word: &str) -> (String, bool) {
    let lower = word.to_ascii_lowercase();
    if lower == "bearer" || lower == "basic" {
        return (word.to_owned(), true);
    }
    let mut out = mask_url_password(word);
    // NAME=value pairs anywhere in the word (query strings: a=1&token=x).
    let mut result = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(eq) = rest.find('=') {
        let (before, after) = rest.split_at(eq);
        let name_start = before.rfind(['&', '?', ';', ',', '"', '\'', '{', ' ']).map_or(0, |i| i + 1);
        result.push_str(before);
        let value_end = after[1..].find(['&', ';', ',', '"', '\'', '}']).map_or(after.len(), |i| i + 1);
        if is_secret_name(&before[name_start..]) && value_end > 1 {
            result.push_str("=***");
        } else {
            result.push_str(&after[..value_end]);
        }
        rest = &after[value_end..];
    }
    result.push_str(rest);
    out = result;
    let next = (word.starts_with('-') && !word.contains('=') && is_secret_name(word))
        || (word.ends_with(':') && is_secret_name(word))
        || word == "-p";
    (out, next)
}

/// `scheme://user:password@host` with the password masked.
fn mask_url_password(word: &str) -> String {
    let Some(scheme_end) = word.find("://") else { return word.to_owned() };
    let after = &word[scheme_end + 3..];
    let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let authority = &after[..authority_end];
    let Some(at) = authority.rfind('@') else { return word.to_owned() };
    let userinfo = &authority[..at];
    let Some(colon) = userinfo.find(':') else { return word.to_owned() };
    format!("{}://{}:***{}", &word[..scheme_end], &userinfo[..colon], &after[at..])
}

#[cfg(test)]
mod tests {
    use super::{mask, mask_json};

    #[test]
    fn credentials_are_masked_and_the_rest_kept() {
        assert_eq!(
            mask("npx server-postgres postgresql://admin:s3cret@db.internal/prod"),
            "npx server-postgres postgresql://admin:***@db.internal/prod"
        );
        assert_eq!(mask("run --token abc123 --verbose"), "run --token *** --verbose");
        assert_eq!(mask("run --api-key=abc123 x"), "run --api-key=*** x");
        assert_eq!(mask("GET /x?user=a&token=abc&page=2"), "GET /x?user=a&token=***&page=2");
        assert_eq!(mask("Authorization: Bearer eyJhbGciOi.x.y"), "Authorization: Bearer ***");
        assert_eq!(mask("PASSWORD: hunter2 and more"), "PASSWORD: *** and more");
        assert_eq!(mask("GITHUB_TOKEN=ghp_123 npx x"), "GITHUB_TOKEN=*** npx x");
        assert_eq!(mask("plain words, nothing=here"), "plain words, nothing=here");
        assert_eq!(mask("https://example.com/path"), "https://example.com/path");
    }

    #[test]
    fn the_shapes_an_attacker_pass_found_are_masked_too() {
        assert_eq!(mask("psql --db-pass hunter2 -h db"), "psql --db-pass *** -h db");
        assert_eq!(mask("mysql -u root -p hunter2 prod"), "mysql -u root -p *** prod");
        let gh = format!("ghp_{}", "A1b2".repeat(9));
        assert_eq!(mask(&format!("clone with {gh}.")), "clone with ghp_***.");
        assert_eq!(mask("key id AKIAIOSFODNN7EXAMPLE in use"), "key id AKIA*** in use");
        assert_eq!(mask("the password hunter2 was rejected"), "the password *** was rejected");
        assert_eq!(mask("its password is hunter2"), "its password is ***");
        assert_eq!(mask("xoxb-123456789012-abc and sk-abcdefghijklmnopqrstuv"), "xoxb-*** and sk-***");
        // Words that only look alike stay.
        assert_eq!(mask("task-runner AKIA ghp_x disk-space"), "task-runner AKIA ghp_x disk-space");
        assert_eq!(mask("passes the passthrough test"), "passes the passthrough test");
    }

    #[test]
    fn structured_log_data_and_more_credential_shapes_are_masked() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let data = serde_json::json!({
            "password": "hunter2",
            "request": {"headers": {"Authorization": "Bearer abcdef", "X-Api-Key": "k-1", "Accept": "json"}},
            "list": [{"client_secret": "s"}, "token=abc"],
            "session_token": null,
            "note": format!("jwt {jwt} here"),
        });
        let masked = mask_json(&data).to_string();
        for secret in ["hunter2", "abcdef", "k-1", "\"s\"", "token=abc", jwt] {
            assert!(!masked.contains(secret), "{secret} in {masked}");
        }
        assert!(masked.contains("\"Accept\":\"json\""), "{masked}");
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
        assert_eq!(mask(key), "-----BEGIN OPENSSH PRIVATE KEY----- *** -----END OPENSSH PRIVATE KEY-----");
        let shapes = [
            format!("sk_live_{}", "a1".repeat(12)),
            format!("hf_{}", "Ab".repeat(17)),
            format!("npm_{}", "x9".repeat(18)),
            format!("AIza{}", "Sy".repeat(17)),
        ];
        for s in &shapes {
            let out = mask(&format!("key {s} used"));
            assert!(!out.contains(&s[6..]), "{out}");
        }
        assert_eq!(mask("mysql -u root -phunter2 prod"), "mysql -u root -p*** prod");
        assert_eq!(mask("grep -print here"), "grep -print here");
    }
}
