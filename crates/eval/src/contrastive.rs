//! The contrastive fit of a residual query adapter: `u = q + q W`, trained so that the
//! softmax of `u . t / TAU` over the tools puts its mass on each query's gold tools, with Adam
//! and a small weight decay, from `W = 0` (the identity map). Checkpoints at several epochs are
//! returned so that the caller picks the strength (fewer epochs, closer to the identity) on
//! held-out labels.

/// Softmax temperature over cosines.
const TAU: f32 = 0.05;
/// Queries per step.
const BATCH: usize = 128;
/// Adam step size.
const LEARNING_RATE: f32 = 1e-3;
/// Weight decay (pulls W toward zero, the identity map).
const DECAY: f32 = 1e-4;
/// Catalogues up to this many tools use every tool in the softmax; larger ones use each
/// query's nearest tools (hard negatives) plus its gold tools.
const FULL_SOFTMAX: usize = 4_096;
/// Negatives per query in a larger catalogue.
const NEGATIVES: usize = 256;

/// Fits on `examples` (unit query vector, gold tool ordinals) against `tools` (unit vectors),
/// returning `W` (`d x d`, row-major) after each epoch count in `checkpoints` (ascending).
pub(crate) fn fit(
    examples: &[(Vec<f32>, Vec<u32>)],
    tools: &[&[f32]],
    d: usize,
    checkpoints: &[usize],
) -> Vec<(usize, Vec<f32>)> {
    let examples: Vec<&(Vec<f32>, Vec<u32>)> = examples.iter().filter(|(_, g)| !g.is_empty()).collect();
    let mut out = Vec::new();
    if examples.is_empty() || tools.is_empty() {
        return out;
    }
    // Which tools each query's softmax runs over.
    let sets: Vec<Vec<u32>> = examples.iter().map(|(q, gold)| softmax_set(q, gold, tools)).collect();
    let mut w = vec![0f32; d * d];
    let (mut m, mut v) = (vec![0f32; d * d], vec![0f32; d * d]);
    let mut step = 0i32;
    let last = checkpoints.iter().copied().max().unwrap_or(0);
    // A fixed shuffle (deterministic: the same labels give the same adapter).
    let mut order: Vec<usize> = (0..examples.len()).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for epoch in 1..=last {
        for i in (1..order.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            order.swap(i, (seed % (i as u64 + 1)) as usize);
        }
        for batch in order.chunks(BATCH) {
            let grad = batch_gradient(batch, &examples, &sets, tools, &w, d);
            step += 1;
            let (b1, b2) = (0.9f32, 0.999f32);
            let (c1, c2) = (1.0 - b1.powi(step), 1.0 - b2.powi(step));
            for k in 0..d * d {
                let g = grad[k] / batch.len() as f32 + DECAY * w[k];
                m[k] = b1 * m[k] + (1.0 - b1) * g;
                v[k] = b2 * v[k] + (1.0 - b2) * g * g;
                w[k] -= LEARNING_RATE * (m[k] / c1) / ((v[k] / c2).sqrt() + 1e-8);
            }
        }
        if checkpoints.contains(&epoch) {
            out.push((epoch, w.clone()));
        }
    }
    out
}

/// Every tool for a small catalogue; otherwise the gold tools and the query's nearest ones.
fn softmax_set(q: &[f32], gold: &[u32], tools: &[&[f32]]) -> Vec<u32> {
    if tools.len() <= FULL_SOFTMAX {
        return (0..tools.len() as u32).collect();
    }
    let mut scored: Vec<(f32, u32)> = tools.iter().enumerate().map(|(i, t)| (dot(q, t), i as u32)).collect();
    scored.select_nth_unstable_by(NEGATIVES, |a, b| b.0.total_cmp(&a.0));
    let mut set: Vec<u32> = scored[..NEGATIVES].iter().map(|&(_, i)| i).collect();
    for g in gold {
        if !set.contains(g) {
            set.push(*g);
        }
    }
    set
}

/// The summed gradient of the batch's loss with respect to `W`, computed on two threads.
fn batch_gradient(
    batch: &[usize],
    examples: &[&(Vec<f32>, Vec<u32>)],
    sets: &[Vec<u32>],
    tools: &[&[f32]],
    w: &[f32],
    d: usize,
) -> Vec<f32> {
    let half = batch.len().div_ceil(2);
    let parts: Vec<Vec<f32>> = std::thread::scope(|s| {
        let handles: Vec<_> = batch
            .chunks(half.max(1))
            .map(|part| {
                s.spawn(move || {
                    let mut grad = vec![0f32; d * d];
                    for &i in part {
                        let (q, gold) = examples[i];
                        add_gradient(q, gold, &sets[i], tools, w, d, &mut grad);
                    }
                    grad
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a gradient thread panicked")).collect()
    });
    let mut total = vec![0f32; d * d];
    for p in parts {
        total.iter_mut().zip(p).for_each(|(t, x)| *t += x);
    }
    total
}

/// Adds one query's gradient: `q^T (du)`, with `du = (sum_j (p_j - y_j) t_j) / TAU`.
fn add_gradient(q: &[f32], gold: &[u32], set: &[u32], tools: &[&[f32]], w: &[f32], d: usize, grad: &mut [f32]) {
    let mut u = q.to_vec();
    for (i, &qi) in q.iter().enumerate() {
        for (o, &x) in u.iter_mut().zip(&w[i * d..(i + 1) * d]) {
            *o += qi * x;
        }
    }
    let logits: Vec<f32> = set.iter().map(|&j| dot(&u, tools[j as usize]) / TAU).collect();
    let max = logits.iter().copied().fold(f32::MIN, f32::max);
    let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
    let z: f32 = exp.iter().sum();
    let share = 1.0 / gold.len() as f32;
    let mut du = vec![0f32; d];
    for (k, &j) in set.iter().enumerate() {
        let target = if gold.contains(&j) { share } else { 0.0 };
        let coef = (exp[k] / z - target) / TAU;
        if coef.abs() > 1e-7 {
            for (o, &x) in du.iter_mut().zip(tools[j as usize]) {
                *o += coef * x;
            }
        }
    }
    for (i, &qi) in q.iter().enumerate() {
        if qi != 0.0 {
            for (g, &x) in grad[i * d..(i + 1) * d].iter_mut().zip(&du) {
                *g += qi * x;
            }
        }
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_moves_queries_toward_their_gold_tools() {
        // Two tools on the axes; queries near the first axis labelled with the second tool.
        let tools: Vec<Vec<f32>> = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        let refs: Vec<&[f32]> = tools.iter().map(Vec::as_slice).collect();
        let examples: Vec<(Vec<f32>, Vec<u32>)> =
            (0..64).map(|i| (vec![0.95, 0.05 + i as f32 * 1e-3], vec![1])).collect();
        // 64 examples are one step an epoch.
        let fitted = fit(&examples, &refs, 2, &[20, 2_000]);
        assert_eq!(fitted.iter().map(|(e, _)| *e).collect::<Vec<_>>(), [20, 2_000]);
        let early = toolsearch_index::adapter_apply(&fitted[0].1, &examples[0].0);
        assert!(early[1] > 0.06 && early[0] > early[1], "a little way toward the gold tool: {early:?}");
        let moved = toolsearch_index::adapter_apply(&fitted[1].1, &examples[0].0);
        assert!(moved[1] > moved[0], "the query now points at its gold tool: {moved:?}");
    }
}
