//! Who may call, replaced while the endpoint runs (a reloaded config's): the static tokens
//! (what the callers who lost their token, or what it granted, opened is ended), the allowed
//! origins, the trusted proxies and the limits (`session_idle_secs` too: the guard closes idle
//! sessions, `super::idle`).

use std::collections::BTreeMap;

use tokio_util::sync::CancellationToken;

use super::Guard;
use crate::config::Grant;
use crate::http_access::HttpLimits;
use crate::http_auth::TokenDigest;

impl Guard {
    /// Replaces the static tokens, the allowed origins, the trusted proxies and the limits
    /// with a reloaded config's, for the next request (or connection) on; refused, with nothing
    /// replaced, as a start would refuse them (tokens that leave a non-loopback address open or
    /// easy to guess, a proxy that is no address or block). Lowered limits end nothing open:
    /// sessions past a lowered `max_sessions` stay until they close. The number of sessions
    /// ended, of the callers whose token went or is granted otherwise.
    pub(crate) async fn reload(
        &self,
        tokens: BTreeMap<String, Grant>,
        allowed_origins: Vec<String>,
        trusted_proxies: &[String],
        limits: HttpLimits,
    ) -> Result<usize, String> {
        crate::http_access::check_tokens(self.addr, &tokens, self.auth.has_oauth())
            .map_err(|e| format!("toolsearch.tokens: {e}"))?;
        let proxies = crate::strikes::parse_blocks(trusted_proxies).map_err(|e| format!("toolsearch.{e}"))?;
        *self.limits.write().unwrap_or_else(|p| p.into_inner()) = limits;
        self.strikes.set_rates(limits.refused_tokens_per_minute, limits.refused_tokens_burst);
        *self.trusted_proxies.write().unwrap_or_else(|p| p.into_inner()) = std::sync::Arc::new(proxies);
        self.allowed_origins.set(allowed_origins);
        // Replaced first: a session bound, or a stream begun, after the ends below was
        // authenticated before, and is ended where it is made (`guard`).
        let lost = self.auth.replace(tokens);
        if lost.is_empty() {
            return Ok(0);
        }
        {
            let mut cuts = self.cuts.lock().unwrap_or_else(|p| p.into_inner());
            for caller in &lost {
                if let Some(cut) = cuts.remove(caller) {
                    cut.cancel();
                }
            }
        }
        let ended: Vec<String> = {
            let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            owners.extract_if(|_, o| lost.contains(o)).map(|(s, _)| s).collect()
        };
        for id in &ended {
            self.end(id).await;
        }
        Ok(ended.len())
    }

    /// Closes HTTP session `session` (its streams end; its client's next request gets 404).
    pub(super) async fn end(&self, session: &str) {
        use rmcp::transport::streamable_http_server::SessionManager;
        let _ = self.sessions.close_session(&session.into()).await;
    }

    /// What ends `caller`'s listen streams: one kept per static token (a bounded number), so
    /// that a replacement finds it, and one already ended if the tokens changed since
    /// `generation` (the stream was authenticated before the change).
    pub(super) fn cut(&self, caller: TokenDigest, generation: u64) -> CancellationToken {
        let mut cuts = self.cuts.lock().unwrap_or_else(|p| p.into_inner());
        // Under the lock `reload` takes after it replaced the tokens.
        if self.auth.generation() != generation {
            let cut = CancellationToken::new();
            cut.cancel();
            return cut;
        }
        match self.auth.replaceable(&caller) {
            true => cuts.entry(caller).or_default().clone(),
            // An identity provider's caller: no replacement takes anything from it.
            false => CancellationToken::new(),
        }
    }
}

impl crate::access_reload::AccessReload for Guard {
    fn reload<'a>(
        &'a self,
        tokens: BTreeMap<String, Grant>,
        allowed_origins: Vec<String>,
        trusted_proxies: &'a [String],
        limits: HttpLimits,
    ) -> crate::offer_source::BoxFutureRef<'a, Result<usize, String>> {
        Box::pin(Guard::reload(self, tokens, allowed_origins, trusted_proxies, limits))
    }
}
