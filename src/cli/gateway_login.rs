//! `toolsearch gateway login SERVER` and `gateway logout SERVER`: the gateway's OAuth grants
//! for upstream servers (`toolsearch_gateway::login`).

use std::path::Path;

use serde_json::json;
use toolsearch::mcp::{GatewayConfig, ServerSpec};

use super::common::Global;
use super::failure::{Failure, Problem};
use super::output::{say, say_err};

/// The URL and `oauth` section of `server`, or why it has none.
fn oauth_server<'c>(
    config: &'c GatewayConfig,
    server: &str,
) -> Result<(&'c str, &'c toolsearch::gateway::login::UpstreamOAuth), Failure> {
    match config.servers.get(server) {
        Some(ServerSpec::Http { url, oauth: Some(oauth), .. }) => Ok((url, oauth)),
        Some(_) => Err(Problem::InvalidConfig.because(format!(
            "{}: server {server:?} has no \"oauth\" section: the gateway does not log in to it",
            config.path.display()
        ))),
        None => Err(Problem::InvalidConfig.because(format!("{}: no server {server:?}", config.path.display()))),
    }
}

/// Runs the login; the address to open goes to stdout (or as JSON with `--json`).
pub(crate) fn login(
    global: &Global,
    config: &GatewayConfig,
    state: &Path,
    server: &str,
    how: toolsearch::gateway::login::How,
) -> Result<(), Failure> {
    let (url, oauth) = oauth_server(config, server)?;
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| Problem::Io.because(e))?;
    let json = global.json;
    let say = move |text: &str| match json {
        true => say!("{}", json!({"login": text})),
        false => say!("{text}"),
    };
    // In a fleet, the login runs as the client the fleet registered, if it did.
    runtime
        .block_on(toolsearch::gateway::store::shared_registrations(&config.settings.state, state))
        .map_err(|e| Problem::Gateway.because(toolsearch::gateway::store::store_error(&config.path, e)))?;
    runtime
        .block_on(toolsearch::gateway::login::login(server, url, oauth, state, how, &say))
        .map_err(|e| Problem::Gateway.because(e))?;
    // In a fleet, every replica takes the grant from the shared store.
    runtime
        .block_on(toolsearch::gateway::store::shared_login(&config.settings.state, state, server))
        .map_err(|e| Problem::Gateway.because(toolsearch::gateway::store::store_error(&config.path, e)))
}

/// Forgets the gateway's grant; with `callers`, every caller's own instead (the gateway's
/// stays, so the server stays up and each caller is asked again).
pub(crate) fn logout(
    global: &Global,
    config: &GatewayConfig,
    state: &Path,
    server: &str,
    callers: bool,
) -> Result<(), Failure> {
    oauth_server(config, server)?;
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| Problem::Io.because(e))?;
    let store = |e| Problem::Gateway.because(toolsearch::gateway::store::store_error(&config.path, e));
    if callers {
        let forgotten =
            toolsearch::gateway::login::logout_callers(server, state).map_err(|e| Problem::Io.because(e))?;
        runtime
            .block_on(toolsearch::gateway::store::shared_logout_callers(&config.settings.state, server))
            .map_err(store)?;
        match global.json {
            true => say!("{}", json!({"logged_out_callers": server, "forgotten": forgotten.len()})),
            false => say_err!(
                "forgot {} callers' grants for {server}; each is asked to log in again at its next call",
                forgotten.len()
            ),
        }
        return Ok(());
    }
    let had =
        runtime.block_on(toolsearch::gateway::login::logout(server, state)).map_err(|e| Problem::Io.because(e))?;
    runtime.block_on(toolsearch::gateway::store::shared_logout(&config.settings.state, server)).map_err(store)?;
    match (global.json, had) {
        (true, _) => say!("{}", json!({"logged_out": server, "had_grant": had})),
        (false, true) => say_err!("forgot the grant for {server}; a running gateway stops using it within seconds"),
        (false, false) => say_err!("{server} had no grant"),
    }
    Ok(())
}
