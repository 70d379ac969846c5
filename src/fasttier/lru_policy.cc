#include <list>
#include <unordered_map>

#include "fasttier/eviction_policy.h"

namespace tempokv {
namespace {

// Invariant: order_ and pos_ hold the same keys; order_ runs from least to most recently used.
class LruPolicy final : public EvictionPolicy {
 public:
  void insert(const Key& key) override {
    erase(key);
    order_.push_back(key);
    pos_.emplace(key, std::prev(order_.end()));
  }
  void erase(const Key& key) override {
    auto it = pos_.find(key);
    if (it == pos_.end()) return;
    order_.erase(it->second);
    pos_.erase(it);
  }
  void touch(const Key& key) override {
    auto it = pos_.find(key);
    if (it != pos_.end()) order_.splice(order_.end(), order_, it->second);
  }
  std::optional<Key> victim() const override {
    if (order_.empty()) return std::nullopt;
    return order_.front();
  }
  size_t size() const override { return order_.size(); }
  bool contains(const Key& key) const override { return pos_.count(key) != 0; }

 private:
  std::list<Key> order_;
  std::unordered_map<Key, std::list<Key>::iterator> pos_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_lru_policy() { return std::make_unique<LruPolicy>(); }

}  // namespace tempokv
