#include "tempokv/client_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace tempokv::service {

Result<ClientMapping> ClientMapping::map(const std::string& path, uint64_t bytes, bool writable,
                                         bool populate) {
  if (bytes == 0) return ClientMapping();
  const int fd = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, "open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::from_errno(err, "fstat " + path);
  }
  // Mapping past the end would turn a short file into SIGBUS on first touch; refuse it here.
  if (static_cast<uint64_t>(st.st_size) < bytes) {
    ::close(fd);
    return Status::failed_precondition(path + " is " + std::to_string(st.st_size) +
                                       " bytes, the daemon announced " + std::to_string(bytes));
  }
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  void* p = ::mmap(nullptr, bytes, prot, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file referenced
  if (p == MAP_FAILED) return Status::from_errno(err, "mmap " + path);
  return ClientMapping(static_cast<std::byte*>(p), bytes);
}

ClientMapping::~ClientMapping() { reset(); }

ClientMapping::ClientMapping(ClientMapping&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

ClientMapping& ClientMapping::operator=(ClientMapping&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void ClientMapping::reset() {
  if (data_ != nullptr) ::munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace tempokv::service
