// Helpers of the ServiceClient tests: shared files in /dev/shm and a connected client.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "service/fake_daemon.h"
#include "tempokv/client.h"

namespace tempokv {

// A file in /dev/shm standing in for one of the daemon's shared files; removed at scope exit.
class ShmFile {
 public:
  ShmFile(const std::string& tag, uint64_t bytes) {
    static std::atomic<int> counter{0};
    path_ = "/dev/shm/tempokv-client-test-" + std::to_string(getpid()) + "-" +
            std::to_string(counter++) + "-" + tag;
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd_, 0) << path_;
    EXPECT_EQ(::ftruncate(fd_, static_cast<off_t>(bytes)), 0);
  }
  ~ShmFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  ShmFile(const ShmFile&) = delete;
  ShmFile& operator=(const ShmFile&) = delete;

  void write(uint64_t offset, const std::vector<std::byte>& bytes) const {
    ASSERT_EQ(::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
              static_cast<ssize_t>(bytes.size()));
  }
  std::vector<std::byte> read(uint64_t offset, size_t n) const {
    std::vector<std::byte> out(n);
    EXPECT_EQ(::pread(fd_, out.data(), n, static_cast<off_t>(offset)), static_cast<ssize_t>(n));
    return out;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

inline std::vector<std::byte> pattern(size_t n, uint8_t seed) {
  std::vector<std::byte> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return out;
}

inline ClientOptions options_for(const FakeDaemon& daemon) {
  ClientOptions o;
  o.endpoint = daemon.endpoint();
  o.name = "client-test";
  o.call_timeout = std::chrono::seconds(2);
  return o;
}

// Null (with a test failure) when the connection fails.
inline std::unique_ptr<ServiceClient> connect_to(const ClientOptions& options) {
  auto client = ServiceClient::connect(options);
  if (!client.is_ok()) {
    ADD_FAILURE() << "connect: " << client.status().to_string();
    return nullptr;
  }
  return std::move(client).value();
}

// Runs dispatch() until pred() holds or two seconds pass; returns pred().
inline bool dispatch_until(ServiceClient& client, const std::function<bool()>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!pred() && std::chrono::steady_clock::now() < deadline) {
    client.dispatch();
    if (!pred()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

// A FakeDaemon handler answering every request_retrieval with `wait`.
inline bool answer_wait(FakeDaemon& d, const service::Request& r) {
  if (!std::holds_alternative<service::RequestRetrieval>(r.op)) return false;
  d.send(service::encode_retrieval_reply(r.id, RetrievalAnswer::kWait));
  return true;
}

}  // namespace tempokv
