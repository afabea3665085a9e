//! The PostgreSQL store: one connection per replica, kept open (and reopened, every second,
//! while the database is away), that carries both the replica's queries and its `LISTEN` for
//! changes other replicas make.
//!
//! Why tokio-postgres: it is the driver sqlx and deadpool build on, pure Rust, async on the
//! runtime the gateway already runs, and small (no compile-time query checking, no macros).
//! The store carries the control plane (pins, holds, approvals), never a per-call query, so one
//! connection a replica is enough; its notifications arrive on that same connection.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::watch;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use crate::pins::{lock, read_pins, write_atomic, Held, Pin, Pins, LOCK_FILE, PINS_FILE, PINS_VERSION};

/// The channel replicas are told on that pins changed (an approval, a trusted change).
pub(crate) const CHANNEL: &str = "toolsearch_pins";
/// The advisory lock a pins transaction holds (approvals and guard passes never interleave).
pub(crate) const PINS_LOCK: i64 = 0x7473_7069_6e73_0001;
/// How long a replica waits before it tries a lost database again.
const RETRY: Duration = Duration::from_secs(1);
/// The longest a query may take before the database counts as away.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// A replica's handle on the shared store.
pub(crate) struct PgStore {
    url: String,
    /// This replica's id (kept in its state dir): whose held rows are whose.
    replica: String,
    client: tokio::sync::Mutex<Option<Client>>,
    up: AtomicBool,
    /// Bumped on each notification and each (re)connection: the keeper pulls when it moves.
    changes: watch::Sender<u64>,
    /// The pins as last pulled: what a push compares against.
    pulled: Mutex<BTreeMap<String, Pin>>,
    /// Why the database was last unreachable (masked), for `/readyz` and the status.
    last_error: Mutex<String>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("replica", &self.replica).field("up", &self.is_up()).finish()
    }
}

/// Opens a connection and applies the migrations; the client and a stream of notifications.
pub(crate) async fn open(url: &str) -> Result<(Client, futures::channel::mpsc::UnboundedReceiver<()>), String> {
    let (mut client, mut connection) = tokio::time::timeout(QUERY_TIMEOUT, tokio_postgres::connect(url, NoTls))
        .await
        .map_err(|_| "the database did not answer within 5 s".to_owned())?
        .map_err(|e| e.to_string())?;
    let (tx, rx) = futures::channel::mpsc::unbounded();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(m)) = messages.next().await {
            if let AsyncMessage::Notification(_) = m {
                let _ = tx.unbounded_send(());
            }
        }
        // Dropping `tx` ends the receiver: the connection is gone.
    });
    super::migrations::migrate(&mut client).await?;
    Ok((client, rx))
}

impl PgStore {
    /// Starts keeping a connection to `url` for the replica `replica`, waiting at most
    /// `first` for the first one (a replica that starts while the database is away serves
    /// what its state dir kept, not ready, and connects when it can).
    pub(crate) async fn start(url: String, replica: String, first: Duration) -> Arc<PgStore> {
        let store = Arc::new(PgStore {
            url,
            replica,
            client: tokio::sync::Mutex::new(None),
            up: AtomicBool::new(false),
            changes: watch::Sender::new(0),
            pulled: Mutex::default(),
            last_error: Mutex::new("not connected yet".into()),
        });
        let mut changes = store.changes.subscribe();
        tokio::spawn(store.clone().keep_connected());
        let _ = tokio::time::timeout(first, changes.changed()).await;
        store
    }

    async fn keep_connected(self: Arc<Self>) {
        loop {
            match open(&self.url).await {
                Ok((client, mut told)) => {
                    let listened = client.batch_execute(&format!("LISTEN {CHANNEL}")).await;
                    if let Err(e) = listened {
                        self.down(&e.to_string());
                    } else {
                        *self.client.lock().await = Some(client);
                        self.up.store(true, Ordering::SeqCst);
                        // Whatever changed while this replica was away is pulled now.
                        self.changes.send_modify(|g| *g += 1);
                        while told.next().await.is_some() {
                            self.changes.send_modify(|g| *g += 1);
                        }
                        self.down("the connection to the database was lost");
                    }
                }
                Err(e) => self.down(&e),
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    fn down(&self, why: &str) {
        self.up.store(false, Ordering::SeqCst);
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = crate::secrets::mask(why);
        if let Ok(mut client) = self.client.try_lock() {
            *client = None;
        }
    }

    /// Whether the database answered last time it was asked.
    pub(crate) fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }

    /// Why the store is not usable now, if it is not.
    pub(crate) fn unready(&self) -> Option<String> {
        (!self.is_up()).then(|| {
            let why = self.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone();
            format!("the shared state store is unreachable ({why}): serving what was read, trusting nothing new")
        })
    }

    /// How many times the store has been told of a change (or reconnected).
    pub(crate) fn generation(&self) -> u64 {
        *self.changes.borrow()
    }

    /// Runs `f` on the connection, counting the database away if it fails or takes too long.
    async fn with_client<T>(
        &self,
        f: impl for<'c> FnOnce(&'c mut Client) -> futures::future::BoxFuture<'c, Result<T, tokio_postgres::Error>>,
    ) -> Result<T, String> {
        let mut guard = self.client.lock().await;
        let Some(client) = guard.as_mut() else {
            return Err(self.unready().unwrap_or_else(|| "not connected".into()));
        };
        match tokio::time::timeout(QUERY_TIMEOUT, f(client)).await {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(e)) => {
                if e.is_closed() {
                    *guard = None;
                    drop(guard);
                    self.down(&e.to_string());
                }
                Err(crate::secrets::mask(&e.to_string()))
            }
            Err(_) => {
                // Dropping the client ends its connection: `keep_connected` opens another.
                *guard = None;
                drop(guard);
                self.down("a query took longer than 5 s");
                Err("the state store did not answer within 5 s".into())
            }
        }
    }

    /// Reads the shared pins into `STATE/pins.json` (rewritten only when they differ, so an
    /// unchanged store never looks like an approval); whether the file changed.
    pub(crate) async fn pull(&self, state: &Path) -> Result<bool, String> {
        let rows = self
            .with_client(|c| Box::pin(async move { c.query("SELECT id, pin FROM toolsearch_pins", &[]).await }))
            .await?;
        let mut shared = BTreeMap::new();
        for row in rows {
            let (id, pin): (String, Value) = (row.get(0), row.get(1));
            let pin: Pin = serde_json::from_value(pin).map_err(|e| format!("toolsearch_pins row {id:?}: {e}"))?;
            shared.insert(id, pin);
        }
        let _lock = lock(state).map_err(|e| format!("{}: {e}", state.join(LOCK_FILE).display()))?;
        let local = read_pins(state).map_err(|e| e.to_string())?;
        let changed = local.pins != shared || local.version != PINS_VERSION;
        if changed {
            let pins = Pins { version: PINS_VERSION, pins: shared.clone() };
            write_atomic(state, PINS_FILE, &pins).map_err(|e| e.to_string())?;
        }
        *self.pulled.lock().unwrap_or_else(|p| p.into_inner()) = shared;
        Ok(changed)
    }

    /// Writes what a guard pass decided since the last pull: pins it made or moved (each only
    /// if the shared pin is still the one pulled: another replica's decision is never
    /// overwritten) and this replica's held tools. Whether another replica's decision came
    /// first (then pull and guard again).
    pub(crate) async fn push(&self, state: &Path, held: &[Held]) -> Result<bool, String> {
        let local = read_pins(state).map_err(|e| e.to_string())?.pins;
        let pulled = self.pulled.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut writes: Vec<(String, Option<String>, Option<Pin>)> = Vec::new();
        for (id, pin) in &local {
            match pulled.get(id) {
                None => writes.push((id.clone(), None, Some(pin.clone()))),
                Some(old) if old != pin => writes.push((id.clone(), Some(old.digest.clone()), Some(pin.clone()))),
                Some(_) => {}
            }
        }
        for (id, old) in &pulled {
            if !local.contains_key(id) {
                writes.push((id.clone(), Some(old.digest.clone()), None));
            }
        }
        let held: Vec<(String, String, Value)> = held
            .iter()
            .map(|h| (h.tool.clone(), h.seen.digest.clone(), serde_json::to_value(h).unwrap_or_default()))
            .collect();
        let replica = self.replica.clone();
        let conflict = self
            .with_client(move |c| {
                Box::pin(async move {
                    let tx = c.transaction().await?;
                    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PINS_LOCK]).await?;
                    let (mut conflict, mut moved) = (false, false);
                    for (id, old, new) in &writes {
                        let n = match (old, new) {
                            (None, Some(pin)) => {
                                let value = serde_json::to_value(pin).unwrap_or_default();
                                tx.execute(
                                    "INSERT INTO toolsearch_pins (id, digest, pin) VALUES ($1, $2, $3) \
                                     ON CONFLICT (id) DO NOTHING",
                                    &[id, &pin.digest, &value],
                                )
                                .await?
                            }
                            (Some(old), Some(pin)) => {
                                moved = true;
                                let value = serde_json::to_value(pin).unwrap_or_default();
                                tx.execute(
                                    "UPDATE toolsearch_pins SET digest = $2, pin = $3, updated_at = now() \
                                     WHERE id = $1 AND digest = $4",
                                    &[id, &pin.digest, &value, old],
                                )
                                .await?
                            }
                            (Some(old), None) => {
                                tx.execute("DELETE FROM toolsearch_pins WHERE id = $1 AND digest = $2", &[id, old])
                                    .await?
                            }
                            (None, None) => 1,
                        };
                        conflict |= n == 0;
                    }
                    tx.execute("DELETE FROM toolsearch_held WHERE replica = $1", &[&replica]).await?;
                    for (id, digest, body) in &held {
                        tx.execute(
                            "INSERT INTO toolsearch_held (replica, id, digest, held) VALUES ($1, $2, $3, $4)",
                            &[&replica, id, digest, body],
                        )
                        .await?;
                    }
                    if moved {
                        tx.batch_execute(&format!("NOTIFY {CHANNEL}")).await?;
                    }
                    tx.commit().await?;
                    Ok(conflict)
                })
            })
            .await?;
        if !conflict {
            *self.pulled.lock().unwrap_or_else(|p| p.into_inner()) = local;
        }
        Ok(conflict)
    }
}
