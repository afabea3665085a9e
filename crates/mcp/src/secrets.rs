//! Keeping credentials out of what the gateway says. Upstream command lines, URLs and stderr
//! often carry them (`postgresql://admin:pw@db/prod`, `--token=...`, `Authorization: Bearer
//! ...`): they never reach a client, and in the operator's log and status they are masked.

/// `text` with anything that looks like a credential replaced by `***`: the password of a URL's
/// `user:password@`, the value after `token`, `key`, `secret`, `password`, `passwd`, `pwd`,
/// `pass`, `auth` or `credential` (as `NAME=value`, `NAME: value` or `--NAME value`, and `-p
/// value`), the word after "password" in prose, bearer or basic authorization values, and
/// tokens of well-known shapes wherever they stand (GitHub `ghp_...`, AWS `AKIA...`, Slack
/// `xoxb-...`, `sk-...` API keys).
pub fn mask(text: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut mask_next = false;
    let mut prose = false;
    for word in text.split_inclusive(char::is_whitespace) {
        let core = word.trim_end();
        let tail = &word[core.len()..];
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
                let aws = prefix.starts_with('A');
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
    use super::mask;

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
}
