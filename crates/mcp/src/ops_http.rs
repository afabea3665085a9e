//! The operations endpoints over HTTP: `/healthz`, `/readyz` and `/metrics` (what each shows
//! and who may see it: see `crate::ops`).

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::http_guard::Guard;
use crate::hub::Hub;
use crate::metrics::CONTENT_TYPE;
use crate::ops::OPS_SCOPE;

/// The state of the operations endpoints.
pub(crate) struct OpsState {
    pub(crate) hub: Arc<Hub>,
    pub(crate) guard: Arc<Guard>,
}

/// Whether the request may see operator details: no tokens configured, or a token (static, or
/// an OAuth principal's) holding [`OPS_SCOPE`]. `Err` with the origin when it is refused
/// outright (a foreign origin).
async fn operator(state: &OpsState, headers: &HeaderMap, peer: Option<IpAddr>) -> Result<bool, String> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !crate::http_origin::origin_allowed(origin, &[]) {
            return Err(origin.to_owned());
        }
    }
    // Throttled as `/mcp` is: a guess here counts against its address too.
    Ok(match state.guard.identify(headers, peer).await {
        Ok(None) => true,
        Ok(Some((_, caller))) => caller.principal.scopes().is_some_and(|s| s.contains(OPS_SCOPE)),
        Err(_) => false,
    })
}

fn forbidden(origin: &str) -> Response {
    (StatusCode::FORBIDDEN, format!("origin {origin:?} is not allowed")).into_response()
}

/// `/healthz`.
pub(crate) async fn healthz() -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], "ok\n").into_response()
}

/// `/readyz`.
pub(crate) async fn readyz(State(state): State<Arc<OpsState>>, request: Request) -> Response {
    let operator = match operator(&state, request.headers(), crate::http_guard::peer(&request)).await {
        Ok(o) => o,
        Err(origin) => return forbidden(&origin),
    };
    let tools = state.hub.live().engine().catalog().tools.len();
    let held_back = state.hub.ops().unready.as_ref().and_then(|f| f());
    let ready = tools > 0 && held_back.is_none();
    let mut body = json!({"ready": ready});
    if operator {
        body["tools"] = json!(tools);
        if let Some(why) = held_back {
            body["not_ready"] = json!(why);
        }
        if let Some(details) = &state.hub.ops().details {
            let (upstreams, held) = details();
            let states: serde_json::Map<String, Value> = upstreams
                .into_iter()
                .map(|u| {
                    // A server that waits for its operator's OAuth login says so.
                    let login = u.reason.as_deref().is_some_and(|r| r.contains("UPSTREAM_LOGIN_REQUIRED"));
                    let state = match (u.up, login) {
                        (true, _) => "up",
                        (false, true) => "needs_login",
                        (false, false) => "down",
                    };
                    let mut v = json!({"state": state, "tools": u.tools});
                    if let Some(r) = u.reason.filter(|_| !u.up) {
                        v["reason"] = json!(r);
                    }
                    (u.name, v)
                })
                .collect();
            body["upstreams"] = Value::Object(states);
            if let (Some(b), Value::Object(found)) = (body.as_object_mut(), held) {
                b.extend(found);
            }
        }
    }
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// `/metrics`.
pub(crate) async fn metrics(State(state): State<Arc<OpsState>>, request: Request) -> Response {
    match operator(&state, request.headers(), crate::http_guard::peer(&request)).await {
        Ok(true) => {}
        Ok(false) => {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                format!("a bearer token holding the scope {OPS_SCOPE:?} is required"),
            )
                .into_response()
        }
        Err(origin) => return forbidden(&origin),
    }
    let ops = state.hub.ops();
    if let Some(details) = &ops.details {
        for u in details().0 {
            ops.metrics.upstream(&u.name, u.up);
            ops.metrics.progress_dropped(&u.name, u.progress_dropped);
        }
    }
    let sessions = state.guard.session_count().await;
    ops.metrics.sizes(state.hub.live().engine().catalog().tools.len(), sessions);
    let (refused, throttled) = state.guard.strike_counts();
    ops.metrics.refused_tokens(refused, throttled);
    ops.metrics.sessions_idle_closed(state.guard.idle_closed());
    (StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], ops.metrics.encode()).into_response()
}
