// PowerLossFiles: a FileOps for the store's power-loss tests. It does the real operations and
// remembers what a power cut could still undo; FaultInjectingEngine's page-cache model does the
// same for the records the SSD engine writes.
//  * Names: a create, rename or unlink is durable once a sync_dir of its directory, begun after
//    it, has completed. At the cut an ordered prefix of the others survives (a journaling file
//    system commits them in order) and the rest is undone newest first: a created file is
//    removed, a rename reversed, an unlinked file brought back (kept aside as a hard link in its
//    directory, "powerloss-stash-N", until the cut).
//  * Bytes written by write_at: durable once a sync_data of the file, begun after the write, has
//    completed. At the cut each 4 KiB page of the others is kept, lost (its pre-image back) or
//    torn: any non-empty, proper subset of its 512-byte sectors kept (not only a prefix).
//  * The crash: crash_after_ops(n) or crash(); from then on every operation fails with IOError
//    and does nothing (the process is dead). An operation also fails once `also_crashed` says so
//    (the engine's crash); the crash listener is told when a countdown here cuts the power.
// Thread-safe (one mutex; the real operations run under it, which serializes them: fine for a
// test).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "store/file_ops.h"

namespace tempokv::store {

class PowerLossFiles final : public FileOps {
 public:
  explicit PowerLossFiles(uint64_t seed) : rng_(seed) {}

  // The n-th operation from now (1-based) finds the power cut.
  void crash_after_ops(uint64_t n);
  void crash();
  bool crashed() const;
  void set_crash_listener(std::function<void()> listener);
  void set_also_crashed(std::function<bool()> also_crashed);

  struct CutReport {
    uint64_t names_kept = 0;    // not durable at the cut, survived it
    uint64_t names_undone = 0;
    uint64_t pages_lost = 0;
    uint64_t pages_torn = 0;
  };
  // Applies the cut to the directories: call after crash() and once the store is closed.
  Result<CutReport> power_cut();
  uint64_t operations() const;

  Result<int> create(const std::string& path, bool direct) override;
  Status allocate(int fd, const std::string& path, uint64_t bytes) override;
  Status write_at(int fd, const std::string& path, const void* buf, size_t len,
                  uint64_t offset) override;
  Status sync_data(int fd, const std::string& path) override;
  Status rename(const std::string& from, const std::string& to) override;
  Status unlink(const std::string& path) override;
  Status sync_dir(const std::string& dir) override;

 private:
  enum class Kind : uint8_t { kCreate, kRename, kUnlink };
  struct NameOp {
    uint64_t seq = 0;
    Kind kind = Kind::kCreate;
    std::string dir, a, b;  // create a; rename a -> b; unlink a (kept aside as b)
  };
  struct Write {
    uint64_t seq = 0;
    std::string path;
    uint64_t offset = 0;
    std::vector<std::byte> pre_image;
  };
  // Counts the operation; IOError when the power is (now) cut.
  Status enter(const char* what, const std::string& path);

  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  uint64_t seq_ = 0;
  uint64_t countdown_ = 0;  // 0: none
  bool crashed_ = false;
  uint64_t stashes_ = 0;
  std::function<void()> crash_listener_;
  std::function<bool()> also_crashed_;
  std::vector<NameOp> names_;  // not durable, in order
  std::vector<Write> writes_;  // not durable, in order
};

}  // namespace tempokv::store
