//! What a client is told when a request to an upstream fails: the server's name and a stable
//! reason code (`UPSTREAM_UNREACHABLE`, `UPSTREAM_AUTH_FAILED`, `UPSTREAM_ERROR`: `RunError::code`), never what
//! the operator configured (a URL, which may carry an API key; a command; a header; the
//! environment; stderr) nor the transport's Rust types. The detail goes to the operator's log
//! only, masked ([`crate::secrets::mask`]).

use rmcp::service::ServiceError;

use toolsearch_mcp::RunError;

/// Why a request to an upstream failed, as a client may be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// It could not be reached, or the connection broke.
    Unreachable,
    /// It refused the gateway's credentials, or they could not be had.
    AuthFailed,
    /// Its OAuth grant is missing or expired: its operator must log the gateway in.
    LoginRequired,
    /// It answered with a JSON-RPC error of its own.
    Answered,
}

impl Reason {
    /// The reason of `e`, judged from its kind and (for transport errors, which carry no kind
    /// of their own) its text, which is never shown.
    pub(crate) fn of(e: &ServiceError) -> Reason {
        match e {
            ServiceError::McpError(_) => Reason::Answered,
            other => {
                let text = other.to_string().to_ascii_lowercase();
                if text.contains("upstream_login_required") {
                    return Reason::LoginRequired;
                }
                // Status codes as whole words: a port or path that merely contains 401 is no
                // refusal (a test's free port 40123 once read as one).
                let status = text.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w == "401" || w == "403");
                let auth = ["unauthorized", "forbidden", "auth", "for header"];
                if status || auth.iter().any(|w| text.contains(w)) {
                    Reason::AuthFailed
                } else {
                    Reason::Unreachable
                }
            }
        }
    }
}

/// The longest part of an upstream's own error message a client is shown.
const MESSAGE_CHARS: usize = 300;

/// What a client is told of `e`, a failed request to server `server`.
pub(crate) fn client_message(server: &str, e: &ServiceError) -> String {
    match (Reason::of(e), e) {
        (_, ServiceError::McpError(answer)) => {
            let said: String = crate::secrets::mask(&answer.message).chars().take(MESSAGE_CHARS).collect();
            format!("MCP server {server:?} answered with error {}: {said}", answer.code.0)
        }
        (Reason::LoginRequired, _) => format!(
            "MCP server {server:?} needs its operator to log the gateway in (UPSTREAM_LOGIN_REQUIRED): `toolsearch gateway login {server}`"
        ),
        (Reason::AuthFailed, _) => format!(
            "MCP server {server:?} refused the gateway's credentials (UPSTREAM_AUTH_FAILED); its operator can see why in the gateway's log"
        ),
        _ => format!(
            "MCP server {server:?} could not be reached (UPSTREAM_UNREACHABLE); the gateway reconnects by itself, and its operator can see why in the gateway's log"
        ),
    }
}

/// The [`RunError`] a tool call gets for `e`.
pub(crate) fn run_error(server: &str, e: &ServiceError) -> RunError {
    let message = client_message(server, e);
    match Reason::of(e) {
        Reason::Unreachable => RunError::Unreachable(message),
        Reason::AuthFailed => RunError::AuthFailed(message),
        Reason::LoginRequired => RunError::LoginRequired(message),
        Reason::Answered => RunError::Failed(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport_error(e: std::io::Error) -> ServiceError {
        ServiceError::TransportSend(rmcp::transport::DynamicTransportError::new::<
            crate::child::ChildTransport,
            rmcp::RoleClient,
        >(e))
    }

    #[test]
    fn a_port_that_contains_401_is_no_refusal() {
        let e = transport_error(std::io::Error::other("error sending request for url (http://127.0.0.1:40123/mcp)"));
        assert_eq!(Reason::of(&e), Reason::Unreachable);
        let e = transport_error(std::io::Error::other("unexpected status 401 from server"));
        assert_eq!(Reason::of(&e), Reason::AuthFailed);
    }

    #[test]
    fn a_transport_error_names_the_server_and_a_code_never_the_url_or_a_type() {
        let leaky = transport_error(std::io::Error::other(
            "error sending request for url (http://host:9/mcp?api_key=SECRET123)",
        ));
        let m = client_message("docs", &leaky);
        assert!(m.contains("\"docs\"") && m.contains("UPSTREAM_UNREACHABLE"), "{m}");
        for bad in ["SECRET123", "http://", "Streamable", "reqwest", "::"] {
            assert!(!m.contains(bad), "{bad} in {m}");
        }
        assert_eq!(run_error("docs", &leaky).code(), "UPSTREAM_UNREACHABLE");
        let auth =
            transport_error(std::io::Error::other("the command for header \"Authorization\" failed (exit status: 3)"));
        let m = client_message("docs", &auth);
        assert!(
            m.contains("UPSTREAM_AUTH_FAILED") && !m.contains("exit status") && !m.contains("Authorization"),
            "{m}"
        );
    }

    #[test]
    fn an_upstream_error_answer_is_passed_on_masked_and_short() {
        let e = ServiceError::McpError(rmcp::ErrorData::invalid_params(
            format!("bad city; token=ghp_{} {}", "a".repeat(36), "x".repeat(1000)),
            None,
        ));
        let m = client_message("weather", &e);
        assert!(m.starts_with("MCP server \"weather\" answered with error -32602: bad city"), "{m}");
        assert!(!m.contains(&"a".repeat(36)), "{m}");
        assert!(m.len() < 450, "{}", m.len());
    }
}
