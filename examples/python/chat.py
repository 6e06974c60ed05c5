#!/usr/bin/env python3
"""One tool-calling request through libcact.so with ctypes (no compiled extension).

    chat.py [--lib PATH] [--json] [--stream] MODEL.cact TOOLS.json REQUEST

Prints each call the answer makes as "name arguments" (or the answer's text
when it makes none); --json prints the answer envelope instead (the object
`cact-run --chat --json` prints), --stream the pieces on stderr as they come.
The library: --lib, else $CACT_LIBRARY, else libcact.so.1 on the loader's path.
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import sys

CACT_OK = 0
# int (*)(void *user_data, const char *piece, size_t length)
PIECE_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t)


class CactError(Exception):
    pass


class Cact:
    """The part of cact.h this example uses; handles are opaque pointers."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(path)
        handle, out = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
        status, text = ctypes.c_int, ctypes.c_char_p
        signatures = {
            "cact_version": (text, []),
            "cact_last_error": (text, []),
            "cact_status_name": (text, [status]),
            "cact_model_open": (status, [text, out]),
            "cact_model_free": (None, [handle]),
            "cact_engine_new": (status, [handle, handle, out]),
            "cact_engine_free": (None, [handle]),
            "cact_tokenizer_new": (status, [handle, out]),
            "cact_tokenizer_free": (None, [handle]),
            "cact_chat_new": (status, [handle, handle, handle, out]),
            "cact_chat_free": (None, [handle]),
            "cact_chat_set_tools": (status, [handle, text]),
            "cact_chat_ask": (status, [handle, text, handle, PIECE_CALLBACK, handle, out]),
            "cact_answer_free": (None, [handle]),
            "cact_answer_json": (status, [handle, ctypes.POINTER(text)]),
        }
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes

    def check(self, status):
        if status != CACT_OK:
            name = self.lib.cact_status_name(status).decode()
            raise CactError(f"{name}: {self.lib.cact_last_error().decode()}")

    def make(self, function, *args):
        """Calls a constructor (its last argument is the out pointer) and returns the handle."""
        handle = ctypes.c_void_p()
        self.check(function(*args, ctypes.byref(handle)))
        return handle


def find_library(given):
    path = given or os.environ.get("CACT_LIBRARY") or ctypes.util.find_library("cact")
    if not path:
        sys.exit("chat.py: libcact.so not found (pass --lib PATH or set CACT_LIBRARY)")
    return path


def ask(cact, model_path, tools_json, request, on_piece):
    """The answer envelope of `request` as a dict; every handle is freed on the way out."""
    lib = cact.lib
    handles = []  # (free function, handle), freed in reverse order
    try:
        model = cact.make(lib.cact_model_open, model_path.encode())
        handles.append((lib.cact_model_free, model))
        engine = cact.make(lib.cact_engine_new, model, None)
        handles.append((lib.cact_engine_free, engine))
        tokenizer = cact.make(lib.cact_tokenizer_new, model)
        handles.append((lib.cact_tokenizer_free, tokenizer))
        chat = cact.make(lib.cact_chat_new, engine, tokenizer, None)
        handles.append((lib.cact_chat_free, chat))
        cact.check(lib.cact_chat_set_tools(chat, tools_json.encode()))
        answer = cact.make(lib.cact_chat_ask, chat, request.encode(), None, on_piece, None)
        handles.append((lib.cact_answer_free, answer))
        envelope = ctypes.c_char_p()
        cact.check(lib.cact_answer_json(answer, ctypes.byref(envelope)))
        return json.loads(envelope.value.decode())  # copied before the answer is freed
    finally:
        for free, handle in reversed(handles):
            free(handle)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", help="path of libcact.so")
    parser.add_argument("--json", action="store_true", help="print the answer envelope")
    parser.add_argument("--stream", action="store_true", help="print the pieces on stderr as they come")
    parser.add_argument("model")
    parser.add_argument("tools")
    parser.add_argument("request")
    args = parser.parse_args()

    cact = Cact(find_library(args.lib))
    with open(args.tools, encoding="utf-8") as f:
        tools_json = f.read()

    def stream(_user_data, piece, length):
        sys.stderr.write(ctypes.string_at(piece, length).decode("utf-8", "replace"))
        return 0  # go on

    on_piece = PIECE_CALLBACK(stream) if args.stream else PIECE_CALLBACK()  # kept alive during the call
    try:
        envelope = ask(cact, args.model, tools_json, args.request, on_piece)
    except CactError as e:
        sys.exit(f"chat.py: {e}")
    if args.json:
        print(json.dumps(envelope, ensure_ascii=False))
    elif envelope["function_calls"]:
        for call in envelope["function_calls"]:
            print(call["name"], json.dumps(call["arguments"], separators=(",", ":"), ensure_ascii=False))
    else:
        print(envelope["text"])


if __name__ == "__main__":
    main()
