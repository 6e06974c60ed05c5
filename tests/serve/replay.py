"""Replays models/tools/expected.jsonl through /v1/chat/completions, the way an
OpenAI client holds a conversation: each answer's message (reasoning_content and
tool_calls included) goes back into `messages`, a tool result answers its call
by tool_call_id. Used by the endpoint test and the load benchmark.
"""
import json
import os

from serve_harness import MODELS


def load_conversations(limit=None):
    with open(os.path.join(MODELS, "expected.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return rows[:limit] if limit else rows


def openai_tools(tools):
    return [{"type": "function", "function": t} for t in tools]


def replay(server, conversation, drop_reasoning=False):
    """Yields (expected answer, valid flag, HTTP status, response) per answer asked.
    Stops after an answer whose call was not valid (the expected file's later
    turns were generated after the unlisted call)."""
    messages = []
    if conversation["system"]:
        messages.append({"role": "system", "content": conversation["system"]})
    tools = openai_tools(conversation["tools"])
    last_call_ids = []
    for message, expected, valid in zip(conversation["messages"], conversation["answers"], conversation["valid"]):
        if message["role"] == "tool":
            if len(last_call_ids) != 1:
                return
            messages.append({"role": "tool", "tool_call_id": last_call_ids[0], "content": message["content"]})
        else:
            messages.append({"role": "user", "content": message["content"]})
        status, _, body = server.chat({"model": "tools-tiny", "messages": messages, "tools": tools})
        yield expected, valid, status, body
        if status != 200:
            return
        reply = dict(body["choices"][0]["message"])
        if drop_reasoning:
            reply.pop("reasoning_content", None)
        messages.append(reply)
        last_call_ids = [c["id"] for c in reply.get("tool_calls") or []]
        if not valid:
            return


def check_answer(expected, valid, status, body):
    """None when the answer is what the expected file says (a suppressed call
    for the unlisted ones), else what differs."""
    if status != 200:
        return f"HTTP {status}: {body}"
    cact = body["cact"]
    if valid:
        return None if cact["raw"] == expected else f"raw {cact['raw']!r} != expected {expected!r}"
    if cact["stop"] == "suppressed_call" and not body["choices"][0]["message"].get("tool_calls"):
        return None
    return f"the unlisted call was not suppressed: {cact['raw']!r}"
