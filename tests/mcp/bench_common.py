"""What the gateway benchmarks (bench.py, bench_strikes.py) share: a percentile, a process's
resident memory, and an HTTP gateway started with its URL read from its log."""

import subprocess
import threading


def pct(xs, p):
    """The `p`th percentile of `xs`, the nearest rank."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def rss_kb(pid):
    """The resident memory of process `pid`, in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def http_gateway(binary, config, state):
    """`binary gateway` over HTTP on a free loopback port: its URL and process, its log read on
    in the background (so it never blocks on a full pipe)."""
    gw = subprocess.Popen([binary, "--json", "gateway", "--config", config, "--state", state, "--http", "127.0.0.1:0"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in gw.stderr:
        if "serving MCP" in line and "http://" in line:
            url = "http://" + line.split("http://")[1].split('"')[0].strip()
            threading.Thread(target=lambda: [None for _ in gw.stderr], daemon=True).start()
            return url, gw
    raise SystemExit(f"{binary} did not start serving over HTTP")
