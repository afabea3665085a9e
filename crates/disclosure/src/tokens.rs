//! Token counts with a real LLM tokenizer (tiktoken's `o200k_base`, the GPT-4o vocabulary,
//! shipped inside the tiktoken-rs crate: nothing is downloaded).

use tiktoken_rs::CoreBPE;

use crate::definition::ToolDef;
use crate::render::{render, Dialect};

/// Counts tokens.
pub struct TokenCounter {
    bpe: CoreBPE,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter(o200k_base)")
    }
}

impl TokenCounter {
    /// The `o200k_base` tokenizer.
    pub fn new() -> TokenCounter {
        TokenCounter { bpe: tiktoken_rs::o200k_base().expect("o200k_base ships with tiktoken-rs") }
    }

    /// Tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }

    /// Tokens of tool definitions as sent to a model in `dialect`'s JSON.
    pub fn definitions(&self, defs: &[ToolDef], dialect: Dialect) -> usize {
        self.count(&render(defs, dialect).to_string())
    }
}

impl Default for TokenCounter {
    fn default() -> Self {
        TokenCounter::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_real_tokens() {
        let t = TokenCounter::new();
        assert_eq!(t.count(""), 0);
        assert_eq!(t.count("hello world"), 2);
        let long = "search the catalogue ".repeat(100);
        assert!(t.count(&long) >= 300 && t.count(&long) <= 400);
    }
}
