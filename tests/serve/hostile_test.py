#!/usr/bin/env python3
"""cact-serve under hostile input (docs/SERVE.md "Limits"): 200 requests that are
truncated, huge, deeply nested, not UTF-8, of the wrong types, or sent so slowly
that the server must cut them off. Afterwards /health answers, a normal
request gets its normal answer, the RSS is flat within a bound, and SIGTERM
still exits 0.

    hostile_test.py --server build/release/apps/cact-serve [--rss-bound-mib 8]
"""
import argparse
import json
import os
import random
import socket
import sys
import threading
import time

from serve_harness import Checks, Server, load_tools, raw_exchange

TOOLS = load_tools()
TIMEOUT_S = 1  # the server's --timeout: slow clients are cut off after it
GOOD = {"messages": [{"role": "user", "content": "set a timer for 10 minutes"}], "tools": TOOLS}


def http_post(body, path="/v1/chat/completions", extra_headers=b"", length=None):
    length = len(body) if length is None else length
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\n" + extra_headers + b"Content-Length: " + str(length).encode() + b"\r\n\r\n" + body)


def status_of(reply):
    """The status code of the first response in `reply`, or None."""
    if not reply.startswith(b"HTTP/1.1 "):
        return None
    return int(reply[9:12])


def json_bodies(rng):
    """Request bodies that must each get a 4xx with an OpenAI error object."""
    good = json.dumps(GOOD).encode()
    bodies = []
    for cut in sorted(rng.sample(range(1, len(good) - 1), 40)):
        bodies.append(("truncated at %d" % cut, good[:cut]))
    bodies += [
        ("nested 100000 lists", b"[" * 100000 + b"]" * 100000),
        ("nested 100000 objects", b'{"a":' * 100000 + b"1" + b"}" * 100000),
        ("nested messages 100000", b'{"messages":' + b"[" * 100000 + b"]" * 100000 + b"}"),
        ("unclosed nesting", b"[" * 200000),
        ("a huge number", b'{"messages":[{"role":"user","content":"hi"}],"max_tokens":' + b"9" * 5000 + b"}"),
        ("1e999", b'{"messages":[{"role":"user","content":"hi"}],"temperature":1e999}'),
        ("-1e999 seed", b'{"messages":[{"role":"user","content":"hi"}],"seed":-1e999}'),
        ("huge negative integer", b'{"messages":[{"role":"user","content":"hi"}],"seed":-' + b"9" * 400 + b"}"),
        ("NaN", b'{"messages":[{"role":"user","content":"hi"}],"temperature":NaN}'),
        ("invalid UTF-8 in a string", b'{"messages":[{"role":"user","content":"\xc3\x28\xa0\xa1"}]}'),
        ("overlong UTF-8", b'{"messages":[{"role":"user","content":"\xc0\xaf"}]}'),
        ("a surrogate escape alone", b'{"messages":[{"role":"user","content":"\\ud800"}]}'),
        ("invalid UTF-8 in a key", b'{"\xff":1}'),
        ("a NUL byte", b'{"messages":[{"role":"user","content":"a\x00b"}]}'),
        ("a duplicate key", b'{"messages":[],"messages":[]}'),
        ("empty body", b""),
        ("whitespace body", b"   \n  "),
        ("null", b"null"),
        ("a string", b'"hello"'),
        ("a number", b"42"),
        ("binary noise", bytes(rng.randrange(256) for _ in range(3000))),
    ]
    wrong_types = {
        "messages": [5, "hi", {"a": 1}, [None], [[]], [{"role": 5, "content": "x"}],
                     [{"role": "user", "content": None}], [{"role": "user", "content": [1, 2]}],
                     [{"role": "user", "content": [{"type": "text", "text": 5}]}],
                     [{"role": "user", "content": "x", "name": 7}],
                     [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": "x"}],
                     [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [5]}],
                     [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": 5}]}],
                     [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x", "tool_call_id": []}]],
        "tools": [5, "x", [5], [{"type": "function"}], [{"type": "function", "function": 5}],
                  [{"type": "function", "function": {"name": 5}}],
                  [{"type": "function", "function": {"name": "f", "parameters": []}}],
                  [{"type": "function", "function": {"name": "f", "strict": "yes"}}],
                  [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
                      "a": {"type": "integer", "minimum": "zero"}}}}}]],
        "tool_choice": [5, [], "sometimes", {"type": "function"}, {"type": "function", "function": {"name": 5}}],
        "temperature": ["x", [], {}, True, -1],
        "top_p": ["x", 2, -0.5],
        "max_tokens": ["10", -5, 1.5, True, 10 ** 20],
        "seed": [1.5, "x", [], 2 ** 70],
        "stop": [5, [5], ["a"] * 10, ["x" * 1000]],
        "stream": ["true", 1, []],
        "stream_options": [5, {"include_usage": "yes"}],
        "n": [0, 3, "1"],
        "model": [5, []],
    }
    for key, values in wrong_types.items():
        for v in values:
            body = dict(GOOD)
            body[key] = v
            if key == "stream_options":
                body["stream"] = True
            bodies.append((f"{key} = {json.dumps(v)[:40]}", json.dumps(body).encode()))
    return bodies


def slowloris(port, kind):
    """A client that sends part of a request and stalls (or drips): the server
    must close the connection on its own, within a few timeouts."""
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S * 10)
    start = time.monotonic()
    try:
        if kind == "silent":
            pass
        elif kind == "partial line":
            s.sendall(b"POST /v1/chat/comp")
        elif kind == "partial headers":
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n")
        elif kind == "partial body":
            s.sendall(http_post(b'{"messages": [', length=5000))
        elif kind == "drip":
            # One byte every tenth of the timeout: each read succeeds, the request never ends.
            for b in b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000:
                s.send(bytes([b]))
                time.sleep(TIMEOUT_S / 10)
                if time.monotonic() - start > TIMEOUT_S * 6:
                    break
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return time.monotonic() - start, data
    except OSError:
        return time.monotonic() - start, b""
    finally:
        s.close()


def hostile_round(c, s, rng):
    """One pass of every hostile request; the number sent."""
    sent = 0
    bodies = json_bodies(rng)
    for what, body in bodies:
        reply = raw_exchange(s.port, http_post(body), timeout=30)
        code = status_of(reply)
        sent += 1
        ok = code is not None and 400 <= code < 500
        if ok:
            payload = reply.split(b"\r\n\r\n", 1)[1]
            try:
                err = json.loads(payload)["error"]
                ok = isinstance(err["message"], str) and "type" in err and "code" in err
            except (ValueError, KeyError, TypeError):
                ok = False
        c.check(ok, f"4xx + error object: {what}", reply[:300])

    # Transport-level abuse.
    transport = [
        ("a body over --max-body", http_post(b"[" + b"1," * 700000 + b"1]"), 413),
        ("Content-Length over --max-body, no body", http_post(b"", length=50_000_000), 413),
        ("a negative Content-Length", http_post(b"{}", length=-5), None),
        ("a request line of 20 KiB", b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nConnection: close\r\n\r\n", None),
        # Heads this large are read within the request's byte budget (--max-body + 64 KiB), then answered.
        ("a header line of 200 KiB",
         b"GET /health HTTP/1.1\r\nConnection: close\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n", "any"),
        ("100000 headers", b"GET /health HTTP/1.1\r\nConnection: close\r\n" + b"X: y\r\n" * 100000 + b"\r\n", "any"),
        ("a head beyond the byte budget",
         b"GET /health HTTP/1.1\r\nConnection: close\r\n" + b"X: y\r\n" * 300000 + b"\r\n", None),
        ("garbage request line", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\r\n\r\n", 400),
        ("an unknown method", b"BREW /v1/chat/completions HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
        ("a bad chunked body",
         b"POST /tokenize HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n", 400),
    ]
    for what, data, want in transport:
        reply = raw_exchange(s.port, data, timeout=30)
        code = status_of(reply)
        if want == "any":
            ok = code is not None and (code == 200 or 400 <= code < 500)
        elif want is None:
            ok = code is not None and 400 <= code < 500
        else:
            ok = code == want
        # A server may also just close on a request it cannot parse at all.
        if want is None and reply == b"":
            ok = True
        c.check(ok, f"transport: {what} -> {code}", reply[:200])
        sent += 1

    # Slow clients, several at once: each is cut off after about the timeout.
    kinds = ["silent", "partial line", "partial headers", "partial body", "drip"] * 3
    results = [None] * len(kinds)
    threads = [threading.Thread(target=lambda i=i, k=k: results.__setitem__(i, slowloris(s.port, k)))
               for i, k in enumerate(kinds)]
    for t in threads:
        t.start()
    time.sleep(TIMEOUT_S / 2)
    status, _, _ = s.request("GET", "/health", timeout=10)
    c.check(status == 200, "/health answers while 15 slow clients hold connections")
    for t in threads:
        t.join()
    for kind, (elapsed, data) in zip(kinds, results):
        c.check(elapsed < TIMEOUT_S * 4, f"slow client ({kind}) cut off after {elapsed:.1f} s", data[:100])
        sent += 1

    # Clients that vanish mid-request.
    for _ in range(max(20, 200 - sent)):
        body = json.dumps(GOOD).encode()
        raw_exchange(s.port, http_post(body)[: rng.randrange(1, len(body))], read=False)
        sent += 1
    return sent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--rss-bound-mib", type=float, default=8.0)
    args = ap.parse_args()
    c = Checks()
    # A sanitizer's quarantine would hold every freed block: keep it small so RSS says something.
    env = {"ASAN_OPTIONS": (os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=4").lstrip(":")}
    with Server(args.server, "--parallel", "2", "--timeout", str(TIMEOUT_S), "--max-body", "1048576", "-q",
                env=env) as s:
        status, _, reference = s.chat(GOOD)
        c.check(status == 200, "a normal request before", reference)
        # A first pass warms what a long-running server holds on to (each connection thread's
        # allocator arena, buffers sized for the largest request); the second pass is measured.
        hostile_round(Checks(quiet=True), s, random.Random(99))
        for _ in range(10):
            s.chat(GOOD)
        rss_before = s.rss_kib()
        sent = hostile_round(c, s, random.Random(1234))
        c.check(sent >= 200, f"{sent} hostile requests sent")

        h = s.health()
        c.check(h["status"] == "ok" and h["slots_busy"] == 0, "/health after them", h)
        status, _, after = s.chat(GOOD)
        c.check(status == 200 and after["cact"]["raw"] == reference["cact"]["raw"], "a normal request after: same answer")
        for _ in range(10):
            s.chat(GOOD)
        rss_after = s.rss_kib()
        grown = (rss_after - rss_before) / 1024
        c.check(grown <= args.rss_bound_mib,
                f"RSS {rss_before / 1024:.1f} -> {rss_after / 1024:.1f} MiB (+{grown:.1f}, bound {args.rss_bound_mib})")
        c.check(s.stop() == 0, "SIGTERM: exit 0")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
