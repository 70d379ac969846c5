// ClientMapping: one of the daemon's shared files (the fast tier or the write region, named by
// the hello reply; docs/protocol.md, "Shared memory") mapped into a client with MAP_SHARED, so
// ready objects are read and new payloads written without a socket hop.
//
// Ownership: owns the mapping (unmapped on destruction), not the file, which is the daemon's.
// Threading: a value; the bytes behind it are shared with the daemon, which promises that a
// ready claim's spans stay unchanged until the claim ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tempokv/status.h"

namespace tempokv::service {

class ClientMapping {
 public:
  ClientMapping() = default;  // maps nothing
  // Maps the first `bytes` of `path`: PROT_READ when !writable, else PROT_READ|PROT_WRITE. The
  // file must be at least that long. bytes == 0 maps nothing.
  // populate: fault the page tables in now (MAP_POPULATE), so copies out of a ready claim do
  // not stop on a minor fault for every page the first time they touch it.
  static Result<ClientMapping> map(const std::string& path, uint64_t bytes, bool writable,
                                   bool populate = false);
  ~ClientMapping();
  ClientMapping(ClientMapping&& o) noexcept;
  ClientMapping& operator=(ClientMapping&& o) noexcept;
  ClientMapping(const ClientMapping&) = delete;
  ClientMapping& operator=(const ClientMapping&) = delete;

  std::byte* data() const { return data_; }  // null when nothing is mapped
  uint64_t bytes() const { return bytes_; }

 private:
  ClientMapping(std::byte* data, uint64_t bytes) : data_(data), bytes_(bytes) {}
  void reset();

  std::byte* data_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace tempokv::service
