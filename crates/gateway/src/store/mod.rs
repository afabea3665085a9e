//! Where a gateway keeps what its replicas must agree on: the local state directory (the
//! default, embedded, needing nothing), or PostgreSQL shared by a fleet of replicas
//! (`toolsearch.state.store: "postgres://..."`, docs/scaling.md "A fleet of gateways").
//!
//! With PostgreSQL, the pins are the database's: each replica pulls them into its own state
//! directory before a guard pass (so the guard, `vetted` and the files stay as they are),
//! pushes what the pass decided after it (a pin it made or moved only where the shared pin is
//! still the one it pulled: two replicas never overwrite each other's decisions), and keeps its
//! held tools in the store, where `gateway held` and `gateway approve` read them. An approval
//! is written in one transaction that `NOTIFY`s every replica, which pulls and judges again.
//!
//! Rate-limit buckets are kept there too (`buckets.rs`), so a principal has one budget across
//! the fleet, each replica's audit trail is shipped there (`audit.rs`), and upstream OAuth
//! grants are shared there, sealed (`grants.rs`), as are the listings of lazy servers
//! (`listings.rs`) and the query adapter learned from the fleet's trail (`adapters.rs`).
//!
//! When the database is away a replica is fail-static: it serves what it read, reports itself
//! not ready, and trusts nothing new (a tool first seen is held, `trust: "auto"` moves no pin)
//! until the database is back.

pub(crate) mod adapters;
pub mod audit;
mod buckets;
pub(crate) mod grants;
pub(crate) mod listings;
mod migrations;
pub(crate) mod postgres;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

pub use crate::config::StateSettings;
use crate::pins::{Held, HeldNow};
use toolsearch_mcp::ServeError;

pub(crate) use buckets::{prune_full, PgBuckets};
pub(crate) use postgres::PgStore;

/// This replica's id, kept in `STATE/replica-id` (made on first start): the held tools in the
/// store are kept per replica.
pub(crate) fn replica_id(state: &Path) -> String {
    let path = state.join("replica-id");
    // Kept as a JSON string.
    let read = || std::fs::read_to_string(&path).ok().map(|t| t.trim().trim_matches('"').to_owned());
    if let Some(id) = read().filter(|id| !id.is_empty()) {
        return id;
    }
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let _ = crate::pins::write_atomic(state, "replica-id", &id);
    id
}

/// Runs a guard pass (`pass`, given whether it may trust something new) with the store around
/// it: the shared pins pulled first, its decisions pushed after; when another replica decided
/// first, pulled and run once more. What the last pass returned, and whether it could trust.
pub(crate) async fn guarded<T, F, Fut>(
    store: Option<&Arc<PgStore>>,
    state: &Path,
    held: &HeldNow,
    mut pass: F,
) -> Result<(T, bool), ServeError>
where
    F: FnMut(bool) -> Fut,
    Fut: std::future::Future<Output = Result<T, ServeError>>,
{
    let Some(store) = store else { return Ok((pass(true).await?, true)) };
    let mut tries = 2;
    loop {
        let trust_new = store.pull(state).await.is_ok();
        let out = pass(trust_new).await?;
        tries -= 1;
        if !trust_new {
            return Ok((out, false));
        }
        let now: Vec<Held> = held.lock().unwrap_or_else(|p| p.into_inner()).0.clone();
        match store.push(state, &now).await {
            Ok(true) if tries > 0 => continue,
            Ok(_) => return Ok((out, true)),
            // Pushed nothing: the pins it made stay local until the next pass pulls over them.
            Err(_) => return Ok((out, false)),
        }
    }
}

/// `gateway held` against the store at `url`: every replica's held tools, each definition once.
pub async fn held_in(url: &str) -> Result<Vec<Held>, String> {
    let (client, _) = postgres::open(url).await?;
    let rows = client
        .query("SELECT DISTINCT ON (id, digest) held FROM toolsearch_held ORDER BY id, digest, seen_at DESC", &[])
        .await
        .map_err(|e| crate::secrets::mask(&e.to_string()))?;
    rows.iter().map(|r| serde_json::from_value(r.get::<_, Value>(0)).map_err(|e| e.to_string())).collect()
}

/// `gateway approve` against the store at `url`: in one transaction, the held definition the
/// operator named by digest is pinned, its held rows dropped, and every replica told.
pub async fn approve_in(url: &str, tool: &str, digest: Option<&str>) -> Result<Held, String> {
    let (mut client, _) = postgres::open(url).await?;
    let db = |e: tokio_postgres::Error| crate::secrets::mask(&e.to_string());
    let tx = client.transaction().await.map_err(db)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&postgres::PINS_LOCK]).await.map_err(db)?;
    let rows = tx.query("SELECT held FROM toolsearch_held ORDER BY seen_at DESC", &[]).await.map_err(db)?;
    let held: Vec<Held> = rows.iter().filter_map(|r| serde_json::from_value(r.get::<_, Value>(0)).ok()).collect();
    let h = crate::approve::pick(&held, tool, digest)?;
    let mut pin = h.seen.clone();
    pin.approved_flagged = !h.flags.is_empty();
    let value = serde_json::to_value(&pin).map_err(|e| e.to_string())?;
    tx.execute(
        "INSERT INTO toolsearch_pins (id, digest, pin) VALUES ($1, $2, $3) \
         ON CONFLICT (id) DO UPDATE SET digest = EXCLUDED.digest, pin = EXCLUDED.pin, updated_at = now()",
        &[&h.tool, &pin.digest, &value],
    )
    .await
    .map_err(db)?;
    tx.execute("DELETE FROM toolsearch_held WHERE id = $1 AND digest = $2", &[&h.tool, &pin.digest])
        .await
        .map_err(db)?;
    tx.batch_execute(&format!("NOTIFY {}", postgres::CHANNEL)).await.map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(h)
}

/// Before `gateway login`: in a fleet (a PostgreSQL store with a `key`), the client
/// registrations the fleet made with authorization servers, kept under `state`, so the login
/// runs as the fleet's client rather than registering another.
pub async fn shared_registrations(settings: &StateSettings, state: &Path) -> Result<(), String> {
    match (settings.postgres(), settings.key.as_deref()) {
        (Some(url), Some(key)) => grants::SharedGrants::new(url, key).sync_registrations(state).await,
        _ => Ok(()),
    }
}

/// After `gateway login SERVER` saved a grant under `state`: in a fleet (a PostgreSQL store
/// with a `key`), the grant (and any client it registered) sealed into the store, where every
/// replica takes it from.
pub async fn shared_login(settings: &StateSettings, state: &Path, server: &str) -> Result<(), String> {
    match (settings.postgres(), settings.key.as_deref()) {
        (Some(url), Some(key)) => {
            let shared = grants::SharedGrants::new(url, key);
            shared.sync_once(state, server).await?;
            shared.sync_registrations(state).await
        }
        _ => Ok(()),
    }
}

/// After `gateway logout SERVER`: in a fleet, every replica forgets the grant too.
pub async fn shared_logout(settings: &StateSettings, server: &str) -> Result<(), String> {
    match (settings.postgres(), settings.key.as_deref()) {
        (Some(url), Some(key)) => grants::SharedGrants::new(url, key).forget(server).await,
        _ => Ok(()),
    }
}

/// After `gateway logout SERVER --callers`: in a fleet, every caller's own grant for `server`
/// is forgotten in the store too (also those this host never had).
pub async fn shared_logout_callers(settings: &StateSettings, server: &str) -> Result<(), String> {
    match (settings.postgres(), settings.key.as_deref()) {
        (Some(url), Some(key)) => grants::SharedGrants::new(url, key).forget_callers(server).await,
        _ => Ok(()),
    }
}

/// The error a command against the store answers, naming the config that names the store.
pub fn store_error(config: &Path, e: String) -> ServeError {
    ServeError::Config(config.to_path_buf(), format!("toolsearch.state.store: {e}"))
}
