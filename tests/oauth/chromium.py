"""A person's browser, headless Chromium, signing in with OAuth at oidc-provider's own login and
consent pages: it fills in and submits the provider's forms in the page, as a person's typing
and clicks would (any password passes its development login), and follows wherever they lead.

    python chromium.py address ADDRESS LOGIN
        opens ADDRESS (an authorization address, as `gateway login` prints it), signs in as
        LOGIN, consents, and prints the page it ends on: {"status", "url", "text"}.
    python chromium.py page PAGE LOGIN
        a single-page app: opens PAGE, waits for it to write what it found in `#out`, clicks
        its `#signin` link, signs in and consents, and waits for the page it is sent back to
        to write its result. Prints {"start": ..., "end": ...}, the two things the page wrote.

Either prints {"error": ..., "last": ...}, with what the browser last showed, if it gets stuck.
A page acted on that has not moved in 10 s is acted on once more, as a person would click again.
The browser resolves no host but 127.0.0.1 and localhost: the provider's pages ask for a web
font, and nothing here may wait on the internet (which may answer at once, late or never).
The browser is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON
messages ending in a NUL byte on file descriptors 3 and 4), so nothing else is installed.
"""

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time

MODE, START, LOGIN = sys.argv[1], sys.argv[2], sys.argv[3]

# What the current page shows: its address, whether it has loaded and its status, what `#out`
# says, whether it has a form, whether this driver already acted on it, and the start of its text.
LOOK = """(() => {
  const out = document.getElementById("out");
  const loaded = performance.getEntriesByType("navigation")[0];
  return {url: location.href, ready: document.readyState, status: loaded ? loaded.responseStatus : 0,
          out: out ? out.textContent : null, form: !!document.querySelector("form"), acted: !!window.__acted,
          text: document.body ? document.body.innerText.slice(0, 400) : ""};
})()"""

# Fills the provider's form as a person would (any password passes its dev login) and submits it.
SUBMIT = """(() => {
  window.__acted = true;
  const set = (name, value) => { const i = document.querySelector(`input[name="${name}"]`); if (i) i.value = value; };
  set("login", LOGIN);
  set("password", "any");
  const form = document.querySelector("form");
  const button = form.querySelector('[type="submit"]');
  if (button) button.click(); else form.requestSubmit();
})()"""

CLICK = """(() => { window.__acted = true; document.getElementById("signin").click(); })()"""


class Browser:
    """Headless Chromium with its DevTools protocol on a pipe, in a profile of its own."""

    def __init__(self, profile):
        to_chrome, self._commands = os.pipe()
        self._events, from_chrome = os.pipe()

        def descriptors():  # in the child: the pipe's ends at 3 (commands) and 4 (answers)
            a = fcntl.fcntl(to_chrome, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
                 "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"]
        self.process = subprocess.Popen(["chromium", *flags], pass_fds=(3, 4), preexec_fn=descriptors,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer = b""
        self._next = 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def call(self, method, params, session=None):
        """Sends one command and waits for its answer (events in between are skipped)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._events, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed its pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(answer["error"].get("message", "error"))
                return answer["result"]

    def run(self, expression):
        """Evaluates `expression` in the page; its value, or None while the page is changing."""
        try:
            result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                               self.session)
        except RuntimeError:
            return None
        return result.get("result", {}).get("value")

    def close(self):
        """Closes the browser as a person would (its helper processes end with it)."""
        try:
            self.call("Browser.close", {})
            self.process.wait(timeout=10)
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def origin(url):
    """`scheme://host:port` of `url`."""
    return "/".join(url.split("/")[:3])


def drive(browser):
    """Steps through the pages until the flow of MODE ends; what to print."""
    browser.call("Page.navigate", {"url": START}, browser.session)
    provider = origin(START) if MODE == "address" else None
    start, last, deadline = None, None, time.monotonic() + 60
    acted_at, again = None, 0  # when the page shown was acted on; how often acted on again
    while time.monotonic() < deadline:
        time.sleep(0.1)
        seen = browser.run(LOOK)  # None while a page is being left: act on no stale view
        last = seen or last
        if seen and seen["acted"]:
            acted_at = acted_at or time.monotonic()
            if time.monotonic() - acted_at < 10 or again >= 2:
                continue
            again += 1  # it stayed put: act on it once more, as a person would
            browser.run("window.__acted = false")
            acted_at = None
            continue
        acted_at = None
        if not seen or seen["url"] == "about:blank" or seen["ready"] != "complete":
            continue
        if provider and origin(last["url"]) == provider and last["form"]:
            browser.run(SUBMIT.replace("LOGIN", json.dumps(LOGIN)))
        elif MODE == "address":
            return {key: last[key] for key in ("status", "url", "text")}
        elif last["out"] == "pending":
            continue
        elif last["out"] is not None and start is None and "authorize" in json.loads(last["out"]):
            start = json.loads(last["out"])
            provider = origin(start["authorize"])
            browser.run(CLICK)
        elif last["out"] is not None and start is not None:
            return {"start": start, "end": json.loads(last["out"])}
        else:
            return {"error": "the flow did not go on", "start": start, "last": last}
    return {"error": "no end in 60 s", "acted_again": again, "start": start, "last": last}


def main():
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        browser = Browser(profile)
        try:
            print(json.dumps(drive(browser)))
        finally:
            browser.close()


main()
