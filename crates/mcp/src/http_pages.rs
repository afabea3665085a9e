//! The public pages the endpoint serves beside `/mcp`, by path: JSON documents served as they
//! are (the gateway's OAuth Client ID Metadata Document) and pages answered by the embedding
//! server (the gateway's OAuth redirect for per-user logins). Both are read without a token.
//!
//! The table is replaced by a reloaded config ([`crate::http_guard::Guard`]'s reload), so one
//! handler answers every path no route took and looks the path up in the table as it is now:
//! a page moved by an edit answers at its new path on the next request, and its old path is
//! not found.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::http_access::Callback;

/// What one path answers.
#[derive(Clone)]
enum Page {
    /// A JSON document, sent as it is, readable from any origin.
    Document(Arc<str>),
    /// A page the embedding server answers with a `GET`'s query string.
    Callback(Callback),
}

/// The pages, by path, as the config that set them last says.
#[derive(Default)]
pub(crate) struct Pages(RwLock<Arc<HashMap<String, Page>>>);

impl Pages {
    /// The pages of `documents` and `callbacks`, by path.
    pub(crate) fn new(documents: Vec<(String, String)>, callbacks: Vec<(String, Callback)>) -> Pages {
        let pages = Pages::default();
        pages.set(documents, callbacks);
        pages
    }

    /// Replaces every page with `documents` and `callbacks`, for the next request on. A path
    /// that is not absolute, is the endpoint's own (`/mcp`) or the RFC 9728 metadata's, or
    /// was given already (documents first) is skipped: never two pages on one path, nor one
    /// over a route.
    pub(crate) fn set(&self, documents: Vec<(String, String)>, callbacks: Vec<(String, Callback)>) {
        let mut table = HashMap::new();
        let pages = documents
            .into_iter()
            .map(|(path, d)| (path, Page::Document(d.into())))
            .chain(callbacks.into_iter().map(|(path, c)| (path, Page::Callback(c))));
        for (path, page) in pages {
            if path.starts_with('/') && !path.starts_with("/mcp") && !metadata_path(&path) {
                table.entry(path).or_insert(page);
            }
        }
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(table);
    }

    /// The page at `path`, as it is now.
    fn get(&self, path: &str) -> Option<Page> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).get(path).cloned()
    }
}

/// Answers a request no route took: the page at its path (to a `GET` or `HEAD`; 405 to any
/// other method), or 404. A redirect of a login another replica of a fleet began goes there
/// (`crate::fleet_rounds`).
pub(crate) async fn answer(
    pages: &Pages,
    fleet: Option<&crate::fleet_rounds::FleetRounds>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
) -> Response {
    let Some(page) = pages.get(uri.path()) else { return StatusCode::NOT_FOUND.into_response() };
    if method != Method::GET && method != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET,HEAD")]).into_response();
    }
    match page {
        Page::Document(document) => (
            [(header::CONTENT_TYPE, "application/json"), (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")],
            document.to_string(),
        )
            .into_response(),
        Page::Callback(page) => {
            let (status, text) = match crate::fleet_rounds::page_elsewhere(fleet, uri, headers).await {
                Some(answer) => answer,
                None => page(uri.query().unwrap_or_default().to_owned()).await,
            };
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
        }
    }
}

/// Whether `path` is the RFC 9728 metadata's, or under it: its routes' alone.
fn metadata_path(path: &str) -> bool {
    let well_known = crate::oauth::WELL_KNOWN;
    path == well_known || path.strip_prefix(well_known).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn callback(text: &'static str) -> Callback {
        Arc::new(move |query: String| Box::pin(async move { (200, format!("{text}:{query}")) }))
    }

    async fn fetch(pages: &Pages, method: Method, path: &str) -> (StatusCode, String) {
        let uri: Uri = path.parse().unwrap();
        let response = answer(pages, None, &method, &uri, &HeaderMap::new()).await;
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn pages_answer_at_their_paths_as_the_last_set_says_and_never_over_a_route() {
        let pages = Pages::new(
            vec![("/client.json".into(), "{\"a\":1}".into()), ("/mcp/x.json".into(), "{}".into())],
            vec![
                ("/oauth/callback".into(), callback("first")),
                ("/client.json".into(), callback("shadow")),
                ("/.well-known/oauth-protected-resource/x".into(), callback("metadata")),
                ("relative".into(), callback("relative")),
            ],
        );
        assert_eq!(fetch(&pages, Method::GET, "/client.json").await, (StatusCode::OK, "{\"a\":1}".into()));
        assert_eq!(
            fetch(&pages, Method::GET, "/oauth/callback?state=s").await,
            (StatusCode::OK, "first:state=s".into())
        );
        assert_eq!(fetch(&pages, Method::POST, "/oauth/callback").await.0, StatusCode::METHOD_NOT_ALLOWED);
        for gone in ["/mcp/x.json", "/.well-known/oauth-protected-resource/x", "/relative", "/other"] {
            assert_eq!(fetch(&pages, Method::GET, gone).await.0, StatusCode::NOT_FOUND, "{gone}");
        }

        // Moved: the new paths answer, the old ones are not found.
        pages.set(vec![("/c2.json".into(), "{}".into())], vec![("/auth/return".into(), callback("second"))]);
        assert_eq!(fetch(&pages, Method::GET, "/auth/return?code=c").await, (StatusCode::OK, "second:code=c".into()));
        assert_eq!(fetch(&pages, Method::GET, "/c2.json").await.0, StatusCode::OK);
        for gone in ["/client.json", "/oauth/callback?state=s"] {
            assert_eq!(fetch(&pages, Method::GET, gone).await.0, StatusCode::NOT_FOUND, "{gone}");
        }
        pages.set(Vec::new(), Vec::new());
        assert_eq!(fetch(&pages, Method::GET, "/auth/return").await.0, StatusCode::NOT_FOUND);
    }
}
