/*
 * chat.c: one tool-calling request through libcact's C API. Opens a model,
 * gives it a tool list, asks once and prints each call the answer makes as
 * "name arguments" (or the answer's text when it makes none).
 *
 *   chat MODEL.cact TOOLS.json "set a timer for 10 minutes"
 *   -> set_timer {"minutes":10}
 *
 * Plain C99; every call's status is checked, and every handle is freed
 * (in any order: a handle keeps alive what it was made from).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cact/cact.h"

/* The whole file as a NUL-terminated string (NULL on failure). */
static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  char* text = NULL;
  long size;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    text = malloc((size_t)size + 1);
    if (text != NULL && fread(text, 1, (size_t)size, f) == (size_t)size) {
      text[size] = '\0';
    } else {
      free(text);
      text = NULL;
    }
  }
  fclose(f);
  return text;
}

int main(int argc, char** argv) {
  cact_model* model = NULL;
  cact_engine* engine = NULL;
  cact_tokenizer* tokenizer = NULL;
  cact_chat* chat = NULL;
  cact_answer* answer = NULL;
  char* tools = NULL;
  size_t calls = 0, i;
  int code = 1;

  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL.cact TOOLS.json REQUEST\n", argv[0]);
    return 2;
  }
  tools = read_file(argv[2]);
  if (tools == NULL) {
    fprintf(stderr, "chat: cannot read %s\n", argv[2]);
    return 1;
  }
  if (cact_model_open(argv[1], &model) != CACT_OK || cact_engine_new(model, NULL, &engine) != CACT_OK ||
      cact_tokenizer_new(model, &tokenizer) != CACT_OK || cact_chat_new(engine, tokenizer, NULL, &chat) != CACT_OK ||
      cact_chat_set_tools(chat, tools) != CACT_OK ||
      cact_chat_ask(chat, argv[3], NULL, NULL, NULL, &answer) != CACT_OK ||
      cact_answer_call_count(answer, &calls) != CACT_OK) {
    fprintf(stderr, "chat: %s\n", cact_last_error());
    goto done;
  }
  for (i = 0; i < calls; ++i) {
    const char *name, *arguments;
    if (cact_answer_call(answer, i, &name, &arguments) != CACT_OK) {
      fprintf(stderr, "chat: %s\n", cact_last_error());
      goto done;
    }
    printf("%s %s\n", name, arguments);
  }
  if (calls == 0) {
    const char* text;
    if (cact_answer_text(answer, &text) != CACT_OK) {
      fprintf(stderr, "chat: %s\n", cact_last_error());
      goto done;
    }
    printf("%s\n", text);
  }
  code = 0;

done:
  cact_answer_free(answer);
  cact_chat_free(chat);
  cact_tokenizer_free(tokenizer);
  cact_engine_free(engine);
  cact_model_free(model);
  free(tools);
  return code;
}
