//! Which sessions have idled past `limits.http.session_idle_secs`, kept by the guard rather
//! than the SDK (which copies its idle time into each session as it opens), so that a reloaded
//! limit applies to the sessions already open.
//!
//! A session is busy while one of its owner's requests is being answered, its response body
//! included: an open `GET` stream, or a tool call still running, keeps it open. It is idle from
//! the moment its last response ended (or it opened). [`watch`] looks once a second and closes
//! the sessions idle for the limit, and forgets the bindings of sessions closed any other way.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use http_body::{Frame, SizeHint};
use tokio_util::sync::CancellationToken;

use super::Guard;

/// Each bound session's last activity and requests being answered; how many were closed.
#[derive(Default)]
pub(super) struct Idle {
    seen: Arc<Mutex<HashMap<String, Seen>>>,
    closed: AtomicU64,
}

struct Seen {
    /// When the session opened, or its last response ended.
    last: Instant,
    /// Its requests whose responses have not ended.
    open: usize,
}

/// A session's request being answered; the session is busy until this is dropped.
pub(super) struct Busy {
    seen: Arc<Mutex<HashMap<String, Seen>>>,
    session: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = seen.get_mut(&self.session) {
            s.open = s.open.saturating_sub(1);
            s.last = Instant::now();
        }
    }
}

impl Idle {
    /// A request on bound session `session` begins.
    pub(super) fn begin(&self, session: &str) -> Busy {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.entry(session.to_owned()).or_insert(Seen { last: Instant::now(), open: 0 }).open += 1;
        Busy { seen: self.seen.clone(), session: session.to_owned() }
    }

    /// Session `session` opened now.
    pub(super) fn opened(&self, session: &str) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.entry(session.to_owned()).or_insert(Seen { last: Instant::now(), open: 0 });
    }

    /// The sessions of `live` idle for `limit` or longer, forgotten here, as are the sessions
    /// not in `live`; a live session not known here is idle from now.
    fn expired(&self, live: &std::collections::HashSet<String>, limit: Duration) -> Vec<String> {
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.retain(|s, _| live.contains(s));
        for s in live {
            seen.entry(s.clone()).or_insert(Seen { last: now, open: 0 });
        }
        let out: Vec<String> = seen
            .iter()
            .filter(|(_, s)| s.open == 0 && now.duration_since(s.last) >= limit)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &out {
            seen.remove(id);
        }
        out
    }
}

impl Guard {
    /// Closes the sessions idle for `limits.http.session_idle_secs` as it is now, and forgets
    /// the bindings of sessions closed otherwise.
    pub(crate) async fn sweep(&self) {
        let limit = Duration::from_secs(self.limits().session_idle_secs.max(1));
        let idle = {
            let live = self.sessions.sessions.read().await;
            // Under the SDK's lock: no session opens (and is bound) between the look and this.
            self.owners.lock().unwrap_or_else(|p| p.into_inner()).retain(|s, _| live.contains_key(s.as_str()));
            let ids = live.keys().map(|k| k.to_string()).collect();
            self.idle.expired(&ids, limit)
        };
        for id in &idle {
            self.owners.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
            self.end(id).await;
        }
        self.idle.closed.fetch_add(idle.len() as u64, Ordering::Relaxed);
    }

    /// Sessions closed for idling, since the start.
    pub(crate) fn idle_closed(&self) -> u64 {
        self.idle.closed.load(Ordering::Relaxed)
    }
}

/// Sweeps `guard`'s idle sessions once a second until `stop`.
pub(crate) fn watch(guard: Arc<Guard>, stop: CancellationToken) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => guard.sweep().await,
            }
        }
    });
}

/// A response body that holds `T` (a [`Busy`]) until it is dropped, sizes and all unchanged.
pub(super) struct Holding<T> {
    body: Body,
    _held: T,
}

impl<T> Holding<T> {
    /// `body`, holding `held`.
    pub(super) fn body(body: Body, held: T) -> Body
    where
        T: Send + Unpin + 'static,
    {
        Body::new(Holding { body, _held: held })
    }
}

impl<T: Unpin> HttpBody for Holding<T> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_idle_only_with_no_request_open_and_none_ended_within_the_limit() {
        let idle = Idle::default();
        let live: std::collections::HashSet<String> = ["a", "b"].map(String::from).into();
        idle.opened("a");
        idle.opened("b");
        let busy = idle.begin("a");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(idle.expired(&live, Duration::from_millis(20)), ["b"], "a request open keeps a session");
        drop(busy);
        // b expired (and was closed): only a is live now.
        let only_a: std::collections::HashSet<String> = ["a"].map(String::from).into();
        assert!(idle.expired(&only_a, Duration::from_millis(20)).is_empty(), "its end is activity");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(idle.expired(&only_a, Duration::from_millis(20)), ["a"]);
        // A live session not known here (b, forgotten when it expired) is idle from now.
        assert!(idle.expired(&live, Duration::from_millis(20)).is_empty());
        // A session no longer live is forgotten: its late request's end records nothing.
        let late = idle.begin("gone");
        idle.expired(&live, Duration::from_secs(60));
        drop(late);
        assert!(!idle.seen.lock().unwrap().contains_key("gone"));
    }
}
