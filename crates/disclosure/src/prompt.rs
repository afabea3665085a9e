//! The system-prompt snippet that teaches a model the discovery rules of one tool set.

use crate::discovery::{Detail, DiscoveryMode};
use crate::toolset::ToolSet;

impl ToolSet {
    /// Instructions for the system prompt, generated from this set's configuration: which
    /// discovery tools exist and how to use them, which facades unfold, and what to do when a
    /// tool is unavailable. Empty lines separate the rules; nothing is said about tools the set
    /// does not have.
    pub fn system_prompt(&self) -> String {
        let config = &self.config().discovery;
        let discovery = self.discovery_names();
        let mut rules: Vec<String> = Vec::new();
        let search = match config.mode {
            DiscoveryMode::Off => None,
            DiscoveryMode::General => Some("search_tool_by_category".to_owned()),
            DiscoveryMode::Domains => {
                let domains: Vec<&String> = discovery.iter().filter(|n| n.starts_with("discover_")).collect();
                Some(domains.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" / "))
            }
        };
        if let Some(search) = &search {
            let mut rule = format!(
                "Discover before assuming: you see only some of the available tools. When none of them fits the task, call {search} with a short description of the task. Never guess a tool name or id."
            );
            if config.mode == DiscoveryMode::General {
                rule.push_str(" To narrow a search, pass category_path; search_nodes and list show the categories.");
            }
            rules.push(rule);
            match config.detail {
                Detail::Full => rules.push(
                    "Search answers include full tool definitions; the tools found become callable directly.".into(),
                ),
                _ => rules.push(
                    "Expand before calling: call expand_tool with the tool_id you choose; it returns the arguments and makes the tool callable under the name in callable_as. Call a tool only with arguments that match its definition."
                        .into(),
                ),
            }
            if discovery.iter().any(|n| n == "call_tool") {
                rules.push("call_tool calls an expanded tool by id with its arguments.".into());
            }
            rules.push(
                "If a search answers NO_MATCH_IN_CATEGORY, follow its hints (another category, a broader query) instead of repeating it."
                    .into(),
            );
        }
        let facades = self.facades();
        if !facades.is_empty() {
            let names: Vec<&str> = facades.iter().map(|f| f.name.as_str()).collect();
            let mut rule = format!(
                "Some tools stand for a group of tools ({}): calling one reveals its tools, and its reply says how to use them.",
                names.join(", ")
            );
            if facades.iter().any(|f| f.exclusive) {
                rule.push_str(
                    " While an exclusive group is open only its tools are available; call its fold_ tool when done.",
                );
            }
            rules.push(rule);
        }
        rules.push(
            "If a tool answers UNAVAILABLE, or a search names tools under `unavailable`, tell the user why (what to start or configure) instead of retrying or settling for a lesser tool."
                .into(),
        );
        let numbered: Vec<String> = rules.iter().enumerate().map(|(i, r)| format!("{}. {r}", i + 1)).collect();
        format!("Using tools:\n{}", numbered.join("\n"))
    }
}
