// ServiceCore: protocol v2's step op (docs/protocol.md, "step"), one message per scheduler
// iteration turned into the adapter's calls in the order a v1 runtime makes them: requests that
// finished, what the previous iteration completed (prefills done, one token per decoder), the
// requests that joined the queue, admissions, the iteration that starts, and the new order.
#include <unordered_set>

#include "daemon/service_core.h"
#include "daemon/service_state.h"

namespace tempokv::service {
namespace {

// Steps whose iteration cost is kept for the runtime's measurement of it: an asynchronous
// scheduler measures an iteration a step or two after the step that started it.
constexpr size_t kStepCostsKept = 16;

}  // namespace

Status ServiceCore::step(Session& s, const Step& m) {
  if (m.seq <= s.last_step_seq) {
    return Status::invalid_argument("step: seq " + std::to_string(m.seq) +
                                    " is not above the previous step's " +
                                    std::to_string(s.last_step_seq));
  }
  if (s.last_step_seq != 0) counters_.steps_missed += m.seq - s.last_step_seq - 1;
  s.last_step_seq = m.seq;
  ++counters_.steps;
  // The lists this step stands for, whatever else in it fails: the client's next edits are of
  // these. Edits that do not apply leave them unknown: the step's other parts are still taken
  // (its requests finished and queued, its admissions), its lists' parts are not.
  const Status lists = resolve_step_lists(s, m);
  const std::vector<uint64_t>& decoders = s.step_lists.decoders;
  Runtime& rt = *s.runtime;
  RuntimeAdapter& a = *rt.adapter;
  // First, so that a runtime that measures its iterations never has them calibrated by the
  // arrival times of its steps (which the progress calls below would do).
  for (const StepMeasured& x : m.measured) {
    for (const auto& [seq, cost] : s.step_costs) {
      if (seq == x.seq) a.iteration_measured(cost, Duration(x.duration_ns));
    }
  }
  if (m.measures && m.measured.empty() && !a.stats().runtime_measures) {
    a.iteration_measured(IterationCost{}, Duration::zero());  // declares it; calibrates nothing
  }
  for (const StepFinished& f : m.finished) {
    TEMPOKV_RETURN_IF_ERROR(finish_request(s, f.request_id, f.output_tokens));
  }
  // The previous iteration is over: a prefill not continued in this one (chunked prefill lists
  // a request again) produced its first token; each decoder produced one more.
  std::unordered_set<uint64_t> prefilling;
  for (const StepPrefill& p : m.prefills) prefilling.insert(p.request_id);
  for (uint64_t id : rt.step_prefills) {
    auto it = rt.stepping.find(id);
    if (it == rt.stepping.end() || prefilling.count(id)) continue;
    TEMPOKV_RETURN_IF_ERROR(a.prefill_done(id));
    it->second = 1;
  }
  for (uint64_t id : rt.step_decoders) {
    auto it = rt.stepping.find(id);
    if (it == rt.stepping.end()) continue;
    TEMPOKV_RETURN_IF_ERROR(a.tokens_generated(id, ++it->second));
  }
  rt.step_prefills.clear();
  rt.step_decoders.clear();
  for (const RequestInfo& r : m.queued) TEMPOKV_RETURN_IF_ERROR(add_request(s, r));
  for (uint64_t id : m.admitted) TEMPOKV_RETURN_IF_ERROR(step_admit(s, id));
  std::vector<uint64_t> prefills;
  std::vector<uint32_t> chunks;
  prefills.reserve(m.prefills.size());
  chunks.reserve(m.prefills.size());
  for (const StepPrefill& p : m.prefills) {
    TEMPOKV_RETURN_IF_ERROR(step_admit(s, p.request_id));
    prefills.push_back(p.request_id);
    chunks.push_back(p.tokens);
  }
  if (!lists.is_ok()) return lists;  // no iteration begins for the runtime: its batch is unknown
  // The last step's decoders again, no request added or ended since they were checked: each is
  // still the runtime's.
  if (!rt.decoders_checked.holds(decoders, rt.requests_changes)) {
    rt.decoders_checked.forget();
    for (uint64_t id : decoders) TEMPOKV_RETURN_IF_ERROR(owned(s, id, "step"));
    rt.decoders_checked.checked(decoders, rt.requests_changes);
  }
  TEMPOKV_ASSIGN_OR_RETURN(std::span<const uint64_t> waiting,
                           live_order(s, s.step_lists.waiting, "step"));
  TEMPOKV_RETURN_IF_ERROR(a.iteration_started(prefills, chunks, decoders));
  s.step_costs.emplace_back(m.seq, a.open_iteration_cost());
  if (s.step_costs.size() > kStepCostsKept) s.step_costs.pop_front();
  rt.step_prefills = prefills;
  rt.step_decoders = decoders;
  return a.update_order(waiting, Duration(m.boundary_in_ns));
}

Status ServiceCore::step_admit(Session& s, uint64_t id) {
  TEMPOKV_RETURN_IF_ERROR(owned(s, id, "step"));
  Runtime& rt = *s.runtime;
  if (!rt.stepping.count(id)) {  // scheduled for the first time (KV loading or a prefill)
    TEMPOKV_RETURN_IF_ERROR(rt.adapter->admitted(id));
    rt.stepping.emplace(id, 0);
  }
  return Status::ok();
}

Status ServiceCore::resolve_step_lists(Session& s, const Step& m) {
  if (!m.base) {
    s.step_lists.decoders = m.decoders;
    s.step_lists.waiting = m.waiting;
    s.step_lists_seq = m.seq;
    return Status::ok();
  }
  const uint64_t last = s.step_lists_seq;
  s.step_lists_seq = 0;
  if (*m.base != last || last == 0) {
    return Status::invalid_argument(
        "step: base " + std::to_string(*m.base) + " is not the session's last step (" +
        (last == 0 ? std::string("none: its last step's edits did not apply, or none came")
                   : std::to_string(last)) +
        "); send the decoders and the waiting order in full");
  }
  TEMPOKV_RETURN_IF_ERROR(apply_step_edits(
      m, s.step_lists, std::max<size_t>(kMaxIdList, options_.max_requests_per_runtime)));
  ++counters_.step_edits;
  s.step_lists_seq = m.seq;
  return Status::ok();
}

}  // namespace tempokv::service
