//! Who may call the HTTP endpoint ([`HttpAccess`]: tokens, origins) and within what bounds
//! ([`HttpLimits`]: sessions, bodies, slow clients), with the check made before anything
//! starts.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::Deserialize;

use crate::config::ServeError;

/// Who may call the HTTP endpoint.
#[derive(Debug, Clone, Default)]
pub struct HttpAccess {
    /// Bearer tokens and what each grants; empty: no token needed (loopback only).
    pub tokens: BTreeMap<String, crate::config::Grant>,
    /// Identity-provider tokens accepted beside the static ones (`auth.oauth`).
    pub oauth: Option<crate::oauth::OAuthSettings>,
    /// Browser origins allowed besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// Proxies (addresses or CIDR blocks) whose `X-Forwarded-For` names the client whose
    /// refused tokens are counted (`crate::strikes`); without them, the TCP peer is the client.
    pub trusted_proxies: Vec<String>,
    /// Bounds on sessions, bodies and slow clients.
    pub limits: HttpLimits,
    /// Public JSON documents served as they are, by path (the gateway's OAuth Client ID
    /// Metadata Document): readable without a token, from any origin; replaced, with the
    /// callbacks, by a reload (`crate::http_pages`).
    pub documents: Vec<(String, String)>,
    /// Pages the embedding server answers itself, by path, without a token (the gateway's
    /// OAuth redirect for per-user logins).
    pub callbacks: Callbacks,
}

/// A page's answer to a `GET` with its query string: the status and plain text to send.
pub type Callback = std::sync::Arc<dyn Fn(String) -> crate::BoxFuture<(u16, String)> + Send + Sync>;

/// The pages an embedding server answers itself, by path.
#[derive(Clone, Default)]
pub struct Callbacks(pub Vec<(String, Callback)>);

impl std::fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(p, _)| p)).finish()
    }
}

/// Bounds on what HTTP clients may make the gateway hold (`toolsearch.limits.http`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpLimits {
    /// Most sessions open at once (default 256); past it, a new session gets 503 with
    /// `Retry-After`.
    pub max_sessions: usize,
    /// Most sessions one bearer token (or, without tokens, all clients together) may hold
    /// open at once (default 32), and never more than half of [`HttpLimits::max_sessions`]
    /// whatever this says: one caller cannot fill it and lock every other out. Past it, its
    /// new session gets 429 with `Retry-After`.
    pub max_sessions_per_token: usize,
    /// A session with no request for this long is closed (default 300 s): idle from the end
    /// of its last response, so an open `GET` stream or a running call keeps it. A reloaded
    /// value applies to the sessions already open, within a second.
    pub session_idle_secs: u64,
    /// Longest wait for a request's headers, and for its body (default 10 s each).
    pub read_timeout_secs: u64,
    /// Largest request body (default 4 MiB).
    pub max_body_bytes: usize,
    /// How long a connection may go without a word from its peer before it is dropped
    /// (default 60 s; 0 leaves it to the kernel): data unacknowledged for this long ends it
    /// (`TCP_USER_TIMEOUT`), and one quiet for this long is probed (TCP keep-alive). So a
    /// client machine gone without closing its `GET` stream frees its session within this
    /// plus the lesser of it and the stream's 15 s keep-alive, not after the kernel's 15
    /// minutes. A reloaded value applies to the next connection.
    pub peer_timeout_secs: u64,
    /// Refused bearer tokens one client address is forgiven per minute (default 6; 0: refused
    /// tokens are not throttled): past [`HttpLimits::refused_tokens_burst`], its tokens get
    /// 429 without being compared (`crate::strikes`).
    pub refused_tokens_per_minute: u32,
    /// Refused tokens one client address may present in a row before it waits (default 30).
    pub refused_tokens_burst: u32,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_sessions: 256,
            max_sessions_per_token: 32,
            session_idle_secs: 300,
            read_timeout_secs: 10,
            max_body_bytes: 4 << 20,
            peer_timeout_secs: 60,
            refused_tokens_per_minute: 6,
            refused_tokens_burst: 30,
        }
    }
}

impl HttpLimits {
    /// The sessions and streams one token (or, without tokens, all clients) may hold at once:
    /// [`HttpLimits::max_sessions_per_token`], and, when there are tokens (`shared`), never
    /// more than half of [`HttpLimits::max_sessions`] (at least 1), so that no setting lets one
    /// caller take every place and lock the others out. Without tokens there is one caller,
    /// with nobody to lock out.
    pub fn per_token_cap(&self, shared: bool) -> usize {
        let cap =
            if shared { self.max_sessions_per_token.min(self.max_sessions / 2) } else { self.max_sessions_per_token };
        cap.max(1)
    }
}

/// The shortest static token a non-loopback endpoint accepts, in bytes.
pub const MIN_TOKEN_BYTES: usize = 16;

/// The fewest distinct characters a static token on a non-loopback endpoint has. A random
/// 16-character hex token had fewer in none of 300,000 draws; `1111222233334444` has 4.
const MIN_DISTINCT_CHARS: usize = 5;

/// Why a static token is too easy to guess to face the network, said without its value: under
/// [`MIN_TOKEN_BYTES`], made of a few characters (`aaaaaaaaaaaaaaaa`), one piece repeated
/// (`changemechangeme`), or counting up or down (`0123456789abcdef`). `None`: none of these.
/// This catches what is made by hand, not a weak secret that looks random.
pub fn weakness(token: &str) -> Option<String> {
    let bytes = token.as_bytes();
    let n = bytes.len();
    if n < MIN_TOKEN_BYTES {
        return Some(format!("is under {MIN_TOKEN_BYTES} bytes"));
    }
    let distinct = bytes.iter().collect::<std::collections::HashSet<_>>().len();
    if distinct < MIN_DISTINCT_CHARS {
        return Some(format!("has only {distinct} distinct characters"));
    }
    if let Some(p) = (1..=n / 2).find(|&p| (p..n).all(|i| bytes[i] == bytes[i - p])) {
        return Some(format!("repeats its first {p} characters"));
    }
    // Counting up or down, allowing two jumps (`0123456789abcdef` jumps once, from 9 to a).
    for step in [1u8, u8::MAX] {
        if bytes.windows(2).filter(|w| w[1].wrapping_sub(w[0]) != step).count() <= 2 {
            return Some("counts up or down (like `abcdef`)".to_owned());
        }
    }
    None
}

impl HttpAccess {
    /// Refuses a non-loopback address without tokens or OAuth, or with a static token easy to
    /// guess (`weakness`: short, or made by hand), an OAuth section that cannot be used, and a
    /// `trusted_proxies` entry that is no address or block (checked before anything starts).
    pub fn check(&self, addr: SocketAddr) -> Result<(), ServeError> {
        crate::strikes::parse_blocks(&self.trusted_proxies).map_err(ServeError::Http)?;
        if let Some(oauth) = &self.oauth {
            oauth.check().map_err(|e| ServeError::Http(format!("auth.oauth.{e}")))?;
        }
        check_tokens(addr, &self.tokens, self.oauth.is_some()).map_err(ServeError::Http)
    }
}

/// Refuses static `tokens` that would leave `addr` open to anyone (none, without an identity
/// provider: `oauth`), or, on a non-loopback address, one easy to guess (named by its name or
/// its length, never its value).
pub(crate) fn check_tokens(
    addr: SocketAddr,
    tokens: &BTreeMap<String, crate::config::Grant>,
    oauth: bool,
) -> Result<(), String> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    if tokens.is_empty() && !oauth {
        return Err(format!(
            "refusing to listen on {addr} without bearer tokens: anyone who can reach it could call every tool; \
             add \"tokens\" to the toolsearch section, or bind 127.0.0.1"
        ));
    }
    // Anyone who reaches the port may guess: a short or hand-made token falls to a guesser.
    for (token, grant) in tokens {
        let Some(weak) = weakness(token) else { continue };
        let which = if grant.name.is_empty() { "a token".to_owned() } else { format!("token {:?}", grant.name) };
        let which = format!("{which} ({} bytes)", token.len());
        return Err(format!(
            "refusing to listen on {addr}: {which} {weak}, easy to guess over the network; use random \
             ones (`openssl rand -hex 32`), or bind 127.0.0.1"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::weakness;

    #[test]
    fn tokens_made_by_hand_are_weak_and_random_ones_are_not() {
        for (token, says) in [
            ("pass1234", "under 16 bytes"),
            ("aaaaaaaaaaaaaaaaaaaaaaaa", "only 1 distinct"),
            ("1111222233334444", "only 4 distinct"),
            ("changemechangeme", "first 8 characters"),
            ("k3y!z9k3y!z9k3y!z9k3", "first 6 characters"),
            ("0123456789abcdef", "counts up"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "counts up"),
            ("zyxwvutsrqponmlkjihg", "counts up or down"),
        ] {
            let weak = weakness(token).unwrap_or_default();
            assert!(weak.contains(says), "{token}: {weak:?}");
            assert!(!weak.contains(token), "the value is said: {weak}");
        }
        for token in [
            "3f9a1c07d2e84b6a",
            "a-long-enough-token-0123456789",
            "changemechangemeX",
            "9b2e7f41c0d35a86e1f49c2b7d03a658f1e2c9b4a7d06e3f58c1b2a9d4e7f03c",
        ] {
            assert_eq!(weakness(token), None, "{token}");
        }
    }
}
