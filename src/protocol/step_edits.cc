// A step's decoders and waiting order as edits of the session's previous step (protocol v4;
// docs/protocol.md, "step"): the client makes them, the daemon applies them to the lists it kept.
// Under an engine most steps change a few of 256 decoders and the head and tail of the queue, so
// the edits are a few ids where the lists are a thousand.
#include <algorithm>
#include <string>

#include "tempokv/protocol.h"

namespace tempokv::service {

bool make_step_edits(Step& step, const StepLists& last, uint64_t base) {
  if (step.base) return false;
  // Decoders: last's in order while they match the new list's head; the rest of last's are gone
  // and the rest of the new list joins at the end.
  std::vector<uint64_t> gone;
  size_t kept = 0;
  for (uint64_t id : last.decoders) {
    if (kept < step.decoders.size() && step.decoders[kept] == id) {
      ++kept;
    } else {
      gone.push_back(id);
    }
  }
  // A gone id is removed wherever it stands: one that also stays (listed twice) cannot be said.
  if (!gone.empty()) {
    std::vector<uint64_t> sorted = gone;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < kept; ++i) {
      if (std::binary_search(sorted.begin(), sorted.end(), step.decoders[i])) return false;
    }
  }
  // Waiting: last's order from the new head's place in it (all of it taken when absent) must be
  // the new order's head; the rest joins at the back.
  const std::vector<uint64_t>& was = last.waiting;
  const std::vector<uint64_t>& now = step.waiting;
  size_t taken = was.size();
  if (!now.empty()) {
    taken = static_cast<size_t>(std::find(was.begin(), was.end(), now.front()) - was.begin());
  }
  const size_t stays = was.size() - taken;
  if (stays > now.size() || !std::equal(was.begin() + taken, was.end(), now.begin())) {
    return false;
  }
  if (taken > UINT32_MAX) return false;
  const size_t edits = gone.size() + (step.decoders.size() - kept) + (now.size() - stays);
  if (edits >= step.decoders.size() + now.size()) return false;
  step.base = base;
  step.decoders_gone = std::move(gone);
  step.decoders_new.assign(step.decoders.begin() + kept, step.decoders.end());
  step.waiting_taken = static_cast<uint32_t>(taken);
  step.waiting_new.assign(now.begin() + stays, now.end());
  step.decoders.clear();
  step.waiting.clear();
  return true;
}

Status apply_step_edits(const Step& step, StepLists& lists, size_t max_ids) {
  const std::string base = std::to_string(step.base.value_or(0));
  if (!step.decoders_gone.empty()) {
    std::vector<uint64_t> gone = step.decoders_gone;
    std::sort(gone.begin(), gone.end());
    gone.erase(std::unique(gone.begin(), gone.end()), gone.end());
    std::vector<bool> found(gone.size(), false);
    std::erase_if(lists.decoders, [&](uint64_t id) {
      auto it = std::lower_bound(gone.begin(), gone.end(), id);
      if (it == gone.end() || *it != id) return false;
      found[it - gone.begin()] = true;
      return true;
    });
    for (size_t i = 0; i < gone.size(); ++i) {
      if (!found[i]) {
        return Status::invalid_argument("step: decoders_gone lists request " +
                                        std::to_string(gone[i]) + ", not a decoder of step " +
                                        base);
      }
    }
  }
  if (lists.decoders.size() + step.decoders_new.size() > max_ids) {
    return Status::invalid_argument(
        "step: the decoders would be " +
        std::to_string(lists.decoders.size() + step.decoders_new.size()) +
        " requests, more than the limit of " + std::to_string(max_ids));
  }
  lists.decoders.insert(lists.decoders.end(), step.decoders_new.begin(), step.decoders_new.end());
  if (step.waiting_taken > lists.waiting.size()) {
    return Status::invalid_argument("step: waiting_taken is " + std::to_string(step.waiting_taken) +
                                    ", but step " + base + "'s order has " +
                                    std::to_string(lists.waiting.size()) + " requests");
  }
  const size_t waiting = lists.waiting.size() - step.waiting_taken + step.waiting_new.size();
  if (waiting > max_ids) {
    return Status::invalid_argument("step: the waiting order would be " + std::to_string(waiting) +
                                    " requests, more than the limit of " + std::to_string(max_ids));
  }
  lists.waiting.erase(lists.waiting.begin(), lists.waiting.begin() + step.waiting_taken);
  lists.waiting.insert(lists.waiting.end(), step.waiting_new.begin(), step.waiting_new.end());
  return Status::ok();
}

}  // namespace tempokv::service
