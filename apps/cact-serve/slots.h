#pragma once
// The sessions requests run on (docs/SERVE.md "Concurrency"): N slots, each a
// ChatSession on the one shared Engine, used by one request at a time.
// Requests beyond N wait in FIFO order, at most `queue` of them; one more is
// refused (503). A free slot is picked for what it already holds: the same
// conversation (continued without any prefill), else the same system text and
// tool list (the prefix comes from its snapshot), else the least recently used.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "cact/chat.h"
#include "cact/openai.h"

namespace cact::serve {

// How a slot's state relates to a request.
enum class SlotFit : uint8_t { none, prefix, conversation };
const char* slot_fit_name(SlotFit f);  // "none", "prefix", "conversation"

SlotFit slot_fit(const chat::ChatSession& chat, const chat::openai::ChatRequest& request);

class SlotPool {
 public:
  SlotPool(const Engine& engine, const Tokenizer& tok, const chat::ChatOptions& options, uint32_t slots,
           uint32_t queue);

  class Lease {
   public:
    Lease(SlotPool* pool, size_t index, SlotFit fit, double waited_ms)
        : pool_(pool), index_(index), fit_(fit), waited_ms_(waited_ms) {}
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    chat::ChatSession& chat();
    size_t index() const { return index_; }
    SlotFit fit() const { return fit_; }  // what the slot held when it was picked
    double waited_ms() const { return waited_ms_; }

   private:
    SlotPool* pool_;
    size_t index_;
    SlotFit fit_;
    double waited_ms_;
  };

  // A slot for `request`: at once, or after waiting in line. Throws HttpError
  // 503 when the line is full; returns nothing when `still_wanted` turns false
  // while waiting (the client left).
  std::optional<Lease> acquire(const chat::openai::ChatRequest& request, const std::function<bool()>& still_wanted);

  struct Stats {
    size_t slots, busy, waiting, queue_limit;
    uint64_t served;
  };
  Stats stats() const;

 private:
  struct Slot {
    chat::ChatSession chat;
    bool busy = false;
    uint64_t last_used = 0;
  };
  void release(size_t index);
  // The free slot that fits `request` best; slots_.size() when none is free.
  size_t pick(const chat::openai::ChatRequest& request, SlotFit& fit) const;

  std::vector<Slot> slots_;
  size_t queue_limit_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::deque<uint64_t> line_;  // tickets of the waiting requests, first come first served
  uint64_t next_ticket_ = 0, clock_ = 0, served_ = 0;
};

}  // namespace cact::serve
