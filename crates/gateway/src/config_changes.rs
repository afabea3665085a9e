//! What a reload of the gateway's config changed, as the keeper ([`crate::keeper`]) weighs
//! it: the servers to restart, the settings only a restart applies, the tokens changed, and
//! whether two sets of listings index alike.

use std::collections::BTreeMap;

use serde_json::json;
use toolsearch_mcp::Grant;

use crate::config::GatewayConfig;
use crate::listing::Listing;

/// What every server is started with: the bounds on what it may send (its tool list, a
/// result) and how long it may take to start (`connect_timeout_secs`). A change restarts every
/// server.
pub(crate) fn bounds(config: &GatewayConfig) -> (crate::listing::ListLimits, usize, u64) {
    let s = &config.settings;
    (s.limits.list, s.limits.max_result_bytes, s.connect_timeout_secs)
}

/// Whether server `name` of `config` is lazy, and then how long it may idle
/// (`idle_stop_secs`): fixed when it starts, so a change restarts it, as a change to how it is
/// reached does.
pub(crate) fn lazy(config: &GatewayConfig, name: &str) -> Option<u64> {
    config.policies.get(name).is_some_and(|p| p.lazy).then_some(config.settings.idle_stop_secs)
}

/// The settings a running gateway cannot change: where it keeps state (its index, pins,
/// trail and logins). Named so the operator knows to restart.
pub(crate) fn restart_needed(old: &GatewayConfig, new: &GatewayConfig) -> Vec<&'static str> {
    if old.settings.state != new.settings.state {
        vec!["state"]
    } else {
        Vec::new()
    }
}

/// The names (never the values) of the tokens `new` adds, removes and grants otherwise.
pub(crate) fn token_changes(old: &BTreeMap<String, Grant>, new: &BTreeMap<String, Grant>) -> serde_json::Value {
    let names = |from: &BTreeMap<String, Grant>, keep: &dyn Fn(&String, &Grant) -> bool| -> Vec<String> {
        from.iter().filter(|(t, g)| keep(t, g)).map(|(_, g)| g.name.clone()).collect()
    };
    json!({
        "added": names(new, &|t, _| !old.contains_key(t)),
        "removed": names(old, &|t, _| !new.contains_key(t)),
        "changed": names(new, &|t, g| old.get(t).is_some_and(|o| o != g)),
    })
}

/// Whether two sets of listings index alike: the same servers, summaries, tools and prompts
/// (resources are passed through, not indexed).
pub(crate) fn same_listings(a: &BTreeMap<String, Listing>, b: &BTreeMap<String, Listing>) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((na, la), (nb, lb))| {
            na == nb
                && la.summary == lb.summary
                && la.tools == lb.tools
                && la.offers.prompts == lb.offers.prompts
                && la.offers.prompt_texts == lb.offers.prompt_texts
                && la.offers.templates == lb.offers.templates
        })
}
