// cact_model_*: opening archives from a path or a caller's buffer.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <span>

#include "cact/format.h"
#include "capi/handles.h"
#include "capi/options.h"

using cact::capi::fail_with;
using cact::capi::guarded;
using cact::capi::need;

namespace {

constexpr size_t kBorrowAlign = 64;  // the blobs' alignment in a file (FORMAT.md)

// An archive that failed its checks: another Needle generation, or not a valid archive.
cact_status archive_failure(std::span<const uint8_t> head) {
  uint32_t tag = 0;
  if (head.size() >= sizeof tag) std::memcpy(&tag, head.data(), sizeof tag);
  return tag == cact::kTagNeedle2 ? CACT_ERROR_WRONG_GENERATION : CACT_ERROR_BAD_MODEL;
}

// Why `path` did not open as an archive: the file cannot be read (IO), or its contents.
cact_status open_failure(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return CACT_ERROR_IO;
  uint8_t head[4];
  const ssize_t got = ::read(fd, head, sizeof head);
  ::close(fd);
  if (got < 0) return CACT_ERROR_IO;
  return archive_failure(std::span<const uint8_t>(head, size_t(got)));
}

cact_model* new_model(std::unique_ptr<uint8_t, cact::capi::FreeBytes> copy, cact::Model m) {
  auto data = std::make_shared<const cact::capi::ModelData>(std::move(copy), std::move(m));
  return new cact_model{std::move(data)};
}

}  // namespace

extern "C" {

cact_status cact_model_open(const char* path, cact_model** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return guarded(__func__, nullptr, CACT_ERROR_BAD_MODEL, [&] {
    need(out, "out");
    cact::capi::need_text(path, "path");
    try {
      *out = new_model(nullptr, cact::Model::open(path));
    } catch (const cact::Error& e) {
      fail_with(open_failure(path), e.what());
    }
  });
}

cact_status cact_model_open_buffer(const void* data, size_t size, cact_buffer_mode mode, cact_model** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return guarded(__func__, nullptr, CACT_ERROR_BAD_MODEL, [&] {
    need(out, "out");
    if (size != 0 && data == nullptr) fail_with(CACT_ERROR_INVALID_ARGUMENT, "data is NULL");
    std::unique_ptr<uint8_t, cact::capi::FreeBytes> copy;
    std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data), size);
    if (mode == CACT_BUFFER_COPY) {
      if (size != 0) {
        const size_t rounded = (size + kBorrowAlign - 1) / kBorrowAlign * kBorrowAlign;
        copy.reset(static_cast<uint8_t*>(std::aligned_alloc(kBorrowAlign, rounded)));
        if (!copy) throw std::bad_alloc();
        std::memcpy(copy.get(), data, size);
        bytes = std::span<const uint8_t>(copy.get(), size);
      }
    } else if (mode == CACT_BUFFER_BORROW) {
      if (reinterpret_cast<uintptr_t>(data) % kBorrowAlign != 0) {
        fail_with(CACT_ERROR_INVALID_ARGUMENT, "a borrowed buffer must be 64-byte aligned (or use CACT_BUFFER_COPY)");
      }
    } else {
      fail_with(CACT_ERROR_INVALID_ARGUMENT, "mode " + std::to_string(int(mode)) + " is not a cact_buffer_mode");
    }
    try {
      *out = new_model(std::move(copy), cact::Model::from_bytes(bytes));
    } catch (const cact::Error& e) {
      fail_with(archive_failure(bytes), e.what());
    }
  });
}

void cact_model_free(cact_model* model) noexcept { delete model; }

cact_status cact_model_get(const cact_model* model, cact_model_property property, uint64_t* value) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INTERNAL, [&] {
    const cact::Model& m = need(model, "model").data->model;
    need(value, "value");
    const cact::Header& h = m.header();
    auto has_head = [&](cact::HeadKind kind) {
      for (const auto& head : m.canon().heads()) {
        if (head.kind == kind) return uint64_t(1);
      }
      return uint64_t(0);
    };
    switch (property) {
      case CACT_MODEL_VOCAB:
        *value = h.vocab;
        return;
      case CACT_MODEL_OUTPUT_ROWS:
        *value = h.output_rows();
        return;
      case CACT_MODEL_MAX_SEQ_LEN:
        *value = h.max_seq_len;
        return;
      case CACT_MODEL_LAYERS:
        *value = h.num_layers;
        return;
      case CACT_MODEL_D_MODEL:
        *value = h.d_model;
        return;
      case CACT_MODEL_KV_WINDOW:
        *value = h.kv_window;
        return;
      case CACT_MODEL_KV_BITS:
        *value = h.kv_bits;
        return;
      case CACT_MODEL_FILE_BYTES:
        *value = m.bytes().size();
        return;
      case CACT_MODEL_HAS_CONFIDENCE_HEAD:
        *value = has_head(cact::HeadKind::confidence);
        return;
      case CACT_MODEL_HAS_ROUTER_HEAD:
        *value = has_head(cact::HeadKind::router);
        return;
      case CACT_MODEL_HAS_EMBEDDING_HEAD:
        *value = has_head(cact::HeadKind::embedding);
        return;
      default:
        break;
    }
    fail_with(CACT_ERROR_INVALID_ARGUMENT,
              "property " + std::to_string(int(property)) + " is not a cact_model_property");
  });
}

}  // extern "C"
