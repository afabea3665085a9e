//! The HTTP endpoint's access as a config's settings give it ([`GatewaySettings::http_access`]):
//! built the same way when the gateway starts and when the keeper applies a reloaded config,
//! so that a reload replaces what a start would have set, public pages included.

use std::path::Path;

use toolsearch_mcp::{Callbacks, HttpAccess};

use crate::config::GatewaySettings;
use crate::login::{callback_page, document};

impl GatewaySettings {
    /// Who may call the HTTP endpoint (static tokens, the identity provider, origins, proxies,
    /// limits) and the public pages it serves: the OAuth Client ID Metadata Document at
    /// `auth.client_metadata_url`'s path (its redirect addresses with `auth.callback_url`), and
    /// the per-user login redirect at `auth.callback_url`'s, answered from `state`'s logins.
    pub fn http_access(&self, state: &Path) -> HttpAccess {
        let callback = self.auth.callback_url.as_deref();
        let documents = (self.auth.client_metadata_url.iter())
            .filter_map(|url| document::path(url).map(|p| (p, document::document(url, callback).to_string())))
            .collect();
        let callbacks = callback.and_then(document::path).map(|path| (path, callback_page(state)));
        HttpAccess {
            tokens: self.tokens.clone(),
            oauth: self.auth.oauth.clone(),
            allowed_origins: self.allowed_origins.clone(),
            trusted_proxies: self.trusted_proxies.clone(),
            limits: self.limits.http,
            documents,
            callbacks: Callbacks(callbacks.into_iter().collect()),
        }
    }

    /// Whether `other` gives the HTTP endpoint other access or pages than these settings do.
    pub(crate) fn access_differs(&self, other: &GatewaySettings) -> bool {
        let (a, b) = (&self.auth, &other.auth);
        (&self.tokens, &a.oauth, &self.allowed_origins, &self.trusted_proxies, self.limits.http)
            != (&other.tokens, &b.oauth, &other.allowed_origins, &other.trusted_proxies, other.limits.http)
            || (&a.client_metadata_url, &a.callback_url) != (&b.client_metadata_url, &b.callback_url)
    }
}
