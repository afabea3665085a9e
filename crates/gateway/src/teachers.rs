//! Who teaches and who judges the gateway's learner (`crate::learner`): only the principals
//! `learn.from` trusts teach; with two or more, the smallest judge the others' fit, so no
//! principal judges its own labels; and what the principals a fit did not learn from searched
//! is what a swap must not re-rank.

use toolsearch_eval::{LabelledQuery, PRINCIPAL_TAG, SPLIT_TAG};

use crate::config::LearnSettings;

/// Most searches by other principals a fit is checked against (the latest).
const MOST_ASKED: usize = 400;

/// What principals other than `teachers` searched (the latest [`MOST_ASKED`] distinct
/// queries of `searches`, oldest first).
pub(crate) fn asked_by_others(
    searches: &[(String, String)],
    teachers: &std::collections::HashSet<String>,
) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut asked: Vec<String> = searches
        .iter()
        .rev()
        .filter(|(token, query)| !teachers.contains(token) && seen.insert(query.as_str()))
        .take(MOST_ASKED)
        .map(|(_, query)| query.clone())
        .collect();
    asked.reverse();
    asked
}

/// The principals whose labels a fit is made from: those in its `fit` part (all of them when
/// the labels were not split by principal).
pub(crate) fn teachers(labels: &[LabelledQuery]) -> std::collections::HashSet<String> {
    labels
        .iter()
        .filter(|l| !l.tags.iter().any(|t| t == &format!("{SPLIT_TAG}judge")))
        .map(|l| l.tags.iter().find_map(|t| t.strip_prefix(PRINCIPAL_TAG)).unwrap_or("local").to_owned())
        .collect()
}

/// Keeps the labels of trusted principals, and places each in the fit / choose / judge split
/// by who taught it: with two or more principals, the smallest ones judge (at least 15% of the
/// labels, while at least half stay to fit), so no principal judges its own labels.
pub fn by_principal(labels: Vec<LabelledQuery>, settings: &LearnSettings) -> Vec<LabelledQuery> {
    let principal =
        |l: &LabelledQuery| l.tags.iter().find_map(|t| t.strip_prefix(PRINCIPAL_TAG)).unwrap_or("local").to_owned();
    let mut labels: Vec<LabelledQuery> = labels.into_iter().filter(|l| settings.trusts(&principal(l))).collect();
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for l in &labels {
        *counts.entry(principal(l)).or_default() += 1;
    }
    if counts.len() < 2 {
        return labels;
    }
    let total = labels.len();
    let mut smallest: Vec<(usize, String)> = counts.into_iter().map(|(p, n)| (n, p)).collect();
    smallest.sort();
    let (mut judges, mut judged) = (std::collections::HashSet::new(), 0);
    for (n, p) in smallest {
        if judged * 100 >= total * 15 || (judged + n) * 2 > total {
            break;
        }
        judged += n;
        judges.insert(p);
    }
    for l in &mut labels {
        let part = if judges.contains(&principal(l)) { "judge" } else { "fit" };
        l.tags.push(format!("{SPLIT_TAG}{part}"));
    }
    // The fitting principals' labels still need a choosing part: one in six, by query text.
    for (i, l) in labels.iter_mut().filter(|l| l.tags.last().is_some_and(|t| t.ends_with("fit"))).enumerate() {
        if i % 6 == 5 {
            l.tags.pop();
            l.tags.push(format!("{SPLIT_TAG}choose"));
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolsearch_eval::{LabelledQuery, PRINCIPAL_TAG, SPLIT_TAG};

    fn label(principal: &str, i: usize) -> LabelledQuery {
        LabelledQuery {
            id: format!("{principal}-{i}"),
            text: format!("query {i} of {principal}"),
            gold: vec![vec!["s.t".into()]],
            tags: vec![format!("{PRINCIPAL_TAG}{principal}")],
        }
    }

    #[test]
    fn only_trusted_principals_teach_and_none_judges_its_own_labels() {
        let labels: Vec<LabelledQuery> = (0..10)
            .map(|i| label("admin", i))
            .chain((0..60).map(|i| label("intruder", i)))
            .chain((0..5).map(|i| label("ops", i)))
            .collect();
        let only_admin = LearnSettings { from: vec!["admin".into()], ..LearnSettings::default() };
        let kept = by_principal(labels.clone(), &only_admin);
        assert_eq!(kept.len(), 10);
        assert!(kept.iter().all(|l| !l.tags.iter().any(|t| t.starts_with(SPLIT_TAG))), "one principal: split by query");
        assert!(by_principal(labels.clone(), &LearnSettings::default()).is_empty(), "nobody until set");

        let everyone = LearnSettings { from: vec!["*".into()], ..LearnSettings::default() };
        let split = by_principal(labels, &everyone);
        let part = |p: &str| -> Vec<String> {
            let mut parts: Vec<String> = split
                .iter()
                .filter(|l| l.tags[0].ends_with(p))
                .map(|l| l.tags.last().unwrap().trim_start_matches(SPLIT_TAG).to_owned())
                .collect();
            parts.dedup();
            parts
        };
        // The two smallest principals judge (15 of 75 labels); the largest fits and chooses.
        assert_eq!((part(":admin"), part(":ops")), (vec!["judge".to_owned()], vec!["judge".to_owned()]));
        assert!(part(":intruder").iter().all(|p| p == "fit" || p == "choose"), "{:?}", part(":intruder"));
    }

    #[test]
    fn the_others_searches_are_their_latest_distinct_queries_and_not_the_teachers() {
        let s = |t: &str, q: &str| (t.to_owned(), q.to_owned());
        let searches = [s("ops", "a"), s("intruder", "x"), s("ops", "b"), s("admin", "a"), s("intruder", "y")];
        let teachers: std::collections::HashSet<String> = ["intruder".to_owned()].into();
        assert_eq!(asked_by_others(&searches, &teachers), ["b", "a"]);
    }
}
