#include <list>
#include <unordered_map>

#include "fasttier/eviction_policy.h"

namespace tempokv {
namespace {

// Invariant: order_ and pos_ hold the same keys; order_ runs from least to most recently used,
// and the stamps along it increase (a stamp is the use count when the key last moved to the end).
class LruPolicy final : public EvictionPolicy {
 public:
  void insert(const Key& key) override {
    erase(key);
    order_.push_back(key);
    pos_.emplace(key, Pos{std::prev(order_.end()), ++clock_});
  }
  void erase(const Key& key) override {
    auto it = pos_.find(key);
    if (it == pos_.end()) return;
    order_.erase(it->second.it);
    pos_.erase(it);
  }
  void touch(const Key& key) override {
    auto it = pos_.find(key);
    if (it == pos_.end()) return;
    order_.splice(order_.end(), order_, it->second.it);
    it->second.stamp = ++clock_;
  }
  std::optional<Key> victim() const override {
    if (order_.empty()) return std::nullopt;
    return order_.front();
  }
  uint64_t rank(const Key& key) const override {
    auto it = pos_.find(key);
    return it == pos_.end() ? 0 : it->second.stamp;
  }
  void for_each_in_order(const std::function<bool(const Key&)>& fn) const override {
    for (const Key& key : order_) {
      if (!fn(key)) return;
    }
  }
  size_t size() const override { return order_.size(); }
  bool contains(const Key& key) const override { return pos_.count(key) != 0; }

 private:
  struct Pos {
    std::list<Key>::iterator it;
    uint64_t stamp;
  };
  std::list<Key> order_;
  std::unordered_map<Key, Pos> pos_;
  uint64_t clock_ = 0;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_lru_policy() { return std::make_unique<LruPolicy>(); }

}  // namespace tempokv
