// A prompt in the Needle chat format written out as text tokenises with each
// marker as one id, exactly as sentencepiece does (text the model wrote takes
// this path; prompts themselves are built by the chat layer, tests/chat/).
#include <doctest/doctest.h>

#include <sentencepiece_processor.h>
#include <algorithm>
#include <string>
#include <vector>

#include "cact/tokenizer.h"
#include "text/text_fixtures.h"

using namespace cact;

TEST_CASE("chat markup: a prompt written as text encodes with single marker ids, like sentencepiece") {
  const std::string prompt =
      "<|im_start|>system\nBe brief.<|im_end|>\n"
      "<|im_start|>user\n<tools>[{\"name\":\"get_time\",\"parameters\":{}}]</tools>\n"
      "What time is it in Z\xC3\xBCrich?<|im_end|>\n<|im_start|>assistant\n";
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
