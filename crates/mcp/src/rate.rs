//! Rate limits (`toolsearch.rate_limits`): token buckets per principal, per principal and tool,
//! per principal and server, and for a principal's HTTP requests. A principal is a caller's
//! identity (its token's digest, or its OAuth issuer and subject), not its session, so opening
//! a new session does not reset a budget.
//!
//! A refused HTTP request gets `429` with `Retry-After`; a refused call gets a JSON-RPC error
//! (`RATE_LIMITED`) whose `data.retryAfterSeconds` says when to try again. A call takes a
//! token from every bucket that applies, or from none: a refused call costs nothing.
//!
//! Buckets live in the process (the local backend). Memory stays bounded: past
//! [`MAX_BUCKETS`], buckets that have refilled (they hold nothing a fresh one would not) are
//! dropped, and if all are in use the oldest half goes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
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
        for (name, rate) in named.into_iter().chain(tools) {
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
    limits: RateLimits,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Limiter {
    /// A limiter for `limits`.
    pub fn new(limits: RateLimits) -> Limiter {
        Limiter { limits, buckets: Mutex::default() }
    }

    /// Takes one HTTP request of `principal`; how long to wait when it is over its limit.
    pub fn request(&self, principal: &str) -> Result<(), Duration> {
        match self.limits.requests_per_principal {
            Some(rate) => self.take(&[(format!("r\0{principal}"), rate)]),
            None => Ok(()),
        }
    }

    /// Takes one call of `tool` (of `server`) by `principal`, from every bucket that applies or
    /// from none; how long to wait when one is empty.
    pub fn call(&self, principal: &str, server: &str, tool: &str) -> Result<(), Duration> {
        let l = &self.limits;
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
        self.take(&keys)
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
        let all = [
            self.limits.requests_per_principal,
            self.limits.calls_per_principal,
            self.limits.calls_per_tool,
            self.limits.calls_per_server,
        ];
        // The slowest refill of any limit bounds how long a bucket can take to fill.
        let slowest = all
            .iter()
            .flatten()
            .chain(self.limits.tools.values())
            .map(|r| r.capacity() / (r.per_minute / 60.0))
            .fold(0.0, f64::max);
        buckets.retain(|_, b| now.duration_since(b.at).as_secs_f64() < slowest);
        if buckets.len() >= MAX_BUCKETS {
            let mut ages: Vec<Instant> = buckets.values().map(|b| b.at).collect();
            ages.sort();
            let cut = ages[ages.len() / 2];
            buckets.retain(|_, b| b.at > cut);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_minute: f64, burst: u32) -> Option<Rate> {
        Some(Rate { per_minute, burst: Some(burst) })
    }

    #[test]
    fn a_burst_passes_then_the_next_waits_for_its_token() {
        let l = Limiter::new(RateLimits { calls_per_principal: rate(60.0, 3), ..RateLimits::default() });
        for _ in 0..3 {
            assert!(l.call("a", "s", "s.t").is_ok());
        }
        let wait = l.call("a", "s", "s.t").unwrap_err();
        assert!(wait > Duration::from_millis(900) && wait <= Duration::from_secs(1), "{wait:?}");
        assert!(l.call("b", "s", "s.t").is_ok(), "another principal has its own budget");
    }

    #[test]
    fn a_refused_call_takes_from_no_bucket_and_tool_limits_override() {
        let tools = [("s.slow".to_owned(), Rate { per_minute: 6.0, burst: Some(1) })].into();
        let l = Limiter::new(RateLimits { calls_per_principal: rate(600.0, 2), tools, ..RateLimits::default() });
        assert!(l.call("a", "s", "s.slow").is_ok());
        assert!(l.call("a", "s", "s.slow").unwrap_err() > Duration::from_secs(9));
        // The refused call took nothing from the principal's bucket: one more call passes.
        assert!(l.call("a", "s", "s.fast").is_ok());
        assert!(l.call("a", "s", "s.fast").is_err());
    }

    #[test]
    fn bad_rates_name_their_field() {
        let bad = RateLimits { calls_per_tool: Some(Rate { per_minute: 0.0, burst: None }), ..RateLimits::default() };
        assert!(bad.check().unwrap_err().starts_with("calls_per_tool.per_minute"));
        assert!(RateLimits::default().check().is_ok() && !RateLimits::default().any());
    }
}
