//! Rate limits (`toolsearch.rate_limits`): token buckets per principal, per principal and tool,
//! per principal and server, and for a principal's HTTP requests. A principal is a caller's
//! identity (its token's digest, or its OAuth issuer and subject), not its session, so opening
//! a new session does not reset a budget.
//!
//! A refused HTTP request gets `429` with `Retry-After`; a refused call gets a JSON-RPC error
//! (`RATE_LIMITED`) whose `data.retryAfterSeconds` says when to try again. A call takes a
//! token from every bucket that applies, or from none: a refused call costs nothing.
//!
//! Buckets live in the process (the local backend), or, for a fleet of gateways, in a shared
//! store ([`SharedBuckets`]: one budget whichever replica a caller reaches). Memory stays bounded: past
//! [`MAX_BUCKETS`], buckets that have refilled (they hold nothing a fresh one would not) are
//! dropped, and if all are in use the oldest half goes.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::Deserialize;

/// Most buckets kept.
pub const MAX_BUCKETS: usize = 100_000;

/// One limit: a sustained rate and a burst.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    /// Sustained requests per minute.
    pub per_minute: f64,
    /// Requests allowed at once after a quiet spell (default: a tenth of a minute's, at least 1).
    #[serde(default)]
    pub burst: Option<u32>,
}

impl Rate {
    fn capacity(&self) -> f64 {
        self.burst.map_or((self.per_minute / 10.0).max(1.0), |b| f64::from(b.max(1)))
    }
}

/// `toolsearch.rate_limits`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimits {
    /// A principal's HTTP requests, of any kind (`429` past it).
    pub requests_per_principal: Option<Rate>,
    /// A principal's tool calls, all tools together.
    pub calls_per_principal: Option<Rate>,
    /// A principal's calls of each one tool.
    pub calls_per_tool: Option<Rate>,
    /// A principal's calls of each one server's tools.
    pub calls_per_server: Option<Rate>,
    /// Per-tool limits by tool id (`SERVER.TOOL`), in place of `calls_per_tool` for that tool.
    pub tools: BTreeMap<String, Rate>,
    /// Rules by principal name and tool id (a gateway's `toolsearch.limits.rate`); a call
    /// takes from every rule that matches it.
    #[serde(skip)]
    pub rules: Vec<RateRule>,
    /// What a call meets while a shared store of buckets cannot answer.
    #[serde(skip)]
    pub when_store_down: WhenDown,
}

/// One rule of `toolsearch.limits.rate`: the calls of `tool` by `principal` (`*`: each
/// principal, each its own budget; all tools together), at `per_minute`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateRule {
    /// A principal's name (a token's name, or an OAuth issuer's subject), or `*`.
    #[serde(default = "any")]
    pub principal: String,
    /// A tool id (`SERVER.TOOL`), or `*` (all tools together).
    #[serde(default = "any")]
    pub tool: String,
    /// Sustained calls per minute.
    pub per_minute: f64,
    /// Calls allowed at once after a quiet spell (default: a tenth of a minute's, at least 1).
    #[serde(default)]
    pub burst: Option<u32>,
}

fn any() -> String {
    "*".into()
}

impl RateRule {
    fn rate(&self) -> Rate {
        Rate { per_minute: self.per_minute, burst: self.burst }
    }
}

/// `toolsearch.limits.rate_when_store_down`: whether calls pass (`open`, the default) or are
/// refused (`closed`) while the shared store of buckets cannot answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WhenDown {
    /// Calls pass, unlimited, until the store is back.
    #[default]
    Open,
    /// Calls are refused, to retry in a few seconds.
    Closed,
}

/// How long a call refused because the shared store is away is told to wait.
pub const STORE_DOWN_RETRY: Duration = Duration::from_secs(5);

/// What [`SharedBuckets::take`] answers, in time.
pub type SharedTake<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Option<Duration>, String>> + Send + 'a>>;

/// Buckets kept outside the process (a fleet's shared store), taken from atomically.
pub trait SharedBuckets: Send + Sync + std::fmt::Debug {
    /// Takes one token from every bucket of `takes` (key, capacity, tokens per second), or
    /// from none: `Ok(None)` when taken, `Ok(Some(wait))` when one is empty, `Err` when the
    /// store could not answer.
    fn take<'a>(&'a self, takes: &'a [(String, f64, f64)]) -> SharedTake<'a>;
}

impl RateLimits {
    /// Checks what serde cannot: positive rates. The error names the field.
    pub fn check(&self) -> Result<(), String> {
        let named = [
            ("requests_per_principal", self.requests_per_principal),
            ("calls_per_principal", self.calls_per_principal),
            ("calls_per_tool", self.calls_per_tool),
            ("calls_per_server", self.calls_per_server),
        ];
        let tools = self.tools.iter().map(|(k, r)| (k.as_str(), Some(*r)));
        let rules: Vec<(String, Option<Rate>)> =
            self.rules.iter().enumerate().map(|(i, r)| (format!("rate[{i}]"), Some(r.rate()))).collect();
        let rules = rules.iter().map(|(k, r)| (k.as_str(), *r));
        for (name, rate) in named.into_iter().chain(tools).chain(rules) {
            if let Some(r) = rate.filter(|r| !(r.per_minute.is_finite() && r.per_minute > 0.0)) {
                return Err(format!("{name}.per_minute: {} must be a positive number", r.per_minute));
            }
        }
        Ok(())
    }

    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.requests_per_principal.is_some()
            || self.calls_per_principal.is_some()
            || self.calls_per_tool.is_some()
            || self.calls_per_server.is_some()
            || !self.tools.is_empty()
            || !self.rules.is_empty()
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of one set of [`RateLimits`].
#[derive(Debug, Default)]
pub struct Limiter {
    /// The limits it applies, replaced whole by a reload ([`Limiter::set_limits`]).
    limits: RwLock<Arc<RateLimits>>,
    buckets: Mutex<HashMap<String, Bucket>>,
    /// The fleet's buckets, when they are shared (HTTP requests' and calls').
    shared: Option<Arc<dyn SharedBuckets>>,
}

impl Limiter {
    /// A limiter for `limits`.
    pub fn new(limits: RateLimits) -> Limiter {
        Limiter { limits: RwLock::new(Arc::new(limits)), buckets: Mutex::default(), shared: None }
    }

    /// The limits it applies.
    pub fn limits(&self) -> Arc<RateLimits> {
        self.limits.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Applies `limits` from the next request and call on (a reloaded config's). If they
    /// differ, every budget of this process starts afresh (a rule's bucket is known by its place
    /// in the list, which an edit may change); a fleet's shared buckets carry over, capped at
    /// the new bursts.
    pub fn set_limits(&self, limits: RateLimits) {
        // The limits' lock is let go before the buckets' is taken: a take holds the buckets'
        // and reads the limits (to trim), so holding both here could deadlock with it.
        let changed = {
            let mut held = self.limits.write().unwrap_or_else(|p| p.into_inner());
            let changed = **held != limits;
            if changed {
                *held = Arc::new(limits);
            }
            changed
        };
        if changed {
            self.buckets.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }

    /// This limiter, its calls' buckets kept in `shared`.
    pub fn sharing(mut self, shared: Arc<dyn SharedBuckets>) -> Limiter {
        self.shared = Some(shared);
        self
    }

    /// The fleet's store of buckets, when they are shared.
    pub fn shared(&self) -> Option<Arc<dyn SharedBuckets>> {
        self.shared.clone()
    }

    /// Takes one HTTP request of `principal`; how long to wait when it is over its limit.
    /// Shared buckets are asked when there are some, as for [`Limiter::call`].
    pub async fn request(&self, principal: &str) -> Result<(), Duration> {
        match self.limits().requests_per_principal {
            Some(rate) => self.take_anywhere(&[(format!("r\0{principal}"), rate)]).await,
            None => Ok(()),
        }
    }

    /// Takes one call of `tool` (of `server`) by `principal`, from every bucket that applies or
    /// from none; how long to wait when one is empty. Shared buckets are asked when there are
    /// some; while they cannot answer, `when_store_down` decides.
    /// `name` is the principal's name, which rules match (`principal` is its identity).
    pub async fn call(&self, principal: &str, name: &str, server: &str, tool: &str) -> Result<(), Duration> {
        let keys = self.call_keys(principal, name, server, tool);
        self.take_anywhere(&keys).await
    }

    /// Takes from `keys`' buckets: the fleet's when they are shared (while they cannot answer,
    /// `when_store_down` decides), else this process's.
    async fn take_anywhere(&self, keys: &[(String, Rate)]) -> Result<(), Duration> {
        let Some(shared) = self.shared.as_ref().filter(|_| !keys.is_empty()) else { return self.take(keys) };
        let takes: Vec<(String, f64, f64)> =
            keys.iter().map(|(k, r)| (k.clone(), r.capacity(), r.per_minute / 60.0)).collect();
        match shared.take(&takes).await {
            Ok(None) => Ok(()),
            Ok(Some(wait)) => Err(wait),
            Err(_) if self.limits().when_store_down == WhenDown::Open => Ok(()),
            Err(_) => Err(STORE_DOWN_RETRY),
        }
    }

    fn call_keys(&self, principal: &str, name: &str, server: &str, tool: &str) -> Vec<(String, Rate)> {
        let l = self.limits();
        let mut keys = Vec::with_capacity(3);
        if let Some(rate) = l.calls_per_principal {
            keys.push((format!("p\0{principal}"), rate));
        }
        if let Some(rate) = l.tools.get(tool).copied().or(l.calls_per_tool) {
            keys.push((format!("t\0{principal}\0{tool}"), rate));
        }
        if let Some(rate) = l.calls_per_server {
            keys.push((format!("s\0{principal}\0{server}"), rate));
        }
        for (i, rule) in l.rules.iter().enumerate() {
            if (rule.principal == "*" || rule.principal == name) && (rule.tool == "*" || rule.tool == tool) {
                let scope = if rule.tool == "*" { "" } else { tool };
                keys.push((format!("r{i}\0{principal}\0{scope}"), rule.rate()));
            }
        }
        keys
    }

    fn take(&self, keys: &[(String, Rate)]) -> Result<(), Duration> {
        if keys.is_empty() {
            return Ok(());
        }
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_BUCKETS {
            self.trim(&mut buckets, now);
        }
        let mut wait = Duration::ZERO;
        let mut filled = Vec::with_capacity(keys.len());
        for (key, rate) in keys {
            let b = buckets.get(key).copied().unwrap_or(Bucket { tokens: rate.capacity(), at: now });
            let per_sec = rate.per_minute / 60.0;
            let tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * per_sec).min(rate.capacity());
            if tokens < 1.0 {
                wait = wait.max(Duration::from_secs_f64((1.0 - tokens) / per_sec));
            }
            filled.push(tokens);
        }
        if !wait.is_zero() {
            return Err(wait);
        }
        for ((key, _), tokens) in keys.iter().zip(filled) {
            buckets.insert(key.clone(), Bucket { tokens: tokens - 1.0, at: now });
        }
        Ok(())
    }

    /// Drops buckets that have refilled; if none has, the older half.
    fn trim(&self, buckets: &mut HashMap<String, Bucket>, now: Instant) {
        let limits = self.limits();
        let all =
            [limits.requests_per_principal, limits.calls_per_principal, limits.calls_per_tool, limits.calls_per_server];
        // The slowest refill of any limit bounds how long a bucket can take to fill.
        let slowest = all
            .iter()
            .flatten()
            .chain(limits.tools.values())
            .copied()
            .chain(limits.rules.iter().map(RateRule::rate))
            .map(|r| r.capacity() / (r.per_minute / 60.0))
            .fold(0.0, f64::max);
        buckets.retain(|_, b| now.duration_since(b.at).as_secs_f64() < slowest);
        if buckets.len() >= MAX_BUCKETS {
            drop_older_half(buckets, |b| b.at);
        }
    }
}

/// Keeps the newer half of `buckets`, by when each was last touched (`at`): how a table of
/// buckets stays bounded when none of them has refilled.
pub(crate) fn drop_older_half<K, V>(buckets: &mut HashMap<K, V>, at: impl Fn(&V) -> Instant) {
    let mut ages: Vec<Instant> = buckets.values().map(&at).collect();
    let middle = ages.len() / 2;
    if middle == 0 {
        return;
    }
    let (_, &mut cut, _) = ages.select_nth_unstable(middle);
    buckets.retain(|_, b| at(b) > cut);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(l: &Limiter, principal: &str, server: &str, tool: &str) -> Result<(), Duration> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(l.call(principal, principal, server, tool))
    }

    fn rate(per_minute: f64, burst: u32) -> Option<Rate> {
        Some(Rate { per_minute, burst: Some(burst) })
    }

    #[test]
    fn a_burst_passes_then_the_next_waits_for_its_token() {
        let l = Limiter::new(RateLimits { calls_per_principal: rate(60.0, 3), ..RateLimits::default() });
        for _ in 0..3 {
            assert!(call(&l, "a", "s", "s.t").is_ok());
        }
        let wait = call(&l, "a", "s", "s.t").unwrap_err();
        assert!(wait > Duration::from_millis(900) && wait <= Duration::from_secs(1), "{wait:?}");
        assert!(call(&l, "b", "s", "s.t").is_ok(), "another principal has its own budget");
    }

    #[test]
    fn a_refused_call_takes_from_no_bucket_and_tool_limits_override() {
        let tools = [("s.slow".to_owned(), Rate { per_minute: 6.0, burst: Some(1) })].into();
        let l = Limiter::new(RateLimits { calls_per_principal: rate(600.0, 2), tools, ..RateLimits::default() });
        assert!(call(&l, "a", "s", "s.slow").is_ok());
        assert!(call(&l, "a", "s", "s.slow").unwrap_err() > Duration::from_secs(9));
        // The refused call took nothing from the principal's bucket: one more call passes.
        assert!(call(&l, "a", "s", "s.fast").is_ok());
        assert!(call(&l, "a", "s", "s.fast").is_err());
    }

    #[test]
    fn rules_match_by_principal_and_tool_and_a_star_rule_spans_all_tools() {
        let rule = |principal: &str, tool: &str, per_minute| RateRule {
            principal: principal.into(),
            tool: tool.into(),
            per_minute,
            burst: Some(1),
        };
        let rules = vec![rule("*", "*", 60.0), rule("*", "s.slow", 1.0), rule("ci", "*", 1.0)];
        let l = Limiter::new(RateLimits { rules, ..RateLimits::default() });
        assert!(call(&l, "a", "s", "s.slow").is_ok());
        assert!(call(&l, "a", "s", "s.slow").unwrap_err() > Duration::from_secs(50), "the tool's own rule");
        assert!(call(&l, "b", "s", "s.fast").is_ok(), "another principal has its own budget");
        assert!(call(&l, "b", "s", "s.other").is_err(), "`*` spans all tools: b's one token is spent");
        assert!(call(&l, "ci", "s", "s.fast").is_ok());
        assert!(call(&l, "ci", "s", "s.fast").unwrap_err() > Duration::from_secs(50), "the named principal's rule");
    }

    #[test]
    fn new_limits_start_every_budget_afresh_and_the_same_ones_keep_it() {
        let limits = |per_minute| RateLimits { calls_per_principal: rate(per_minute, 1), ..RateLimits::default() };
        let l = Limiter::new(limits(1.0));
        assert!(call(&l, "a", "s", "s.t").is_ok());
        l.set_limits(limits(1.0));
        assert!(call(&l, "a", "s", "s.t").is_err(), "the same limits: the spent budget stays spent");
        l.set_limits(limits(2.0));
        assert!(call(&l, "a", "s", "s.t").is_ok(), "new limits: a fresh budget");
        assert!(call(&l, "a", "s", "s.t").unwrap_err() > Duration::from_secs(25), "at the new rate");
        l.set_limits(RateLimits::default());
        assert!((0..5).all(|_| call(&l, "a", "s", "s.t").is_ok()), "no limit");
    }

    #[test]
    fn bad_rates_name_their_field() {
        let bad = RateLimits { calls_per_tool: Some(Rate { per_minute: 0.0, burst: None }), ..RateLimits::default() };
        assert!(bad.check().unwrap_err().starts_with("calls_per_tool.per_minute"));
        assert!(RateLimits::default().check().is_ok() && !RateLimits::default().any());
    }
}
