//! Labelled query sets in the `../shared/bench/*/queries.jsonl` format.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A query with its relevant tools.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledQuery {
    /// Query id.
    pub id: String,
    /// The request text.
    pub text: String,
    /// Relevant tools as groups of interchangeable ids: finding any one id of a group counts.
    pub gold: Vec<Vec<String>>,
    /// Labels (e.g. the split).
    pub tags: Vec<String>,
}

/// A query file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Unreadable file.
    #[error("{path}: {source}", path = .0.display(), source = .1)]
    Io(PathBuf, std::io::Error),
    /// A bad record.
    #[error("{path}:{line}: {message}", path = .0.display(), line = .1, message = .2)]
    Record(PathBuf, usize, String),
    /// A file without queries.
    #[error("{path}: no queries in the file", path = .0.display())]
    Empty(PathBuf),
    /// No query of the file is in the split asked for.
    #[error(
        "{path}: no query is in split \"{split}\" (of the file's {total}; a query's split is its \
         `split` field, else one of its `tags` or the start of its `id`)",
        path = .0.display(), split = .1, total = .2
    )]
    NoneInSplit(PathBuf, String, usize),
}

#[derive(Deserialize)]
struct Raw {
    id: String,
    query: String,
    #[serde(default)]
    gold: Vec<String>,
    #[serde(default)]
    gold_groups: Vec<Vec<String>>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    split: Option<String>,
}

/// Reads labelled queries. `split` keeps the queries of that split: those whose `split` field
/// is it, or, for queries without the field, those tagged with it or whose id starts with it;
/// `sample` keeps a deterministic pseudo-random subset of that size.
pub fn load_queries(path: &Path, split: Option<&str>, sample: Option<usize>) -> Result<Vec<LabelledQuery>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::Io(path.to_path_buf(), e))?;
    let mut out = Vec::new();
    let mut total = 0;
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let raw: Raw =
            serde_json::from_str(line).map_err(|e| EvalError::Record(path.to_path_buf(), i + 1, e.to_string()))?;
        let mut gold = raw.gold_groups.clone();
        for g in raw.gold {
            if !gold.iter().any(|group| group.contains(&g)) {
                gold.push(vec![g]);
            }
        }
        if raw.query.trim().is_empty() {
            return Err(EvalError::Record(path.to_path_buf(), i + 1, "field `query` is empty".into()));
        }
        if raw.id.trim().is_empty() {
            return Err(EvalError::Record(path.to_path_buf(), i + 1, "field `id` is empty".into()));
        }
        if let Some(first) = seen.insert(raw.id.clone(), i + 1) {
            let message = format!("id {:?} is also the id of line {first}: each query needs its own", raw.id);
            return Err(EvalError::Record(path.to_path_buf(), i + 1, message));
        }
        gold.retain(|g| !g.is_empty());
        if gold.is_empty() {
            return Err(EvalError::Record(
                path.to_path_buf(),
                i + 1,
                "no gold tool (give `gold`: [tool ids], or `gold_groups`: [[ids that count alike]])".into(),
            ));
        }
        total += 1;
        let q = LabelledQuery { id: raw.id, text: raw.query, gold, tags: raw.tags };
        let in_split = |s: &str| match &raw.split {
            Some(own) => own == s,
            None => q.tags.iter().any(|t| t == s) || q.id.starts_with(s),
        };
        if split.is_none_or(|s| s == "all" || in_split(s)) {
            out.push(q);
        }
    }
    if let Some(n) = sample.filter(|&n| n < out.len()) {
        let key = |q: &LabelledQuery| {
            let mut h = DefaultHasher::new();
            q.id.hash(&mut h);
            h.finish()
        };
        out.sort_by_key(key);
        out.truncate(n);
    }
    if out.is_empty() {
        return Err(match split {
            Some(s) if total > 0 => EvalError::NoneInSplit(path.to_path_buf(), s.to_owned(), total),
            _ => EvalError::Empty(path.to_path_buf()),
        });
    }
    Ok(out)
}

/// Each query with a gold group of which `known` holds no id, and that group's first id: such
/// a query can never reach full recall, whatever the ranking.
pub fn unknown_gold<'a>(
    queries: &'a [LabelledQuery],
    known: impl Fn(&str) -> bool,
) -> Vec<(&'a LabelledQuery, &'a str)> {
    let unknown =
        |q: &'a LabelledQuery| q.gold.iter().find(|g| !g.iter().any(|id| known(id))).map(|g| (q, g[0].as_str()));
    queries.iter().filter_map(unknown).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_selects_by_the_split_field_then_by_tags() {
        let path = std::env::temp_dir().join(format!("toolsearch-split-{}.jsonl", std::process::id()));
        let lines = [
            r#"{"id": "a", "query": "q1", "gold": ["t"], "split": "train"}"#,
            r#"{"id": "b", "query": "q2", "gold": ["t"], "split": "test", "tags": ["train"]}"#,
            r#"{"id": "c", "query": "q3", "gold": ["t"], "tags": ["test"]}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let ids = |split: &str| -> Vec<String> {
            load_queries(&path, Some(split), None).map(|v| v.into_iter().map(|q| q.id).collect()).unwrap_or_default()
        };
        assert_eq!(ids("test"), ["b", "c"]);
        assert_eq!(ids("train"), ["a"]);
        assert_eq!(ids("all").len(), 3);
        let none = load_queries(&path, Some("tset"), None).unwrap_err().to_string();
        assert!(none.contains("no query is in split \"tset\" (of the file's 3;"), "{none}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_query_without_gold_is_refused_naming_its_line_and_the_fields() {
        let path = std::env::temp_dir().join(format!("toolsearch-nogold-{}.jsonl", std::process::id()));
        std::fs::write(
            &path,
            "{\"id\": \"a\", \"query\": \"q\", \"gold\": [\"t\"]}\n{\"id\": \"b\", \"query\": \"q\"}\n",
        )
        .unwrap();
        let error = load_queries(&path, None, None).unwrap_err().to_string();
        assert!(
            error.ends_with(":2: no gold tool (give `gold`: [tool ids], or `gold_groups`: [[ids that count alike]])"),
            "{error}"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn an_empty_or_repeated_id_is_refused_naming_its_line() {
        let dir = std::env::temp_dir().join(format!("toolsearch-eval-ids-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("q.jsonl");
        let line = |id: &str| format!(r#"{{"id": "{id}", "query": "x", "gold": ["t"]}}"#);
        std::fs::write(&path, [line("a"), line("b"), String::new(), line("a")].join("\n")).unwrap();
        let error = load_queries(&path, None, None).unwrap_err().to_string();
        assert!(error.ends_with(r#":4: id "a" is also the id of line 1: each query needs its own"#), "{error}");
        std::fs::write(&path, line(" ")).unwrap();
        let error = load_queries(&path, None, None).unwrap_err().to_string();
        assert!(error.ends_with(":1: field `id` is empty"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_empty_query_is_refused_naming_its_line() {
        let path = std::env::temp_dir().join(format!("toolsearch-empty-{}.jsonl", std::process::id()));
        std::fs::write(&path, "{\"id\": \"a\", \"query\": \"q\", \"gold\": [\"t\"]}\n{\"id\": \"b\", \"query\": \" \", \"gold\": [\"t\"]}\n")
            .unwrap();
        let error = load_queries(&path, None, None).unwrap_err().to_string();
        assert!(error.ends_with(":2: field `query` is empty"), "{error}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_gold_group_with_no_known_id_is_reported_once_per_query() {
        let q = |id: &str, gold: &[&[&str]]| LabelledQuery {
            id: id.into(),
            text: "t".into(),
            gold: gold.iter().map(|g| g.iter().map(|s| s.to_string()).collect()).collect(),
            tags: Vec::new(),
        };
        let queries = [q("a", &[&["x"]]), q("b", &[&["nope", "x"]]), q("c", &[&["x"], &["gone", "lost"]])];
        let found: Vec<(&str, &str)> =
            unknown_gold(&queries, |id| id == "x").into_iter().map(|(q, id)| (q.id.as_str(), id)).collect();
        assert_eq!(found, [("c", "gone")]);
    }
}
