//! Rate-limit buckets in PostgreSQL, shared by a fleet: one budget for a principal whichever
//! replica it reaches. A call's buckets are taken from in one statement (`toolsearch_take`,
//! migration 2), on a connection of their own (calls never queue behind a guard pass), opened
//! again after a failure. A bucket that has refilled is deleted ([`prune_full`], migration 9).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::RwLock;
use tokio_postgres::Client;
use toolsearch_mcp::rate::{SharedBuckets, SharedTake};

/// How often a replica deletes the buckets that are full again.
const PRUNE_EVERY: Duration = Duration::from_secs(10);
/// The most buckets one pruning statement deletes.
const PRUNE_BATCH: i64 = 10_000;

/// The longest a take may wait for the database before the call meets `rate_when_store_down`.
const TAKE_TIMEOUT: Duration = Duration::from_secs(2);

/// The fleet's buckets in the database at `url`.
pub(crate) struct PgBuckets {
    url: String,
    client: RwLock<Option<Arc<Client>>>,
}

impl std::fmt::Debug for PgBuckets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgBuckets")
    }
}

impl PgBuckets {
    /// Buckets in the database at `url` (connected at the first call).
    pub(crate) fn new(url: String) -> PgBuckets {
        PgBuckets { url, client: RwLock::new(None) }
    }

    async fn client(&self) -> Result<Arc<Client>, String> {
        if let Some(c) = self.client.read().await.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let mut slot = self.client.write().await;
        if let Some(c) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let (client, _) = super::postgres::open(&self.url).await?;
        // A bucket's last few updates may be lost if the database crashes (a budget a little
        // more generous once), never corrupted; not waiting for the WAL flush takes a call's
        // cost from a disk sync (~2 ms) to a round trip (docs/scaling.md).
        client
            .batch_execute("SET synchronous_commit TO off")
            .await
            .map_err(|e| crate::secrets::mask(&e.to_string()))?;
        let client = Arc::new(client);
        *slot = Some(client.clone());
        Ok(client)
    }

    async fn take_now(&self, takes: &[(String, f64, f64)]) -> Result<Option<Duration>, String> {
        let mut sorted: Vec<&(String, f64, f64)> = takes.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        // The limiter's keys join their parts with NUL, which PostgreSQL's text cannot hold.
        let keys: Vec<String> = sorted.iter().map(|t| t.0.replace('\0', "\u{1f}")).collect();
        let caps: Vec<f64> = sorted.iter().map(|t| t.1).collect();
        let rates: Vec<f64> = sorted.iter().map(|t| t.2).collect();
        let client = self.client().await?;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&keys, &caps, &rates];
        let asked = client.query_one("SELECT toolsearch_take($1, $2, $3)", &params);
        let row = match tokio::time::timeout(TAKE_TIMEOUT, asked).await {
            Ok(Ok(row)) => row,
            Ok(Err(e)) => return Err(crate::secrets::mask(&e.to_string())),
            Err(_) => {
                // A database that stopped answering: the next call opens a new connection.
                *self.client.write().await = None;
                return Err("the state store did not answer within 2 s".into());
            }
        };
        let wait: f64 = row.get(0);
        Ok((wait > 0.0).then(|| Duration::from_secs_f64(wait)))
    }
}

impl SharedBuckets for PgBuckets {
    fn take<'a>(&'a self, takes: &'a [(String, f64, f64)]) -> SharedTake<'a> {
        Box::pin(self.take_now(takes))
    }
}

/// Deletes the fleet's buckets that have refilled (a take finds a missing bucket full, so
/// nothing changes for any caller), every [`PRUNE_EVERY`], until the gateway stops: the table
/// holds only the keys taken from within their refill time, however many addresses send
/// refused tokens. A bucket a take holds is skipped and left to it.
pub(crate) async fn prune_full(url: String) {
    let mut client: Option<Client> = None;
    loop {
        tokio::time::sleep(PRUNE_EVERY).await;
        if client.as_ref().is_none_or(Client::is_closed) {
            client = super::postgres::open(&url).await.ok().map(|(c, _)| c);
        }
        let Some(c) = client.as_ref() else { continue };
        loop {
            let deleted = c
                .execute(
                    "DELETE FROM toolsearch_buckets WHERE key = ANY(ARRAY(SELECT key FROM toolsearch_buckets \
                     WHERE full_at < clock_timestamp() LIMIT $1 FOR UPDATE SKIP LOCKED))",
                    &[&PRUNE_BATCH],
                )
                .await;
            match deleted {
                Ok(n) if n as i64 == PRUNE_BATCH => continue,
                Ok(_) => break,
                Err(_) => {
                    client = None;
                    break;
                }
            }
        }
    }
}
