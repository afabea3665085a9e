//! Why an upstream is down, in two voices: what a client may be told, and what only the
//! operator sees (with the Rust type names rmcp's errors quote taken out).

/// Why an upstream is down: what a client may be told (the kind of failure, in words), and
/// what only the operator sees (the details, which may quote its command line or output).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// For clients: `its command was not found`, `it did not answer initialize within 30 s`.
    pub kind: String,
    /// For the operator's log and status (masked before it is shown).
    pub detail: String,
}

impl Failure {
    pub(super) fn new(kind: impl Into<String>, detail: impl Into<String>) -> Failure {
        Failure { kind: kind.into(), detail: without_type_names(&detail.into()) }
    }

    /// `kind`, unless `detail` says server `server` needs an OAuth login: then that, with the
    /// command its operator must run (`crate::login`).
    pub(super) fn or_login(kind: impl Into<String>, detail: String, server: &str) -> Failure {
        match detail.contains(crate::login::LOGIN_REQUIRED) {
            true => Failure::new(
                format!(
                    "it needs a login ({}): its operator must run `toolsearch gateway login {server}`",
                    crate::login::LOGIN_REQUIRED
                ),
                detail,
            ),
            false => Failure::new(kind, detail),
        }
    }
}

/// `detail` without the Rust type names an error's text quotes in brackets (rmcp's transport
/// errors name their transport: `Transport [toolsearch_gateway::progress::Routed<..>] error`):
/// they tell an operator nothing the rest of the message does not.
fn without_type_names(detail: &str) -> String {
    let mut out = String::with_capacity(detail.len());
    let mut rest = detail;
    while let Some(open) = rest.find(" [") {
        let inner = &rest[open + 2..];
        // The bracket's end, nested brackets counted.
        let mut depth = 1;
        let close = inner.char_indices().find_map(|(i, c)| {
            depth += (c == '[') as i32 - (c == ']') as i32;
            (depth == 0).then_some(i)
        });
        match close {
            Some(close) if inner[..close].contains("::") => {
                out.push_str(&rest[..open]);
                rest = &inner[close + 1..];
            }
            _ => {
                out.push_str(&rest[..open + 2]);
                rest = inner;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::without_type_names;

    #[test]
    fn type_names_in_brackets_are_dropped_and_other_brackets_kept() {
        let rmcp = "Send message error Transport [toolsearch_gateway::progress::Routed<toolsearch_gateway::child::ChildTransport>] error: Broken pipe (os error 32)";
        assert_eq!(without_type_names(rmcp), "Send message error Transport error: Broken pipe (os error 32)");
        assert_eq!(without_type_names("a [b::C<[u8; 2]>] d [e] f ["), "a d [e] f [");
        assert_eq!(without_type_names("stderr: [ERROR] bad [x::y"), "stderr: [ERROR] bad [x::y");
    }
}
