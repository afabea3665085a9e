//! The kept listings shared by a fleet: a lazy server's tools are indexed from the listing
//! kept for it (`STATE/listings/NAME.json`) while it is stopped, and another server's while it
//! starts (held unavailable), so a replica that starts on a fresh state dir takes the fleet's
//! kept listings from the store first, and does not have to start every lazy server once to
//! index it. Each replica pushes a listing it kept when it differs from the store's. A listing
//! names the digest of how its server is started, so one kept under another entry is ignored
//! as a local one would be; its tools are judged by the shared pins, and a call still checks
//! the live listing (`crate::vetted`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tokio_postgres::Client;

fn dir(state: &Path) -> PathBuf {
    state.join("listings")
}

/// The local listings: (server, content).
fn local(state: &Path) -> Vec<(String, Value)> {
    let Ok(entries) = std::fs::read_dir(dir(state)) else { return Vec::new() };
    entries
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?.strip_suffix(".json")?.to_owned();
            let value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
            Some((name, value))
        })
        .collect()
}

/// Writes each listing the store has and `state` lacks.
pub(crate) async fn pull(client: &Client, state: &Path) -> Result<usize, String> {
    let rows = client
        .query("SELECT server, listing FROM toolsearch_listings", &[])
        .await
        .map_err(|e| crate::secrets::mask(&e.to_string()))?;
    let mut written = 0;
    for row in rows {
        let (server, listing): (String, Value) = (row.get(0), row.get(1));
        let path = dir(state).join(format!("{server}.json"));
        if server.contains(['/', '\\', '.']) || path.exists() {
            continue;
        }
        std::fs::create_dir_all(dir(state)).map_err(|e| e.to_string())?;
        crate::pins::write_atomic(&dir(state), &format!("{server}.json"), &listing).map_err(|e| e.to_string())?;
        written += 1;
    }
    Ok(written)
}

/// Pushes each local listing that differs from the store's.
async fn push(client: &Client, state: &Path) -> Result<(), String> {
    for (server, listing) in local(state) {
        client
            .execute(
                "INSERT INTO toolsearch_listings (server, listing) VALUES ($1, $2) \
                 ON CONFLICT (server) DO UPDATE SET listing = EXCLUDED.listing \
                 WHERE toolsearch_listings.listing IS DISTINCT FROM EXCLUDED.listing",
                &[&server, &listing],
            )
            .await
            .map_err(|e| crate::secrets::mask(&e.to_string()))?;
    }
    Ok(())
}

/// Before the upstreams start: the fleet's listings this state dir lacks, within 5 s.
pub(crate) async fn take_fleets(url: &str, state: &Path) -> Result<usize, String> {
    let pulled = async {
        let (client, _) = super::postgres::open(url).await?;
        pull(&client, state).await
    };
    tokio::time::timeout(Duration::from_secs(5), pulled)
        .await
        .map_err(|_| "the store did not answer in 5 s".to_owned())?
}

/// Pushes this replica's kept listings every 2 s until the gateway stops.
pub(crate) async fn keep_pushed(url: String, state: PathBuf) {
    let mut client: Option<Client> = None;
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        if client.as_ref().is_none_or(Client::is_closed) {
            client = super::postgres::open(&url).await.ok().map(|(c, _)| c);
        }
        if let Some(c) = client.as_ref() {
            if push(c, &state).await.is_err() {
                client = None;
            }
        }
    }
}
