//! Last-token pooling over fastembed's raw output (fastembed pools mean and CLS itself).

use fastembed::{OutputKey, SingleBatchOutput};

/// The token output of a model: its only output, or the one named `last_hidden_state` or
/// `token_embeddings`.
const TOKEN_OUTPUT: &[OutputKey] =
    &[OutputKey::OnlyOne, OutputKey::ByName("last_hidden_state"), OutputKey::ByName("token_embeddings")];

/// One vector per text: the hidden state of its last non-padding token (padding on either
/// side), not yet normalised.
pub(crate) fn last_token(batches: &[SingleBatchOutput]) -> fastembed::Result<Vec<Vec<f32>>> {
    let mut out = Vec::new();
    for batch in batches {
        let tensor = batch.select_output(&TOKEN_OUTPUT)?;
        let shape = tensor.shape().to_vec();
        let [texts, tokens, hidden] = shape[..] else {
            return Err(fastembed::Error::Other(format!(
                "last-token pooling needs a [texts, tokens, hidden] output, got shape {shape:?}"
            )));
        };
        let mask = &batch.attention_mask_array;
        for t in 0..texts {
            let last = (0..tokens).rev().find(|&i| mask.get((t, i)).copied().unwrap_or(0) != 0).unwrap_or(0);
            out.push((0..hidden).map(|h| tensor[[t, last, h].as_slice()]).collect());
        }
    }
    Ok(out)
}
