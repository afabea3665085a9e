//! Commands: availability checks and the tool executor, and how one command is run.
//!
//! A command runs in a process group of its own. Its input is written, and its output read, on
//! threads of their own, so nothing waits on a command that does not read or never closes its
//! output. At the deadline the whole group is killed (grandchildren too) and the run is a
//! timeout error; when the command exits, whatever it left running in its group is killed too.
//! Output is capped: a command that prints more than [`MAX_OUTPUT_BYTES`] is killed.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolsearch_catalog::Tool;
use toolsearch_query::{Executor, ToolFailure};

/// Most bytes of standard output a command may print; past it the command is killed.
pub const MAX_OUTPUT_BYTES: usize = 16 * 1024 * 1024;
/// Most bytes of standard error kept (the rest is read and dropped).
const MAX_STDERR_BYTES: usize = 64 * 1024;
/// Longest timeout a command may be given, in seconds (one day).
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// Runs `argv` with `input` on stdin; `Ok((exit status, stdout, stderr))`, or why it could not
/// run or finish within `timeout` (then its whole process group is killed).
fn run(argv: &[String], input: &[u8], timeout: Duration) -> Result<(ExitStatus, String, String), String> {
    let (program, args) = argv.split_first().ok_or("empty command")?;
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|e| format!("cannot run {program:?}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        // A command that does not read its input closes the pipe early; that is fine.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let overflow = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<(bool, Vec<u8>)>();
    let drain = |pipe: Option<Box<dyn Read + Send>>, is_stdout: bool| {
        let (tx, overflow) = (tx.clone(), Arc::clone(&overflow));
        std::thread::spawn(move || {
            let cap = if is_stdout { MAX_OUTPUT_BYTES } else { MAX_STDERR_BYTES };
            let mut kept = Vec::new();
            if let Some(mut p) = pipe {
                let mut buf = [0u8; 64 * 1024];
                loop {
                    match p.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            let room = cap.saturating_sub(kept.len());
                            kept.extend_from_slice(&buf[..n.min(room)]);
                            if n > room && is_stdout {
                                overflow.store(true, Ordering::SeqCst);
                                break;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    }
                }
            }
            let _ = tx.send((is_stdout, kept));
        });
    };
    drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>), true);
    drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>), false);
    drop(tx);
    let deadline = Instant::now().checked_add(timeout);
    let status = loop {
        if overflow.load(Ordering::SeqCst) {
            kill_group(&mut child);
            let _ = child.wait();
            return Err(format!("{program:?} printed more than {MAX_OUTPUT_BYTES} bytes; it was stopped"));
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if deadline.is_none_or(|d| Instant::now() < d) => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                kill_group(&mut child);
                let _ = child.wait();
                return Err(format!("{program:?} timed out after {} s and was stopped", timeout.as_secs()));
            }
            Err(e) => {
                kill_group(&mut child);
                return Err(format!("{program:?} failed: {e}"));
            }
        }
    };
    // Whatever the command left running in its group (`sleep 15 &`) ends with it, so its
    // output pipes close now.
    kill_group(&mut child);
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let grace = Instant::now() + Duration::from_secs(1);
    for _ in 0..2 {
        match rx.recv_timeout(grace.saturating_duration_since(Instant::now())) {
            Ok((true, bytes)) => stdout = bytes,
            Ok((false, bytes)) => stderr = bytes,
            Err(_) => break,
        }
    }
    if overflow.load(Ordering::SeqCst) {
        return Err(format!("{program:?} printed more than {MAX_OUTPUT_BYTES} bytes"));
    }
    Ok((status, String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr).into_owned()))
}

/// Kills the process group the command leads, grandchildren too (Unix). Elsewhere there is no
/// process group: the command alone is killed, and what it started may outlive it.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(group) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    #[cfg(not(unix))]
    let _ = child.kill();
}

/// An availability check: the group is available when the command exits 0.
#[derive(Debug, Clone)]
pub struct CommandCheck {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Longest run.
    pub timeout: Duration,
}

impl CommandCheck {
    /// Runs the check.
    pub fn passes(&self) -> bool {
        run(&self.argv, b"", self.timeout).is_ok_and(|(status, _, _)| status.success())
    }
}

/// Runs catalogue tools with a command: `{"tool_id", "arguments"}` on stdin, the result on
/// stdout (JSON when it parses, text otherwise), a non-zero exit for the tool's own failure.
#[derive(Debug, Clone)]
pub struct CommandExecutor {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Longest run.
    pub timeout: Duration,
}

impl CommandExecutor {
    /// Runs `tool` with `arguments`: the result, or the tool's own failure (its stderr).
    pub fn run_tool(&self, tool: &Tool, arguments: &Value) -> Result<Value, ToolFailure> {
        Executor::execute(self, tool, arguments)
    }
}

impl Executor for CommandExecutor {
    fn execute(&self, tool: &Tool, arguments: &Value) -> Result<Value, ToolFailure> {
        let input = json!({"tool_id": tool.id, "arguments": arguments}).to_string();
        let (status, stdout, stderr) =
            run(&self.argv, input.as_bytes(), self.timeout).map_err(ToolFailure::Executor)?;
        if !status.success() {
            // What it said, on stderr or else stdout; or, when it said nothing, how it ended.
            let detail = [stderr.trim(), stdout.trim()].into_iter().find(|s| !s.is_empty()).map(str::to_owned);
            let ended = || format!("{:?} ended with {status} and printed nothing", self.argv[0]);
            return Err(ToolFailure::Failed(detail.unwrap_or_else(ended)));
        }
        Ok(serde_json::from_str(&stdout).unwrap_or_else(|_| Value::String(stdout.trim_end().to_owned())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn a_command_that_never_reads_its_input_still_times_out() {
        let started = Instant::now();
        let big = vec![b'x'; 300 * 1024];
        let err = run(&["sleep".into(), "20".into()], &big, Duration::from_secs(1)).unwrap_err();
        assert!(err.contains("timed out"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    }

    #[test]
    fn a_command_that_never_ends_is_stopped_with_its_children() {
        let started = Instant::now();
        let err = run(&sh("sleep 1000 & sleep 1000"), b"", Duration::from_secs(1)).unwrap_err();
        assert!(err.contains("timed out"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_background_child_holding_the_output_does_not_delay_the_answer() {
        let started = Instant::now();
        // A sleep with an argument no other process has, to look for it afterwards.
        let marker = format!("sleep 40.{}", std::process::id());
        let script = format!("{marker} & echo '{{}}'");
        let (status, out, _) = run(&sh(&script), b"", Duration::from_secs(20)).unwrap();
        assert!(status.success() && out.trim() == "{}", "{out}");
        assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
        std::thread::sleep(Duration::from_millis(200));
        let ps = Command::new("pgrep").args(["-f", &marker]).output();
        if let Ok(ps) = ps {
            assert!(ps.stdout.is_empty(), "the grandchild survived: {}", String::from_utf8_lossy(&ps.stdout));
        }
    }

    #[test]
    fn a_failure_says_what_the_command_printed_or_else_how_it_ended() {
        let executor = |script: &str| CommandExecutor { argv: sh(script), timeout: Duration::from_secs(20) };
        let tool = r#"{"id": "t.x", "name": "x", "paths": [[]], "summary": "s", "description": "", "tags": [],
                       "args_schema": null, "examples": [], "requires": []}"#;
        let tool: Tool = serde_json::from_str(tool).unwrap();
        let failure = |script: &str| match executor(script).run_tool(&tool, &json!({})) {
            Err(ToolFailure::Failed(why)) => why,
            other => panic!("{script}: {other:?}"),
        };
        assert_eq!(failure("echo no such city >&2; exit 3"), "no such city");
        assert_eq!(failure("echo '{\"error\": 1}'; exit 3"), "{\"error\": 1}");
        assert_eq!(failure("exit 7"), "\"sh\" ended with exit status: 7 and printed nothing");
        assert!(failure("kill -9 $$").ends_with("signal: 9 (SIGKILL) and printed nothing"));
    }

    #[test]
    fn output_is_capped() {
        let err = run(&sh("head -c 40000000 /dev/zero"), b"", Duration::from_secs(30)).unwrap_err();
        assert!(err.contains("more than"), "{err}");
    }

    #[test]
    fn the_largest_timeout_does_not_overflow() {
        let (status, out, _) = run(&sh("echo hi"), b"", Duration::from_secs(u64::MAX)).unwrap();
        assert!(status.success() && out.trim() == "hi");
    }
}
