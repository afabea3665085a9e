//! Loopback ports for the servers a test starts: one picked so that nothing else is handed it
//! before the server binds it, and the wait until the server listens.

use std::time::{Duration, Instant};

/// A free loopback port (bound, then released).
///
/// A port the kernel hands out for `:0` may be handed out again at once (to the next caller
/// here, or as the source port of any connection) before the server it is for binds it. Once in
/// twenty runs of the device-flow login under load, the port its MCP server was given answered
/// as another HTTP server (404 for the protected-resource metadata), most likely its identity
/// provider, which took its port just after. So a port is picked below
/// the kernel's ephemeral range, where the kernel hands out none, and never twice by one copy
/// of this module; `:0` only where that range leaves no room below it.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static TAKEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    static DRAWS: AtomicU64 = AtomicU64::new(0);
    let below = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(0);
    let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
    if below > 12_000 {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        let nanos = now.map_or(0, |d| u64::from(d.subsec_nanos()));
        let mut draw = nanos ^ (u64::from(std::process::id()) << 20);
        for _ in 0..1000 {
            // A 64-bit mix of the draw (splitmix64's), spread over 10,000..below.
            draw = draw.wrapping_add(DRAWS.fetch_add(1, Ordering::Relaxed)).wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = draw;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let port = 10_000 + ((z ^ (z >> 31)) % u64::from(below - 10_000)) as u16;
            if !taken.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                taken.push(port);
                return port;
            }
        }
    }
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if !taken.contains(&port) {
            taken.push(port);
            return port;
        }
    }
}

/// Waits up to 30 s until something listens on loopback `port`.
pub fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
