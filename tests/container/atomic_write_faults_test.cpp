// Failure-safe writes under injected faults (docs/RELIABILITY.md, "Write
// safety"): a full disk, a write that fails half way (RLIMIT_FSIZE), SIGKILL
// mid-write, and output == input. After any failure the target holds its old
// bytes (or does not exist), the inputs are untouched and no temporary is left
// behind, except that a process killed outright cannot remove its temporary
// (TARGET.tmp-XXXXXX); the target is still never partial.
#include <doctest/doctest.h>

#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "cact/model.h"
#include "cact/writer.h"
#include "container/malformed_cases.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using namespace cact;
using cact::test::malformed::Bytes;
using cact::test::malformed::read_bytes;
using cact::test::malformed::tiny;
using cact::test::malformed::tiny_model;
using cact::test::malformed::write_bytes;

namespace {

// The tiny archive as writer input (views of the checked model's blobs).
struct TinyTensors {
  std::vector<TensorData> tensors;
  TinyTensors() {
    const Model& m = tiny_model();
    for (size_t i = 0; i < m.records().size(); ++i) tensors.push_back({m.record(i), m.blob(i)});
  }
};

void write_tiny(const fs::path& path, std::span<const fs::path> inputs = {}) {
  static const TinyTensors t;
  const Model& m = tiny_model();
  write_archive(path, m.header(), m.codebooks(), t.tensors, inputs);
}

// Names in `dir` other than the ones given (leftover temporaries).
std::vector<std::string> others(const fs::path& dir, std::initializer_list<std::string> expected) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (std::find(expected.begin(), expected.end(), name) == expected.end()) out.push_back(name);
  }
  return out;
}

const Bytes kOld = {'o', 'l', 'd', ' ', 'c', 'o', 'n', 't', 'e', 'n', 't', '\n'};

// Runs `body` in a child process; returns its wait status.
template <typename F>
int in_child(F body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 99;
    try {
      code = body();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("atomic write: a normal write leaves exactly the target, byte-identical") {
  const fs::path dir = cact::test::scratch_dir("atomic-ok");
  write_tiny(dir / "out.cact");
  CHECK(read_bytes(dir / "out.cact") == tiny());
  CHECK(others(dir, {"out.cact"}).empty());
  // Overwriting an existing file replaces it whole.
  write_bytes(dir / "out.cact", kOld);
  write_tiny(dir / "out.cact");
  CHECK(read_bytes(dir / "out.cact") == tiny());
  CHECK(others(dir, {"out.cact"}).empty());
}

TEST_CASE("atomic write: writes of any size, sent on in 2 MiB chunks, give the bytes in order") {
  const fs::path dir = cact::test::scratch_dir("atomic-chunks");
  const size_t C = AtomicFile::kChunk;
  // Sizes around the chunk: tiny, one short of a chunk, a chunk and a half
  // arriving with a partial chunk pending, several whole chunks at a chunk
  // boundary, zero, and zeros that cross a boundary.
  const size_t sizes[] = {1, C - 2, 3 * C / 2, 0, C / 2, 2 * C, 5, C + 7};
  std::vector<uint8_t> want;
  AtomicFile f(dir / "out.bin");
  uint32_t x = 1;
  for (const size_t n : sizes) {
    std::vector<uint8_t> part(n);
    for (uint8_t& b : part) b = uint8_t((x = x * 1664525u + 1013904223u) >> 24);
    f.write(part);
    want.insert(want.end(), part.begin(), part.end());
    CHECK(f.written() == want.size());
  }
  f.write_zeros(C + 3);
  want.insert(want.end(), C + 3, 0);
  CHECK_FALSE(fs::exists(dir / "out.bin"));  // nothing at the target before commit
  f.commit();
  CHECK(read_bytes(dir / "out.bin") == want);
  CHECK(others(dir, {"out.bin"}).empty());
}

TEST_CASE("atomic write: output path equal to an input is refused and the input untouched") {
  const fs::path dir = cact::test::scratch_dir("atomic-same");
  const fs::path in = dir / "in.cact";
  write_bytes(in, tiny());
  const std::string refusal = ": output path is the input file; refusing to overwrite it";
  std::vector<fs::path> spellings = {in, dir / "." / "in.cact", dir / "sub" / ".." / "in.cact"};
  fs::create_directory(dir / "sub");
  fs::create_symlink(in, dir / "link.cact");
  spellings.push_back(dir / "link.cact");
  fs::create_hard_link(in, dir / "hard.cact");
  spellings.push_back(dir / "hard.cact");
  for (const fs::path& out : spellings) {
    CAPTURE(out.string());
    const fs::path inputs[] = {in};
    CHECK_THROWS_WITH_AS(write_tiny(out, inputs), (out.string() + refusal).c_str(), Error);
    // The input named through another spelling is refused too.
    const fs::path inputs2[] = {out};
    CHECK_THROWS_AS(write_tiny(in, inputs2), Error);
  }
  CHECK(read_bytes(in) == tiny());
  CHECK(fs::is_symlink(dir / "link.cact"));
  CHECK(others(dir, {"in.cact", "sub", "link.cact", "hard.cact"}).empty());
}

TEST_CASE("atomic write: unwritable places fail with one message and leave nothing") {
  const fs::path dir = cact::test::scratch_dir("atomic-places");
  // Missing directory: no temporary can be made beside the target.
  CHECK_THROWS_WITH_AS(write_tiny(dir / "missing" / "out.cact"),
                       doctest::Contains("cannot create a temporary file beside it"), Error);
  // The target is a directory, a FIFO, a symlink to a FIFO: refused before
  // anything is made (a rename would replace the entry itself).
  fs::create_directory(dir / "adir");
  const std::string refusal = (dir / "adir").string() + ": is a directory, not a regular file; refusing to replace it";
  CHECK_THROWS_WITH_AS(write_tiny(dir / "adir"), refusal.c_str(), Error);
  CHECK(fs::is_directory(dir / "adir"));
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0644) == 0);
  fs::create_symlink(dir / "fifo", dir / "to-fifo");
  CHECK_THROWS_WITH_AS(write_tiny(dir / "fifo"), doctest::Contains("is a FIFO, not a regular file"), Error);
  CHECK_THROWS_WITH_AS(write_tiny(dir / "to-fifo"), doctest::Contains("is a FIFO, not a regular file"), Error);
  CHECK(fs::is_fifo(dir / "fifo"));
  CHECK(fs::is_symlink(dir / "to-fifo"));
  CHECK(others(dir, {"adir", "fifo", "to-fifo"}).empty());
}

TEST_CASE("atomic write: a target name of NAME_MAX bytes works (the temporary's name is shortened)") {
  const fs::path dir = cact::test::scratch_dir("atomic-name-max");
  const fs::path out = dir / std::string(255, 'n');
  write_tiny(out);
  CHECK(read_bytes(out) == tiny());
  CHECK(others(dir, {out.filename().string()}).empty());
}

TEST_CASE("atomic write: commit_all renames nothing until every file is finished") {
  const fs::path dir = cact::test::scratch_dir("atomic-commit-all");
  const uint8_t bytes[] = {1, 2, 3};
  {
    AtomicFile a(dir / "a"), b(dir / "b");
    a.write(bytes);
    b.write(bytes);
    AtomicFile* both[] = {&a, &b};
    AtomicFile::commit_all(both);
  }
  CHECK(fs::file_size(dir / "a") == 3);
  CHECK(fs::file_size(dir / "b") == 3);
  CHECK(others(dir, {"a", "b"}).empty());
}

TEST_CASE("atomic write: remove_pending_temporaries removes the temporaries of open writers only") {
  const fs::path dir = cact::test::scratch_dir("atomic-pending");
  const uint8_t bytes[] = {1, 2, 3};
  AtomicFile done(dir / "done");
  done.write(bytes);
  done.commit();
  AtomicFile open(dir / "open");
  open.write(bytes);
  CHECK(others(dir, {"done"}).size() == 1);  // open's temporary
  cact::remove_pending_temporaries();
  CHECK(others(dir, {"done"}).empty());
  CHECK(fs::file_size(dir / "done") == 3);
}

TEST_CASE("atomic write: an AtomicFile abandoned by an exception removes its temporary") {
  const fs::path dir = cact::test::scratch_dir("atomic-abandon");
  const fs::path out = dir / "out.cact";
  write_bytes(out, kOld);
  try {
    AtomicFile f(out);
    f.write(tiny());
    throw std::runtime_error("the producer failed half way");
  } catch (const std::runtime_error&) {
  }
  CHECK(read_bytes(out) == kOld);
  CHECK(others(dir, {"out.cact"}).empty());
}

TEST_CASE("atomic write: a write that fails half way (RLIMIT_FSIZE) keeps the old target") {
  const fs::path dir = cact::test::scratch_dir("atomic-fsize");
  const fs::path out = dir / "out.cact";
  write_bytes(out, kOld);
  // In a child: files may not grow past 100 000 bytes; SIGXFSZ is ignored so
  // write(2) fails with EFBIG instead of killing the process.
  const int status = in_child([&] {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{100000, 100000};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 3;
    try {
      write_tiny(out);
    } catch (const Error& e) {
      const std::string msg = e.what();
      return msg == out.string() + ": write failed: " + std::strerror(EFBIG) ? 0 : 4;
    }
    return 5;  // the write succeeded: the limit did not apply
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_bytes(out) == kOld);
  CHECK(others(dir, {"out.cact"}).empty());
}

TEST_CASE("atomic write: a full disk keeps the old target and leaves no temporary") {
  const fs::path dir = cact::test::scratch_dir("atomic-enospc");
  const fs::path mnt = dir / "small";
  fs::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) {
    MESSAGE("skipped: cannot mount a 64 KiB tmpfs here (" << std::strerror(errno)
                                                          << "); the full-disk case needs root with CAP_SYS_ADMIN");
    return;
  }
  struct Unmount {
    fs::path p;
    ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const fs::path out = mnt / "out.cact";
  write_bytes(out, kOld);
  CHECK_THROWS_WITH_AS(write_tiny(out), (out.string() + ": write failed: " + std::strerror(ENOSPC)).c_str(), Error);
  CHECK(read_bytes(out) == kOld);
  CHECK(others(mnt, {"out.cact"}).empty());
  // The space is free again: a small write still works.
  {
    AtomicFile f(mnt / "small.bin");
    f.write(kOld);
    f.commit();
  }
  CHECK(read_bytes(mnt / "small.bin") == kOld);
}

TEST_CASE("atomic write: SIGKILL mid-write never leaves a partial target") {
  const fs::path dir = cact::test::scratch_dir("atomic-kill");
  const fs::path out = dir / "out.cact";
  write_bytes(out, kOld);
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    AtomicFile f(out);
    f.write(std::span(tiny()).first(100000));
    const char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    for (;;) ::pause();  // killed here, half way through the archive
  }
  ::close(ready[1]);
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::close(ready[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(read_bytes(out) == kOld);  // the target is the old file, never the partial one
  // The killed process could not remove its temporary: it is the only other
  // file, named TARGET.tmp-XXXXXX, and it is not a valid archive.
  const auto left = others(dir, {"out.cact"});
  REQUIRE(left.size() == 1);
  CHECK(left[0].rfind("out.cact.tmp-", 0) == 0);
  CHECK(left[0].size() == std::string("out.cact.tmp-XXXXXX").size());
  CHECK(fs::file_size(dir / left[0]) <= 100000);  // (less: the chunk still buffered)
  CHECK(!check_archive(read_bytes(dir / left[0])).empty());
  // The next write is unaffected by the stale temporary.
  write_tiny(out);
  CHECK(read_bytes(out) == tiny());
}

TEST_CASE("atomic write: SIGKILL at random moments of repeated writes: the target is always old or complete") {
  const fs::path dir = cact::test::scratch_dir("atomic-kill-random");
  const fs::path out = dir / "out.cact";
  write_bytes(out, kOld);
  for (int round = 0; round < 8; ++round) {
    CAPTURE(round);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (;;) write_tiny(out);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(700 + 1900 * round));
    ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    const Bytes now = read_bytes(out);
    CHECK((now == kOld || now == tiny()));
    for (const auto& name : others(dir, {"out.cact"})) {
      CHECK(name.rfind("out.cact.tmp-", 0) == 0);
      fs::remove(dir / name);  // what an operator does with a stale temporary
    }
  }
}
