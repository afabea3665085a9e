//! `${NAME}` in a config's values, read from the environment, so secrets need not be written
//! in the file.

/// `text` with each `${NAME}` replaced by the environment variable `NAME` (so secrets need not
/// be written in the config); `$${` is a literal `${`. An unset variable is an error naming it.
pub(crate) fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        if rest[..i].ends_with('$') {
            out.push_str(&rest[..i - 1]);
            out.push_str("${");
            rest = &rest[i + 2..];
            continue;
        }
        out.push_str(&rest[..i]);
        let Some(end) = rest[i + 2..].find('}') else {
            return Err("`${` without a closing `}`".into());
        };
        let name = &rest[i + 2..i + 2 + end];
        let value = std::env::var(name).map_err(|_| format!("the environment variable {name:?} is not set"))?;
        out.push_str(&value);
        rest = &rest[i + 3 + end..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand_env;

    #[test]
    fn variables_are_expanded_and_an_unset_one_is_named() {
        std::env::set_var("TOOLSEARCH_TEST_SECRET", "s3cret");
        assert_eq!(expand_env("Bearer ${TOOLSEARCH_TEST_SECRET}").unwrap(), "Bearer s3cret");
        assert_eq!(expand_env("a $${literal} b").unwrap(), "a ${literal} b");
        assert_eq!(expand_env("plain").unwrap(), "plain");
        let e = expand_env("${TOOLSEARCH_TEST_UNSET_VARIABLE}").unwrap_err();
        assert!(e.contains("TOOLSEARCH_TEST_UNSET_VARIABLE"), "{e}");
        assert!(expand_env("${OPEN").is_err());
    }
}
