//! Suggestions for errors: the closest existing paths and ids to a mistyped one.

/// Levenshtein distance over characters, case-insensitive.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Similarity in [0, 1]: 1 - distance / longer length, with a bonus when one contains the other.
pub(crate) fn similarity(a: &str, b: &str) -> f32 {
    let longest = a.chars().count().max(b.chars().count()).max(1) as f32;
    let base = 1.0 - edit_distance(a, b) as f32 / longest;
    let (al, bl) = (a.to_lowercase(), b.to_lowercase());
    if !al.is_empty() && !bl.is_empty() && (al.contains(&bl) || bl.contains(&al)) {
        base.max(0.6)
    } else {
        base
    }
}

/// The `n` candidates most similar to `target` with similarity at least `min`, best first.
pub(crate) fn closest<'a>(target: &str, candidates: impl Iterator<Item = &'a str>, n: usize, min: f32) -> Vec<&'a str> {
    let mut scored: Vec<(f32, &str)> =
        candidates.map(|c| (similarity(target, c), c)).filter(|(s, _)| *s >= min).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(n).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("Data", "data"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn closest_prefers_the_nearest_spelling() {
        let c = closest("Storage/Bukets", ["Storage/Buckets", "Storage", "User/Auth"].into_iter(), 2, 0.3);
        assert_eq!(c[0], "Storage/Buckets");
    }
}
