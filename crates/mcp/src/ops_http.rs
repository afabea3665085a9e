//! The operations endpoints over HTTP: `/healthz`, `/readyz` and `/metrics` (what each shows
//! and who may see it: see `crate::ops`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
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

/// Whether the request may see operator details: no tokens configured, or a token holding
/// [`OPS_SCOPE`]. `Err` with the origin when it is refused outright (a foreign origin).
fn operator(state: &OpsState, request: &Request) -> Result<bool, String> {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !crate::http_guard::origin_allowed(origin, &[]) {
            return Err(origin.to_owned());
        }
    }
    let authorization = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    Ok(match state.guard.caller(authorization) {
        None => true,
        Some(Ok((_, grant))) => grant.scopes.iter().any(|s| s == OPS_SCOPE),
        Some(Err(())) => false,
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
    let operator = match operator(&state, &request) {
        Ok(o) => o,
        Err(origin) => return forbidden(&origin),
    };
    let tools = state.hub.live().engine().catalog().tools.len();
    let ready = tools > 0;
    let mut body = json!({"ready": ready});
    if operator {
        body["tools"] = json!(tools);
        if let Some(details) = &state.hub.ops().details {
            let (upstreams, held) = details();
            let states: serde_json::Map<String, Value> = upstreams
                .into_iter()
                .map(|u| {
                    let mut v = json!({"state": if u.up { "up" } else { "down" }, "tools": u.tools});
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
    match operator(&state, &request) {
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
    (StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], ops.metrics.encode()).into_response()
}
