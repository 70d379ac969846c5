// EvictionPolicy: which evictable fast-tier object goes first. The fast tier tells the policy when
// an object becomes evictable (resident, unprotected, unreserved, not held), stops being so, or is
// used; the policy names victims. A new policy is a new file behind this interface.
// Not thread-safe (control-plane thread only).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include "tempokv/key.h"

namespace tempokv {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  // key became evictable; it counts as just used.
  virtual void insert(const Key& key) = 0;
  // key is no longer evictable (protected, held, or gone). No-op when absent.
  virtual void erase(const Key& key) = 0;
  // key was used; no-op when it is not evictable.
  virtual void touch(const Key& key) = 0;
  // The next object to evict; nullopt when nothing is evictable.
  virtual std::optional<Key> victim() const = 0;
  // Where key stands in the eviction order: a smaller rank goes earlier (ranks only compare, they
  // need not be dense). Meaningful only while key is evictable.
  virtual uint64_t rank(const Key& key) const = 0;
  // Calls fn for the evictable objects in eviction order (victim() first) until it returns false.
  virtual void for_each_in_order(const std::function<bool(const Key&)>& fn) const = 0;
  virtual size_t size() const = 0;
  virtual bool contains(const Key& key) const = 0;
};

// Least recently used first.
std::unique_ptr<EvictionPolicy> make_lru_policy();

}  // namespace tempokv
