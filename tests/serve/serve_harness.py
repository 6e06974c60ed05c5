"""Start and stop a cact-serve for a test or a benchmark, and talk HTTP to it.

The server listens on a free port (--port 0; the port is read from its
"listening on" line), dies with the process that started it (PR_SET_PDEATHSIG),
and is stopped with SIGTERM, which must drain and exit 0.
"""
import ctypes
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "tools")


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no server outlives a killed test


def load_tools(name="tools.json"):
    with open(os.path.join(MODELS, name)) as f:
        return [{"type": "function", "function": tool} for tool in json.load(f)]


class Server:
    def __init__(self, binary, *args, env=None, startup_timeout=60):
        self.stderr_lines = []
        server_env = dict(os.environ)
        if env:
            server_env.update(env)
        self.proc = subprocess.Popen([binary, "--port", "0", *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, env=server_env,
                                     preexec_fn=_die_with_parent)
        self.port = None
        ready = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.stderr_lines.append(line.rstrip("\n"))
                m = re.search(r"listening on http://[^:]+:(\d+)", line)
                if m and self.port is None:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        self._pump = threading.Thread(target=pump, daemon=True)
        self._pump.start()
        if not ready.wait(startup_timeout) or self.port is None:
            self.kill()
            raise RuntimeError("cact-serve did not start:\n" + "\n".join(self.stderr_lines))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, timeout=60):
        """SIGTERM, then the exit status (the server must drain and exit 0)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self.kill()
            self._pump.join(5)

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def connection(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=120):
        """(status, headers dict, parsed JSON or raw text) on a fresh connection."""
        conn = self.connection(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            hdrs = {"Content-Type": "application/json"}
            hdrs.update(headers or {})
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read()
            try:
                data = json.loads(raw)
            except ValueError:
                data = raw.decode("utf-8", "replace")
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def chat(self, body, headers=None):
        return self.request("POST", "/v1/chat/completions", body, headers)

    def stream_events(self, body, on_event=None):
        """POST a streaming request; the list of decoded `data:` events ("[DONE]" kept as the string)."""
        conn = self.connection()
        try:
            conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise AssertionError(f"stream: HTTP {resp.status}: {resp.read()!r}")
            if not resp.getheader("Content-Type", "").startswith("text/event-stream"):
                raise AssertionError("stream: not text/event-stream")
            events, buf = [], b""
            while True:
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
                if not chunk:
                    break
                buf += chunk
                while b"\n\n" in buf:
                    block, buf = buf.split(b"\n\n", 1)
                    text = block.decode("utf-8")
                    if not text.startswith("data: "):
                        raise AssertionError(f"stream: not an SSE data line: {text!r}")
                    payload = text[len("data: "):]
                    event = payload if payload == "[DONE]" else json.loads(payload)
                    events.append(event)
                    if on_event:
                        on_event(event)
            if buf.strip():
                raise AssertionError(f"stream: trailing bytes {buf!r}")
            return events
        finally:
            conn.close()

    def health(self):
        status, _, data = self.request("GET", "/health", timeout=30)
        if status != 200:
            raise AssertionError(f"/health: HTTP {status}: {data}")
        return data

    def wait_health(self, predicate, what, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            h = self.health()
            if predicate(h):
                return h
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}; /health: {self.health()}")


def raw_exchange(port, data, timeout=10, read=True):
    """Send raw bytes; the bytes that come back until the server closes or `timeout`."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        if data:
            s.sendall(data)
        if not read:
            return b""
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except socket.timeout:
            pass
        return out


class Checks:
    """Named assertions; every failure is reported, then the exit status is 1."""

    def __init__(self, quiet=False):
        self.failures = 0
        self.count = 0
        self.quiet = quiet

    def check(self, ok, what, detail=""):
        self.count += 1
        if self.quiet:
            return ok
        if ok:
            print(f"ok   {what}")
        else:
            self.failures += 1
            print(f"FAIL {what}" + (f": {detail}" if detail else ""))
        sys.stdout.flush()
        return ok

    def finish(self):
        print(f"{self.count - self.failures} of {self.count} checks passed")
        return 1 if self.failures else 0
