// The C API's model, engine, session, tokenizer and sampler calls give what
// the C++ layers they wrap give, bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cact/engine.h"
#include "cact/model.h"
#include "cact/sampler.h"
#include "cact/synth.h"
#include "cact/tokenizer.h"
#include "capi/capi_fixture.h"

using namespace cact::test::capi;

namespace {

const std::vector<int32_t> kIds = {2, 17, 300, 301, 302, 45, 46, 1000, 5};

std::vector<int32_t> tokenize(const cact_tokenizer* tok, const std::string& text, uint32_t flags) {
  size_t n = 0;
  const cact_status size_query = cact_tokenize(tok, text.data(), text.size(), flags, nullptr, 0, &n);
  CHECK((size_query == CACT_OK || size_query == CACT_ERROR_BUFFER_TOO_SMALL));
  std::vector<int32_t> ids(n);
  CACT_REQUIRE_OK(cact_tokenize(tok, text.data(), text.size(), flags, ids.data(), ids.size(), &n));
  return ids;
}

// micro-heads: a synthetic archive with the confidence, router and embedding heads.
std::vector<uint8_t> heads_archive() { return cact::synth_archive_bytes(cact::synth_preset("micro-heads")); }

}  // namespace

TEST_CASE("capi: logits of prefill, step, reset and copy equal the C++ session's") {
  const cact::Model cpp_model = cact::Model::open(tool_model_path());
  const cact::Engine cpp_engine(cpp_model);
  cact::SessionOptions so;
  so.threads = 1;
  cact::Session cpp(cpp_engine, so);
  const auto prefilled = cpp.prefill(kIds);
  const std::vector<float> want_after_prefill(prefilled.begin(), prefilled.end());
  const auto stepped = cpp.step(77);
  const std::vector<float> want_after_step(stepped.begin(), stepped.end());

  Model model = open_model(tool_model_path());
  Engine engine = new_engine(model.get());
  Session s = new_session(engine.get());
  CACT_REQUIRE_OK(cact_session_prefill(s.get(), kIds.data(), kIds.size()));
  CHECK(logits(s.get()) == want_after_prefill);
  CACT_REQUIRE_OK(cact_session_step(s.get(), 77));
  CHECK(logits(s.get()) == want_after_step);
  uint32_t position = 0, context = 0;
  CACT_REQUIRE_OK(cact_session_position(s.get(), &position));
  CACT_REQUIRE_OK(cact_session_context(s.get(), &context));
  CHECK(position == kIds.size() + 1);
  CHECK(context == cpp_model.header().max_seq_len);

  Session copy = new_session(engine.get());
  CACT_REQUIRE_OK(cact_session_copy(copy.get(), s.get()));
  CACT_REQUIRE_OK(cact_session_reset(s.get()));
  CACT_REQUIRE_OK(cact_session_position(s.get(), &position));
  CHECK(position == 0);
  CACT_REQUIRE_OK(cact_session_prefill(s.get(), kIds.data(), kIds.size()));
  CHECK(logits(s.get()) == want_after_prefill);
  CACT_REQUIRE_OK(cact_session_step(copy.get(), 78));
  CACT_REQUIRE_OK(cact_session_step(s.get(), 77));
  CACT_REQUIRE_OK(cact_session_step(s.get(), 78));
  CHECK(logits(copy.get()) == logits(s.get()));
}

TEST_CASE("capi: engine options choose the numerics and the kernel table") {
  Model model = open_model(tool_model_path());
  cact_engine_options o;
  cact_engine_options_init(&o);
  const char* name = nullptr;
  o.kernels = CACT_KERNELS_SCALAR;
  Engine scalar = new_engine(model.get(), &o);
  CACT_REQUIRE_OK(cact_engine_kernels_name(scalar.get(), &name));
  CHECK(std::string(name) == "scalar");
  o.numerics = CACT_NUMERICS_FLOAT;
  Engine reference = new_engine(model.get(), &o);
  CACT_REQUIRE_OK(cact_engine_kernels_name(reference.get(), &name));
  CHECK(std::string(name) == "none");
  Engine best = new_engine(model.get());
  CACT_REQUIRE_OK(cact_engine_kernels_name(best.get(), &name));
  CHECK(std::string(name) == cact::kernels::best_kernels().name);

  // The integer tables agree bit for bit; the float path is close to them.
  std::vector<std::vector<float>> out;
  for (const Engine* e : {&scalar, &best, &reference}) {
    Session s = new_session(e->get());
    CACT_REQUIRE_OK(cact_session_prefill(s.get(), kIds.data(), kIds.size()));
    out.push_back(logits(s.get()));
  }
  CHECK(out[0] == out[1]);
  REQUIRE(out[2].size() == out[0].size());
  double worst = 0;
  for (size_t i = 0; i < out[0].size(); ++i) worst = std::max(worst, double(std::fabs(out[0][i] - out[2][i])));
  CHECK(worst < 1.0);
}

TEST_CASE("capi: model properties are the header's") {
  const cact::Model cpp = cact::Model::open(tool_model_path());
  Model model = open_model(tool_model_path());
  auto get = [&](cact_model_property p) {
    uint64_t v = 0;
    CACT_REQUIRE_OK(cact_model_get(model.get(), p, &v));
    return v;
  };
  const cact::Header& h = cpp.header();
  CHECK(get(CACT_MODEL_VOCAB) == h.vocab);
  CHECK(get(CACT_MODEL_OUTPUT_ROWS) == h.output_rows());
  CHECK(get(CACT_MODEL_MAX_SEQ_LEN) == h.max_seq_len);
  CHECK(get(CACT_MODEL_LAYERS) == h.num_layers);
  CHECK(get(CACT_MODEL_D_MODEL) == h.d_model);
  CHECK(get(CACT_MODEL_KV_WINDOW) == h.kv_window);
  CHECK(get(CACT_MODEL_KV_BITS) == h.kv_bits);
  CHECK(get(CACT_MODEL_FILE_BYTES) == cpp.bytes().size());
  CHECK(get(CACT_MODEL_HAS_CONFIDENCE_HEAD) == 0);
}

TEST_CASE("capi: the probe heads of an archive that has them") {
  const std::vector<uint8_t> bytes = heads_archive();
  const cact::Model cpp_model = cact::Model::from_bytes(bytes);
  const cact::Engine cpp_engine(cpp_model);
  cact::SessionOptions so;
  so.threads = 1;
  cact::Session cpp(cpp_engine, so);
  const std::vector<int32_t> ids = {2, 30, 31, 32, 33};
  cpp.prefill(ids);

  cact_model* m = nullptr;
  CACT_REQUIRE_OK(cact_model_open_buffer(bytes.data(), bytes.size(), CACT_BUFFER_COPY, &m));
  Model model(m);
  for (const cact_model_property p :
       {CACT_MODEL_HAS_CONFIDENCE_HEAD, CACT_MODEL_HAS_ROUTER_HEAD, CACT_MODEL_HAS_EMBEDDING_HEAD}) {
    uint64_t has = 0;
    CACT_REQUIRE_OK(cact_model_get(model.get(), p, &has));
    CHECK(has == 1);
  }
  Engine engine = new_engine(model.get());
  Session s = new_session(engine.get());
  float confidence = -1;
  size_t n = 0;
  CHECK(cact_session_confidence(s.get(), &confidence) == CACT_ERROR_STATE);  // nothing fed yet
  CACT_REQUIRE_OK(cact_session_prefill(s.get(), ids.data(), ids.size()));
  CACT_REQUIRE_OK(cact_session_confidence(s.get(), &confidence));
  CHECK(confidence == cpp.confidence());
  CHECK((confidence > 0.0f && confidence < 1.0f));
  for (const auto& [head, kind] : {std::pair{CACT_HEAD_ROUTER, cact::HeadKind::router},
                                   std::pair{CACT_HEAD_EMBEDDING, cact::HeadKind::embedding}}) {
    const std::vector<float> want = cpp.head_output(kind);
    CHECK(cact_session_head(s.get(), head, nullptr, 0, &n) == CACT_ERROR_BUFFER_TOO_SMALL);
    CHECK(n == want.size());
    std::vector<float> got(n);
    CACT_REQUIRE_OK(cact_session_head(s.get(), head, got.data(), got.size(), &n));
    CHECK(got == want);
  }
}

TEST_CASE("capi: tokenize and detokenize are the tokenizer's encode and decode") {
  const cact::Model cpp_model = cact::Model::open(tool_model_path());
  const cact::Tokenizer cpp(cpp_model.tokenizer_model());
  Model model = open_model(tool_model_path());
  Tokenizer tok = new_tokenizer(model.get());
  const std::string text = "Set a timer <|im_end|> for ten minutes, naïvely ✓";
  CHECK(tokenize(tok.get(), text, 0) == cpp.encode(text));
  CHECK(tokenize(tok.get(), text, CACT_TOKENIZE_AS_DATA) == cpp.encode_data(text, true));
  CHECK(tokenize(tok.get(), text, 0) != tokenize(tok.get(), text, CACT_TOKENIZE_AS_DATA));  // the marker
  std::vector<int32_t> with_bos = tokenize(tok.get(), text, CACT_TOKENIZE_ADD_BOS);
  CHECK(with_bos.front() == int32_t(cpp.model().bos_id));
  with_bos.erase(with_bos.begin());
  CHECK(with_bos == cpp.encode(text));

  const std::vector<int32_t> ids = tokenize(tok.get(), text, 0);
  size_t length = 0;
  CHECK(cact_detokenize(tok.get(), ids.data(), ids.size(), nullptr, 0, &length) == CACT_ERROR_BUFFER_TOO_SMALL);
  std::string out(length + 1, '\xff');
  CACT_REQUIRE_OK(cact_detokenize(tok.get(), ids.data(), ids.size(), out.data(), out.size(), &length));
  CHECK(out[length] == '\0');
  out.resize(length);
  CHECK(out == cpp.decode(ids));
  CHECK(out == text);

  size_t size = 0;
  CACT_REQUIRE_OK(cact_tokenizer_size(tok.get(), &size));
  CHECK(size == cpp.size());
  int32_t id = -1;
  CACT_REQUIRE_OK(cact_tokenizer_special(tok.get(), CACT_TOKEN_EOS, &id));
  CHECK(id == int32_t(cpp.model().eos_id));
  CACT_REQUIRE_OK(cact_tokenizer_special(tok.get(), CACT_TOKEN_IM_END, &id));
  CHECK(id == cpp.find("<|im_end|>"));
  CACT_REQUIRE_OK(cact_tokenize(tok.get(), nullptr, 0, 0, nullptr, 0, &size));  // empty text: no ids
  CHECK(size == 0);
}

TEST_CASE("capi: the sampler picks what cact::Sampler picks for the same options and seed") {
  std::vector<float> logits(512);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = float(std::sin(double(i) * 0.37) * 3.0);
  cact_sampler_options o;
  cact_sampler_options_init(&o);
  cact::SamplerOptions cpp_options;
  CHECK(o.temperature == cpp_options.temperature);
  CHECK(o.repeat_last_n == cpp_options.repeat_last_n);
  o.temperature = 0.8f;
  o.top_k = 40;
  o.top_p = 0.9f;
  o.min_p = 0.05f;
  o.repeat_penalty = 1.2f;
  o.seed = 1234;
  cpp_options.temperature = o.temperature;
  cpp_options.top_k = o.top_k;
  cpp_options.top_p = o.top_p;
  cpp_options.min_p = o.min_p;
  cpp_options.repeat_penalty = o.repeat_penalty;
  cpp_options.seed = o.seed;
  cact::Sampler cpp(cpp_options);
  cact_sampler* raw = nullptr;
  CACT_REQUIRE_OK(cact_sampler_new(&o, &raw));
  Sampler sampler(raw);
  std::vector<int32_t> recent;
  for (int i = 0; i < 50; ++i) {
    int32_t id = -1;
    CACT_REQUIRE_OK(
        cact_sampler_sample(sampler.get(), logits.data(), logits.size(), recent.data(), recent.size(), &id));
    CHECK(id == cpp.sample(logits, logits.size(), recent, nullptr));
    recent.push_back(id);
  }
  // Greedy (the defaults): the argmax.
  cact_sampler* greedy_raw = nullptr;
  CACT_REQUIRE_OK(cact_sampler_new(nullptr, &greedy_raw));
  Sampler greedy(greedy_raw);
  int32_t id = -1;
  CACT_REQUIRE_OK(cact_sampler_sample(greedy.get(), logits.data(), logits.size(), nullptr, 0, &id));
  CHECK(id == cact::argmax(logits));
}
