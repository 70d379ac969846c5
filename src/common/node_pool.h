// NodePool: a std::pmr::memory_resource that keeps freed blocks for the next allocation of the
// same size, for node-based containers (std::pmr::set) whose elements come and go on most
// events: the controller moves a claim between its indexes several times per event, and each
// move was a malloc and a free (a tenth of the controller's instructions in its dense bench).
//
// One free list per size class (16-byte steps up to kMaxPooled); larger blocks, and alignments
// above alignof(std::max_align_t), go to the upstream operator new/delete. Blocks are returned
// to the system when the pool is destroyed, so containers using it must be destroyed first
// (declare the pool before them). Not thread-safe, as the containers it serves.
#pragma once

#include <array>
#include <cstddef>
#include <memory_resource>
#include <new>

namespace tempokv {

class NodePool final : public std::pmr::memory_resource {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool() override {
    for (size_t c = 0; c < kClasses; ++c) {
      while (Free* f = free_[c]) {
        free_[c] = f->next;
        ::operator delete(f, (c + 1) * kStep);
      }
    }
  }

  static constexpr size_t kStep = 16;
  static constexpr size_t kMaxPooled = 256;

 private:
  static constexpr size_t kClasses = kMaxPooled / kStep;
  struct Free {
    Free* next;
  };
  static bool pooled(size_t bytes, size_t align) {
    return bytes != 0 && bytes <= kMaxPooled && align <= alignof(std::max_align_t);
  }
  static size_t class_of(size_t bytes) { return (bytes + kStep - 1) / kStep - 1; }

  void* do_allocate(size_t bytes, size_t align) override {
    if (!pooled(bytes, align)) return ::operator new(bytes, std::align_val_t(align));
    const size_t c = class_of(bytes);
    if (Free* f = free_[c]) {
      free_[c] = f->next;
      return f;
    }
    return ::operator new((c + 1) * kStep);
  }
  void do_deallocate(void* p, size_t bytes, size_t align) override {
    if (!pooled(bytes, align)) {
      ::operator delete(p, bytes, std::align_val_t(align));
      return;
    }
    const size_t c = class_of(bytes);
    free_[c] = new (p) Free{free_[c]};
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  std::array<Free*, kClasses> free_{};
};

}  // namespace tempokv
