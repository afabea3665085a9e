//! What `bound_silence` (`limits.http.peer_timeout_secs`: `TCP_USER_TIMEOUT` and keep-alive
//! probes on every accepted connection) costs a connection, without the network's noise.
//!
//! `cargo bench -p toolsearch-mcp --bench bound_silence [-- CONNECTIONS]`: on loopback, one
//! thread opens a connection, accepts it, answers one byte and reads it, then closes it
//! (with a reset, so no port is left waiting). Three ways, alternated connection by
//! connection: `plain`, its copy `plain-copy` (an A/A pair: what nothing costs on this
//! machine) and `bound` (`bound_silence` with the default 60 s on the accepted side).
//! CONNECTIONS (default 20,000) each, after 2,000 of warm-up. Prints p50 / p99 / mean per way
//! in microseconds with its ratio to `plain`, and the mean of the `bound_silence` call alone.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One connection's whole life; with `bound`, also how long `bound_silence` took.
async fn once(listener: &TcpListener, bound: bool) -> (Duration, Duration) {
    let addr = listener.local_addr().expect("a bound listener");
    let start = Instant::now();
    let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let (mut client, (mut server, _)) = (client.expect("connects"), accepted.expect("accepts"));
    let mut call = Duration::ZERO;
    if bound {
        let at = Instant::now();
        toolsearch_mcp::bound_silence(&server, 60);
        call = at.elapsed();
    }
    server.write_all(b"x").await.expect("writes");
    let mut byte = [0u8; 1];
    client.read_exact(&mut byte).await.expect("reads");
    socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO)).expect("SO_LINGER");
    drop(client);
    drop(server);
    (start.elapsed(), call)
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; the first number given is the connection count.
    let connections: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(20_000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let ways = [("plain", false), ("plain-copy", false), ("bound", true)];
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(connections); ways.len()];
    let mut calls = Duration::ZERO;
    runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds loopback");
        for _ in 0..2_000 {
            for (_, bound) in ways {
                once(&listener, bound).await;
            }
        }
        for i in 0..connections {
            // Rotate the order too, so no way always follows the same one.
            for k in 0..ways.len() {
                let j = (i + k) % ways.len();
                let (took, call) = once(&listener, ways[j].1).await;
                times[j].push(took);
                calls += call;
            }
        }
    });
    let mut rows = Vec::new();
    for (t, (name, _)) in times.iter_mut().zip(&ways) {
        t.sort_unstable();
        let mean = t.iter().map(Duration::as_secs_f64).sum::<f64>() / t.len() as f64 * 1e6;
        rows.push((name, quantile(t, 0.5), quantile(t, 0.99), mean));
    }
    let base = rows[0];
    println!("{connections} connections each, alternated; microseconds (ratio to plain)");
    println!("{:<11} {:>16} {:>16} {:>16}", "way", "p50", "p99", "mean");
    for (name, p50, p99, mean) in &rows {
        println!(
            "{name:<11} {p50:>8.2} ({:.3}) {p99:>8.2} ({:.3}) {mean:>8.2} ({:.3})",
            p50 / base.1,
            p99 / base.2,
            mean / base.3
        );
    }
    println!("bound_silence alone: mean {:.2} us", calls.as_secs_f64() * 1e6 / connections as f64);
}
