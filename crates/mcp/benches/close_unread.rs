//! What the `close_unread` layer costs a request on its own, without the network's noise.
//!
//! `cargo bench -p toolsearch-mcp --bench close_unread [-- REQUESTS]`: four routers answer
//! the same `POST` of a `tools/call` message (the handler reads the body, as the MCP endpoint
//! does): `plain`, `plain-copy` (the same router built again: an A/A pair, to show what
//! nothing costs on this machine), `empty-fn` (with an axum middleware that only passes the
//! request on: what any such layer costs) and `layer` (with `close_unread` around it). Each
//! request goes through `tower::ServiceExt::oneshot` on one thread, the four alternated
//! request by request, its answer's body read to the end; REQUESTS (default 200,000) each,
//! after 20,000 of warm-up. Prints p50 / p99 / p99.9 / mean per router in microseconds, and
//! each router's ratio to `plain`.

use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{header, Request};
use axum::routing::post;
use axum::Router;
use http_body_util::BodyExt;
use tower::ServiceExt;

const MESSAGE: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"call_tool","arguments":{"pointer":"tool:github/create_issue","arguments":{"owner":"octo","repo":"hello-world","title":"Search misses a tool","body":"A query for 'open a ticket' ranks create_issue third."}}}}"#;

fn router() -> Router {
    Router::new().route("/mcp", post(|body: Bytes| async move { body.len().to_string() }))
}

async fn pass(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    next.run(request).await
}

async fn once(router: &Router) -> Duration {
    let request = Request::post("/mcp")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(MESSAGE))
        .expect("a well-formed request");
    let start = Instant::now();
    let answer = router.clone().oneshot(request).await.expect("the router answers");
    let body = answer.into_body().collect().await.expect("the answer's body reads");
    let elapsed = start.elapsed();
    assert_eq!(body.to_bytes(), MESSAGE.len().to_string());
    elapsed
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; the first number given is the request count.
    let requests: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let routers = [
        ("plain", router()),
        ("plain-copy", router()),
        ("empty-fn", router().layer(axum::middleware::from_fn(pass))),
        ("layer", router().layer(axum::middleware::from_fn(toolsearch_mcp::close_unread))),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(requests); routers.len()];
    runtime.block_on(async {
        for _ in 0..20_000 {
            for (_, r) in &routers {
                once(r).await;
            }
        }
        for i in 0..requests {
            // Rotate the order too, so no router always follows the same one.
            for k in 0..routers.len() {
                let j = (i + k) % routers.len();
                times[j].push(once(&routers[j].1).await);
            }
        }
    });
    let mut rows = Vec::new();
    for (t, (name, _)) in times.iter_mut().zip(&routers) {
        t.sort_unstable();
        let mean = t.iter().map(Duration::as_secs_f64).sum::<f64>() / t.len() as f64 * 1e6;
        rows.push((name, quantile(t, 0.5), quantile(t, 0.99), quantile(t, 0.999), mean));
    }
    let base = rows[0];
    println!("{requests} requests each, alternated; microseconds (ratio to plain)");
    println!("{:<11} {:>16} {:>16} {:>16} {:>16}", "router", "p50", "p99", "p99.9", "mean");
    for (name, p50, p99, p999, mean) in &rows {
        println!(
            "{name:<11} {p50:>8.2} ({:.3}) {p99:>8.2} ({:.3}) {p999:>8.2} ({:.3}) {mean:>8.2} ({:.3})",
            p50 / base.1,
            p99 / base.2,
            p999 / base.3,
            mean / base.4
        );
    }
}
