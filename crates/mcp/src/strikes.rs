//! Refused bearer tokens, counted per client address, so a token cannot be guessed at network
//! speed (`toolsearch.limits.http.refused_tokens_per_minute` and `refused_tokens_burst`).
//!
//! Each address has a bucket of strikes (a burst, refilled at a rate); a request that presents
//! a token the gateway refuses (401) takes one, unless the address has had that same token
//! refused lately (one of its last [`RECENT`]): a client retrying a stale token guesses
//! nothing, and must not lock its neighbours out. While an address's bucket is empty, a token it
//! presents is not compared with the static tokens at all: the answer is 429 with
//! `Retry-After` whatever the token, so a guess tells nothing. Two kinds of request still pass,
//! so that a guesser behind a shared address (a proxy, a NAT) cannot lock its neighbours out:
//! a request on a live session that presents the token which opened it (the session id is a
//! random secret the guesser does not hold, and a guessed token that is not that session's own
//! gets the same 429), and an identity provider's token (`auth.oauth`: a signature or the
//! provider's introspection decides, which guessing cannot pass).
//!
//! The address is the TCP peer's, or, when the peer is one of `trusted_proxies`, the
//! right-most `X-Forwarded-For` entry that is not a trusted proxy (the one the proxy saw). An
//! IPv6 address counts by its /64, the block one host is usually given. Memory stays bounded:
//! past [`MAX_ADDRESSES`], refilled buckets are dropped, then the oldest half. A fleet of
//! gateways also counts each address's strikes in its shared store ([`Strikes::strike`]).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;

use crate::rate::SharedBuckets;

/// Most addresses whose strikes are kept.
pub const MAX_ADDRESSES: usize = 100_000;

/// How many of an address's last refused tokens are remembered, so that retrying one takes
/// no strike.
pub const RECENT: usize = 4;

/// One trusted proxy: an address, or a CIDR block (`10.0.0.0/8`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    net: IpAddr,
    prefix: u8,
}

impl Block {
    /// Reads `text` (an address or `ADDRESS/PREFIX`); the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Block, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let net: IpAddr =
            addr.trim().parse().map_err(|_| format!("{text:?} is not an IP address or a CIDR block (10.0.0.0/8)"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.trim().parse::<u8>() {
                Ok(p) if p <= max => p,
                _ => return Err(format!("{text:?}: the prefix must be a number from 0 to {max}")),
            },
        };
        Ok(Block { net, prefix })
    }

    /// Whether `ip` is in the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, canonical(ip)) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                masked(u32::from(n).into(), self.prefix, 32) == masked(u32::from(a).into(), self.prefix, 32)
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => masked(n.into(), self.prefix, 128) == masked(a.into(), self.prefix, 128),
            _ => false,
        }
    }
}

fn masked(bits: u128, prefix: u8, width: u32) -> u128 {
    let keep = u32::from(prefix).min(width);
    match keep {
        0 => 0,
        k => bits >> (width - k),
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Reads `trusted_proxies`; the error names the entry at fault.
pub fn parse_blocks(entries: &[String]) -> Result<Vec<Block>, String> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| Block::parse(e).map_err(|why| format!("trusted_proxies[{i}]: {why}")))
        .collect()
}

/// The client a request comes from: `peer`, or, when `peer` is a trusted proxy, the right-most
/// `X-Forwarded-For` entry that is not (an entry that is not an address stops the walk: what
/// lies left of it cannot be trusted, so the proxy's own view is used).
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[Block]) -> IpAddr {
    let peer = canonical(peer);
    if !trusted.iter().any(|b| b.contains(peer)) {
        return peer;
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Ok(ip) = hop.parse::<IpAddr>().map(canonical) else { break };
        client = ip;
        if !trusted.iter().any(|b| b.contains(ip)) {
            break;
        }
    }
    client
}

/// The key an address's strikes are kept under: an IPv4 address, or an IPv6 address's /64.
fn key(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        v4 => v4,
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    strikes: f64,
    at: Instant,
    /// Tags of the address's last refused tokens, newest first (0: none).
    recent: [u64; RECENT],
}

/// Strikes per client address (see the module doc).
#[derive(Debug)]
pub struct Strikes {
    /// How fast strikes come back, and how many an address holds (a reloaded config's).
    rates: std::sync::RwLock<Rates>,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
    refused: AtomicU64,
    throttled: AtomicU64,
    /// Keys the tags of refused tokens: random per process, so that nobody can choose tokens
    /// whose tags collide.
    tags: RandomState,
    /// The fleet's buckets, when they are shared.
    shared: Option<Arc<dyn SharedBuckets>>,
}

/// How fast strikes come back, and how many an address holds.
#[derive(Debug, Clone, Copy)]
struct Rates {
    /// Strikes given back per second; 0: refused tokens are not throttled.
    per_sec: f64,
    burst: f64,
}

impl Rates {
    fn new(per_minute: u32, burst: u32) -> Rates {
        Rates { per_sec: f64::from(per_minute) / 60.0, burst: f64::from(burst.max(1)) }
    }

    /// What `b` holds at `now`, refilled since it was last set.
    fn refilled(&self, b: &Bucket, now: Instant) -> f64 {
        (b.strikes + now.duration_since(b.at).as_secs_f64() * self.per_sec).min(self.burst)
    }
}

impl Strikes {
    /// Strikes refilled at `per_minute` (0: none counted), `burst` at most.
    pub fn new(per_minute: u32, burst: u32) -> Strikes {
        Strikes {
            rates: std::sync::RwLock::new(Rates::new(per_minute, burst)),
            buckets: Mutex::default(),
            refused: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            tags: RandomState::new(),
            shared: None,
        }
    }

    /// How long `client` must wait before a token it presents is compared again; `None` when
    /// it has strikes left.
    pub fn locked(&self, client: IpAddr) -> Option<Duration> {
        let r = self.rates();
        if r.per_sec <= 0.0 {
            return None;
        }
        let now = Instant::now();
        let buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let left = buckets.get(&key(client)).map_or(r.burst, |b| r.refilled(b, now));
        (left < 1.0).then(|| Duration::from_secs_f64((1.0 - left) / r.per_sec))
    }

    /// Counts refusals at `per_minute` and `burst` from now on (a reloaded config's
    /// `limits.http`): each address keeps the strikes it has left, at most the new burst; a
    /// `per_minute` of 0 lifts every lock at once.
    pub fn set_rates(&self, per_minute: u32, burst: u32) {
        *self.rates.write().unwrap_or_else(|p| p.into_inner()) = Rates::new(per_minute, burst);
    }

    fn rates(&self) -> Rates {
        *self.rates.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that `client` presented `token` and it was refused; a strike is taken unless
    /// `client` has had `token` refused lately ([`RECENT`]). In a fleet, the strike is
    /// also taken from the address's bucket in the shared store; when that one is empty, the
    /// address is locked here until it refills, so a guesser spread over the replicas gets the
    /// burst once, plus at most one guess per replica, not a burst per replica. While the
    /// store cannot answer, this replica's own count decides.
    pub async fn strike(&self, client: IpAddr, token: &str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let r = self.rates();
        if r.per_sec <= 0.0 {
            return;
        }
        let tag = self.tags.hash_one(token) | 1;
        if !self.settle(client, Some(tag), |left| left - 1.0) {
            return;
        }
        let Some(shared) = &self.shared else { return };
        let takes = [(format!("x\0{}", key(client)), r.burst, r.per_sec)];
        if let Ok(Some(wait)) = shared.take(&takes).await {
            // Left such that the bucket holds a whole strike again when the fleet's does.
            let fleet = 1.0 - wait.as_secs_f64() * r.per_sec;
            self.settle(client, None, |left| left.min(fleet));
        }
    }

    /// Sets `client`'s strikes left to `to(what it holds now)`, at least 0, and remembers the
    /// refused token `tag`; nothing changes when `tag` is one of the address's recent ones
    /// (then `false`).
    fn settle(&self, client: IpAddr, tag: Option<u64>, to: impl FnOnce(f64) -> f64) -> bool {
        let (now, r) = (Instant::now(), self.rates());
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_ADDRESSES {
            Self::trim(&mut buckets, now, r);
        }
        let held = buckets.get(&key(client));
        let left = held.map_or(r.burst, |b| r.refilled(b, now));
        let mut recent = held.map_or([0; RECENT], |b| b.recent);
        if let Some(tag) = tag {
            if recent.contains(&tag) {
                return false;
            }
            recent.rotate_right(1);
            recent[0] = tag;
        }
        buckets.insert(key(client), Bucket { strikes: to(left).max(0.0), at: now, recent });
        true
    }

    /// This count, its strikes also kept in `shared` (a fleet's store).
    pub fn sharing(mut self, shared: Option<Arc<dyn SharedBuckets>>) -> Strikes {
        self.shared = shared;
        self
    }

    /// Records a request answered 429 because its address had no strikes left.
    pub fn throttled(&self) {
        self.throttled.fetch_add(1, Ordering::Relaxed);
    }

    /// Refused tokens and throttled requests, since the start.
    pub fn counts(&self) -> (u64, u64) {
        (self.refused.load(Ordering::Relaxed), self.throttled.load(Ordering::Relaxed))
    }

    /// Drops buckets that have refilled; if none has, the older half.
    fn trim(buckets: &mut HashMap<IpAddr, Bucket>, now: Instant, r: Rates) {
        buckets.retain(|_, b| r.refilled(b, now) < r.burst);
        if buckets.len() >= MAX_ADDRESSES {
            crate::rate::drop_older_half(buckets, |b| b.at);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.buckets.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// A token not presented before.
    fn guess() -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        format!("guess-{}", N.fetch_add(1, Ordering::Relaxed))
    }

    /// Runs a strike that does not wait (no shared store, or one that answers at once).
    fn block(f: impl std::future::Future<Output = ()>) {
        futures_util::FutureExt::now_or_never(f).expect("a strike without a store to wait for");
    }

    /// A fleet's store whose buckets answer `wait` (or cannot answer, with `None`).
    #[derive(Debug)]
    struct Store(Option<Duration>);

    impl SharedBuckets for Store {
        fn take<'a>(&'a self, _: &'a [(String, f64, f64)]) -> crate::rate::SharedTake<'a> {
            let answer = self.0.map(|w| Some(w).filter(|w| !w.is_zero())).ok_or_else(|| "down".to_owned());
            Box::pin(std::future::ready(answer))
        }
    }

    #[test]
    fn an_empty_fleet_bucket_locks_the_address_here_until_it_refills() {
        let s = Strikes::new(6, 30).sharing(Some(Arc::new(Store(Some(Duration::from_secs(7))))));
        block(s.strike(ip("192.0.2.1"), &guess()));
        let wait = s.locked(ip("192.0.2.1")).expect("the fleet's bucket is empty");
        assert!(wait > Duration::from_secs(6) && wait <= Duration::from_secs(7), "{wait:?}");
        // A fleet bucket with strikes left, or a store that cannot answer: this replica's count.
        for store in [Store(Some(Duration::ZERO)), Store(None)] {
            let s = Strikes::new(6, 2).sharing(Some(Arc::new(store)));
            block(s.strike(ip("192.0.2.1"), &guess()));
            assert!(s.locked(ip("192.0.2.1")).is_none());
            block(s.strike(ip("192.0.2.1"), &guess()));
            assert!(s.locked(ip("192.0.2.1")).is_some());
        }
    }

    #[test]
    fn a_burst_of_refusals_locks_an_address_and_only_that_one() {
        let s = Strikes::new(6, 3);
        for _ in 0..3 {
            assert!(s.locked(ip("192.0.2.1")).is_none());
            block(s.strike(ip("192.0.2.1"), &guess()));
        }
        let wait = s.locked(ip("192.0.2.1")).expect("locked after the burst");
        assert!(wait > Duration::from_secs(9) && wait <= Duration::from_secs(10), "{wait:?}");
        assert!(s.locked(ip("192.0.2.2")).is_none(), "another address has its own strikes");
        // An IPv6 host counts by its /64: another address in it is the same client.
        for _ in 0..3 {
            block(s.strike(ip("2001:db8::1"), &guess()));
        }
        assert!(s.locked(ip("2001:db8::ffff")).is_some());
        assert!(s.locked(ip("2001:db8:0:1::1")).is_none());
        assert!(s.locked(ip("::ffff:192.0.2.1")).is_some(), "an IPv4-mapped address is its IPv4 one");
        assert_eq!(s.counts(), (6, 0));
    }

    #[test]
    fn retrying_a_refused_token_takes_no_strike_and_a_new_guess_does() {
        let s = Strikes::new(6, 4);
        let client = ip("192.0.2.1");
        for _ in 0..20 {
            block(s.strike(client, "stale-token"));
        }
        // Cycling through the last RECENT refused tokens takes nothing more either.
        for _ in 0..5 {
            block(s.strike(client, "stale-2"));
            block(s.strike(client, "stale-3"));
            block(s.strike(client, "stale-token"));
        }
        assert!(s.locked(client).is_none(), "three distinct tokens, retried, are three strikes");
        block(s.strike(client, "a-new-guess"));
        assert!(s.locked(client).is_some(), "a fourth distinct token empties a burst of 4");
        assert_eq!(s.counts().0, 36, "every refusal is counted");
        // Another address's refusal of the same token is that address's strike.
        block(s.strike(ip("192.0.2.2"), "stale-token"));
        assert_eq!(s.locked(ip("192.0.2.2")), None);
    }

    #[test]
    fn rates_set_while_it_runs_apply_to_the_next_request() {
        let s = Strikes::new(6, 2);
        let (a, b) = (ip("192.0.2.1"), ip("192.0.2.2"));
        block(s.strike(a, &guess()));
        block(s.strike(a, &guess()));
        assert!(s.locked(a).is_some());
        s.set_rates(0, 2);
        assert!(s.locked(a).is_none(), "a per_minute of 0 lifts the lock at once");
        s.set_rates(6, 1);
        assert!(s.locked(a).is_some(), "the address kept what it had left");
        block(s.strike(b, &guess()));
        assert!(s.locked(b).is_some(), "a lowered burst locks after one refusal");
    }

    #[test]
    fn zero_per_minute_counts_but_never_locks() {
        let s = Strikes::new(0, 1);
        for _ in 0..10 {
            block(s.strike(ip("192.0.2.1"), &guess()));
        }
        assert!(s.locked(ip("192.0.2.1")).is_none());
        assert_eq!(s.counts().0, 10);
    }

    #[test]
    fn memory_stays_bounded_under_many_addresses() {
        let s = Strikes::new(1, 1);
        for i in 0..(MAX_ADDRESSES as u32 + 10) {
            block(s.strike(IpAddr::V4(i.into()), &guess()));
        }
        assert!(s.len() <= MAX_ADDRESSES, "{}", s.len());
    }

    #[test]
    fn the_client_is_the_peer_unless_a_trusted_proxy_forwards_for_it() {
        let trusted = parse_blocks(&["127.0.0.1".into(), "10.0.0.0/8".into()]).unwrap();
        let mut headers = HeaderMap::new();
        headers.append("x-forwarded-for", HeaderValue::from_static("203.0.113.9, 198.51.100.7"));
        headers.append("x-forwarded-for", HeaderValue::from_static("10.1.2.3"));
        // An untrusted peer's header is ignored: anyone can write one.
        assert_eq!(client_address(ip("192.0.2.5"), &headers, &trusted), ip("192.0.2.5"));
        // Through two trusted hops, the right-most untrusted entry: a spoofed entry left of it
        // (203.0.113.9) does not count.
        assert_eq!(client_address(ip("127.0.0.1"), &headers, &trusted), ip("198.51.100.7"));
        assert_eq!(client_address(ip("::ffff:127.0.0.1"), &headers, &trusted), ip("198.51.100.7"));
        // No header: the proxy itself.
        assert_eq!(client_address(ip("10.9.9.9"), &HeaderMap::new(), &trusted), ip("10.9.9.9"));
        // Garbage stops the walk at the last good hop.
        let mut junk = HeaderMap::new();
        junk.append("x-forwarded-for", HeaderValue::from_static("198.51.100.7, not-an-address, 10.0.0.2"));
        assert_eq!(client_address(ip("127.0.0.1"), &junk, &trusted), ip("10.0.0.2"));
    }

    #[test]
    fn blocks_parse_and_bad_ones_name_their_entry() {
        let b = Block::parse("10.0.0.0/8").unwrap();
        assert!(b.contains(ip("10.255.0.1")) && !b.contains(ip("11.0.0.1")) && !b.contains(ip("::1")));
        assert!(Block::parse("0.0.0.0/0").unwrap().contains(ip("192.0.2.1")));
        assert!(Block::parse("fd00::/8").unwrap().contains(ip("fd12::1")));
        let e = parse_blocks(&["127.0.0.1".into(), "10.0.0.0/33".into()]).unwrap_err();
        assert!(e.starts_with("trusted_proxies[1]: \"10.0.0.0/33\"") && e.contains("0 to 32"), "{e}");
        assert!(parse_blocks(&["proxy.internal".into()]).unwrap_err().contains("not an IP address"));
    }
}
