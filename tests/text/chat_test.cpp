// render_chat_prompt follows "The Needle chat format"; the rendered prompt
// tokenises with each marker as one id, exactly as sentencepiece does.
#include <doctest/doctest.h>

#include <algorithm>
#include <sentencepiece_processor.h>
#include <string>
#include <vector>

#include "cact/tokenizer.h"
#include "text/text_fixtures.h"

using namespace cact;

TEST_CASE("chat: without a system text the system turn is left out; tools are always there") {
  CHECK(render_chat_prompt("", "", "hi") ==
        "<|im_start|>user\n<tools></tools>\nhi<|im_end|>\n<|im_start|>assistant\n");
  CHECK(render_chat_prompt("", "[{\"name\":\"ls\"}]", "list files") ==
        "<|im_start|>user\n<tools>[{\"name\":\"ls\"}]</tools>\nlist files<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("chat: with a system text") {
  CHECK(render_chat_prompt("You are terse.", "[]", "q") ==
        "<|im_start|>system\nYou are terse.<|im_end|>\n"
        "<|im_start|>user\n<tools>[]</tools>\nq<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("chat: the rendered prompt encodes with single marker ids, like sentencepiece") {
  const std::string prompt = render_chat_prompt("Be brief.", "[{\"name\":\"get_time\",\"parameters\":{}}]",
                                                "What time is it in Z\xC3\xBCrich?");
  for (const auto& [tok, path] : {std::pair{&cact::test::shipped_tokenizer(), cact::test::tok_model_path()},
                                  std::pair{&cact::test::golden_tokenizer(), cact::test::golden_model_path()}}) {
    const auto ids = tok->encode(prompt);
    CHECK(std::count(ids.begin(), ids.end(), 4) == 3);  // <|im_start|>
    CHECK(std::count(ids.begin(), ids.end(), 5) == 2);  // <|im_end|>
    CHECK(std::count(ids.begin(), ids.end(), 8) == 1);  // <tools>
    CHECK(std::count(ids.begin(), ids.end(), 9) == 1);  // </tools>
    sentencepiece::SentencePieceProcessor sp;
    REQUIRE(sp.Load(path.string()).ok());
    std::vector<int> theirs;
    REQUIRE(sp.Encode(prompt, &theirs).ok());
    CHECK(ids == std::vector<int32_t>(theirs.begin(), theirs.end()));
    CHECK(tok->decode(ids) == prompt);
  }
}
