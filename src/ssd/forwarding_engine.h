// ForwardingEngine: an SsdEngine that passes every call to the engine it owns. The wrappers that
// change some calls of a real engine (FaultInjectingEngine, ReadRateCap) derive from it and
// override only those; the rest, and any call SsdEngine gains, reach the wrapped engine.
//
// Thread safety: that of the wrapped engine.
#pragma once

#include <memory>
#include <utility>

#include "ssd/ssd_engine.h"

namespace tempokv {

class ForwardingEngine : public SsdEngine {
 public:
  explicit ForwardingEngine(std::unique_ptr<SsdEngine> inner) : inner_(std::move(inner)) {}

  SsdEngine& inner() { return *inner_; }

  std::string_view name() const override { return inner_->name(); }
  bool direct() const override { return inner_->direct(); }
  Result<FileId> add_file(int fd) override { return inner_->add_file(fd); }
  void remove_file(FileId file) override { inner_->remove_file(file); }
  Status register_buffer(void* base, size_t bytes) override {
    return inner_->register_buffer(base, bytes);
  }
  void unregister_buffer(void* base) override { inner_->unregister_buffer(base); }
  void read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
            IoThreadHook on_io_thread = nullptr) override {
    inner_->read(file, offset, buf, len, std::move(cb), std::move(on_io_thread));
  }
  void write(FileId file, uint64_t offset, const void* buf, size_t len, IoCallback cb) override {
    inner_->write(file, offset, buf, len, std::move(cb));
  }
  void sync(FileId file, IoCallback cb) override { inner_->sync(file, std::move(cb)); }
  SsdEngineStats stats() const override { return inner_->stats(); }

 protected:
  std::unique_ptr<SsdEngine> inner_;
};

}  // namespace tempokv
