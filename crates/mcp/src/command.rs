//! Host behaviour as commands: availability checks and the tool executor.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolsearch_catalog::Tool;
use toolsearch_query::Executor;

/// Runs `argv` with `input` on stdin; `Ok((exit success, stdout, stderr))`, or why it could not
/// run or finish within `timeout` (then it is killed).
fn run(argv: &[String], input: &[u8], timeout: Duration) -> Result<(bool, String, String), String> {
    let (program, args) = argv.split_first().ok_or("empty command")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program:?}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input closes the pipe early; that is fine.
        let _ = stdin.write_all(input);
    }
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{program:?} did not finish within {} s", timeout.as_secs()));
            }
            Err(e) => return Err(format!("{program:?} failed: {e}")),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok((status.success(), stdout, stderr))
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
        matches!(run(&self.argv, b"", self.timeout), Ok((true, _, _)))
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

impl Executor for CommandExecutor {
    fn execute(&self, tool: &Tool, arguments: &Value) -> Result<Value, String> {
        let input = json!({"tool_id": tool.id, "arguments": arguments}).to_string();
        let (ok, stdout, stderr) = run(&self.argv, input.as_bytes(), self.timeout)?;
        if !ok {
            let detail = if stderr.trim().is_empty() { stdout } else { stderr };
            return Err(detail.trim().to_owned());
        }
        Ok(serde_json::from_str(&stdout).unwrap_or_else(|_| Value::String(stdout.trim_end().to_owned())))
    }
}
