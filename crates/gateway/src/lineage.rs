//! How deep this gateway is in a chain of gateways: every child process the gateway starts
//! gets [`DEPTH_VAR`] one more than its own, and a gateway started by a gateway that was
//! itself started by one refuses to run. So a gateway in front of another gateway works, and
//! no config (a server entry that starts the gateway on its own file, through any wrapper)
//! can make a chain that starts copies without end.

/// The environment variable a gateway's children get: how many gateways started them.
pub const DEPTH_VAR: &str = "TOOLSEARCH_GATEWAY_DEPTH";

/// The deepest a gateway may run: started by a gateway (1), never by one that was started by
/// one (2).
pub const MAX_DEPTH: u32 = 1;

/// How many gateways started this process (0 when none did, or the variable is not a number).
pub fn depth() -> u32 {
    std::env::var(DEPTH_VAR).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// What this gateway's children get as [`DEPTH_VAR`].
pub(crate) fn child_depth() -> String {
    depth().saturating_add(1).to_string()
}

/// Refuses to run past [`MAX_DEPTH`], with why.
pub fn check() -> Result<(), String> {
    match depth() {
        d if d > MAX_DEPTH => Err(format!(
            "refused to start: this gateway was started by a gateway that a gateway started ({DEPTH_VAR}={d}); \
             a gateway started by a gateway never starts further gateways, so no config can start copies \
             without end (is a server entry running `toolsearch gateway` on its own config?)"
        )),
        _ => Ok(()),
    }
}
