// A one-line progress bar on stderr for long commands; silent when stderr is not a terminal.
// Not thread-safe: update it from one thread.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tempokv::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total)
      : label_(std::move(label)), total_(total ? total : 1), tty_(isatty(STDERR_FILENO) == 1) {}
  ~ProgressBar() { finish(); }

  void update(uint64_t done) {
    if (!tty_ || finished_) return;
    auto t = std::chrono::steady_clock::now();
    if (done < total_ && t - last_ < std::chrono::milliseconds(100)) return;
    last_ = t;
    int width = 30;
    int filled = static_cast<int>(width * (done > total_ ? total_ : done) / total_);
    std::fprintf(stderr, "\r%-24s [%s%s] %3d%%", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(),
                 static_cast<int>(100 * (done > total_ ? total_ : done) / total_));
    std::fflush(stderr);
  }
  void finish() {
    if (!tty_ || finished_) return;
    finished_ = true;
    std::fprintf(stderr, "\r%*s\r", 70, "");
    std::fflush(stderr);
  }

 private:
  std::string label_;
  uint64_t total_;
  bool tty_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace tempokv::cli
