//! Lists of tool ordinals by category node ordinal, all in one array, and how a catalogue's
//! tools are filed into them a part of the catalogue a core at a time.
//!
//! Each part is counted and then filled in place (no list grown or shrunk), and the parts'
//! lists are joined node by node, blocks of nodes in parallel: at a million tools and 320,000
//! categories that halves the engine's share of an open on two cores, for a transient copy
//! of the lists.

use std::ops::Range;

use rayon::prelude::*;

/// Lists of tool ordinals by node ordinal, in one array: node `n`'s list is
/// `items[at[n]..at[n + 1]]`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Lists {
    at: Vec<u32>,
    items: Vec<u32>,
}

/// Tools a part holds at least: smaller catalogues are filed in one part.
const PART_MIN: usize = 1 << 15;
/// Nodes a block of the join.
const JOIN_BLOCK: usize = 1 << 12;

impl Lists {
    /// Room for lists of the lengths `counts[1..]` (`counts[0]` is 0).
    fn with_counts(mut counts: Vec<u32>) -> Lists {
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let total = counts.last().copied().unwrap_or(0) as usize;
        Lists { at: counts, items: vec![0; total] }
    }

    /// The lists `lists` yields, node by node.
    pub(crate) fn collect<L: IntoIterator<Item = u32>>(lists: impl Iterator<Item = L>) -> Lists {
        let (mut at, mut items) = (vec![0u32], Vec::new());
        for list in lists {
            items.extend(list);
            at.push(items.len() as u32);
        }
        Lists { at, items }
    }

    /// Ordinals held over every list.
    pub(crate) fn total(&self) -> usize {
        self.items.len()
    }

    /// Bytes the lists take.
    pub(crate) fn bytes(&self) -> usize {
        (self.at.len() + self.items.len()) * 4
    }

    /// Node `n`'s list.
    pub(crate) fn get(&self, n: u32) -> &[u32] {
        match (self.at.get(n as usize), self.at.get(n as usize + 1)) {
            (Some(&from), Some(&to)) => &self.items[from as usize..to as usize],
            _ => &[],
        }
    }

    /// The lists of `parts` (in order), each node's lists one after the other.
    fn join(parts: Vec<Lists>, nodes: usize) -> Lists {
        if parts.len() == 1 {
            return parts.into_iter().next().unwrap_or_default();
        }
        let mut counts = vec![0u32; nodes + 1];
        for part in &parts {
            for (n, count) in counts[1..].iter_mut().enumerate() {
                *count += part.at[n + 1] - part.at[n];
            }
        }
        let mut joined = Lists::with_counts(counts);
        let at = &joined.at;
        // The items of each block of nodes, split apart so the blocks fill in parallel.
        let mut blocks: Vec<(Range<usize>, &mut [u32])> = Vec::with_capacity(nodes.div_ceil(JOIN_BLOCK));
        let mut rest = joined.items.as_mut_slice();
        for from in (0..nodes).step_by(JOIN_BLOCK) {
            let to = (from + JOIN_BLOCK).min(nodes);
            let (block, after) = rest.split_at_mut((at[to] - at[from]) as usize);
            blocks.push((from..to, block));
            rest = after;
        }
        blocks.into_par_iter().for_each(|(range, block)| {
            let mut i = 0;
            for n in range {
                for part in &parts {
                    let list = part.get(n as u32);
                    block[i..i + list.len()].copy_from_slice(list);
                    i += list.len();
                }
            }
        });
        joined
    }
}

/// The lists of tools `0..tools` under and directly at each of `nodes` nodes, with what each
/// part of the tools makes besides (`extra`, per part, in order): `visit(i, extra, f)` calls
/// `f(node, directly)` once for each node tool `i` is at (directly) or under, the same calls
/// each time, and may add to `extra` when it is given (the second time).
pub(crate) fn file<E: Default + Send>(
    tools: usize,
    nodes: usize,
    visit: impl Fn(usize, Option<&mut E>, &mut dyn FnMut(u32, bool)) + Sync,
) -> (Lists, Lists, Vec<E>) {
    let parts = rayon::current_num_threads().clamp(1, tools.div_ceil(PART_MIN).max(1));
    let filed: Vec<(Lists, Lists, E)> = (0..parts)
        .into_par_iter()
        .map(|p| {
            let tools = p * tools / parts..(p + 1) * tools / parts;
            let (mut under, mut direct) = (vec![0u32; nodes + 1], vec![0u32; nodes + 1]);
            for i in tools.clone() {
                visit(i, None, &mut |n, directly| match directly {
                    true => direct[n as usize + 1] += 1,
                    false => under[n as usize + 1] += 1,
                });
            }
            let (mut under, mut direct) = (Lists::with_counts(under), Lists::with_counts(direct));
            let (mut under_next, mut direct_next) = (under.at.clone(), direct.at.clone());
            let mut extra = E::default();
            for i in tools {
                visit(i, Some(&mut extra), &mut |n, directly| {
                    let (lists, next) = match directly {
                        true => (&mut direct, &mut direct_next),
                        false => (&mut under, &mut under_next),
                    };
                    lists.items[next[n as usize] as usize] = i as u32;
                    next[n as usize] += 1;
                });
            }
            (under, direct, extra)
        })
        .collect();
    let mut under = Vec::with_capacity(parts);
    let mut direct = Vec::with_capacity(parts);
    let mut extras = Vec::with_capacity(parts);
    for (u, d, e) in filed {
        under.push(u);
        direct.push(d);
        extras.push(e);
    }
    let (under, direct) = rayon::join(|| Lists::join(under, nodes), || Lists::join(direct, nodes));
    (under, direct, extras)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A visit that records each tool it is given the second time.
    trait Visit: Fn(usize, Option<&mut Vec<u32>>, &mut dyn FnMut(u32, bool)) + Sync {}
    impl<F: Fn(usize, Option<&mut Vec<u32>>, &mut dyn FnMut(u32, bool)) + Sync> Visit for F {}

    /// Tool `i` sits directly at node `i % nodes` and under it and node 0 (a root).
    fn visit(nodes: u32) -> impl Visit {
        move |i, extra, f| {
            let n = i as u32 % nodes;
            f(n, true);
            f(n, false);
            if n != 0 {
                f(0, false);
            }
            if let Some(e) = extra {
                e.push(i as u32);
            }
        }
    }

    #[test]
    fn lists_filed_in_parts_are_those_filed_in_one() {
        let pool = |threads| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        for tools in [0, 7, PART_MIN * 3 + 5] {
            let one = pool(1).install(|| file(tools, 5, visit(5)));
            let parts = pool(4).install(|| file(tools, 5, visit(5)));
            assert_eq!((&one.0, &one.1), (&parts.0, &parts.1), "{tools} tools");
            assert_eq!(parts.2.concat(), (0..tools as u32).collect::<Vec<_>>(), "extras in order");
            if tools > 0 {
                assert_eq!(parts.1.get(2), (0..tools as u32).filter(|i| i % 5 == 2).collect::<Vec<_>>());
                assert_eq!(parts.0.get(0).len(), tools, "every tool is under the root");
                assert!(parts.0.get(0).windows(2).all(|w| w[0] < w[1]), "sorted");
            }
        }
    }

    #[test]
    fn a_node_past_the_lists_has_none() {
        let (under, _, _) = file(3, 1, visit(1));
        assert_eq!(under.get(0), &[0, 1, 2]);
        assert!(under.get(1).is_empty() && under.get(9).is_empty());
    }
}
