//! `${...}` in a config's values, so secrets need not be written in the file: `${NAME}` and
//! `${NAME:-default}` (Claude Code's forms) and `${env:NAME}` (VS Code's and Cursor's) read the
//! environment; VS Code's `${input:ID}`, `${workspaceFolder}` and `${userHome}` are read as
//! [`Vars`] says. `$${` is a literal `${`. In a file Gemini CLI reads, its `$NAME` reads the
//! environment too.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The environment variable that answers VS Code's `${input:ID}` (the editor would prompt for
/// it; the gateway runs unattended): `TOOLSEARCH_INPUT_` and the id in capitals, each
/// character other than a letter or digit as `_` (`api-key` -> `TOOLSEARCH_INPUT_API_KEY`).
pub(crate) fn input_variable(id: &str) -> String {
    let id: String = id.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("TOOLSEARCH_INPUT_{id}")
}

/// What `${...}` may name besides the environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Vars {
    /// VS Code's `inputs`: each id with its `default`, if it gives one.
    pub inputs: BTreeMap<String, Option<String>>,
    /// `${workspaceFolder}`: the folder holding `.vscode/` for a `.vscode/mcp.json`, else the
    /// config's own folder.
    pub workspace: Option<PathBuf>,
    /// Whether `$NAME`, without braces, reads the environment too (Gemini CLI's files).
    pub bare: bool,
}

impl Vars {
    /// `text` with each `${...}` (and, if [`Vars::bare`], `$NAME`) replaced; an unset
    /// variable or unknown input is an error naming it.
    pub(crate) fn expand(&self, text: &str) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(tail) = after.strip_prefix("${") {
                out.push_str("${");
                rest = tail;
            } else if let Some(inner) = after.strip_prefix('{') {
                let Some(end) = inner.find('}') else {
                    return Err("`${` without a closing `}`".into());
                };
                out.push_str(&self.value(&inner[..end])?);
                rest = &inner[end + 1..];
            } else if let Some(name) = self.bare.then(|| bare_name(after)).flatten() {
                let value = std::env::var(name).map_err(|_| {
                    format!("the environment variable {name:?} is not set (`${name}` reads the environment in Gemini CLI's files)")
                })?;
                out.push_str(&value);
                rest = &after[name.len()..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    /// What `${name}` stands for.
    fn value(&self, name: &str) -> Result<String, String> {
        let env = |name: &str| std::env::var(name).map_err(|_| format!("the environment variable {name:?} is not set"));
        if let Some(id) = name.strip_prefix("input:") {
            let var = input_variable(id);
            return match (std::env::var(&var), self.inputs.get(id)) {
                (Ok(v), _) => Ok(v),
                (Err(_), Some(Some(default))) => Ok(default.clone()),
                (Err(_), Some(None)) => Err(format!("the input {id:?} has no default: set {var} to answer it")),
                (Err(_), None) => Err(format!("no input {id:?} in `inputs` (set {var} to answer it)")),
            };
        }
        if let Some(name) = name.strip_prefix("env:") {
            return env(name);
        }
        match name {
            "workspaceFolder" => self
                .workspace
                .as_ref()
                .map(|p| p.display().to_string())
                .ok_or_else(|| "${workspaceFolder}: the config's folder is not known".to_owned()),
            "userHome" => env("HOME"),
            _ => match name.split_once(":-") {
                Some((name, default)) => Ok(std::env::var(name).unwrap_or_else(|_| default.to_owned())),
                None => env(name),
            },
        }
    }
}

/// The variable name `text` starts with (a letter or `_`, then letters, digits and `_`).
fn bare_name(text: &str) -> Option<&str> {
    let end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(text.len());
    (end > 0 && !text.starts_with(|c: char| c.is_ascii_digit())).then(|| &text[..end])
}

/// `text` with each `${NAME}` (and `${env:NAME}`, `${NAME:-default}`) replaced from the
/// environment; see [`Vars::expand`].
pub(crate) fn expand_env(text: &str) -> Result<String, String> {
    Vars::default().expand(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_expanded_and_an_unset_one_is_named() {
        std::env::set_var("TOOLSEARCH_TEST_SECRET", "s3cret");
        assert_eq!(expand_env("Bearer ${TOOLSEARCH_TEST_SECRET}").unwrap(), "Bearer s3cret");
        assert_eq!(expand_env("Bearer ${env:TOOLSEARCH_TEST_SECRET}").unwrap(), "Bearer s3cret");
        assert_eq!(expand_env("a $${literal} b").unwrap(), "a ${literal} b");
        assert_eq!(expand_env("plain").unwrap(), "plain");
        assert_eq!(expand_env("${TOOLSEARCH_TEST_UNSET_VARIABLE:-x/y}").unwrap(), "x/y");
        let e = expand_env("${TOOLSEARCH_TEST_UNSET_VARIABLE}").unwrap_err();
        assert!(e.contains("TOOLSEARCH_TEST_UNSET_VARIABLE"), "{e}");
        assert!(expand_env("${OPEN").is_err());
    }

    #[test]
    fn vs_code_inputs_come_from_the_environment_or_their_default() {
        let vars = Vars {
            inputs: [("gh-token".to_owned(), None), ("region".to_owned(), Some("eu".to_owned()))].into(),
            workspace: Some(PathBuf::from("/w")),
            bare: false,
        };
        assert_eq!(input_variable("gh-token"), "TOOLSEARCH_INPUT_GH_TOKEN");
        let e = vars.expand("Bearer ${input:gh-token}").unwrap_err();
        assert!(e.contains("TOOLSEARCH_INPUT_GH_TOKEN") && e.contains("gh-token"), "{e}");
        std::env::set_var("TOOLSEARCH_INPUT_GH_TOKEN", "t0k");
        assert_eq!(vars.expand("Bearer ${input:gh-token}").unwrap(), "Bearer t0k");
        assert_eq!(vars.expand("${input:region}").unwrap(), "eu");
        assert!(vars.expand("${input:nope}").unwrap_err().contains("no input \"nope\""));
        assert_eq!(vars.expand("${workspaceFolder}/data").unwrap(), "/w/data");
        assert!(expand_env("${workspaceFolder}").is_err());
    }

    #[test]
    fn a_bare_name_reads_the_environment_only_in_gemini_clis_files() {
        std::env::set_var("TOOLSEARCH_TEST_BARE", "b4re");
        assert_eq!(expand_env("$TOOLSEARCH_TEST_BARE and $5").unwrap(), "$TOOLSEARCH_TEST_BARE and $5");
        let gemini = Vars { bare: true, ..Vars::default() };
        assert_eq!(gemini.expand("Bearer $TOOLSEARCH_TEST_BARE.").unwrap(), "Bearer b4re.");
        assert_eq!(gemini.expand("${TOOLSEARCH_TEST_BARE}/$TOOLSEARCH_TEST_BARE").unwrap(), "b4re/b4re");
        assert_eq!(gemini.expand("costs $5, $ and $${x}").unwrap(), "costs $5, $ and ${x}");
        let e = gemini.expand("$TOOLSEARCH_TEST_UNSET_BARE").unwrap_err();
        assert!(e.contains("\"TOOLSEARCH_TEST_UNSET_BARE\" is not set") && e.contains("Gemini CLI"), "{e}");
    }
}
