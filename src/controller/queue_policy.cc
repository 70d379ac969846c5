// Queue-K: eligible while the request is among the first K of the runtime's waiting queue.
#include <string>

#include "controller/commit_policy.h"

namespace tempokv {
namespace {

class QueuePolicy final : public CommitPolicy {
 public:
  explicit QueuePolicy(uint32_t k) : k_(k), name_("queue-" + std::to_string(k)) {}
  std::string_view name() const override { return name_; }
  bool eligible(const EligibilityInput& in) const override { return in.waiting_rank < k_; }
  uint32_t rank_limit() const override { return k_; }

 private:
  uint32_t k_;
  std::string name_;
};

}  // namespace

std::unique_ptr<CommitPolicy> make_queue_policy(uint32_t k) {
  return std::make_unique<QueuePolicy>(k);
}

}  // namespace tempokv
