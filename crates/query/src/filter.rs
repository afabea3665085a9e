//! What a request restricts the catalogue to ([`Filter`]: a path, tags, the caller's scopes),
//! and the operations on sorted ordinal lists that applying it takes.

use toolsearch_catalog::CategoryPath;

/// What a request restricts the catalogue to: a category path (empty = everything), tags (a
/// tool must carry all of them; compared case-insensitively) and the caller's scopes (a tool
/// whose `requires` are not all held does not exist for the caller; `None` = trusted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Filter {
    /// Category path prefix.
    pub path: CategoryPath,
    /// Required tags; `!tag` requires a tool not to carry `tag`.
    pub tags: Vec<String>,
    /// The caller's scopes, sorted; `None` for a trusted caller.
    pub scopes: Option<Vec<String>>,
}

impl Filter {
    /// The same filter over another path.
    pub fn at(&self, path: &[String]) -> Filter {
        Filter { path: path.to_vec(), ..self.clone() }
    }

    /// Whether the filter hides anything besides the path (tags or a restricted caller).
    pub fn restricts(&self) -> bool {
        !self.tags.is_empty() || self.scopes.is_some()
    }
}

/// The items of sorted `a` that are not in sorted `b`.
pub(crate) fn difference(a: &[u32], b: &[u32]) -> Vec<u32> {
    a.iter().copied().filter(|x| b.binary_search(x).is_err()).collect()
}

/// The intersection of two sorted lists.
pub(crate) fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersect_keeps_common_sorted_items() {
        assert_eq!(intersect(&[1, 3, 5, 7], &[2, 3, 7, 9]), vec![3, 7]);
        assert!(intersect(&[], &[1]).is_empty());
    }
}
