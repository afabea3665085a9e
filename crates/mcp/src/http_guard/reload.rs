//! Who may call, replaced while the endpoint runs (a reloaded config's): the static tokens
//! (what the callers who lost their token, or what it granted, opened is ended), the identity
//! provider (`auth.oauth`: a changed one ends what all of its callers opened), the allowed
//! origins, the trusted proxies, the limits (`session_idle_secs` too: the guard closes idle
//! sessions, `super::idle`) and the public pages beside the endpoint.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Guard;
use crate::access_reload::SessionsEnded;
use crate::http_access::HttpAccess;
use crate::http_auth::TokenDigest;
use crate::oauth::Verifier;

impl Guard {
    /// Replaces the static tokens, the identity provider, the allowed origins, the trusted
    /// proxies, the limits and the public pages (the OAuth client's document and redirect,
    /// `crate::http_pages`) with a reloaded config's (`access`), for the next request (or
    /// connection) on; refused, with nothing replaced, as a start would refuse them (tokens that
    /// leave a non-loopback address open or easy to guess, `auth.oauth` settings a start
    /// refuses, a proxy that is no address or block). Lowered limits end nothing open: sessions
    /// past a lowered `max_sessions` stay until they close. The sessions ended: of the callers
    /// whose token went or is granted otherwise, and, when `auth.oauth` changed or went, of
    /// every caller of the identity provider (what its tokens grant may have changed with it).
    pub(crate) async fn reload(&self, access: HttpAccess) -> Result<SessionsEnded, String> {
        let HttpAccess { tokens, oauth, allowed_origins, trusted_proxies, limits, documents, callbacks } = access;
        let verifier = match (self.auth.verifier(), oauth) {
            (Some(v), Some(settings)) if v.settings() == &settings => Some(v),
            (_, Some(settings)) => Some(Verifier::new(settings).map_err(|e| format!("toolsearch.auth.oauth.{e}"))?),
            (_, None) => None,
        };
        crate::http_access::check_tokens(self.addr, &tokens, verifier.is_some())
            .map_err(|e| format!("toolsearch.tokens: {e}"))?;
        let proxies = crate::strikes::parse_blocks(&trusted_proxies).map_err(|e| format!("toolsearch.{e}"))?;
        *self.limits.write().unwrap_or_else(|p| p.into_inner()) = limits;
        self.strikes.set_rates(limits.refused_tokens_per_minute, limits.refused_tokens_burst);
        *self.trusted_proxies.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(proxies);
        self.allowed_origins.set(allowed_origins);
        self.pages.set(documents, callbacks.0);
        if let Some(v) = verifier.as_ref().filter(|v| !self.auth.verifier().is_some_and(|w| Arc::ptr_eq(v, &w))) {
            let v = v.clone();
            tokio::spawn(async move { v.warm().await });
        }
        // Replaced first: a session bound, or a stream begun, after the ends below was
        // authenticated before, and is ended where it is made (`guard`).
        let lost = self.auth.replace(tokens, verifier);
        if lost.statics.is_empty() && !lost.provider {
            return Ok(SessionsEnded::default());
        }
        {
            let mut cuts = self.cuts.lock().unwrap_or_else(|p| p.into_inner());
            for caller in &lost.statics {
                if let Some(cut) = cuts.remove(caller) {
                    cut.cancel();
                }
            }
            if lost.provider {
                std::mem::take(&mut *self.provider_cut.lock().unwrap_or_else(|p| p.into_inner())).cancel();
            }
        }
        // A caller neither static nor anyone (after the replacement) is the identity provider's.
        let ended: Vec<(String, TokenDigest)> = {
            let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            owners.extract_if(|_, o| lost.statics.contains(o) || (lost.provider && !self.auth.replaceable(o))).collect()
        };
        for (id, _) in &ended {
            self.end(id).await;
        }
        let tokens = ended.iter().filter(|(_, o)| lost.statics.contains(o)).count();
        Ok(SessionsEnded { tokens, oauth: ended.len() - tokens })
    }

    /// Closes HTTP session `session` (its streams end; its client's next request gets 404).
    pub(super) async fn end(&self, session: &str) {
        use rmcp::transport::streamable_http_server::SessionManager;
        let _ = self.sessions.close_session(&session.into()).await;
    }

    /// What ends `caller`'s listen streams: one kept per static token (a bounded number), so
    /// that a replacement finds it, one shared by the identity provider's callers, and one
    /// already ended if the tokens or the provider changed since `generation` (the stream was
    /// authenticated before the change).
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
            // An identity provider's caller: only a replaced verifier takes anything from it.
            false => self.provider_cut.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    }
}

impl crate::access_reload::AccessReload for Guard {
    fn reload(&self, access: HttpAccess) -> crate::offer_source::BoxFutureRef<'_, Result<SessionsEnded, String>> {
        Box::pin(Guard::reload(self, access))
    }
}
