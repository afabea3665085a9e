//! Debian's HAProxy in front of gateway replicas, configured with docs/gateway-operations.md's
//! `backend gateways` block as the page prints it (its two example servers replaced by the
//! replicas given); ended when dropped.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::gateway::{free_port, wait_for_port, Killed};

/// The `backend gateways` block of docs/gateway-operations.md, as printed.
pub fn docs_backend() -> String {
    let page = std::fs::read_to_string(super::repo().join("docs/gateway-operations.md")).unwrap();
    let block = page.split("```\n").find(|b| b.starts_with("backend gateways")).expect("the recipe's backend block");
    block.to_owned()
}

/// A running HAProxy.
pub struct Haproxy {
    _child: Killed,
    /// Its frontend's port on 127.0.0.1.
    pub front: u16,
    socket: PathBuf,
    /// The config it runs.
    pub config: String,
}

impl Haproxy {
    /// Starts HAProxy under `dir` in front of `replicas` (`127.0.0.1:PORT` each).
    pub fn start(dir: &Path, replicas: &[&str]) -> Haproxy {
        Haproxy::start_with(dir, replicas, &[])
    }

    /// [`Haproxy::start`] with `extra` lines added to the backend block (`source 127.0.0.9`).
    pub fn start_with(dir: &Path, replicas: &[&str], extra: &[&str]) -> Haproxy {
        let backend = docs_backend();
        let mut lines: Vec<String> =
            backend.lines().filter(|l| !l.trim_start().starts_with("server ")).map(str::to_owned).collect();
        lines.extend(extra.iter().map(|l| format!("    {l}")));
        lines.extend(replicas.iter().enumerate().map(|(i, addr)| format!("    server r{i} {addr} check")));
        let front = free_port();
        let socket = dir.join("haproxy.sock");
        let config = format!(
            "global\n    stats socket {} mode 600 level admin\ndefaults\n    mode http\n    timeout connect 5s\n    \
             timeout client 60s\n    timeout server 60s\nfrontend mcp\n    bind 127.0.0.1:{front}\n    \
             default_backend gateways\n{}\n",
            socket.display(),
            lines.join("\n")
        );
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("haproxy.cfg"), &config).unwrap();
        let child = Killed(
            Command::new("haproxy")
                .args(["-f", dir.join("haproxy.cfg").to_str().unwrap(), "-db"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("haproxy runs (scripts/test-deps installs it)"),
        );
        wait_for_port(front);
        Haproxy { _child: child, front, socket, config }
    }

    /// `http://127.0.0.1:FRONT/mcp`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.front)
    }

    /// HAProxy's view of each replica: (name, status, last check); nothing while its stats
    /// socket is not there yet (HAProxy may open it after the frontend's port).
    pub fn servers(&self) -> Vec<(String, String, String)> {
        let Ok(mut s) = std::os::unix::net::UnixStream::connect(&self.socket) else { return Vec::new() };
        s.write_all(b"show stat\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().trim_start_matches("# ").split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let (px, sv, status, check) = (col("pxname"), col("svname"), col("status"), col("check_status"));
        lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.len() > check && f[px] == "gateways" && f[sv] != "BACKEND")
            .map(|f| (f[sv].to_owned(), f[status].to_owned(), f[check].to_owned()))
            .collect()
    }

    /// Waits until every replica has a check result (the first runs within its interval);
    /// what HAProxy saw.
    pub fn checked(&self, replicas: usize) -> Vec<(String, String, String)> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let seen = self.servers();
            if seen.len() == replicas && seen.iter().all(|(_, _, check)| !check.is_empty() && !check.starts_with("INI"))
            {
                return seen;
            }
            assert!(Instant::now() < deadline, "no check result yet: {seen:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
