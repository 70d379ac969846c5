// DeviceBuffer: memory a restore or a fast-tier copy lands in ("device memory").
//
// Three kinds: CUDA memory from cudaMalloc (a GPU exists), an emulated device buffer in host
// memory (CPU-only machines, so every path runs and is tested without a GPU), and a simulated
// buffer that has a size but no bytes. A TransferEngine allocates them; the buffer frees itself
// with the engine's deallocator, so it must not outlive its engine.
//
// Thread safety: the object is immutable after allocation; the bytes it designates are written by
// whoever the owner lets write them (the engine's copies, or cuFile).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tempokv {

enum class DeviceKind { kEmulated, kCuda, kSimulated };

std::string_view device_kind_name(DeviceKind kind);

class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  // Base address in the device's address space: a host pointer when emulated, a CUDA device
  // pointer when kCuda, nullptr when simulated.
  virtual std::byte* data() const = 0;
  virtual size_t size() const = 0;
  virtual DeviceKind kind() const = 0;
};

}  // namespace tempokv
