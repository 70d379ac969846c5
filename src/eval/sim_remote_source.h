// The simulated fleet's remote tier as the provider sees it (docs/fleet.md):
//  * SimRemoteSource: one engine's RemoteSource (provider/remote_source.h) over the modelled
//    cluster (sim_remote.h). holds() is what the cluster holds; ttr() and ttr_bound() come from
//    the daemon's remote::RemoteTtrModel, which starts from its prior rate and learns each node's
//    rate from the fetches it sees finish (it never reads the network's truth); fetch() moves the
//    object over the modelled network and puts it into the engine's store (its SSD's write).
//  * RemoteLookupStore: the store an in-process engine looks its prefix up in: the engine's own
//    store, and for a key it lacks, the cluster's copy (its size and tokens), as tempokvd's
//    lookup answers from the cluster. Every other call goes to the engine's store.
//
// Ownership: both borrow the cluster and the store, which outlive them. Threading: the
// simulation's executor thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "eval/sim_remote.h"
#include "provider/remote_source.h"
#include "remote/remote_ttr.h"
#include "store/store.h"

namespace tempokv {

struct SimRemoteSourceStats {
  uint64_t fetches = 0, bytes = 0, failures = 0;
  std::vector<double> took_s;         // each fetch's time, from the call to the object landing
  std::vector<double> ttr_rel_error;  // |projected at its start − took| / took
};

class SimRemoteSource final : public RemoteSource {
 public:
  SimRemoteSource(Executor& executor, SimRemoteCluster& cluster, Store& store, uint32_t engine)
      : executor_(executor), cluster_(cluster), store_(store), engine_(engine) {}
  ~SimRemoteSource() override = default;

  bool holds(const Key& key) const override { return cluster_.contains(key); }
  std::optional<Duration> ttr(std::span<const Object> objects) const override;
  Duration ttr_bound(uint64_t bytes) const override { return model_.ttr_bound(bytes); }
  void fetch(const Key& key, uint64_t payload_bytes, FetchDone done) override;
  const SimRemoteSourceStats& stats() const { return stats_; }

 private:
  std::string node(const Key& key) const;

  Executor& executor_;
  SimRemoteCluster& cluster_;
  Store& store_;
  uint32_t engine_;
  remote::RemoteTtrModel model_;  // the daemon's defaults: prior 2 GiB/s, 200 us latency
  SimRemoteSourceStats stats_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

class RemoteLookupStore final : public Store {
 public:
  RemoteLookupStore(Store& store, const SimRemoteCluster& cluster)
      : store_(store), cluster_(cluster) {}

  std::optional<ObjectInfo> lookup(const Key& key) const override;
  bool contains(const Key& key) const override { return lookup(key).has_value(); }

  void put(const Key& key, TokenRange tokens, const void* data, size_t bytes,
           DoneCallback cb) override {
    store_.put(key, tokens, data, bytes, std::move(cb));
  }
  void put_hashed(const Key& key, TokenRange tokens, const void* data, size_t bytes,
                  Hash128 checksum, DoneCallback cb) override {
    store_.put_hashed(key, tokens, data, bytes, checksum, std::move(cb));
  }
  void get(const Key& key, void* dst, size_t dst_bytes, ReadCallback cb) override {
    store_.get(key, dst, dst_bytes, std::move(cb));
  }
  uint64_t index_changes() const override { return store_.index_changes(); }
  uint64_t recorded_capacity() const override { return store_.recorded_capacity(); }
  void remove(const Key& key, DoneCallback cb) override { store_.remove(key, std::move(cb)); }
  std::vector<ObjectInfo> list() const override { return store_.list(); }
  std::string segment_path(uint32_t segment) const override { return store_.segment_path(segment); }
  Status pin_segment(uint32_t segment) override { return store_.pin_segment(segment); }
  void unpin_segment(uint32_t segment) override { store_.unpin_segment(segment); }
  void register_read_buffer(void* base, size_t bytes) override {
    store_.register_read_buffer(base, bytes);
  }
  void unregister_read_buffer(void* base) override { store_.unregister_read_buffer(base); }
  StoreStats stats() const override { return store_.stats(); }
  void set_eviction_listener(EvictionListener l) override {
    store_.set_eviction_listener(std::move(l));
  }
  void set_index_listener(IndexListener l) override { store_.set_index_listener(std::move(l)); }
  void set_write_listener(WriteListener l) override { store_.set_write_listener(std::move(l)); }
  void close(DoneCallback cb) override { store_.close(std::move(cb)); }

 private:
  Store& store_;
  const SimRemoteCluster& cluster_;
};

}  // namespace tempokv
