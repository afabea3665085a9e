//! Results over the size limit a client is given (`toolsearch.limits.max_result_bytes`), cut
//! to it with a notice, never forwarded whole: more would flood a model's context.
//!
//! Content blocks are kept in order while they fit; the text block that crosses the limit is
//! cut at a character boundary; what follows, and `structuredContent` when it does not fit, is
//! left out; a last text block says what was cut and how to get the rest. (An answer too large
//! to be held at all, over the stdio line bound, is still refused as `RESULT_TOO_LARGE`.)

use rmcp::model::{CallToolResult, ContentBlock as Content};

/// Bytes kept back from the limit for the notice.
const NOTICE_BYTES: usize = 512;

/// `result`, whose JSON is `bytes` long, cut to fit in `limit` bytes of JSON with a notice.
pub(crate) fn cut(result: CallToolResult, bytes: usize, limit: usize) -> CallToolResult {
    let mut budget = limit.saturating_sub(NOTICE_BYTES);
    let mut kept = Vec::new();
    let mut left_out = 0usize;
    for block in result.content {
        let size = json_len(&block);
        if left_out == 0 && size <= budget {
            budget -= size;
            kept.push(block);
            continue;
        }
        if left_out == 0 {
            if let Some(text) = block.as_text().map(|t| t.text.clone()) {
                let part = fit(&text, budget);
                budget = budget.saturating_sub(json_len(&Content::text(part.clone())));
                if !part.is_empty() {
                    kept.push(Content::text(part));
                }
            }
        }
        left_out += 1;
    }
    let structured = result.structured_content.filter(|s| {
        let fits = s.to_string().len() <= budget;
        if fits {
            budget -= s.to_string().len();
        }
        fits
    });
    let mut notice = format!(
        "[toolsearch gateway: this result was {bytes} bytes, over the limit of {limit} bytes this gateway passes on \
         (toolsearch.limits.max_result_bytes), so it was cut"
    );
    if structured.is_none() && kept.len() < left_out + kept.len() {
        notice.push_str("; what did not fit was left out");
    }
    notice.push_str(". Ask for less (a narrower query, fewer items, a page or a range at a time) to see the rest.]");
    kept.push(Content::text(notice));
    let mut out = match result.is_error {
        Some(true) => CallToolResult::error(kept),
        _ => CallToolResult::success(kept),
    };
    out.structured_content = structured;
    out
}

/// The longest prefix of `text` (on a character boundary) whose JSON text block fits `budget`.
fn fit(text: &str, budget: usize) -> String {
    let mut end = budget.min(text.len());
    loop {
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let size = json_len(&Content::text(text[..end].to_owned()));
        if size <= budget || end == 0 {
            return text[..end].to_owned();
        }
        // Escapes made it longer than its bytes: shrink by the excess and try again.
        end = end.saturating_sub(size - budget);
    }
}

fn json_len(block: &Content) -> usize {
    serde_json::to_vec(block).map_or(usize::MAX, |v| v.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(r: &CallToolResult) -> usize {
        serde_json::to_vec(r).unwrap().len()
    }

    #[test]
    fn a_large_result_is_cut_to_the_limit_with_a_notice() {
        let big = CallToolResult::success(vec![
            Content::text("head".to_owned()),
            Content::text("é\"\n".repeat(200_000)),
            Content::text("tail".to_owned()),
        ]);
        let bytes = size(&big);
        let out = cut(big, bytes, 65_536);
        assert!(size(&out) <= 65_536, "{}", size(&out));
        let texts: Vec<&str> = out.content.iter().filter_map(|c| c.as_text().map(|t| t.text.as_str())).collect();
        assert_eq!(texts[0], "head");
        assert!(texts[1].len() > 20_000 && texts[1].starts_with("é\""), "most of the budget is used");
        assert!(texts.last().unwrap().contains(&bytes.to_string()) && texts.last().unwrap().contains("65536"));
        assert!(!texts.contains(&"tail"));
        assert_eq!(out.is_error, Some(false));
    }

    #[test]
    fn an_error_stays_an_error_and_structured_content_that_does_not_fit_is_left_out() {
        let mut big = CallToolResult::error(vec![Content::text("x".repeat(10_000))]);
        big.structured_content = Some(serde_json::json!({"rows": "y".repeat(10_000)}));
        let bytes = size(&big);
        let out = cut(big, bytes, 4_096);
        assert!(size(&out) <= 4_096);
        assert_eq!((out.is_error, out.structured_content.is_none()), (Some(true), true));
    }
}
