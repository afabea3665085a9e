//! Matching by name rather than by meaning: a query that is exactly a tool's id or name puts
//! that tool first, and `match: "regex"` selects tools whose id or name a pattern matches (as
//! agent platforms' regex tool search does). Both look only at the tools the filter allows.

use regex::{Regex, RegexBuilder};
use toolsearch_catalog::Tool;

use crate::error::ProtocolError;
use crate::fusion::Scored;
use crate::ranker::Ranker;
use crate::scope::Filter;

/// The confidence of an exact id or name match.
pub const EXACT_CONFIDENCE: f32 = 0.99;
/// Longest pattern accepted, in bytes.
const MAX_PATTERN: usize = 512;
/// Most memory a compiled pattern may take.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The names a query asks for by name: those of `select:A,B` (as agent platforms' tool search
/// takes them), else the query itself.
fn selected(query: &str) -> Vec<&str> {
    let q = query.trim();
    match q.get(..7).filter(|p| p.eq_ignore_ascii_case("select:")) {
        Some(_) => q[7..].split(',').map(str::trim).filter(|n| !n.is_empty()).collect(),
        None => vec![q],
    }
}

/// The spellings a client may use for the tool `SERVER.TOOL` (or `TOOL`), in tiers, most
/// literal first: the name as given; then `SERVER__TOOL` and `mcp__SERVER__TOOL` (Claude
/// Code's) read as `SERVER.TOOL`, split at *every* `__` (a server or tool name may hold one,
/// and each reading is asked, so one that names two tools is seen to); then what follows the
/// first `SERVER__` (or `mcp__SERVER__`) as a tool's own name. Any case. The first tier that
/// names a tool the caller may see decides, and all it names count: several is ambiguous.
fn spellings(name: &str) -> Vec<Vec<String>> {
    let mut tiers = vec![vec![name.to_owned()]];
    let parts: Vec<&str> = name.split("__").collect();
    let rest = match parts.as_slice() {
        [mcp, rest @ ..] if mcp.eq_ignore_ascii_case("mcp") && rest.len() >= 2 => rest,
        [_, _, ..] => parts.as_slice(),
        _ => return tiers,
    };
    tiers.push((1..rest.len()).map(|i| format!("{}.{}", rest[..i].join("__"), rest[i..].join("__"))).collect());
    tiers.push(vec![rest[1..].join("__")]);
    tiers
}

/// The tools of the first tier of [`spellings`] of `name` that names any for which `may` holds.
fn named_by(index: &toolsearch_index::IndexReader, name: &str, may: impl Fn(u32) -> bool) -> Vec<u32> {
    for tier in spellings(name.trim()) {
        let mut found: Vec<u32> = Vec::new();
        for spelling in &tier {
            for ord in index.tools_named(spelling) {
                if may(ord) && !found.contains(&ord) {
                    found.push(ord);
                }
            }
        }
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// Whether `ord` is in `allowed` (sorted; `None` = every tool).
fn permitted(allowed: Option<&[u32]>, ord: u32) -> bool {
    allowed.is_none_or(|a| a.binary_search(&ord).is_ok())
}

impl Ranker {
    /// `ranked` with the allowed tools whose id or name equals `query` moved to the front, at
    /// [`EXACT_CONFIDENCE`] or more.
    pub(crate) fn promote_exact(&self, query: &str, filter: &Filter, mut ranked: Vec<Scored>) -> Vec<Scored> {
        // Only what the caller may see is looked for: a hidden tool of the same name changes
        // nothing of the answer.
        let allowed = self.paths().allowed(filter);
        let mut hits: Vec<u32> = Vec::new();
        for name in selected(query) {
            for ord in named_by(self.index(), name, |o| permitted(allowed.as_deref().map(Vec::as_slice), o)) {
                if !hits.contains(&ord) {
                    hits.push(ord);
                }
            }
        }
        if hits.is_empty() {
            return ranked;
        }
        let mut front = Vec::with_capacity(hits.len());
        for ord in hits {
            let found = ranked.iter().position(|s| s.ord == ord).map(|i| ranked.remove(i));
            let score = found.map_or(0.0, |s| s.score);
            let confidence = found.map_or(0.0, |s| s.confidence).max(EXACT_CONFIDENCE);
            front.push(Scored { ord, score, confidence });
        }
        front.extend(ranked);
        front
    }

    /// The tools a client means by `name` among those `may` allows: those whose id or name it
    /// is in any case, else the first reading clients use (`SERVER__TOOL`, `mcp__SERVER__TOOL`,
    /// `mcp__NAME__TOOL`, split at every `__`) that names any, as search reads a query that is
    /// a name. Several is an ambiguous name. Tools `may` refuses are never looked at, so a
    /// hidden tool answers exactly as a missing one.
    pub fn tools_called(&self, name: &str, may: impl Fn(&Tool) -> bool) -> Vec<&Tool> {
        let tools = &self.catalog().tools;
        named_by(self.index(), name, |o| may(&tools[o as usize])).into_iter().map(|o| &tools[o as usize]).collect()
    }

    /// The readings of `name` ([`Ranker::tools_called`]'s spellings: `name`, `SERVER.TOOL` for
    /// `SERVER__TOOL` or `mcp__SERVER__TOOL`, what follows the first `SERVER__`) that are the
    /// id or name of no tool `may` allows; `None` when `name` itself or a `SERVER.TOOL` reading
    /// is one (a tool it names exactly). For an answer about an id no tool has (a pending
    /// group's, not listed yet), which a tool of the same bare name on another server must not
    /// take. Tools `may` refuses are never looked at, so a hidden tool reads as a missing one.
    pub fn unnamed_readings(&self, name: &str, may: impl Fn(&Tool) -> bool) -> Option<Vec<String>> {
        let tools = &self.catalog().tools;
        let mut readings = Vec::new();
        for (tier, spellings) in spellings(name.trim()).into_iter().enumerate() {
            for reading in spellings {
                let named = self.index().tools_named(&reading).into_iter().any(|o| may(&tools[o as usize]));
                match named {
                    false => readings.push(reading),
                    true if tier < 2 => return None,
                    true => {}
                }
            }
        }
        Some(readings)
    }

    /// The allowed tools whose id or name `pattern` matches (case-insensitive unless the
    /// pattern says otherwise), in catalogue order, each at confidence 1.
    pub(crate) fn match_tools(&self, pattern: &str, filter: &Filter) -> Result<Vec<Scored>, ProtocolError> {
        let re = compile(pattern)?;
        let allowed = self.paths().allowed(filter);
        let catalog = self.catalog();
        let candidates: Box<dyn Iterator<Item = u32>> = match &allowed {
            Some(a) => Box::new(a.iter().copied()),
            None => Box::new(0..catalog.tools.len() as u32),
        };
        Ok(candidates
            .filter(|&o| {
                let t = &catalog.tools[o as usize];
                re.is_match(&t.id) || re.is_match(&t.name)
            })
            .map(|ord| Scored { ord, score: 1.0, confidence: 1.0 })
            .collect())
    }
}

/// Compiles a caller's pattern with bounded size (the regex crate matches in linear time, so
/// no pattern can make a search slow).
fn compile(pattern: &str) -> Result<Regex, ProtocolError> {
    if pattern.len() > MAX_PATTERN {
        return Err(ProtocolError::invalid(format!("query: a pattern may be at most {MAX_PATTERN} bytes")));
    }
    RegexBuilder::new(pattern).case_insensitive(true).size_limit(PATTERN_SIZE_LIMIT).build().map_err(|e| {
        let text = e.to_string();
        let first = text.lines().last().unwrap_or("").trim().trim_start_matches("error: ").to_owned();
        ProtocolError::invalid(format!("query is not a valid regular expression: {first}")).with_hints(vec![
            "with match \"regex\" the query is a pattern over tool ids and names, e.g. \"^github\\\\.\" or \"(?i)issue\""
                .into(),
        ])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_checked_and_bounded() {
        assert!(compile("^github\\.").is_ok());
        let bad = compile("(unclosed").unwrap_err();
        assert!(bad.message.contains("not a valid regular expression"), "{}", bad.message);
        assert!(compile(&"a".repeat(MAX_PATTERN + 1)).is_err());
        assert!(compile("(a{1000}){1000}").is_err(), "a pattern over the size limit is refused");
    }

    #[test]
    fn clients_spellings_of_a_tool_name_are_read_as_its_id() {
        let tiers = |name: &str| -> Vec<Vec<String>> { spellings(name) };
        assert_eq!(tiers("memory.read_graph"), [vec!["memory.read_graph"]]);
        assert_eq!(
            tiers("memory__read_graph"),
            [vec!["memory__read_graph"], vec!["memory.read_graph"], vec!["read_graph"]]
        );
        assert_eq!(
            tiers("mcp__memory__read_graph"),
            [vec!["mcp__memory__read_graph"], vec!["memory.read_graph"], vec!["read_graph"]]
        );
        // Claude Code's prefix around a gateway's own ids.
        assert_eq!(tiers("mcp__toolsearch__memory.read_graph")[2], ["memory.read_graph"]);
        // A server or tool name holding `__`: every reading is asked, together.
        assert_eq!(tiers("amb__hid__secret_op")[1], ["amb.hid__secret_op", "amb__hid.secret_op"]);
        assert_eq!(selected(" SELECT: a.b , c "), ["a.b", "c"]);
        assert_eq!(selected("read the graph"), ["read the graph"]);
    }

    #[test]
    fn matching_is_case_insensitive_by_default() {
        assert!(compile("CREATE_issue").unwrap().is_match("github.create_issue"));
    }
}
