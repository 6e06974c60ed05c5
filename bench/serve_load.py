#!/usr/bin/env python3
"""Load test of cact-serve (docs/SERVE.md "Figures"): 4 x --parallel clients, each
on its own keep-alive connection, send single-turn tool-call requests back to
back for --seconds, in two runs:

  hits    every request carries the same system text and tool list, so its
          prefix is restored from a slot's snapshot (prefix cache hit);
  misses  every request carries a system text of its own, so every prefix is
          prefilled (no hit).

Prints requests/s, p50/p99 latency, tokens and what the slots held.

    bench/serve_load.py --server build/release/apps/cact-serve [--parallel 2] [--seconds 30]
    bench/serve_load.py --url http://127.0.0.1:8080 --parallel 2
"""
import argparse
import http.client
import json
import os
import random
import statistics
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "serve"))
from serve_harness import Server, load_tools  # noqa: E402

CITIES = ["Paris", "Rome", "Oslo", "Lima", "Cairo", "Tokyo", "Berlin", "Madrid", "Zurich", "Athens"]
NAMES = ["Ben", "Maya", "Yusuf", "Lena", "Omar", "Sara"]


def query(rng):
    kind = rng.randrange(4)
    if kind == 0:
        return f"set a timer for {rng.randrange(1, 60)} minutes"
    if kind == 1:
        return f"weather in {rng.choice(CITIES)} please"
    if kind == 2:
        return f"call {rng.choice(NAMES)}"
    return f"alarm at {rng.randrange(5, 10)}:{rng.choice(['00', '15', '30', '45'])} please"


def client(host, port, tools, hits, seconds, seed, out, errors):
    rng = random.Random(seed)
    conn = http.client.HTTPConnection(host, port, timeout=120)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        system = "You control a smart home." if hits else f"You control a smart home. Session {seed}-{n}."
        body = json.dumps({"model": "tools-tiny", "tools": tools, "messages": [
            {"role": "system", "content": system}, {"role": "user", "content": query(rng)}]})
        t0 = time.monotonic()
        try:
            conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = json.loads(resp.read())
        except (OSError, http.client.HTTPException, ValueError) as e:
            errors.append(repr(e))
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=120)
            continue
        elapsed = time.monotonic() - t0
        n += 1
        if resp.status != 200:
            errors.append(f"HTTP {resp.status}: {data}")
            continue
        out.append((elapsed, data["usage"], data["cact"]["serve"]["slot_fit"],
                    data["choices"][0]["finish_reason"], data["cact"]["timings"]))
    conn.close()


def run(host, port, tools, clients, seconds, hits):
    out, errors = [], []
    threads = [threading.Thread(target=client, args=(host, port, tools, hits, seconds, i, out, errors))
               for i in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    lat = sorted(x[0] for x in out)
    fits = {}
    for x in out:
        fits[x[2]] = fits.get(x[2], 0) + 1
    calls = sum(1 for x in out if x[3] == "tool_calls")
    return {
        "run": "hits" if hits else "misses",
        "requests": len(out),
        "errors": len(errors),
        "requests_per_s": len(out) / wall,
        "p50_ms": 1e3 * statistics.median(lat) if lat else None,
        "p99_ms": 1e3 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else None,
        "prompt_tokens": statistics.mean(x[1]["prompt_tokens"] for x in out) if out else None,
        "cached_tokens": statistics.mean(x[1]["prompt_tokens_details"]["cached_tokens"] for x in out) if out else None,
        "completion_tokens": statistics.mean(x[1]["completion_tokens"] for x in out) if out else None,
        "tool_calls_share": calls / len(out) if out else None,
        "prefill_ms": statistics.mean(x[4]["prefill_ms"] for x in out) if out else None,
        "decode_ms": statistics.mean(x[4]["decode_ms"] for x in out) if out else None,
        "slot_fit": fits,
        "first_errors": errors[:3],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", help="cact-serve binary to start (else --url)")
    ap.add_argument("--url", help="a running server")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--clients", type=int, help="default: 4 x --parallel")
    ap.add_argument("--json", action="store_true", help="one JSON object per run")
    args = ap.parse_args()
    tools = load_tools()
    clients = args.clients or 4 * args.parallel
    server = None
    if args.server:
        server = Server(args.server, "--parallel", str(args.parallel), "-q")
        host, port = "127.0.0.1", server.port
    elif args.url:
        u = urllib.parse.urlparse(args.url)
        host, port = u.hostname, u.port or 80
    else:
        ap.error("give --server or --url")
    try:
        print(f"cact-serve load: {clients} clients, --parallel {args.parallel}, {args.seconds:.0f} s per run, "
              f"load average before: {os.getloadavg()[0]:.2f}")
        for hits in (True, False):
            r = run(host, port, tools, clients, args.seconds, hits)
            if args.json:
                print(json.dumps(r))
            else:
                print(f"{r['run']:>6}: {r['requests']} requests ({r['errors']} errors), {r['requests_per_s']:.1f} req/s, "
                      f"p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms; prompt {r['prompt_tokens']:.0f} tokens "
                      f"({r['cached_tokens']:.0f} cached), {r['completion_tokens']:.1f} generated; "
                      f"tool calls {100 * r['tool_calls_share']:.0f} %; server prefill {r['prefill_ms']:.1f} ms, "
                      f"decode {r['decode_ms']:.1f} ms; slots held {r['slot_fit']}")
                if r["first_errors"]:
                    print("  errors:", r["first_errors"])
    finally:
        if server:
            code = server.stop()
            if code != 0:
                print(f"cact-serve exited {code}")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
