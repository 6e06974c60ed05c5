#!/usr/bin/env python3
"""The ctypes example (examples/python/chat.py --json) answers as cact-run --chat --json does.

    python_vs_cact_run.py --lib LIBCACT --cact-run CACT_RUN --example CHAT_PY --model M --tools T

For each request, both answer envelopes must agree on everything the model
produced (text, reasoning, calls, validation, stop, raw answer, token counts);
the timings differ by nature.
"""
import argparse
import json
import subprocess
import sys

REQUESTS = ["set a timer for 10 minutes", "what is the weather in Paris", "play some jazz", "tell me a joke"]
COMPARED = ["schema", "text", "reasoning", "function_calls", "suppressed_calls", "validation", "confidence", "stop",
            "raw", "tokens", "seed"]


def envelope(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        sys.exit(f"python_vs_cact_run: {command[0]} exited {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser()
    for flag in ["--lib", "--cact-run", "--example", "--model", "--tools"]:
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    failed = False
    for request in REQUESTS:
        ours = envelope([sys.executable, args.example, "--lib", args.lib, "--json", args.model, args.tools, request])
        theirs = envelope([args.cact_run, args.model, "--chat", "--tools", args.tools, "-q", "--json", "-p", request])
        differ = [key for key in COMPARED if ours.get(key) != theirs.get(key)]
        for key in differ:
            print(f"{request!r}: {key} differs:\n  chat.py  {ours.get(key)!r}\n  cact-run {theirs.get(key)!r}")
        print(f"{'FAIL' if differ else 'ok  '} {request!r}: {json.dumps(ours['function_calls'])}")
        failed = failed or bool(differ)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
