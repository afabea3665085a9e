//! Learning in a fleet: the query adapter the gateway learns (`crate::learner`) is fitted from
//! the whole fleet's audit trail (`toolsearch_audit`, every replica's lines) by one replica at a
//! time, and served by all. A run takes a session-level advisory lock (another replica holding
//! it means this one skips the run); an adapter it swaps in is published to
//! `toolsearch_adapters` under the embedding model's key (`IndexMeta::model_key`: its id,
//! weights, pooling and prompts) with the number of labels it was fitted from, so the next run
//! anywhere waits for `learn.min_new_labels` more. Every replica polls the row's version every
//! second and stores a newer adapter in its own index (under the index writer's lock, into the
//! build it read), then reloads: one learned in the fleet is served everywhere, and again after
//! a replica rebuilds its index.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio_postgres::Client;
use toolsearch_disclosure::LiveCatalog;
use toolsearch_index::{IndexMeta, QueryAdapter};
use toolsearch_mcp::ops::Status;

use crate::learner::IndexWriter;

/// The advisory lock a learning run holds ("toolsearch learn").
const LEARN_LOCK: i64 = 0x7473_6c65_6172_6e01;
/// The most trail lines a run reads from the store, the newest.
const MOST_LINES: i64 = 200_000;

fn err(e: tokio_postgres::Error) -> String {
    crate::mask_secrets(&e.to_string())
}

/// A learning run's hold on the fleet: the connection that took the lock (dropping it, or the
/// connection dying, releases it).
pub(crate) struct Lead {
    client: Client,
}

impl Lead {
    /// Takes the fleet's learning lock if no other replica holds it.
    pub(crate) async fn take(url: &str) -> Result<Option<Lead>, String> {
        let (client, _) = super::postgres::open(url).await?;
        let got: bool = client.query_one("SELECT pg_try_advisory_lock($1)", &[&LEARN_LOCK]).await.map_err(err)?.get(0);
        Ok(got.then_some(Lead { client }))
    }

    /// The fleet's trail as one text of JSON lines, each replica's in its own order, the newest
    /// [`MOST_LINES`]. A session id is made the replica's own (`REPLICA/SESSION`), so two
    /// replicas' sessions never read as one.
    pub(crate) async fn trail(&self) -> Result<String, String> {
        let rows = self
            .client
            .query(
                "SELECT replica, line FROM (SELECT replica, file, at, line FROM toolsearch_audit \
                 ORDER BY shipped_at DESC, replica, file DESC, at DESC LIMIT $1) newest ORDER BY replica, file, at",
                &[&MOST_LINES],
            )
            .await
            .map_err(err)?;
        let mut text = String::new();
        for row in rows {
            let (replica, mut line): (String, Value) = (row.get(0), row.get(1));
            if let Some(session) = line.get("session").and_then(Value::as_str).map(|s| format!("{replica}/{s}")) {
                line["session"] = json!(session);
            }
            text.push_str(&line.to_string());
            text.push('\n');
        }
        Ok(text)
    }

    /// The labels the adapter in force for `model` was fitted from (0 for none).
    pub(crate) async fn fitted_from(&self, model: &str) -> Result<usize, String> {
        let row = self
            .client
            .query_opt("SELECT labels FROM toolsearch_adapters WHERE model = $1", &[&model])
            .await
            .map_err(err)?;
        Ok(row.map_or(0, |r| r.get::<_, i64>(0).max(0) as usize))
    }

    /// Publishes `adapter`, fitted from `labels` labels, as the fleet's adapter for `model`.
    pub(crate) async fn publish(
        &self,
        model: &str,
        adapter: &QueryAdapter,
        labels: usize,
        replica: &str,
    ) -> Result<(), String> {
        let bytes = serde_json::to_vec(adapter).map_err(|e| e.to_string())?;
        self.client
            .execute(
                "INSERT INTO toolsearch_adapters (model, adapter, version, labels, replica) VALUES ($1, $2, 1, $3, $4) \
                 ON CONFLICT (model) DO UPDATE SET adapter = EXCLUDED.adapter, labels = EXCLUDED.labels, \
                 replica = EXCLUDED.replica, version = toolsearch_adapters.version + 1, at = now()",
                &[&model, &bytes, &(labels as i64), &replica],
            )
            .await
            .map_err(err)?;
        Ok(())
    }
}

/// Stores `adapter`, the fleet's for `model`, in the index `live` serves unless it already
/// holds it or was rebuilt with another model since; whether it did.
fn adopt(live: &LiveCatalog, writer: &IndexWriter, model: &str, adapter: QueryAdapter) -> Result<bool, String> {
    let _writing = writer.lock().unwrap_or_else(|p| p.into_inner());
    let dir = live.engine().index().dir().to_path_buf();
    let meta = IndexMeta::read(&dir).map_err(|e| e.to_string())?;
    if meta.model_key() != model || meta.adapter.as_ref() == Some(&adapter) || !adapter.fits(meta.dimension as usize) {
        return Ok(false);
    }
    IndexMeta::set_adapter(&dir, Some(adapter)).map_err(|e| e.to_string())?;
    live.reload().map_err(|e| e.to_string())?;
    Ok(true)
}

/// Every second until the gateway stops: when the fleet's adapter for the model the index
/// serves with is newer than the one this replica took, or the index was rebuilt since, stores
/// it in the index and reloads.
pub(crate) async fn keep_adopted(url: String, live: Arc<LiveCatalog>, writer: IndexWriter, status: Arc<dyn Status>) {
    let mut client: Option<Client> = None;
    // (version taken, index generation it was stored into)
    let mut taken: Option<(i64, u64)> = None;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if client.as_ref().is_none_or(Client::is_closed) {
            client = super::postgres::open(&url).await.ok().map(|(c, _)| c);
        }
        let Some(c) = client.as_ref() else { continue };
        let model = live.engine().index().meta().model_key();
        let version = match c.query_opt("SELECT version FROM toolsearch_adapters WHERE model = $1", &[&model]).await {
            Ok(Some(row)) => row.get::<_, i64>(0),
            Ok(None) => continue,
            Err(_) => {
                client = None;
                continue;
            }
        };
        let generation = live.engine().index().meta().generation;
        if taken == Some((version, generation)) {
            continue;
        }
        let Ok(row) = c.query_one("SELECT adapter, version FROM toolsearch_adapters WHERE model = $1", &[&model]).await
        else {
            client = None;
            continue;
        };
        let (bytes, version): (Vec<u8>, i64) = (row.get(0), row.get(1));
        let Ok(adapter) = serde_json::from_slice::<QueryAdapter>(&bytes) else { continue };
        let (live2, writer2) = (live.clone(), writer.clone());
        match tokio::task::spawn_blocking(move || adopt(&live2, &writer2, &model, adapter)).await {
            Ok(Ok(stored)) => {
                if stored {
                    status.event("adapter_adopted", json!({"version": version}));
                }
                taken = Some((version, live.engine().index().meta().generation));
            }
            Ok(Err(e)) => status.event("learn_error", json!({"error": e})),
            Err(e) => status.event("learn_error", json!({"error": e.to_string()})),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use toolsearch_embed::{EmbedderOptions, ModelFiles, OnnxEmbedder};
    use toolsearch_index::{build_index, BuildOptions, IndexMeta, QueryAdapter};
    use toolsearch_query::Engine;

    use super::*;

    /// A small index built with the tiny CLS test model (tests/models/tiny-cls), served live.
    fn live_tiny(dir: &Path) -> Arc<LiveCatalog> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let model = repo.join("tests/models/tiny-cls");
        let files = ModelFiles::choose(None, Some(model.to_str().unwrap())).unwrap();
        let embedder = OnnxEmbedder::load(&files, EmbedderOptions::default()).unwrap();
        let catalog = toolsearch_catalog::load_path(&repo.join("data/sample-catalog.json"), None).unwrap();
        build_index(&catalog, &embedder, dir, &BuildOptions::default()).unwrap();
        LiveCatalog::new(Engine::open_with(dir, Default::default()).unwrap())
    }

    fn identity(dimension: u32) -> QueryAdapter {
        QueryAdapter {
            dimension,
            weights: vec![0.0; (dimension * dimension) as usize],
            method: "ridge 0.01".into(),
            alpha: 0.5,
            trained_on: 40,
            heldout: 10,
            heldout_ndcg_before: 0.5,
            heldout_ndcg_after: 0.6,
        }
    }

    /// The fleet's adapter goes only into an index built with the model it was fitted for, of
    /// its dimension, and is not stored twice.
    #[test]
    fn an_adapter_is_stored_only_in_an_index_of_its_own_model() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("index");
        let live = live_tiny(&dir);
        let writer: IndexWriter = Arc::new(Mutex::new(()));
        let meta = IndexMeta::read(&dir).unwrap();
        let (model, dimension) = (meta.model_key(), meta.dimension);
        // Another model of the same id (other weights, prompts or tokenizer): not its adapter.
        let weights = model.replace(&meta.model_sha256, &"0".repeat(64));
        let prompted = IndexMeta { model_prompts: Some(("query: ".into(), "other: ".into())), ..meta.clone() };
        let tokenized = IndexMeta { model_tokenizer: Some("f".repeat(64)), ..meta.clone() };
        assert!(
            meta.model_tokenizer.is_some() && tokenized.model_key() != model,
            "a local model's key names its tokenizer"
        );
        for other in ["another-model", weights.as_str(), prompted.model_key().as_str(), tokenized.model_key().as_str()]
        {
            assert!(!adopt(&live, &writer, other, identity(dimension)).unwrap(), "{other}");
        }
        assert!(!adopt(&live, &writer, &model, identity(dimension + 1)).unwrap());
        assert_eq!(IndexMeta::read(&dir).unwrap().adapter, None, "nothing stored for another model or dimension");

        assert!(adopt(&live, &writer, &model, identity(dimension)).unwrap());
        assert_eq!(IndexMeta::read(&dir).unwrap().adapter, Some(identity(dimension)));
        assert!(live.engine().index().meta().adapter.is_some(), "the live engine reloaded with it");
        assert!(!adopt(&live, &writer, &model, identity(dimension)).unwrap(), "already held");
    }
}
