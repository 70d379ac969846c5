// CopyCounters: bytes the CPU copied, counted by the code that copies.
//
// The restore bench reports "bytes copied by the CPU per byte restored". Two buckets: host-side
// copies (page cache -> user buffer inside a buffered read, bounce -> pinned memcpy, the CUDA
// driver's staging of pageable memory) and the emulated device copy, which stands in for the
// PCIe DMA a GPU would do and so costs no CPU on a machine with a GPU.
//
// Thread safety: all members are atomics; add from any thread, read with snapshot().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tempokv {

struct CopyCountersSnapshot {
  uint64_t host_copy_bytes = 0;             // CPU copies between host buffers
  uint64_t emulated_device_copy_bytes = 0;  // CPU copies standing in for a device DMA
};

class CopyCounters {
 public:
  void add_host(uint64_t bytes) { host_.fetch_add(bytes, std::memory_order_relaxed); }
  void add_emulated_device(uint64_t bytes) {
    emulated_.fetch_add(bytes, std::memory_order_relaxed);
  }
  CopyCountersSnapshot snapshot() const {
    return {host_.load(std::memory_order_relaxed), emulated_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<uint64_t> host_{0};
  std::atomic<uint64_t> emulated_{0};
};

// memcpy that counts its bytes as a host-side copy.
inline void counted_host_memcpy(CopyCounters& counters, void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  counters.add_host(bytes);
}

}  // namespace tempokv
