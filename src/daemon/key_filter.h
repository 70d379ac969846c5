// KeyFilter: a counting filter of the keys tempokvd's store indexes, in a shared file its clients
// map read-only (docs/protocol.md, "The key filter"), so that a scheduler can tell a definite miss
// without asking the daemon. Two 8-bit counters per key, chosen by two seeded hashes of the key;
// a key entering the index increments both, one leaving decrements both. A counter at 255 is
// saturated: never changed again, so a key may read as present when it is not (a false positive,
// which costs the client one lookup) but a key the index holds always reads as present (both its
// counters are >= 1: every counter is at least the number of indexed keys hashed to it, or
// saturated).
//
// The file: a 64-byte header (little-endian) then `slots` counters, one byte each.
//   0  magic "TKVKEYS1"       24 seed of the first hash (u64)   48 live (u32): 1 while the
//   8  version (u32) = 1      32 seed of the second hash (u64)     daemon serves it, 0 after
//   12 header bytes (u32)=64  40 the daemon's instance (u64)    52 reserved (u32) = 0
//   16 slots (u64, a power of two)                              56 keys counted in (u64)
// A key's counters: slot(key, seed) = mix(mix(key.model ^ seed) ^ key.hash) & (slots - 1), mix
// being SplitMix64's finalizer (python/tempokv/key_filter.py computes the same).
//
// Ownership: owns the mapping and the file; the destructor clears `live`, unmaps and removes it.
// Threading: create() blocks on the file system (call it at the daemon's start); add/remove on
// the Executor (the store's index listener, watch()); readers are other processes (one-byte loads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "store/store.h"
#include "tempokv/key.h"
#include "tempokv/status.h"

namespace tempokv::service {

class KeyFilter {
 public:
  static constexpr uint64_t kHeaderBytes = 64;
  static constexpr uint32_t kVersion = 1;
  static constexpr uint8_t kSaturated = 255;

  // Creates `path` (0600, or 0660 owned by `group`; an existing file is refused), sized and
  // backed for `slots` counters (a power of two, at least 64), with fresh random seeds and
  // `instance` in its header, and maps it read-write.
  static Result<std::unique_ptr<KeyFilter>> create(const std::string& path, uint64_t slots,
                                                   uint64_t instance,
                                                   std::optional<uint32_t> group = {});
  ~KeyFilter();
  KeyFilter(const KeyFilter&) = delete;
  KeyFilter& operator=(const KeyFilter&) = delete;

  // Counts in every key `store` indexes now, and keeps the filter current from then on (the
  // store's index listener). The store must not outlive this filter's listener: set another
  // listener or destroy the store first.
  void watch(Store& store);
  void add(const Key& key);
  void remove(const Key& key);
  // False: the store does not index key (no false negatives). True: it may.
  bool may_hold(const Key& key) const;

  // The counter index of key under `seed` in a filter of `slots` (a power of two).
  static uint64_t slot(const Key& key, uint64_t seed, uint64_t slots);
  uint8_t counter(uint64_t index) const { return counters_[index]; }
  const std::string& path() const { return path_; }
  uint64_t slots() const { return slots_; }
  uint64_t keys() const;

 private:
  KeyFilter(std::string path, uint64_t slots, std::byte* base);
  void change(const Key& key, int delta);

  std::string path_;
  uint64_t slots_;
  std::byte* base_;
  uint8_t* counters_;
  uint64_t seeds_[2] = {0, 0};
};

}  // namespace tempokv::service
