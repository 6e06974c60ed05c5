// SlotPool (slots.h).
#include "slots.h"

#include <algorithm>

#include "errors.h"

namespace cact::serve {

namespace {

// How long a waiting request sleeps before it looks at its client again.
constexpr std::chrono::milliseconds kClientCheck{100};

bool same_turns(const std::vector<chat::Turn>& a, const std::vector<chat::Turn>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const chat::Turn& x, const chat::Turn& y) {
    return x.role == y.role && x.content == y.content;
  });
}

}  // namespace

const char* slot_fit_name(SlotFit f) {
  switch (f) {
    case SlotFit::none:
      return "none";
    case SlotFit::prefix:
      return "prefix";
    case SlotFit::conversation:
      return "conversation";
  }
  return "none";
}

SlotFit slot_fit(const chat::ChatSession& chat, const chat::openai::ChatRequest& request) {
  if (chat.system() != request.system || chat.tools().compact_json != request.tools.compact_json) return SlotFit::none;
  if (!request.history.empty() && same_turns(chat.turns(), request.history)) return SlotFit::conversation;
  return SlotFit::prefix;
}

SlotPool::SlotPool(const Engine& engine, const Tokenizer& tok, const chat::ChatOptions& options, uint32_t slots,
                   uint32_t queue)
    : queue_limit_(queue) {
  slots_.reserve(slots);
  for (uint32_t i = 0; i < slots; ++i) slots_.push_back({chat::ChatSession(engine, tok, options), false, 0});
}

size_t SlotPool::pick(const chat::openai::ChatRequest& request, SlotFit& fit) const {
  size_t best = slots_.size();
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.busy) continue;
    const SlotFit f = slot_fit(s.chat, request);
    // A better fit wins; among equal fits, the least recently used keeps the others' state longest.
    if (best == slots_.size() || f > fit || (f == fit && s.last_used < slots_[best].last_used)) {
      best = i;
      fit = f;
    }
  }
  return best;
}

std::optional<SlotPool::Lease> SlotPool::acquire(const chat::openai::ChatRequest& request,
                                                 const std::function<bool()>& still_wanted) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  SlotFit fit = SlotFit::none;
  size_t index = line_.empty() ? pick(request, fit) : slots_.size();
  if (index == slots_.size()) {
    if (line_.size() >= queue_limit_) {
      throw HttpError(503, "all " + std::to_string(slots_.size()) + " sessions are busy and " +
                               std::to_string(queue_limit_) + " requests are waiting; retry later");
    }
    const uint64_t ticket = next_ticket_++;
    line_.push_back(ticket);
    while (true) {
      if (line_.front() == ticket && (index = pick(request, fit)) != slots_.size()) break;
      freed_.wait_for(lock, kClientCheck);
      if (still_wanted && !still_wanted()) {
        line_.erase(std::find(line_.begin(), line_.end(), ticket));
        freed_.notify_all();  // the next in line may be first now
        return std::nullopt;
      }
    }
    line_.pop_front();
    freed_.notify_all();  // another slot may be free for the next in line
  }
  slots_[index].busy = true;
  slots_[index].last_used = ++clock_;
  const double waited = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Lease(this, index, fit, waited);
}

void SlotPool::release(size_t index) {
  {
    const std::lock_guard lock(mutex_);
    slots_[index].busy = false;
    ++served_;
  }
  freed_.notify_all();
}

SlotPool::Stats SlotPool::stats() const {
  const std::lock_guard lock(mutex_);
  const size_t busy = size_t(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; }));
  return {slots_.size(), busy, line_.size(), queue_limit_, served_};
}

SlotPool::Lease::Lease(Lease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      index_(other.index_),
      fit_(other.fit_),
      waited_ms_(other.waited_ms_) {}

SlotPool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->release(index_);
}

chat::ChatSession& SlotPool::Lease::chat() { return pool_->slots_[index_].chat; }

}  // namespace cact::serve
