//! The shared store's schema, as numbered migrations applied at start: in one transaction
//! under an advisory lock, so replicas that start at once apply each migration exactly once
//! (the others wait on the lock, then find it applied).

use tokio_postgres::Client;

/// The advisory lock key every replica takes to migrate ("toolsearch migrate").
const MIGRATE_LOCK: i64 = 0x7473_6d69_6772_0001;

/// A trail line's time (Unix ms) as SQL over `toolsearch_audit.line`, NULL when it has none.
/// One text for the index (migration 8) and the queries that read by it (`store::audit`):
/// PostgreSQL uses an expression index only for the very same expression. Never edited: the
/// released migration 8 is built from it.
macro_rules! audit_time {
    () => {
        "(CASE WHEN jsonb_typeof(line->'time') = 'number' THEN (line->>'time')::numeric END)"
    };
}
pub(crate) use audit_time;

/// Each migration: its version and its SQL. Append only: a migration once released is never
/// edited.
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        "CREATE TABLE toolsearch_pins (
         id text PRIMARY KEY,
         digest text NOT NULL,
         pin jsonb NOT NULL,
         updated_at timestamptz NOT NULL DEFAULT now());
     CREATE TABLE toolsearch_held (
         replica text NOT NULL,
         id text NOT NULL,
         digest text NOT NULL,
         held jsonb NOT NULL,
         seen_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (replica, id));",
    ),
    (
        2,
        // Token buckets, taken from in one statement: every bucket of a call is locked (in key
        // order, so two calls never deadlock), refilled to now, and taken from only if all
        // hold a token; otherwise the longest wait is answered and nothing is taken.
        "CREATE TABLE toolsearch_buckets (
             key text PRIMARY KEY,
             tokens double precision NOT NULL,
             at timestamptz NOT NULL);
         CREATE FUNCTION toolsearch_take(keys text[], caps float8[], rates float8[]) RETURNS float8 AS $$
         DECLARE
             now timestamptz := clock_timestamp();
             filled float8[] := '{}';
             wait float8 := 0;
             t float8;
         BEGIN
             FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
                 INSERT INTO toolsearch_buckets (key, tokens, at) VALUES (keys[i], caps[i], now)
                     ON CONFLICT (key) DO NOTHING;
                 SELECT least(caps[i], tokens + greatest(0, extract(epoch FROM now - at)) * rates[i]) INTO t
                     FROM toolsearch_buckets WHERE key = keys[i] FOR UPDATE;
                 IF t < 1 THEN
                     wait := greatest(wait, (1 - t) / rates[i]);
                 END IF;
                 filled := filled || t;
             END LOOP;
             IF wait > 0 THEN
                 RETURN wait;
             END IF;
             FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
                 UPDATE toolsearch_buckets SET tokens = filled[i] - 1, at = now WHERE key = keys[i];
             END LOOP;
             RETURN 0;
         END
         $$ LANGUAGE plpgsql;",
    ),
    (
        3,
        // Each replica's audit trail, append-only: a line is keyed by where it lies in the
        // replica's own trail, so shipping it twice stores it once.
        "CREATE TABLE toolsearch_audit (
             replica text NOT NULL,
             file bigint NOT NULL,
             at bigint NOT NULL,
             line jsonb NOT NULL,
             shipped_at timestamptz NOT NULL DEFAULT now(),
             PRIMARY KEY (replica, file, at));",
    ),
    (
        4,
        // Upstream OAuth grants, sealed (`store::grants`); a row without one is a logout.
        "CREATE TABLE toolsearch_grants (
             server text PRIMARY KEY,
             sealed bytea,
             obtained_at bigint NOT NULL);",
    ),
    (
        5,
        // The listings of lazy servers (`store::listings`).
        "CREATE TABLE toolsearch_listings (
             server text PRIMARY KEY,
             listing jsonb NOT NULL);",
    ),
    (
        6,
        // The query adapter the fleet's learner swapped in, per embedding model
        // (`store::adapters`): every replica serves it; `labels` is what it was fitted from.
        "CREATE TABLE toolsearch_adapters (
             model text PRIMARY KEY,
             adapter bytea NOT NULL,
             version bigint NOT NULL,
             labels bigint NOT NULL,
             replica text NOT NULL,
             at timestamptz NOT NULL DEFAULT now());",
    ),
    (
        7,
        // The gateway's client registrations with upstream authorization servers, by issuer,
        // sealed as grants are (`store::grants`).
        "CREATE TABLE toolsearch_registrations (
             issuer text PRIMARY KEY,
             sealed bytea NOT NULL);",
    ),
    (
        8,
        // The fleet's trail read by time (`gateway audit`: its newest lines, a window) and by
        // when it was shipped (the learner's newest lines, `audit_days`' pruning) without a sort
        // of the whole table. Built inside the migration's transaction: writes to the table
        // wait while it builds (about a second a million rows).
        concat!(
            "CREATE INDEX toolsearch_audit_by_time ON toolsearch_audit (",
            audit_time!(),
            " NULLS FIRST, replica, file, at);
             CREATE INDEX toolsearch_audit_by_shipped ON toolsearch_audit (shipped_at);"
        ),
    ),
    (
        9,
        // A bucket records when it will be full again, and a full bucket is no different from
        // none (a take inserts a missing one full): every replica deletes them
        // (`store::buckets::prune_full`), so keys seen once (each address that sent a refused
        // token) do not pile up. A take locks its row before it inserts one, so a bucket
        // deleted under it is inserted again, full, and taken from. Buckets of an older
        // gateway count as full a day after their last take.
        "ALTER TABLE toolsearch_buckets ADD COLUMN full_at timestamptz;
         UPDATE toolsearch_buckets SET full_at = at + interval '1 day';
         ALTER TABLE toolsearch_buckets ALTER COLUMN full_at SET NOT NULL;
         CREATE INDEX toolsearch_buckets_by_full ON toolsearch_buckets (full_at);
         CREATE OR REPLACE FUNCTION toolsearch_take(keys text[], caps float8[], rates float8[]) RETURNS float8 AS $$
         DECLARE
             now timestamptz := clock_timestamp();
             filled float8[] := '{}';
             wait float8 := 0;
             t float8;
         BEGIN
             FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
                 LOOP
                     SELECT least(caps[i], tokens + greatest(0, extract(epoch FROM now - at)) * rates[i]) INTO t
                         FROM toolsearch_buckets WHERE key = keys[i] FOR UPDATE;
                     EXIT WHEN FOUND;
                     INSERT INTO toolsearch_buckets (key, tokens, at, full_at) VALUES (keys[i], caps[i], now, now)
                         ON CONFLICT (key) DO NOTHING;
                 END LOOP;
                 IF t < 1 THEN
                     wait := greatest(wait, (1 - t) / rates[i]);
                 END IF;
                 filled := filled || t;
             END LOOP;
             IF wait > 0 THEN
                 RETURN wait;
             END IF;
             FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
                 UPDATE toolsearch_buckets SET tokens = filled[i] - 1, at = now,
                     full_at = now + make_interval(secs => least((caps[i] - filled[i] + 1) / rates[i], 3.15e9))
                     WHERE key = keys[i];
             END LOOP;
             RETURN 0;
         END
         $$ LANGUAGE plpgsql;",
    ),
];

/// The newest schema version this build knows.
pub(crate) fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Brings the database's schema to [`latest`]; the version it was at. A database already at
/// a newer version (written by a newer toolsearch) is refused, naming both versions.
pub(crate) async fn migrate(client: &mut Client) -> Result<i32, String> {
    let tx = client.transaction().await.map_err(|e| e.to_string())?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK]).await.map_err(|e| e.to_string())?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS toolsearch_migrations (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .await
    .map_err(|e| e.to_string())?;
    let at: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM toolsearch_migrations", &[])
        .await
        .map_err(|e| e.to_string())?
        .get(0);
    if at > latest() {
        return Err(format!(
            "the state store's schema is at version {at}, and this toolsearch knows up to version {}: upgrade \
             toolsearch on this replica",
            latest()
        ));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > at) {
        tx.batch_execute(sql).await.map_err(|e| format!("migration {version}: {e}"))?;
        tx.execute("INSERT INTO toolsearch_migrations (version) VALUES ($1)", &[version])
            .await
            .map_err(|e| e.to_string())?;
    }
    tx.commit().await.map_err(|e| e.to_string())?;
    Ok(at)
}
