//! The `toolsearch.state` and `toolsearch.learn` sections of a gateway config. They live with
//! the config, not with the store and the learner that act on them, so reading a config
//! needs neither (and neither module's imports lead back here through the config).

use serde::Deserialize;

/// `toolsearch.state`: the shared store.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StateSettings {
    /// `postgres://...` (or `postgresql://`), with `${VAR}`s read from the environment; absent
    /// or `local`: the state directory alone.
    pub store: Option<String>,
    /// The fleet's shared secret, with `${VAR}`s: it seals the replica's address into the
    /// `requestState` of session-free rounds, and upstream OAuth grants kept in the store (no
    /// `key`: both stay with each replica).
    pub key: Option<String>,
    /// The URL of this replica's `/mcp` endpoint as the other replicas reach it, with `${VAR}`s
    /// (default: the address its listener binds). With `key`, a session-free client's retry
    /// of a round another replica holds is forwarded there (`toolsearch_mcp::fleet_rounds`).
    pub advertise: Option<String>,
    /// Days the store keeps the fleet's audit lines, counted from when each reached it (absent:
    /// every line is kept). Each replica deletes older lines when it starts and hourly.
    pub audit_days: Option<u32>,
}

impl StateSettings {
    /// The PostgreSQL URL, when the store is PostgreSQL.
    pub fn postgres(&self) -> Option<&str> {
        self.store.as_deref().filter(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
    }

    /// Checks the store's form: `local` or a PostgreSQL URL.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self.audit_days {
            Some(0) => {
                return Err("audit_days: 0 would keep no line; give 1 or more, or leave it out to keep all".into())
            }
            Some(_) if self.postgres().is_none() => {
                return Err("audit_days: only a PostgreSQL store keeps a fleet's trail; a local trail is bounded by \
                            toolsearch.audit.max_bytes and keep"
                    .into())
            }
            _ => {}
        }
        match self.store.as_deref() {
            None | Some("local") => Ok(()),
            Some(_) if self.postgres().is_some() => Ok(()),
            Some(other) => Err(format!(
                "store: {:?} is neither \"local\" nor a postgres:// URL",
                other.split('@').next_back().unwrap_or_default()
            )),
        }
    }
}

/// The `toolsearch.learn` section of a gateway config: present = on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LearnSettings {
    /// Seconds between runs (default 3600).
    pub every_secs: u64,
    /// New labels the trail must hold since the last run for another fit (default 20).
    pub min_new_labels: usize,
    /// The principals whose traffic teaches: token names as the trail records them (`local`
    /// for a gateway without tokens), or `*` for every caller. Empty (the default): nobody,
    /// and learning says so until it is set.
    pub from: Vec<String>,
    /// The largest share of the catalogue's tool texts whose first result a swap may change
    /// (default 0.2); a fit that moves more is held for review, not swapped in.
    pub max_moved: f64,
}

impl Default for LearnSettings {
    fn default() -> Self {
        LearnSettings { every_secs: 3600, min_new_labels: 20, from: Vec::new(), max_moved: 0.2 }
    }
}

impl LearnSettings {
    /// Whether `principal`'s traffic may teach.
    pub fn trusts(&self, principal: &str) -> bool {
        self.from.iter().any(|f| f == "*" || f == principal)
    }
}
