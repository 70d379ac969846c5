// RemoteSource: where the StagingProvider gets objects that are not in the local store but that a
// remote tier holds (docs/cluster.md, "Claims"). The provider holds a claim on such an object like
// any other: its TTR is ttr() below (the remote part) + the local store's write of the bytes + the
// usual SSD -> fast-tier projection. Under TempoKV the laxity of that whole path starts the fetch
// (fetch(), StagingProvider::prefetch, nothing reserved) and the laxity of the local part commits
// the claim, which reads the object into the fast tier once it is in the store; without that first
// stage the commit starts the fetch as its staging's first step.
//
// What an implementation promises:
//  * holds(key) is true only for an object a lookup found remotely (with that generation and
//    size); the provider asks it for keys missing from the local store. Cheap (a map lookup).
//  * ttr(objects) is the time to fetch those objects into the local store if their fetches started
//    now, given what the source already has in flight (an object with bytes 0 is one whose fetch
//    is already in flight: it costs no more bytes, only the wait for the fetches ahead of it);
//    nullopt when a node one of them needs is held unhealthy (the claim is refused at once, the
//    engine recomputes). No I/O; no change of state.
//  * ttr_bound(bytes) >= ttr() of any set of objects on healthy nodes totalling at most `bytes` of
//    new fetches, now (the controller skips claims by it; too low a bound makes them late).
//  * fetch(key, payload_bytes, done) brings the object into the local store and calls `done`
//    exactly once, on the Executor's thread, never inside fetch(): with the generation the local
//    store gave the object (StagingProvider then reads it from the store, checking that
//    generation), or an error naming the key and why (absent, evicted, checksum, wrong
//    generation, node down or stopped past its deadline; the claims waiting for it fail with a
//    load error and the engine recomputes). Only bytes verified against the identity the lookup
//    saw are put in the store: a failed fetch puts nothing. A fetch may outlive the provider's
//    interest (every claim gone): the object still lands in the store, as cache.
//
// Threading: every call on the Executor's thread. The source outlives the provider or is detached
// first (StagingProvider::set_remote_source(nullptr)); done callbacks check their own liveness.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "tempokv/executor.h"
#include "tempokv/key.h"
#include "tempokv/status.h"

namespace tempokv {

class RemoteSource {
 public:
  struct Object {
    Key key;
    uint64_t bytes = 0;  // payload bytes of a fetch to start; 0: its fetch is already in flight
  };
  // Runs with the local store's generation of the fetched object, or the error that failed it.
  using FetchDone = std::function<void(Result<uint64_t>)>;

  virtual ~RemoteSource() = default;
  virtual bool holds(const Key& key) const = 0;
  virtual std::optional<Duration> ttr(std::span<const Object> objects) const = 0;
  virtual Duration ttr_bound(uint64_t bytes) const = 0;
  virtual void fetch(const Key& key, uint64_t payload_bytes, FetchDone done) = 0;
};

}  // namespace tempokv
