//! What outlives a session may hold of it: a weak [`SessionHandle`] on a [`SessionView`], the
//! three things the hub and an offer source ask of a session. The trait sits below both the
//! session and the hub, so the hub keeps its sessions without depending on the session's file.

use toolsearch_disclosure::ToolSet;
use toolsearch_query::Principal;

/// What makes a tool set for a principal as the hub does now, with the generation of the
/// hub's configuration it was made from (`None`: it cannot be made).
pub type MakeSet<'a> = &'a dyn Fn(Principal) -> Option<(u64, ToolSet)>;

/// A session as the hub and an offer source see it.
pub trait SessionView: Send + Sync {
    /// The caller's principal, once its first request set it.
    fn principal(&self) -> Option<Principal>;

    /// Records `digest` as what its caller may see of the catalogue; whether that differs from
    /// what it saw before.
    fn saw_catalogue(&self, digest: u64) -> bool;

    /// Recomputes visibility (availability or the catalogue changed); whether it changed.
    fn refresh(&self) -> bool;

    /// Whether its caller is one the transport does not identify (it holds the hub's default
    /// principal).
    fn local(&self) -> bool;

    /// Makes the session's tool set again with `make` (the hub's configuration changed),
    /// under its caller's scopes, or under `default` for a caller the transport does not
    /// identify, unless it is made from that configuration for that principal already;
    /// whether its set is now so made (not for a session that has no set yet or serves one
    /// request of a session-free client). A set made again is recorded on `trail`, if one is
    /// kept (a `tool_set_remade` line).
    fn remake(&self, default: &Principal, make: MakeSet<'_>, trail: Option<&crate::trail::Trail>) -> bool;

    /// Ends the session's connection: an HTTP session is closed, with its streams (its client
    /// must start a new one), and what was queued for it is dropped. A stdio session is left
    /// as it is (its one client stalls only itself).
    fn close(&self);
}

/// A session as what outlives it may hold it: it may be gone.
pub type SessionHandle = std::sync::Weak<dyn SessionView>;

/// Recomputes a session's visibility; whether it changed (`None`: it is gone).
pub(crate) fn refresh(handle: &SessionHandle) -> Option<bool> {
    handle.upgrade().map(|s| s.refresh())
}
