// A session that copies another's state (the chat layer's prefix cache) goes
// on exactly as the original would: same logits bit for bit, same heads, in
// both numerics, across chunk sizes and a kv_window span with sinks.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "cact/engine.h"
#include "cact/error.h"
#include "support/test_paths.h"

namespace {

std::vector<int32_t> ids_of(size_t n, uint32_t vocab, uint32_t salt) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = int32_t((i * 7919u + salt * 104729u + 3u) % vocab);
  return ids;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void check_snapshot(const cact::Engine& engine, cact::SessionOptions so) {
  const uint32_t vocab = engine.header().vocab;
  const std::vector<int32_t> prefix = ids_of(45, vocab, 1), tail = ids_of(23, vocab, 2);
  cact::Session snapshot(engine, so);
  snapshot.prefill(prefix);

  std::vector<int32_t> all = prefix;
  all.insert(all.end(), tail.begin(), tail.end());
  cact::Session fresh(engine, so);
  fresh.prefill(all);

  // A used session (other tokens fed) restored from the snapshot, then fed the tail twice over.
  cact::Session restored(engine, so);
  restored.prefill(ids_of(60, vocab, 3));
  for (int round = 0; round < 2; ++round) {
    restored.copy_state_from(snapshot);
    CHECK(restored.position() == prefix.size());
    CHECK(same_bits(restored.logits(), snapshot.logits()));
    restored.prefill(std::span<const int32_t>(tail).first(10));
    for (size_t i = 10; i < tail.size(); ++i) restored.step(tail[i]);
    CHECK(restored.position() == all.size());
    CHECK(same_bits(restored.logits(), fresh.logits()));
    for (cact::HeadKind kind : {cact::HeadKind::confidence}) {
      if (fresh.has_head(kind)) CHECK(restored.head_output(kind) == fresh.head_output(kind));
    }
  }
  // The snapshot itself is untouched.
  cact::Session again(engine, so);
  again.prefill(prefix);
  CHECK(same_bits(again.logits(), snapshot.logits()));
}

}  // namespace

TEST_CASE("copy_state_from: a restored snapshot continues bit for bit like a fresh session") {
  for (const char* name : {"micro.cact", "micro-heads.cact", "micro-notaps.cact"}) {
    CAPTURE(name);
    const cact::Model model = cact::Model::open(cact::test::golden_dir() / "archives" / name);
    for (cact::Numerics numerics : {cact::Numerics::int8, cact::Numerics::reference}) {
      const cact::Engine engine(model, {.numerics = numerics});
      cact::SessionOptions so;
      so.context = 96;
      so.max_chunk = 16;
      check_snapshot(engine, so);
      if (model.header().kv_window == 0) {
        so.kv_window = 32;
        so.sinks = 8;
        check_snapshot(engine, so);
      }
    }
  }
}

TEST_CASE("copy_state_from refuses a session of other options") {
  const cact::Model model = cact::Model::open(cact::test::golden_dir() / "archives" / "micro.cact");
  const cact::Engine engine(model);
  cact::Session a(engine, {.context = 64});
  cact::Session b(engine, {.context = 32});
  CHECK_THROWS_AS(b.copy_state_from(a), cact::Error);
}
