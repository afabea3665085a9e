//! What replaces who may call the HTTP endpoint while it runs, as the hub knows it: a trait the
//! HTTP guard implements, so that the hub reaches the guard without depending on it.

use crate::http_access::HttpAccess;
use crate::offer_source::BoxFutureRef;

/// The sessions a reloaded config's access ([`crate::Hub::set_http_access`]) ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionsEnded {
    /// Of callers whose static token went or is granted otherwise.
    pub tokens: usize,
    /// Of the identity provider's callers, when `auth.oauth` changed or went.
    pub oauth: usize,
}

/// Replaces a running endpoint's static tokens, identity provider (`auth.oauth`), allowed
/// origins, trusted proxies, limits and public pages.
pub(crate) trait AccessReload: Send + Sync {
    /// Replaces them with `access`'s for the next request on, refused with the reason (nothing
    /// replaced) where a start would refuse them; the sessions ended.
    fn reload(&self, access: HttpAccess) -> BoxFutureRef<'_, Result<SessionsEnded, String>>;
}
