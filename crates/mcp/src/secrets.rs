//! Keeping credentials out of what the gateway says. Upstream command lines, URLs and stderr
//! often carry them (`postgresql://admin:pw@db/prod`, `--token=...`, `Authorization: Bearer
//! ...`): they never reach a client, and in the operator's log and status they are masked.

/// `text` with anything that looks like a credential replaced by `***`: the password of a URL's
/// `user:password@`, the value after `token`, `key`, `secret`, `password`, `passwd`, `pwd`,
/// `auth` or `credential` (as `NAME=value`, `NAME: value` or `--NAME value`), and bearer or
/// basic authorization values.
pub fn mask(text: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut mask_next = false;
    for word in text.split_inclusive(char::is_whitespace) {
        let core = word.trim_end();
        let tail = &word[core.len()..];
        let scheme = core.eq_ignore_ascii_case("bearer") || core.eq_ignore_ascii_case("basic");
        if mask_next && !core.is_empty() && !scheme {
            words.push(format!("***{tail}"));
            mask_next = false;
            continue;
        }
        let (masked, next) = mask_word(core);
        mask_next = next;
        words.push(format!("{masked}{tail}"));
    }
    words.concat()
}

const SECRET_NAMES: &[&str] = &["token", "key", "secret", "password", "passwd", "pwd", "auth", "credential"];

fn is_secret_name(name: &str) -> bool {
    let n = name.trim_start_matches('-').to_ascii_lowercase();
    let n = n.trim_end_matches([':', '=']);
    !n.is_empty() && SECRET_NAMES.iter().any(|s| n.ends_with(s) || n.starts_with(s))
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
        || (word.ends_with(':') && is_secret_name(word));
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
}
