//! Debian's PostgreSQL, started for a test in a directory of its own (`initdb` and `pg_ctl`,
//! as an unprivileged user when the tests run as root), stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running PostgreSQL cluster, with a database `toolsearch` its superuser `toolsearch`
/// owns; trusted on 127.0.0.1 only.
pub struct Postgres {
    base: PathBuf,
    bin: PathBuf,
    /// The TCP port it listens on.
    pub port: u16,
}

fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL from Debian (scripts/test-deps installs it)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("initdb").exists())
        .collect();
    found.sort();
    found.pop().expect("an initdb under /usr/lib/postgresql/*/bin")
}

fn as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl Postgres {
    /// Starts a new cluster under a fresh directory named after `name`.
    pub fn start(name: &str) -> Postgres {
        let base = std::env::temp_dir().join(format!("toolsearch-pg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        if as_root() {
            let nobody = Command::new("id").args(["-u", "nobody"]).output().unwrap();
            let uid: u32 = String::from_utf8_lossy(&nobody.stdout).trim().parse().unwrap();
            std::os::unix::fs::chown(&base, Some(uid), None).unwrap();
        }
        let pg = Postgres { bin: bin_dir(), port: super::gateway::free_port(), base };
        let data = pg.base.join("data");
        let init = pg.run("initdb", &["-D", data.to_str().unwrap(), "-U", "toolsearch", "--auth=trust", "--no-sync"]);
        assert!(init.status.success(), "initdb: {}", String::from_utf8_lossy(&init.stderr));
        pg.up();
        let made =
            pg.run("createdb", &["-h", "127.0.0.1", "-p", &pg.port.to_string(), "-U", "toolsearch", "toolsearch"]);
        assert!(made.status.success(), "createdb: {}", String::from_utf8_lossy(&made.stderr));
        pg
    }

    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let program = self.bin.join(tool);
        let mut command = if as_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        command.args(args).current_dir(&self.base).output().unwrap()
    }

    /// `postgres://toolsearch@127.0.0.1:PORT/toolsearch`.
    pub fn url(&self) -> String {
        format!("postgres://toolsearch@127.0.0.1:{}/toolsearch", self.port)
    }

    /// Starts the server (again), waiting until it accepts connections.
    pub fn up(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off",
            self.port,
            self.base.display()
        );
        let data = self.base.join("data");
        let log = self.base.join("log");
        let out = self
            .run("pg_ctl", &["-D", data.to_str().unwrap(), "-o", &options, "-l", log.to_str().unwrap(), "-w", "start"]);
        assert!(out.status.success(), "pg_ctl start: {}", String::from_utf8_lossy(&out.stdout));
    }

    /// Stops the server at once (`immediate`: as a crash would).
    pub fn down(&self) {
        let data = self.base.join("data");
        let _ = self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
    }

    /// The rows `sql` answers, one a line, columns joined by `|` (`psql -At`).
    pub fn query(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "toolsearch", "-At", "-c", sql, "toolsearch"])
            .output()
            .unwrap();
        assert!(out.status.success(), "psql: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Where the cluster lives.
    pub fn dir(&self) -> &Path {
        &self.base
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.down();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}
