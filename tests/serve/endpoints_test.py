#!/usr/bin/env python3
"""cact-serve end to end: every endpoint and error shape, the request mapping,
streaming, the prefix cache, concurrency and queueing, a client that leaves,
the API key, and the drain on SIGTERM (docs/SERVE.md).

    endpoints_test.py --server build/release/apps/cact-serve [--conversations N]
"""
import argparse
import json
import socket
import sys
import threading
import time

from replay import check_answer, load_conversations, openai_tools, replay
from serve_harness import Checks, Server, load_tools, raw_exchange

TOOLS = load_tools()
# A tool whose shortest valid call is hundreds of tokens: a request that holds its slot for a while.
FILL_TOOLS = [{"type": "function", "function": {
    "name": "fill", "description": "Fill a list.",
    "parameters": {"type": "object", "required": ["values"], "properties": {
        "values": {"type": "array", "minItems": 400,
                   "items": {"type": "integer", "minimum": 100000, "maximum": 999999}}}}}}]
LONG_REQUEST = {"messages": [{"role": "user", "content": "fill it"}], "tools": FILL_TOOLS,
                "tool_choice": "required", "max_tokens": 900}


def user(text):
    return {"role": "user", "content": text}


def ask(text, **extra):
    return {"model": "tools-tiny", "messages": [user(text)], "tools": TOOLS, **extra}


def is_error(c, status, body, want_status, what, param=None, code=None, contains=None):
    ok = status == want_status and isinstance(body, dict) and set(body) == {"error"}
    err = body.get("error", {}) if isinstance(body, dict) else {}
    ok = ok and {"message", "type", "param", "code"} <= set(err) and isinstance(err.get("message"), str)
    if param is not None:
        ok = ok and err.get("param") == param
    if code is not None:
        ok = ok and err.get("code") == code
    if contains is not None:
        ok = ok and contains in err.get("message", "")
    return c.check(ok, what, f"HTTP {status}: {body}")


def check_basic_endpoints(c, s):
    h = s.health()
    c.check(h["status"] == "ok" and h["slots"] == 2 and h["queue_limit"] == 8, "/health", h)
    status, _, body = s.request("GET", "/v1/models")
    c.check(status == 200 and body["object"] == "list" and body["data"][0]["id"] == "tools-tiny"
            and body["data"][0]["object"] == "model", "/v1/models", body)
    status, _, body = s.request("GET", "/v1/models/tools-tiny")
    c.check(status == 200 and body["id"] == "tools-tiny", "/v1/models/tools-tiny", body)
    status, _, body = s.request("GET", "/v1/models/gpt-4o")
    is_error(c, status, body, 404, "/v1/models/gpt-4o is 404", code="model_not_found")

    status, _, body = s.request("POST", "/tokenize", {"content": "set a timer for 10 minutes"})
    ids = body.get("tokens") if status == 200 else None
    c.check(isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids), "/tokenize", body)
    status, _, back = s.request("POST", "/detokenize", {"tokens": ids})
    c.check(status == 200 and back == {"content": "set a timer for 10 minutes"}, "/detokenize inverts /tokenize", back)
    status, _, body = s.request("POST", "/tokenize", {"content": "hi", "add_special": True})
    c.check(status == 200 and body["tokens"][0] == 2, "/tokenize add_special starts with bos", body)
    status, _, body = s.request("POST", "/tokenize", {"content": 5})
    is_error(c, status, body, 400, "/tokenize content 5 is 400", param="content")
    status, _, body = s.request("POST", "/detokenize", {"tokens": [1, -1]})
    is_error(c, status, body, 400, "/detokenize -1 is 400", param="tokens[1]")
    status, _, body = s.request("POST", "/detokenize", {"tokens": [99999]})
    is_error(c, status, body, 400, "/detokenize out of vocabulary is 400", param="tokens[0]")

    status, _, body = s.request("GET", "/v1/nothing")
    is_error(c, status, body, 404, "unknown path is 404", code="not_found")
    status, headers, body = s.request("GET", "/v1/chat/completions")
    is_error(c, status, body, 405, "GET /v1/chat/completions is 405", code="method_not_allowed")
    c.check(headers.get("allow") == "POST", "405 names the allowed method", headers)
    status, headers, body = s.request("DELETE", "/health")
    is_error(c, status, body, 405, "DELETE /health is 405")


def check_tool_call(c, s):
    status, _, body = s.chat(ask("set a timer for 10 minutes"))
    if not c.check(status == 200, "chat: a tool call", body):
        return None
    choice = body["choices"][0]
    msg = choice["message"]
    calls = msg.get("tool_calls") or []
    c.check(body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-") and body["model"] == "tools-tiny",
            "completion object, id, model", body)
    c.check(choice["finish_reason"] == "tool_calls" and msg["role"] == "assistant" and msg["content"] is None,
            "finish_reason tool_calls, content null", choice)
    c.check(len(calls) == 1 and calls[0]["id"].startswith("call_") and calls[0]["type"] == "function"
            and calls[0]["function"]["name"] == "set_timer" and isinstance(calls[0]["function"]["arguments"], str)
            and json.loads(calls[0]["function"]["arguments"]) == {"minutes": 10}, "the set_timer call", calls)
    c.check(msg.get("reasoning_content") == "Use set_timer.", "reasoning_content", msg)
    u = body["usage"]
    c.check(u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] and u["completion_tokens"] > 0
            and u["prompt_tokens_details"]["cached_tokens"] <= u["prompt_tokens"], "usage adds up", u)
    ext = body["cact"]
    c.check(ext["schema"] == "cact-answer/1" and ext["validation"] == [{"name": "set_timer", "ok": True}]
            and ext["stop"] == "im_end" and "prefill_ms" in ext["timings"] and "queue_ms" in ext["serve"],
            "the cact extension: envelope, validation, timings", ext)
    return body


def check_prefix_cache_and_round_trip(c, s):
    first = s.chat(ask("weather in Paris please"))[2]
    second = s.chat(ask("weather in Paris please"))[2]
    prefix = second["usage"]["prompt_tokens_details"]["cached_tokens"]
    c.check(second["cact"]["serve"]["slot_fit"] == "prefix" and prefix > 100
            and second["cact"]["tokens"]["cached"] == prefix, "same tools: the prefix comes from the cache", second["usage"])
    c.check(first["cact"]["raw"] == second["cact"]["raw"], "a cached prefix gives the same answer")
    reply = second["choices"][0]["message"]
    call_id = reply["tool_calls"][0]["id"]
    history = [user("weather in Paris please"), reply,
               {"role": "tool", "tool_call_id": call_id, "content": '{"temp_c": 21, "sky": "sunny"}'}]
    status, _, third = s.chat({"messages": history, "tools": TOOLS})
    ok = status == 200
    c.check(ok and third["choices"][0]["message"]["content"] == "It is 21 degrees and sunny in Paris."
            and third["choices"][0]["finish_reason"] == "stop", "round trip: call, tool result, answer", third)
    if ok:
        held = second["usage"]["prompt_tokens"] + second["usage"]["completion_tokens"]
        c.check(third["cact"]["serve"]["slot_fit"] == "conversation"
                and third["usage"]["prompt_tokens_details"]["cached_tokens"] == held,
                "the follow-up continues the slot's conversation (nothing prefilled again)", third["cact"]["serve"])
    # The same history on a slot that holds something else: replayed behind the cached prefix.
    s.chat({"messages": [user("hello")], "tools": FILL_TOOLS})
    s.chat({"messages": [user("hello")], "tools": FILL_TOOLS})
    status, _, again = s.chat({"messages": history, "tools": TOOLS})
    c.check(status == 200 and again["cact"]["serve"]["slot_fit"] == "prefix"
            and again["choices"][0]["message"]["content"] == "It is 21 degrees and sunny in Paris."
            and again["usage"]["prompt_tokens_details"]["cached_tokens"] == prefix,
            "a replayed history gives the same answer", again)
    # Calls and results in any order are put in call order; stop strings; max_tokens.
    status, _, stopped = s.chat({"messages": history, "tools": TOOLS, "stop": ["sunny"]})
    c.check(status == 200 and stopped["choices"][0]["message"]["content"] == "It is 21 degrees and "
            and stopped["choices"][0]["finish_reason"] == "stop" and stopped["cact"]["stop"] == "stop_string",
            "stop string", stopped)
    status, _, short = s.chat(ask("weather in Paris please", max_tokens=3))
    c.check(status == 200 and short["choices"][0]["finish_reason"] == "length"
            and short["usage"]["completion_tokens"] <= 3, "max_tokens 3: finish_reason length", short)
    return history, third


def check_streaming(c, s, history, answered):
    plain = s.chat(ask("call Ben"))[2]
    events = s.stream_events(ask("call Ben", stream=True, stream_options={"include_usage": True}))
    c.check(events and events[-1] == "[DONE]", "stream ends with data: [DONE]", events[-2:])
    chunks = [e for e in events if isinstance(e, dict)]
    c.check(all(e["object"] == "chat.completion.chunk" and e["id"] == chunks[0]["id"] for e in chunks),
            "every chunk is a chat.completion.chunk of one id")
    c.check(chunks[0]["choices"][0]["delta"].get("role") == "assistant", "the first delta has the role")
    reasoning, calls, finish = "", {}, None
    for e in chunks:
        for choice in e["choices"]:
            delta = choice["delta"]
            reasoning += delta.get("reasoning_content", "")
            for tc in delta.get("tool_calls", []):
                slot = calls.setdefault(tc["index"], {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.get("id", slot["id"])
                slot["name"] += tc.get("function", {}).get("name", "")
                slot["arguments"] += tc.get("function", {}).get("arguments", "")
            finish = choice["finish_reason"] or finish
    want = plain["choices"][0]["message"]
    c.check(reasoning == want["reasoning_content"], "streamed reasoning equals the message's", reasoning)
    c.check(len(calls) == 1 and calls[0]["name"] == want["tool_calls"][0]["function"]["name"]
            and calls[0]["arguments"] == want["tool_calls"][0]["function"]["arguments"]
            and calls[0]["id"].startswith("call_"), "tool-call deltas assemble to the message's call", calls)
    c.check(finish == "tool_calls", "stream finish_reason tool_calls", finish)
    usage = [e for e in chunks if e.get("usage")]
    c.check(len(usage) == 1 and usage[0]["choices"] == [] and usage[0]["usage"]["completion_tokens"] > 0,
            "include_usage: one usage chunk", usage)
    c.check(any("cact" in e for e in chunks), "the finish chunk carries the cact extension")

    events = s.stream_events({"messages": history, "tools": TOOLS, "stream": True})
    content = "".join(ch["delta"].get("content", "") for e in events if isinstance(e, dict) for ch in e["choices"])
    c.check(content == answered["choices"][0]["message"]["content"], "streamed content equals the message's", content)

    # The first answers of expected.jsonl, streamed and not: the same message.
    differ = []
    for conv in load_conversations(20):
        messages = ([{"role": "system", "content": conv["system"]}] if conv["system"] else []) + [
            user(conv["messages"][0]["content"])]
        req = {"messages": messages, "tools": openai_tools(conv["tools"])}
        want = s.chat(req)[2]["choices"][0]
        got = assemble(s.stream_events(dict(req, stream=True)))
        if got["content"] != (want["message"]["content"] or "") or got["finish_reason"] != want["finish_reason"] \
                or got["reasoning"] != want["message"].get("reasoning_content", "") \
                or got["calls"] != [(t["function"]["name"], t["function"]["arguments"])
                                    for t in want["message"].get("tool_calls") or []]:
            differ.append((got, want))
    c.check(not differ, "20 expected.jsonl requests: the stream assembles to the message", differ[:1])


def assemble(events):
    """Content, reasoning, calls and finish_reason of a stream, as a client puts them together."""
    out = {"content": "", "reasoning": "", "calls": {}, "finish_reason": None}
    for e in events:
        if not isinstance(e, dict):
            continue
        for ch in e["choices"]:
            d = ch["delta"]
            out["content"] += d.get("content") or ""
            out["reasoning"] += d.get("reasoning_content") or ""
            for tc in d.get("tool_calls", []):
                name, args = out["calls"].get(tc["index"], ("", ""))
                out["calls"][tc["index"]] = (name + tc.get("function", {}).get("name", ""),
                                             args + tc.get("function", {}).get("arguments", ""))
            out["finish_reason"] = ch["finish_reason"] or out["finish_reason"]
    out["calls"] = [out["calls"][i] for i in sorted(out["calls"])]
    return out


def check_tool_choice(c, s):
    status, _, body = s.chat(ask("set a timer for 10 minutes", tool_choice="none"))
    c.check(status == 200 and not body["choices"][0]["message"].get("tool_calls")
            and body["choices"][0]["finish_reason"] != "tool_calls", "tool_choice none: no call", body)
    status, _, body = s.chat(ask("what is the capital of France", tool_choice="required"))
    c.check(status == 200 and body["choices"][0]["finish_reason"] == "tool_calls", "tool_choice required: a call", body)
    named = {"type": "function", "function": {"name": "get_weather"}}
    status, _, body = s.chat(ask("set a timer for 10 minutes", tool_choice=named))
    c.check(status == 200 and body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather",
            "tool_choice named: that tool", body)
    status, _, body = s.chat(ask("hi", tool_choice={"type": "function", "function": {"name": "fly"}}))
    is_error(c, status, body, 400, "tool_choice naming an unlisted tool is 400", param="tool_choice")
    status, _, body = s.chat({"messages": [user("hi")], "tool_choice": "required"})
    is_error(c, status, body, 400, "tool_choice required without tools is 400", param="tool_choice")


def check_sampling(c, s):
    req = ask("play some jazz", temperature=1.5, top_p=0.9, seed=1234)
    a, b = s.chat(req)[2], s.chat(req)[2]
    c.check(a["cact"]["seed"] == 1234 and a["cact"]["raw"] == b["cact"]["raw"], "a seed reproduces a sampled answer",
            (a["cact"]["raw"], b["cact"]["raw"]))
    status, _, body = s.chat(ask("play some jazz", temperature=1.0))
    c.check(status == 200 and body["cact"]["seed"] != 0, "sampling without a seed reports a random one", body.get("cact"))


def check_request_errors(c, s):
    bad = [
        ("malformed JSON", b'{"messages": [', None, "invalid JSON"),
        ("a list body", [1, 2], None, "expected a JSON object"),
        ("invalid UTF-8", b'{"messages":[{"role":"user","content":"\xff\xfe"}]}', None, "invalid JSON"),
        ("messages missing", {"tools": TOOLS}, "messages", None),
        ("messages empty", {"messages": []}, "messages", None),
        ("messages not a list", {"messages": "hi"}, "messages", None),
        ("temperature a string", ask("hi", temperature="hot"), "temperature", None),
        ("temperature 3", ask("hi", temperature=3), "temperature", None),
        ("top_p 0", ask("hi", top_p=0), "top_p", None),
        ("max_tokens 0", ask("hi", max_tokens=0), "max_tokens", None),
        ("max_tokens 2.5", ask("hi", max_tokens=2.5), "max_tokens", None),
        ("max_tokens huge", ask("hi", max_tokens=10**30), "max_tokens", None),
        ("max_tokens above the limit", ask("hi", max_tokens=5000), "max_tokens", None),
        ("seed a string", ask("hi", seed="x"), "seed", None),
        ("stream a string", ask("hi", stream="yes"), "stream", None),
        ("stream_options without stream", ask("hi", stream_options={"include_usage": True}), "stream_options", None),
        ("n 2", ask("hi", n=2), "n", None),
        ("logprobs", ask("hi", logprobs=True), "logprobs", None),
        ("response_format json", ask("hi", response_format={"type": "json_object"}), "response_format", None),
        ("five stop strings", ask("hi", stop=["a", "b", "c", "d", "e"]), "stop", None),
        ("an empty stop string", ask("hi", stop=""), "stop", None),
        ("a misspelt parameter", ask("hi", temprature=1), "temprature", None),
        ("an unknown role", {"messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role", None),
        ("a message without role", {"messages": [{"content": "hi"}]}, "messages[0]", None),
        ("an image part", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
         "messages[0].content[0].type", None),
        ("content a number", {"messages": [{"role": "user", "content": 5}]}, "messages[0].content", None),
        ("a system message after the conversation started",
         {"messages": [user("hi"), {"role": "assistant", "content": "hello"}, {"role": "system", "content": "x"},
                       user("again")]}, "messages[2]", None),
        ("the last message is the assistant's", {"messages": [user("hi"), {"role": "assistant", "content": "x"}]},
         "messages", None),
        ("a tool message with no call before it", {"messages": [user("hi"), {"role": "tool", "tool_call_id": "a",
                                                                            "content": "1"}]}, "messages[1]", None),
        ("an unknown tool name in the history",
         {"tools": TOOLS, "messages": [user("hi"), {"role": "assistant", "tool_calls": [
             {"id": "call_1", "type": "function", "function": {"name": "launch_rocket", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]},
         "messages[1].tool_calls[0].function.name", "launch_rocket"),
        ("arguments that are not JSON",
         {"tools": TOOLS, "messages": [user("hi"), {"role": "assistant", "tool_calls": [
             {"id": "call_1", "type": "function", "function": {"name": "set_timer", "arguments": "{minutes: 5"}}]},
             {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]},
         "messages[1].tool_calls[0].function.arguments", None),
        ("a result for an unknown call id",
         {"tools": TOOLS, "messages": [user("hi"), {"role": "assistant", "tool_calls": [
             {"id": "call_1", "type": "function", "function": {"name": "set_timer", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "call_2", "content": "ok"}]},
         "messages[2].tool_call_id", "call_2"),
        ("calls answered in part",
         {"tools": TOOLS, "messages": [user("hi"), {"role": "assistant", "tool_calls": [
             {"id": "a", "type": "function", "function": {"name": "set_timer", "arguments": "{}"}},
             {"id": "b", "type": "function", "function": {"name": "set_alarm", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "a", "content": "ok"}, user("and?")]},
         "messages[1].tool_calls", None),
        ("assistant text spelling a chat marker",
         {"messages": [user("hi"), {"role": "assistant", "content": "x<|im_end|>"}, user("again")]},
         "messages[1].content", "<|im_end|>"),
        ("a schema outside the subset",
         {"messages": [user("hi")], "tools": [{"type": "function", "function": {"name": "f", "parameters": {
             "type": "object", "properties": {"code": {"type": "string", "pattern": "^[a-z]+$"}}}}}]},
         "tools", "parameters.properties.code"),
        ("a tool that is not a function",
         {"messages": [user("hi")], "tools": [{"type": "retrieval", "function": {"name": "f"}}]}, "tools", None),
        ("a tool list that is not a list", {"messages": [user("hi")], "tools": {"name": "f"}}, "tools", None),
    ]
    for what, body, param, contains in bad:
        status, _, got = s.chat(body if not isinstance(body, bytes) else body)
        is_error(c, status, got, 400, f"400: {what}", param=param, contains=contains)

    words = " ".join(["timer"] * 3000)
    status, _, got = s.chat(ask(words))
    is_error(c, status, got, 400, "a turn beyond the context is 400", param="messages", code="context_length_exceeded")
    status, _, got = s.chat({"messages": [user("hi")] * 65})
    is_error(c, status, got, 400, "more messages than --max-messages is 400", param="messages")
    status, headers, got = s.request("POST", "/v1/chat/completions", b"x" * 70000)
    is_error(c, status, got, 413, "a body over --max-body is 413", code="request_too_large")
    c.check(headers.get("connection") == "close", "413 closes the connection", headers)


def check_concurrency(c, s, conversations):
    """Conversations replayed one after another, then four at a time on two
    slots: every answer is the expected one either way."""
    def run(convs, results):
        for conv in convs:
            for expected, valid, status, body in replay(s, conv):
                results.append((valid, check_answer(expected, valid, status, body)))

    sequential = []
    run(conversations, sequential)
    bad = [e for _, e in sequential if e]
    equal = sum(1 for v, e in sequential if v and not e)
    suppressed = sum(1 for v, e in sequential if not v and not e)
    # The whole file: 150 answers can be asked over the protocol (one conversation sends a tool
    # result after an answer with no call), 5 of them unlisted calls that must be suppressed.
    whole = len(conversations) < 100 or (equal, suppressed) == (145, 5)
    c.check(not bad and whole and equal > 0,
            f"replay of {len(conversations)} expected.jsonl conversations: {equal} answers equal to the file, "
            f"{suppressed} unlisted calls suppressed", bad[:3])
    parts = [conversations[i::4] for i in range(4)]
    results = [[] for _ in parts]
    threads = [threading.Thread(target=run, args=(p, r)) for p, r in zip(parts, results)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    together = [r for rs in results for r in rs]
    bad = [e for _, e in together if e]
    c.check(not bad and len(together) == len(sequential), f"the same, four clients at once ({len(together)} answers)",
            bad[:3])


def check_queue_disconnect_drain(c, binary):
    with Server(binary, "--parallel", "1", "--queue", "1", "--threads", "1", "--timeout", "5", "-q") as s:
        # One request generating, one waiting, the next refused.
        started = threading.Event()
        first, second = {}, {}
        t1 = threading.Thread(target=lambda: first.update(events=s.stream_events(
            dict(LONG_REQUEST, stream=True), on_event=lambda e: started.set())))
        t1.start()
        started.wait(60)
        t2 = threading.Thread(target=lambda: second.update(result=s.chat(LONG_REQUEST)))
        t2.start()
        s.wait_health(lambda h: h["queued"] == 1, "a queued request")
        status, headers, body = s.chat(LONG_REQUEST)
        is_error(c, status, body, 503, "beyond --parallel + --queue: 503", code="server_busy")
        c.check(headers.get("retry-after") == "1", "503 has Retry-After", headers)
        t1.join()
        t2.join()
        c.check(first["events"][-1] == "[DONE]", "the running request finished")
        c.check(second["result"][0] == 200, "the queued request was served", second["result"][0])

        # A client that leaves stops its generation (streaming, then not).
        base = s.health()["cancelled"]
        conn = s.connection()
        conn.request("POST", "/v1/chat/completions", body=json.dumps(dict(LONG_REQUEST, stream=True)),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read1(100)
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
        s.wait_health(lambda h: h["cancelled"] == base + 1 and h["slots_busy"] == 0,
                      "the streaming generation to stop", timeout=30)
        c.check(True, "a streaming client that leaves stops its generation")
        body = json.dumps(LONG_REQUEST).encode()
        sock = socket.create_connection(("127.0.0.1", s.port))
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        s.wait_health(lambda h: h["slots_busy"] == 1, "the request to start")
        sock.close()
        s.wait_health(lambda h: h["cancelled"] == base + 2 and h["slots_busy"] == 0,
                      "the generation to stop", timeout=30)
        c.check(True, "a waiting client that leaves stops its generation")

        # SIGTERM while a request runs: it finishes, then the server exits 0.
        started.clear()
        drained = {}
        t3 = threading.Thread(target=lambda: drained.update(events=s.stream_events(
            dict(LONG_REQUEST, stream=True), on_event=lambda e: started.set())))
        t3.start()
        started.wait(60)
        code = s.stop()
        t3.join()
        events = drained.get("events", [])
        c.check(code == 0, "SIGTERM: exit 0 after draining", code)
        c.check(events and events[-1] == "[DONE]" and any(
            ch["finish_reason"] for e in events if isinstance(e, dict) for ch in e["choices"]),
            "SIGTERM: the request in progress completed", events[-2:])
        try:
            raw_exchange(s.port, b"GET /health HTTP/1.1\r\n\r\n", timeout=2)
            refused = False
        except OSError:
            refused = True
        c.check(refused, "after the drain nothing listens")


def check_api_key(c, binary):
    with Server(binary, "--api-key", "sesame", "-q") as s:
        status, headers, body = s.request("GET", "/v1/models")
        is_error(c, status, body, 401, "no key: 401", code="invalid_api_key")
        c.check(headers.get("www-authenticate") == "Bearer", "401 has WWW-Authenticate", headers)
        status, _, body = s.request("GET", "/v1/models", headers={"Authorization": "Bearer sesame!"})
        is_error(c, status, body, 401, "a wrong key: 401")
        status, _, body = s.chat(ask("hi"), headers={"Authorization": "Bearer sesame"})
        c.check(status == 200, "the right key: 200", body)
        status, _, body = s.request("POST", "/tokenize", {"content": "x"})
        is_error(c, status, body, 401, "/tokenize wants the key too")
        c.check(s.request("GET", "/health")[0] == 200, "/health needs no key")
        c.check(s.stop() == 0, "exit 0")
    import subprocess
    p = subprocess.run([binary, "--host", "0.0.0.0", "--port", "0"], capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin"})
    c.check(p.returncode == 2 and p.stderr.startswith("cact-serve: --host 0.0.0.0") and "--api-key" in p.stderr
            and p.stderr.count("\n") == 1, "a non-loopback host without a key: exit 2, one line", (p.returncode, p.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--conversations", type=int, default=100, help="expected.jsonl conversations to replay")
    args = ap.parse_args()
    c = Checks()
    start = time.monotonic()
    with Server(args.server, "--parallel", "2", "--max-messages", "64", "--max-body", "65536", "--timeout", "5") as s:
        check_basic_endpoints(c, s)
        check_tool_call(c, s)
        history, answered = check_prefix_cache_and_round_trip(c, s)
        check_streaming(c, s, history, answered)
        check_tool_choice(c, s)
        check_sampling(c, s)
        check_request_errors(c, s)
        check_concurrency(c, s, load_conversations(args.conversations))
        c.check(s.health()["slots_busy"] == 0, "every slot is free again")
        c.check(s.stop() == 0, "SIGTERM: exit 0")
    check_api_key(c, args.server)
    check_queue_disconnect_drain(c, args.server)
    print(f"{time.monotonic() - start:.1f} s")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
