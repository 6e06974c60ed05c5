#!/usr/bin/env python3
"""cact-serve driven by the official openai npm package (tests/serve/openai_client/).

Copies package.json and test.mjs into WORK (a build directory), runs
`npm install` there (the npm registry must be reachable; a failure is loud and
fails the test), starts the server and runs `node test.mjs`.

    openai_client_test.py --server build/release/apps/cact-serve --work build/release/tests/serve/openai_client
"""
import argparse
import os
import shutil
import subprocess
import sys

from serve_harness import MODELS, Server

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai_client")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--npm", default="npm")
    ap.add_argument("--node", default="node")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    for name in ("package.json", "test.mjs"):
        shutil.copyfile(os.path.join(HERE, name), os.path.join(args.work, name))
    for tool in (args.npm, args.node):
        if shutil.which(tool) is None:
            print(f"FAIL {tool} is not installed (the test needs node 20 and npm)")
            return 1
    npm = subprocess.run([args.npm, "install", "--no-audit", "--no-fund", "--prefer-offline"], cwd=args.work,
                         capture_output=True, text=True, timeout=600)
    if npm.returncode != 0 or not os.path.isdir(os.path.join(args.work, "node_modules", "openai")):
        print(npm.stdout + npm.stderr)
        print(f"FAIL npm install openai in {args.work} (exit {npm.returncode}): the npm registry must be reachable")
        return 1
    with Server(args.server, "--parallel", "2", "-q") as server:
        node = subprocess.run([args.node, "test.mjs", f"http://127.0.0.1:{server.port}/v1", MODELS], cwd=args.work,
                              capture_output=True, text=True, timeout=300)
        print(node.stdout + node.stderr)
        code = server.stop()
    if code != 0:
        print(f"FAIL the server exited {code} on SIGTERM")
        return 1
    return 0 if node.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
