//! Supervision: keeping one upstream connected (connect, list, ping) and, on any failure,
//! marking it down and trying again with backoff; a lazy server waits for its first use.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::ClientRequest;
use rmcp::service::RunningService;
use rmcp::RoleClient;
use tokio::sync::mpsc;

use super::client::UpClient;
use super::lazy::Lazy;
use super::{Failure, UpEvent, Upstream, IDLE, MAX_BACKOFF, PING_EVERY, PING_TIMEOUT};

/// How often a server that waits for a login is tried again.
const LOGIN_POLL: Duration = Duration::from_secs(2);
use crate::listing::{list_tools, Listing};

impl Upstream {
    /// Keeps the upstream connected for as long as the returned task runs: connect, list, watch
    /// (pings), and on any failure mark it down and retry with backoff.
    pub fn supervise(
        self: &Arc<Upstream>,
        events: mpsc::UnboundedSender<UpEvent>,
        connect_timeout: Duration,
    ) -> tokio::task::JoinHandle<()> {
        let up = self.clone();
        *self.events.lock().unwrap_or_else(|p| p.into_inner()) = Some(events.clone());
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(500);
            // The first failure is announced at once, even before it ever connected: startup
            // settles the server as down instead of waiting out the connect timeout.
            let mut announced = false;
            // A lazy server's kept listing stands in for its first connection; another's is
            // indexed, its tools held unavailable, until the server is up (`super::kept`).
            let kept = up.kept.as_ref().and_then(|k| k.load(&up.name));
            let mut waiting = kept.is_some() && up.lazy.is_some();
            if let Some(listing) = kept {
                *up.listing.lock().unwrap_or_else(|p| p.into_inner()) = Some(listing);
                if waiting {
                    up.available.store(true, Ordering::SeqCst);
                    announced = true;
                    let _ = events.send(UpEvent::Up(up.name.clone()));
                }
            }
            loop {
                if let (Some(lazy), true) = (&up.lazy, waiting) {
                    lazy.wanted.notified().await;
                }
                waiting = false;
                let handler = UpClient {
                    name: up.name.clone(),
                    events: events.clone(),
                    asks: up.asks.clone(),
                    logged: Mutex::new((Instant::now(), 0)),
                };
                up.router.reset();
                let modern = up.modern.load(Ordering::SeqCst);
                match tokio::time::timeout(connect_timeout, up.connect(handler)).await {
                    // It refused `initialize` for the session-free revision: reached that way
                    // at once, not reported down for it.
                    Ok(Err(_)) if !modern && up.modern.load(Ordering::SeqCst) => continue,
                    Ok(Ok(service)) => {
                        backoff = Duration::from_millis(500);
                        up.set_failure(None);
                        let reason = up.run(service, &events).await;
                        if reason.kind == IDLE {
                            // Stopped for want of use: still available, started again on demand.
                            *up.peer.lock().unwrap_or_else(|p| p.into_inner()) = None;
                            waiting = true;
                            continue;
                        }
                        up.set_failure(Some(reason));
                    }
                    Ok(Err(e)) => up.set_failure(Some(e)),
                    Err(_) => up.set_failure(Some(Failure::new(
                        format!("it did not answer initialize within {} s", connect_timeout.as_secs()),
                        "",
                    ))),
                }
                *up.peer.lock().unwrap_or_else(|p| p.into_inner()) = None;
                if up.available.swap(false, Ordering::SeqCst) || !announced {
                    announced = true;
                    let _ = events.send(UpEvent::Down(up.name.clone()));
                }
                // A server waiting for a login is tried again every 2 s (it costs a look at its
                // grant file), so that a login made meanwhile is taken up within seconds.
                let login = up.failure().is_some_and(|f| f.kind.contains(crate::login::LOGIN_REQUIRED));
                let wait = if login { backoff.min(LOGIN_POLL) } else { backoff };
                tokio::time::sleep(wait).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        })
    }

    /// Serves one connected session until it fails; the reason it ended.
    async fn run(
        &self,
        service: RunningService<RoleClient, UpClient>,
        events: &mpsc::UnboundedSender<UpEvent>,
    ) -> Failure {
        let peer = service.peer().clone();
        let summary = service
            .peer_info()
            .map(|info| {
                info.instructions
                    .clone()
                    .filter(|s| !s.trim().is_empty())
                    .or_else(|| info.server_info.as_ref().and_then(|i| i.title.clone()))
                    .or_else(|| info.server_info.as_ref().map(|i| i.name.clone()))
                    .unwrap_or_else(|| self.name.clone())
            })
            .unwrap_or_else(|| self.name.clone());
        let tools = match list_tools(&peer, &self.limits.list).await {
            Ok(t) => t,
            Err(e) => {
                service.cancellation_token().cancel();
                return Failure::new("its tool list could not be read", e);
            }
        };
        let offers = crate::offers::list_offers(&peer, &self.limits.list).await;
        *self.listing.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(Listing { summary: summary.clone(), tools, offers });
        if let (Some(kept), Some(listing)) = (&self.kept, self.listing()) {
            kept.keep(&self.name, &listing);
        }
        *self.peer.lock().unwrap_or_else(|p| p.into_inner()) = Some(peer.clone());
        self.available.store(true, Ordering::SeqCst);
        let _ = events.send(UpEvent::Up(self.name.clone()));
        if let Some(lazy) = &self.lazy {
            lazy.connected.notify_waiters();
        }
        let closed = service.cancellation_token();
        let (done_tx, mut done_rx) = tokio::sync::oneshot::channel();
        let (close, ended) = (tokio_util::sync::CancellationToken::new(), tokio_util::sync::CancellationToken::new());
        *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Some((close.clone(), ended.clone()));
        let stop = service.cancellation_token();
        tokio::spawn(async move {
            let waiting = service.waiting();
            tokio::pin!(waiting);
            let reason = tokio::select! {
                r = &mut waiting => match r {
                    Ok(r) => format!("{r:?}"),
                    Err(e) => e.to_string(),
                },
                // Stopped by the fleet: closed (the transport's close ends the child) and
                // waited for, even though the supervising task is gone.
                () = close.cancelled() => {
                    stop.cancel();
                    let _ = (&mut waiting).await;
                    "stopped".to_owned()
                }
            };
            ended.cancel();
            let _ = done_tx.send(reason);
        });
        loop {
            tokio::select! {
                reason = &mut done_rx => {
                    return Failure::new("its session ended (the server exited or closed the connection)", reason.unwrap_or_default())
                }
                _ = tokio::time::sleep(self.lazy.as_ref().map_or(PING_EVERY, |l| PING_EVERY.min(l.settings.idle / 2 + Duration::from_millis(50)))) => {
                    if self.lazy.as_ref().is_some_and(Lazy::idle) {
                        *self.peer.lock().unwrap_or_else(|p| p.into_inner()) = None;
                        if let Some((close, _)) = self.session.lock().unwrap_or_else(|p| p.into_inner()).take() {
                            close.cancel();
                        }
                        let _ = (&mut done_rx).await;
                        return Failure::new(IDLE, "");
                    }
                    let ping = || tokio::time::timeout(PING_TIMEOUT, peer.send_request(ClientRequest::PingRequest(Default::default())));
                    let mut answer = ping().await;
                    // A refused send is tried once more on a new connection before the server
                    // counts as down: a kept-alive connection the server closed as the ping
                    // went out (servers close idle ones after about as long as PING_EVERY) is
                    // not the server gone.
                    if matches!(answer, Ok(Err(ref e)) if !matches!(e, rmcp::service::ServiceError::McpError(_))) {
                        answer = ping().await;
                    }
                    match answer {
                        // An error answer is still an answer: the server is there.
                        Ok(Ok(_)) | Ok(Err(rmcp::service::ServiceError::McpError(_))) => {}
                        // Refused, reset, unreachable (an HTTP server gone): down now, not when
                        // a client's call finds out.
                        Ok(Err(e)) => {
                            closed.cancel();
                            return Failure::or_login("it could not be reached (a ping failed)", e.to_string(), &self.name);
                        }
                        Err(_) => {
                            closed.cancel();
                            return Failure::new(format!("it stopped answering (no ping reply within {} s)", PING_TIMEOUT.as_secs()), "");
                        }
                    }
                }
            }
        }
    }
}
