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

/// The longest text suggestions are computed for, in bytes: past it nothing a catalogue holds
/// is near it (ids are at most 512 bytes), and the cost (edit distance is linear in its
/// length, for every candidate) is bounded whatever a caller sends.
pub const MAX_SUGGESTED: usize = 512;

/// `text` as an error message quotes it: whole when short, else its first 120 characters
/// and its length, so a huge mistyped id does not make a huge answer.
pub fn quoted(text: &str) -> String {
    match text.chars().nth(120) {
        None => format!("{text:?}"),
        Some(_) => format!("{:?}... ({} bytes)", text.chars().take(120).collect::<String>(), text.len()),
    }
}

/// The `n` candidates most similar to `target` with similarity at least `min`, best first;
/// none for a target longer than [`MAX_SUGGESTED`].
pub(crate) fn closest<'a>(target: &str, candidates: impl Iterator<Item = &'a str>, n: usize, min: f32) -> Vec<&'a str> {
    if target.len() > MAX_SUGGESTED {
        return Vec::new();
    }
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
    fn a_huge_target_gets_no_suggestion_and_is_quoted_short() {
        let huge = "x".repeat(3 << 20);
        let started = std::time::Instant::now();
        assert!(closest(&huge, ["x", "xx"].into_iter(), 3, 0.0).is_empty());
        assert!(started.elapsed() < std::time::Duration::from_millis(50));
        let q = quoted(&huge);
        assert!(q.len() < 160 && q.ends_with(&format!("({} bytes)", 3 << 20)), "{q}");
        assert_eq!(quoted("git.stauts"), "\"git.stauts\"");
    }

    #[test]
    fn closest_prefers_the_nearest_spelling() {
        let c = closest("Storage/Bukets", ["Storage/Buckets", "Storage", "User/Auth"].into_iter(), 2, 0.3);
        assert_eq!(c[0], "Storage/Buckets");
    }
}
