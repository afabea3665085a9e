//! What replaces who may call the HTTP endpoint while it runs, as the hub knows it: a trait the
//! HTTP guard implements, so that the hub reaches the guard without depending on it.

use std::collections::BTreeMap;

use crate::config::Grant;
use crate::offer_source::BoxFutureRef;

/// Replaces a running endpoint's static tokens, allowed origins, trusted proxies and limits.
pub(crate) trait AccessReload: Send + Sync {
    /// Replaces them for the next request on, refused with the reason (nothing replaced) where
    /// a start would refuse them; the number of sessions ended, whose caller's token went or
    /// is granted otherwise.
    fn reload<'a>(
        &'a self,
        tokens: BTreeMap<String, Grant>,
        allowed_origins: Vec<String>,
        trusted_proxies: &'a [String],
        limits: crate::http_access::HttpLimits,
    ) -> BoxFutureRef<'a, Result<usize, String>>;
}
