//! Labels from an audit trail: a search, then a successful call of a tool it showed or that
//! was expanded since, labels that search's query with that tool (`toolsearch learn --trail`).

use std::collections::{HashMap, HashSet};

use toolsearch_disclosure::{AuditEntry, AuditEvent, CallOutcome};

use crate::queries::LabelledQuery;

/// The tag a label carries naming the principal (the trail's `token`) whose session taught it.
pub const PRINCIPAL_TAG: &str = "principal:";

/// The kinds of audit line [`labels_from_audit`] reads (`AuditEvent`'s tags); any other kind
/// is passed over.
const TRAIL_KINDS: &[&str] = &["search", "choose", "expand", "unfold", "fold", "call", "rejected"];

/// Labels from an audit trail (JSON Lines of audit entries, as `serve`/`gateway` write them):
/// each search with a query, followed (before the next search in the same session) by a
/// successful call of a tool that the search returned or that was expanded since, labels
/// that query with those tools. A call of a tool the model neither was shown nor expanded
/// labels nothing (a guessed name that happened to work says nothing of the search). Each
/// label is tagged with its session's principal ([`PRINCIPAL_TAG`]) when the trail names one.
pub fn labels_from_audit(text: &str) -> Result<Vec<LabelledQuery>, (usize, String)> {
    /// The latest search with a query, the tools it returned or that were expanded since,
    /// and those then called.
    struct Pending {
        query: String,
        shown: HashSet<String>,
        called: Vec<String>,
        token: String,
    }
    /// A line of a trail: an entry, and the session it belongs to when several sessions
    /// share the trail (the gateway's on disk).
    #[derive(serde::Deserialize)]
    struct Line {
        #[serde(default)]
        session: String,
        #[serde(default)]
        token: String,
        #[serde(flatten)]
        entry: AuditEntry,
    }
    let mut out: Vec<LabelledQuery> = Vec::new();
    let mut flush = |pending: Option<Pending>| {
        if let Some(p) = pending.filter(|p| !p.called.is_empty()) {
            let id = format!("audit-{}", out.len() + 1);
            out.push(LabelledQuery {
                id,
                text: p.query,
                gold: p.called.into_iter().map(|c| vec![c]).collect(),
                tags: if p.token.is_empty() { vec![] } else { vec![format!("{PRINCIPAL_TAG}{}", p.token)] },
            });
        }
    };
    // Sessions interleave in a shared trail: each is followed on its own.
    let mut current: HashMap<String, Pending> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(line).map_err(|e| (i + 1, e.to_string()))?;
        let kind = value.get("event").and_then(serde_json::Value::as_str).map(str::to_owned);
        let Some(kind) = kind else {
            return Err((i + 1, "an audit line names its `event`".to_owned()));
        };
        // Lines of kinds that label nothing (the gateway's `resources/read`, `prompts/get`,
        // and any it writes later) are passed over; a line of a known kind must be whole.
        if !TRAIL_KINDS.contains(&kind.as_str()) {
            continue;
        }
        let Line { session, token, entry } = serde_json::from_value(value).map_err(|e| (i + 1, e.to_string()))?;
        match (entry.event, current.get_mut(&session)) {
            (AuditEvent::Search { query: Some(q), results, .. }, _) if !q.trim().is_empty() => {
                let fresh = Pending { query: q, shown: results.into_iter().collect(), called: Vec::new(), token };
                match current.insert(session.clone(), fresh) {
                    Some(done) => flush(Some(done)),
                    None => order.push(session),
                }
            }
            (AuditEvent::Expand { tool_id, .. }, Some(p)) => {
                p.shown.insert(tool_id);
            }
            (AuditEvent::Call { tool_id, outcome: CallOutcome::Ok, .. }, Some(p))
                if p.shown.contains(&tool_id) && !p.called.contains(&tool_id) =>
            {
                p.called.push(tool_id);
            }
            _ => {}
        }
    }
    for session in order {
        flush(current.remove(&session));
    }
    Ok(out)
}

/// Every search of a trail that has a query, as (token, query), in trail order: what each
/// principal asked, whether or not a call followed (lines of other kinds are passed over).
pub fn searches_from_audit(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.contains("\"search\"")) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let query = v.get("query").and_then(serde_json::Value::as_str).unwrap_or_default();
        if v.get("event").and_then(serde_json::Value::as_str) == Some("search") && !query.trim().is_empty() {
            let token = v.get("token").and_then(serde_json::Value::as_str).unwrap_or_default();
            out.push((token.to_owned(), query.to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_labels_need_a_search_then_a_successful_call_of_a_tool_it_showed_or_was_expanded() {
        let trail = [
            r#"{"step":1,"event":"search","tool":"search_tool_by_category","query":"open a bug","category_path":"","results":["gh.issue","gh.pr"]}"#,
            r#"{"step":2,"event":"expand","tool_id":"gh.issue"}"#,
            r#"{"step":3,"event":"call","tool_id":"gh.issue","via":"create_issue","arguments":{},"outcome":"ok"}"#,
            r#"{"step":4,"event":"search","tool":"search_tool_by_category","query":"send mail","category_path":"","results":["mail.send"]}"#,
            r#"{"step":5,"event":"call","tool_id":"mail.send","via":"send","arguments":{},"outcome":"ok","called_without_expand":true}"#,
            r#"{"step":6,"event":"search","tool":"search_tool_by_category","query":"pay","category_path":"","results":["pay.charge"]}"#,
            r#"{"step":7,"event":"expand","tool_id":"pay.charge"}"#,
            r#"{"step":8,"event":"call","tool_id":"pay.charge","via":"charge","arguments":{},"outcome":"invalid_argument"}"#,
            r#"{"step":9,"event":"search","tool":"search_tool_by_category","query":"refund","category_path":"","results":["pay.refund"]}"#,
            r#"{"step":10,"event":"call","tool_id":"pay.void","via":"void","arguments":{},"outcome":"ok","called_without_expand":true}"#,
        ]
        .join("\n");
        let labels = labels_from_audit(&trail).unwrap();
        let got: Vec<(&str, &str)> = labels.iter().map(|l| (l.text.as_str(), l.gold[0][0].as_str())).collect();
        // Expanded then called; shown by the search then called; not a failed call, nor a
        // call of a tool the search never showed.
        assert_eq!(got, [("open a bug", "gh.issue"), ("send mail", "mail.send")], "{labels:?}");
        assert_eq!(labels_from_audit("{\"step\":1}").unwrap_err().0, 1);
        assert_eq!(labels_from_audit("{\"event\":\"search\"}").unwrap_err().0, 1, "a known kind must be whole");
        // The gateway's lines for reads and prompts, with no step, label nothing and break nothing.
        let mixed = format!(
            "{}\n{}\n{}",
            r#"{"event":"resources/read","method":"resources/read","name":"everything+test://static/resource/1","outcome":"ok"}"#,
            r#"{"event":"prompts/get","method":"prompts/get","name":"everything.simple-prompt","outcome":"ok"}"#,
            trail
        );
        assert_eq!(labels_from_audit(&mixed).unwrap(), labels);
    }

    #[test]
    fn sessions_sharing_a_trail_are_followed_each_on_its_own() {
        // The gateway's trail on disk: two sessions interleaved, with who and when on each line.
        let who = |s: &str| format!(r#""session":"{s}","token":"agent","time":1,"request_id":"x-1""#);
        let trail = [
            format!(r#"{{"step":1,"event":"search","tool":"search_tool_by_category","query":"open a bug","category_path":"","results":["gh.issue"],{}}}"#, who("a")),
            format!(r#"{{"step":1,"event":"search","tool":"search_tool_by_category","query":"send mail","category_path":"","results":["mail.send"],{}}}"#, who("b")),
            format!(r#"{{"step":2,"event":"expand","tool_id":"mail.send",{}}}"#, who("b")),
            format!(r#"{{"step":2,"event":"expand","tool_id":"gh.issue",{}}}"#, who("a")),
            format!(r#"{{"step":3,"event":"call","tool_id":"gh.issue","via":"call_tool","arguments":null,"argument_names":["title"],"outcome":"ok","latency_ms":2.5,{}}}"#, who("a")),
            format!(r#"{{"step":3,"event":"call","tool_id":"mail.send","via":"call_tool","arguments":null,"outcome":"ok",{}}}"#, who("b")),
        ]
        .join("\n");
        let labels = labels_from_audit(&trail).unwrap();
        let got: Vec<(&str, &str)> = labels.iter().map(|l| (l.text.as_str(), l.gold[0][0].as_str())).collect();
        assert_eq!(got, [("open a bug", "gh.issue"), ("send mail", "mail.send")]);
        let asked = searches_from_audit(&trail);
        assert_eq!(asked, [("agent".to_owned(), "open a bug".to_owned()), ("agent".into(), "send mail".into())]);
    }
}
