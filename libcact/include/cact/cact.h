/*
 * cact.h: the stable C API of libcact (docs/API.md). Plain C99; usable from C,
 * C++, Swift, Kotlin/JNI, Rust and Python ctypes.
 *
 * Handles are opaque and independent: any number of each per process, no
 * global state, each freed by its own *_free (NULL is accepted and ignored).
 * A handle made from another keeps what it needs alive, so handles may be
 * freed in any order: freeing a model while an engine made from it still
 * exists only drops the caller's reference, and the file is unmapped (or the
 * copied buffer released) when the last engine made from it is freed.
 *
 * Errors: every call that can fail returns a cact_status; on failure it sets
 * each output handle pointer to NULL, leaves the other outputs unchanged, and
 * records one line saying what went wrong, readable with cact_last_error()
 * (the calling thread's last failure) and, for the handles used by one thread
 * at a time, with cact_session_last_error / cact_chat_last_error /
 * cact_sampler_last_error. No C++ exception ever leaves a cact_* function.
 *
 * Threading: model, engine and tokenizer are read-only once made; every call
 * taking a `const` pointer to one may run on any number of threads at once.
 * A session, chat, sampler or answer is used by one thread at a time (it may
 * move between threads). *_free must not run concurrently with another call
 * on the same handle.
 *
 * Ownership: a `const char *` or `const float *` a call returns is owned by
 * the handle it came from and stays valid for the lifetime stated at that
 * call; a `char *` returned through an output is the caller's, released with
 * cact_string_free.
 */
#ifndef CACT_CACT_H
#define CACT_CACT_H

#include <stddef.h>
#include <stdint.h>

#define CACT_VERSION_MAJOR 1
#define CACT_VERSION_MINOR 0
#define CACT_VERSION_PATCH 0
#define CACT_VERSION_NUMBER (CACT_VERSION_MAJOR * 10000 + CACT_VERSION_MINOR * 100 + CACT_VERSION_PATCH)

/* CACT_API marks the exported functions; everything else in libcact.so is hidden. */
#if defined(_WIN32)
#if defined(CACT_BUILDING)
#define CACT_API __declspec(dllexport)
#elif defined(CACT_STATIC)
#define CACT_API
#else
#define CACT_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && defined(CACT_BUILDING)
#define CACT_API __attribute__((visibility("default")))
#else
#define CACT_API
#endif

#ifdef __cplusplus
/* C++ callers see the guarantee: nothing is thrown. */
#define CACT_NOEXCEPT noexcept
extern "C" {
#else
#define CACT_NOEXCEPT
#endif

/* ---------------------------------------------------------------- status */

typedef enum cact_status {
  CACT_OK = 0,
  CACT_ERROR_INVALID_ARGUMENT = 1, /* a NULL argument, an option out of range, an id outside the vocabulary */
  CACT_ERROR_IO = 2,               /* the file cannot be opened, read or mapped */
  CACT_ERROR_BAD_MODEL = 3,        /* not a valid .cact archive (the message names the first problem) */
  CACT_ERROR_WRONG_GENERATION = 4, /* a .cact archive of another Needle generation */
  CACT_ERROR_CONTEXT_OVERFLOW = 5, /* the tokens do not fit the session's context */
  CACT_ERROR_BAD_TOOLS = 6,        /* a tool list, tool choice or tool result refused */
  CACT_ERROR_BUFFER_TOO_SMALL = 7, /* the size needed was reported; nothing was written */
  CACT_ERROR_UNSUPPORTED = 8,      /* the archive lacks what was asked (a probe head, chat markers) */
  CACT_ERROR_STATE = 9,            /* not valid now (logits before the first token, a nested call) */
  CACT_ERROR_OUT_OF_MEMORY = 10,
  CACT_ERROR_INTERNAL = 11,         /* a bug in libcact: please report the message */
  CACT_STATUS_MAX_ENUM = 0x7fffffff /* every enum of this API is 32 bits wide, whatever the values */
} cact_status;

/* "CACT_OK", "CACT_ERROR_IO", ...; static storage. */
CACT_API const char* cact_status_name(cact_status status) CACT_NOEXCEPT;

/* The calling thread's last failure, one line ("" before any). Valid until the
 * calling thread's next failing cact_* call. Thread-safe. */
CACT_API const char* cact_last_error(void) CACT_NOEXCEPT;

/* "1.0.0" (static storage) and CACT_VERSION_NUMBER of the library in use. */
CACT_API const char* cact_version(void) CACT_NOEXCEPT;
CACT_API uint32_t cact_version_number(void) CACT_NOEXCEPT;

/* Releases a `char *` a cact_* call handed to the caller. NULL is ignored. */
CACT_API void cact_string_free(char* text) CACT_NOEXCEPT;

/* Options structs start with struct_size: fill them with their *_init
 * function, then change fields. A newer library reads an older, smaller
 * struct (defaults for the fields it lacks); NULL options mean the defaults. */

/* ----------------------------------------------------------------- model */

typedef struct cact_model cact_model;

/* Map and check an archive. Thread-safe. */
CACT_API cact_status cact_model_open(const char* path, cact_model** out) CACT_NOEXCEPT;

typedef enum cact_buffer_mode {
  CACT_BUFFER_COPY = 0,   /* copied: the caller may release `data` when the call returns */
  CACT_BUFFER_BORROW = 1, /* used in place (no copy): `data` must stay valid and unchanged until the
                            model and every engine made from it are freed; 64-byte aligned */
  CACT_BUFFER_MODE_MAX_ENUM = 0x7fffffff
} cact_buffer_mode;

/* Check an archive held in memory (e.g. an app asset). Thread-safe. */
CACT_API cact_status cact_model_open_buffer(const void* data, size_t size, cact_buffer_mode mode,
                                            cact_model** out) CACT_NOEXCEPT;
CACT_API void cact_model_free(cact_model* model) CACT_NOEXCEPT;

typedef enum cact_model_property {
  CACT_MODEL_VOCAB = 1,       /* tokenizer pieces */
  CACT_MODEL_OUTPUT_ROWS = 2, /* logits per position */
  CACT_MODEL_MAX_SEQ_LEN = 3, /* the most positions a session can hold */
  CACT_MODEL_LAYERS = 4,
  CACT_MODEL_D_MODEL = 5,
  CACT_MODEL_KV_WINDOW = 6, /* attention span fixed by the archive (0: none) */
  CACT_MODEL_KV_BITS = 7,
  CACT_MODEL_FILE_BYTES = 8,
  CACT_MODEL_HAS_CONFIDENCE_HEAD = 9, /* 1 or 0 */
  CACT_MODEL_HAS_ROUTER_HEAD = 10,
  CACT_MODEL_HAS_EMBEDDING_HEAD = 11,
  CACT_MODEL_PROPERTY_MAX_ENUM = 0x7fffffff
} cact_model_property;

CACT_API cact_status cact_model_get(const cact_model* model, cact_model_property property,
                                    uint64_t* value) CACT_NOEXCEPT;

/* ---------------------------------------------------------------- engine */

/* The prepared, read-only numerics of one model; shared by any number of
 * sessions and chats on any threads. */
typedef struct cact_engine cact_engine;

typedef enum cact_numerics {
  CACT_NUMERICS_INT8 = 0,  /* CQ-W2A8 integer kernels (default) */
  CACT_NUMERICS_FLOAT = 1, /* the float reference path (slow; for checking) */
  CACT_NUMERICS_MAX_ENUM = 0x7fffffff
} cact_numerics;

typedef enum cact_kernels {
  CACT_KERNELS_BEST = 0,   /* the best table this CPU supports, at most the CACT_ISA=<table> in the environment */
  CACT_KERNELS_SCALAR = 1, /* the portable scalar table */
  CACT_KERNELS_MAX_ENUM = 0x7fffffff
} cact_kernels;

typedef struct cact_engine_options {
  uint32_t struct_size;
  cact_numerics numerics;
  cact_kernels kernels;
} cact_engine_options;

CACT_API void cact_engine_options_init(cact_engine_options* options) CACT_NOEXCEPT;
/* Thread-safe; `options` NULL = defaults. */
CACT_API cact_status cact_engine_new(const cact_model* model, const cact_engine_options* options,
                                     cact_engine** out) CACT_NOEXCEPT;
CACT_API void cact_engine_free(cact_engine* engine) CACT_NOEXCEPT;
/* The kernel table in use ("avx2", "neon-dotprod", "scalar", ...; "none" for
 * the float path); static storage. */
CACT_API cact_status cact_engine_kernels_name(const cact_engine* engine, const char** name) CACT_NOEXCEPT;

/* --------------------------------------------------------------- session */

/* One decoding state (KV cache, history, probe heads), sized once when made.
 * One thread at a time. */
typedef struct cact_session cact_session;

typedef struct cact_session_options {
  uint32_t struct_size;
  uint32_t context;   /* positions (prompt + generated); 0 = the archive's max_seq_len */
  uint32_t sinks;     /* leading positions kept visible through a kv_window span */
  uint32_t kv_window; /* attention span when the archive leaves it open; 0 = the whole context */
  uint32_t max_chunk; /* tokens per forward call in a prefill (default 48) */
  uint32_t threads;   /* the caller plus threads-1 workers; 0 = the hardware concurrency */
} cact_session_options;

CACT_API void cact_session_options_init(cact_session_options* options) CACT_NOEXCEPT;
/* Thread-safe on a shared engine. */
CACT_API cact_status cact_session_new(const cact_engine* engine, const cact_session_options* options,
                                      cact_session** out) CACT_NOEXCEPT;
CACT_API void cact_session_free(cact_session* session) CACT_NOEXCEPT;
/* The session's last failure ("" before any); valid until its next failing call or its free. */
CACT_API const char* cact_session_last_error(const cact_session* session) CACT_NOEXCEPT;

/* Feed tokens; nothing changes when the call fails (CONTEXT_OVERFLOW,
 * INVALID_ARGUMENT for an id outside the vocabulary). `count` 0 does nothing. */
CACT_API cact_status cact_session_prefill(cact_session* session, const int32_t* ids, size_t count) CACT_NOEXCEPT;
CACT_API cact_status cact_session_step(cact_session* session, int32_t id) CACT_NOEXCEPT;
/* Logits after the last fed token (CACT_MODEL_OUTPUT_ROWS floats), owned by
 * the session, valid until its next prefill, step, reset, copy or free.
 * CACT_ERROR_STATE before the first token. */
CACT_API cact_status cact_session_logits(const cact_session* session, const float** logits,
                                         size_t* count) CACT_NOEXCEPT;
/* Forget every token (nothing is reallocated). */
CACT_API cact_status cact_session_reset(cact_session* session) CACT_NOEXCEPT;
/* Become a copy of `source`'s state (a snapshot restored); both from the same
 * engine with the same options. `source` must not be in use by another thread. */
CACT_API cact_status cact_session_copy(cact_session* session, const cact_session* source) CACT_NOEXCEPT;
CACT_API cact_status cact_session_position(const cact_session* session, uint32_t* position) CACT_NOEXCEPT;
CACT_API cact_status cact_session_context(const cact_session* session, uint32_t* context) CACT_NOEXCEPT;

/* Probe heads over every token fed since the last reset. */
typedef enum cact_head {
  CACT_HEAD_EMBEDDING = 1,
  CACT_HEAD_CONFIDENCE = 2,
  CACT_HEAD_ROUTER = 3,
  CACT_HEAD_MAX_ENUM = 0x7fffffff
} cact_head;

/* sigma(out[0]) of the confidence head, in (0, 1). CACT_ERROR_UNSUPPORTED
 * without the head, CACT_ERROR_STATE before the first token. */
CACT_API cact_status cact_session_confidence(const cact_session* session, float* confidence) CACT_NOEXCEPT;
/* A head's output vector into values[0, capacity); *count = its length
 * (CACT_ERROR_BUFFER_TOO_SMALL, with *count set, when capacity is short;
 * values may be NULL with capacity 0 to ask the length). */
CACT_API cact_status cact_session_head(const cact_session* session, cact_head head, float* values, size_t capacity,
                                       size_t* count) CACT_NOEXCEPT;

/* ------------------------------------------------------------- tokenizer */

/* The archive's tokenizer; read-only, shared by any number of threads. */
typedef struct cact_tokenizer cact_tokenizer;

CACT_API cact_status cact_tokenizer_new(const cact_model* model, cact_tokenizer** out) CACT_NOEXCEPT;
CACT_API void cact_tokenizer_free(cact_tokenizer* tokenizer) CACT_NOEXCEPT;

enum {
  CACT_TOKENIZE_ADD_BOS = 1u << 0, /* start with the bos id (a whole prompt) */
  CACT_TOKENIZE_AS_DATA = 1u << 1  /* marker surfaces such as "<|im_end|>" stay plain text (user input) */
};

/* UTF-8 text[0, length) to ids[0, capacity); *count = the ids needed
 * (CACT_ERROR_BUFFER_TOO_SMALL, nothing written, when capacity is short; ids
 * may be NULL with capacity 0 to ask the count). */
CACT_API cact_status cact_tokenize(const cact_tokenizer* tokenizer, const char* text, size_t length, uint32_t flags,
                                   int32_t* ids, size_t capacity, size_t* count) CACT_NOEXCEPT;
/* ids to UTF-8 text, NUL-terminated, into text[0, capacity); *length = the
 * bytes without the NUL (CACT_ERROR_BUFFER_TOO_SMALL when capacity <= *length;
 * text may be NULL with capacity 0 to ask the length). */
CACT_API cact_status cact_detokenize(const cact_tokenizer* tokenizer, const int32_t* ids, size_t count, char* text,
                                     size_t capacity, size_t* length) CACT_NOEXCEPT;

typedef enum cact_special_token {
  CACT_TOKEN_BOS = 1,
  CACT_TOKEN_EOS = 2,
  CACT_TOKEN_PAD = 3,
  CACT_TOKEN_UNK = 4,
  CACT_TOKEN_IM_END = 5, /* the end of a chat turn; CACT_ERROR_UNSUPPORTED when the tokenizer has none */
  CACT_SPECIAL_TOKEN_MAX_ENUM = 0x7fffffff
} cact_special_token;

CACT_API cact_status cact_tokenizer_special(const cact_tokenizer* tokenizer, cact_special_token which,
                                            int32_t* id) CACT_NOEXCEPT;
/* Pieces (valid ids are 0 .. size-1). */
CACT_API cact_status cact_tokenizer_size(const cact_tokenizer* tokenizer, size_t* size) CACT_NOEXCEPT;

/* --------------------------------------------------------------- sampler */

/* Picks the next id from logits with cact-run's sampling options and its own
 * seeded generator (same seed, same ids on every platform). One thread at a time. */
typedef struct cact_sampler cact_sampler;

typedef struct cact_sampler_options {
  uint32_t struct_size;
  float temperature;      /* <= 0: greedy (argmax, ties to the lowest id); default 0 */
  uint32_t top_k;         /* 0: no cut */
  float top_p;            /* (0, 1]; 1: no cut */
  float min_p;            /* [0, 1]: keep ids with at least min_p x the best probability; 0: off */
  float repeat_penalty;   /* > 0; 1: off */
  uint32_t repeat_last_n; /* recent ids the penalty looks at (default 64) */
  uint64_t seed;          /* default 0 */
} cact_sampler_options;

CACT_API void cact_sampler_options_init(cact_sampler_options* options) CACT_NOEXCEPT;
/* CACT_ERROR_INVALID_ARGUMENT names the first option out of range. */
CACT_API cact_status cact_sampler_new(const cact_sampler_options* options, cact_sampler** out) CACT_NOEXCEPT;
CACT_API void cact_sampler_free(cact_sampler* sampler) CACT_NOEXCEPT;
CACT_API const char* cact_sampler_last_error(const cact_sampler* sampler) CACT_NOEXCEPT;
/* Pick an id in [0, count) from logits[0, count); `recent` (may be NULL with
 * n_recent 0) are the ids so far, for the repeat penalty. */
CACT_API cact_status cact_sampler_sample(cact_sampler* sampler, const float* logits, size_t count,
                                         const int32_t* recent, size_t n_recent, int32_t* id) CACT_NOEXCEPT;

/* ------------------------------------------------------- chat and tools */

/* A conversation in the Needle chat format on its own session: a system text,
 * a tool list, user turns and tool results; answers decoded with tool calls
 * constrained to the listed schemas (docs/TOOLS.md). One thread at a time;
 * any number of chats may share one engine and one tokenizer. */
typedef struct cact_chat cact_chat;
/* One answer, owned by the caller (cact_answer_free); immutable. */
typedef struct cact_answer cact_answer;

typedef struct cact_chat_options {
  uint32_t struct_size;
  uint32_t context;   /* 0 = the archive's max_seq_len */
  uint32_t kv_window; /* as cact_session_options; the system + tools prefix is pinned as sinks */
  uint32_t max_chunk;
  uint32_t threads;
  int32_t prefix_cache; /* 1 (default): keep a snapshot after the system + tools prefix and restore it
                           for every new conversation with the same prefix (doubles the state memory) */
} cact_chat_options;

CACT_API void cact_chat_options_init(cact_chat_options* options) CACT_NOEXCEPT;
/* CACT_ERROR_UNSUPPORTED when the tokenizer is not a chat model's. */
CACT_API cact_status cact_chat_new(const cact_engine* engine, const cact_tokenizer* tokenizer,
                                   const cact_chat_options* options, cact_chat** out) CACT_NOEXCEPT;
CACT_API void cact_chat_free(cact_chat* chat) CACT_NOEXCEPT;
CACT_API const char* cact_chat_last_error(const cact_chat* chat) CACT_NOEXCEPT;

/* The conversation's prefix; setting either starts a new conversation.
 * tools_json: a JSON array of {"name", "description", "parameters"} (or
 * OpenAI's {"type": "function", "function": {...}}); NULL or "" = no tools.
 * CACT_ERROR_BAD_TOOLS names the tool and the field at fault. */
CACT_API cact_status cact_chat_set_system(cact_chat* chat, const char* system) CACT_NOEXCEPT;
CACT_API cact_status cact_chat_set_tools(cact_chat* chat, const char* tools_json) CACT_NOEXCEPT;
/* A new conversation with the same prefix. */
CACT_API cact_status cact_chat_reset(cact_chat* chat) CACT_NOEXCEPT;

/* Called once per generated token with the text it completed (may be empty:
 * a token that ends inside a UTF-8 character); `piece` is valid during the
 * call only. Return 0 to go on, non-zero to stop: the answer then ends with
 * stop "cancelled". Runs on the calling thread, before cact_chat_ask returns;
 * it must not call functions on the same chat (CACT_ERROR_STATE). */
typedef int (*cact_piece_callback)(void* user_data, const char* piece, size_t length);

typedef struct cact_generate_options {
  uint32_t struct_size;
  uint32_t max_tokens;                 /* default 256 */
  const cact_sampler_options* sampler; /* NULL: greedy */
  const char* const* stop;             /* stop strings: the answer ends before the first match */
  size_t stop_count;
  const char* tool_choice; /* "auto" (default, also NULL), "none", "required" or a tool's name */
  int32_t constrain;       /* 1 (default): tool calls constrained to the schemas */
} cact_generate_options;

CACT_API void cact_generate_options_init(cact_generate_options* options) CACT_NOEXCEPT;

/* A user turn (the first of a conversation carries the tool list), then the
 * answer. CACT_ERROR_CONTEXT_OVERFLOW when the turn cannot fit even after
 * dropping old turns; CACT_ERROR_BAD_TOOLS for a tool choice naming no listed
 * tool. On failure the conversation is as before the call. */
CACT_API cact_status cact_chat_ask(cact_chat* chat, const char* query, const cact_generate_options* options,
                                   cact_piece_callback on_piece, void* user_data, cact_answer** answer) CACT_NOEXCEPT;
/* The results of the last answer's calls (one JSON text each, in call order), then the answer. */
CACT_API cact_status cact_chat_tool_results(cact_chat* chat, const char* const* results, size_t count,
                                            const cact_generate_options* options, cact_piece_callback on_piece,
                                            void* user_data, cact_answer** answer) CACT_NOEXCEPT;

/* The conversation as JSON (docs/CHAT.md "Transcript"), for cact_chat_load
 * or `cact-run --load`; *json is the caller's (cact_string_free). */
CACT_API cact_status cact_chat_transcript(const cact_chat* chat, char** json) CACT_NOEXCEPT;
/* Replace the conversation by a saved one (its system, tools and turns). */
CACT_API cact_status cact_chat_load(cact_chat* chat, const char* transcript_json) CACT_NOEXCEPT;
/* Tokens in the chat's session, and its context. */
CACT_API cact_status cact_chat_position(const cact_chat* chat, uint32_t* position) CACT_NOEXCEPT;
CACT_API cact_status cact_chat_context(const cact_chat* chat, uint32_t* context) CACT_NOEXCEPT;

/* The ids cact_chat_ask feeds for `query` as the first turn of a conversation
 * with this system text and tool list (bos through "<|im_start|>assistant\n"),
 * for callers that drive a cact_session themselves; capacity/count as
 * cact_tokenize. Thread-safe. */
CACT_API cact_status cact_chat_render(const cact_tokenizer* tokenizer, const char* system, const char* tools_json,
                                      const char* query, int32_t* ids, size_t capacity, size_t* count) CACT_NOEXCEPT;

CACT_API void cact_answer_free(cact_answer* answer) CACT_NOEXCEPT;
/* The answer envelope (docs/TOOLS.md, "schema": "cact-answer/1"): text,
 * reasoning, function_calls, suppressed_calls, validation, confidence, stop,
 * raw, tokens, timings, seed. Owned by the answer. */
CACT_API cact_status cact_answer_json(const cact_answer* answer, const char** json) CACT_NOEXCEPT;
/* The text outside <think> and <tool_call>; owned by the answer. */
CACT_API cact_status cact_answer_text(const cact_answer* answer, const char** text) CACT_NOEXCEPT;
/* Why the answer ended: "im_end", "eos", "max_tokens", "context", "stop_string",
 * "suppressed_call" or "cancelled"; static storage. */
CACT_API cact_status cact_answer_stop(const cact_answer* answer, const char** reason) CACT_NOEXCEPT;
/* The calls that validate against the tool list, in order: the tool's name
 * and its arguments as a compact JSON object; owned by the answer. */
CACT_API cact_status cact_answer_call_count(const cact_answer* answer, size_t* count) CACT_NOEXCEPT;
CACT_API cact_status cact_answer_call(const cact_answer* answer, size_t index, const char** name,
                                      const char** arguments_json) CACT_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* CACT_CACT_H */
