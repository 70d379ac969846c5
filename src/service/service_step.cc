// ServiceCore: protocol v2's step op (docs/protocol.md, "step"), one message per scheduler
// iteration turned into the adapter's calls in the order a v1 runtime makes them: requests that
// finished, what the previous iteration completed (prefills done, one token per decoder), the
// requests that joined the queue, admissions, the iteration that starts, and the new order.
#include <unordered_set>

#include "service/service_core.h"
#include "service/service_state.h"

namespace tempokv::service {

Status ServiceCore::step(Session& s, const Step& m) {
  if (m.seq <= s.last_step_seq) {
    return Status::invalid_argument("step: seq " + std::to_string(m.seq) +
                                    " is not above the previous step's " +
                                    std::to_string(s.last_step_seq));
  }
  if (s.last_step_seq != 0) counters_.steps_missed += m.seq - s.last_step_seq - 1;
  s.last_step_seq = m.seq;
  ++counters_.steps;
  Runtime& rt = *s.runtime;
  RuntimeAdapter& a = *rt.adapter;
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
  std::vector<uint64_t> prefills;
  prefills.reserve(m.prefills.size());
  for (const StepPrefill& p : m.prefills) {
    TEMPOKV_RETURN_IF_ERROR(owned(s, p.request_id, "step"));
    if (!rt.stepping.count(p.request_id)) {  // its first prefill chunk: admitted now
      TEMPOKV_RETURN_IF_ERROR(a.admitted(p.request_id));
      rt.stepping.emplace(p.request_id, 0);
    }
    prefills.push_back(p.request_id);
  }
  for (uint64_t id : m.decoders) TEMPOKV_RETURN_IF_ERROR(owned(s, id, "step"));
  for (uint64_t id : m.waiting) TEMPOKV_RETURN_IF_ERROR(owned(s, id, "step"));
  TEMPOKV_RETURN_IF_ERROR(a.iteration_started(prefills, m.decoders));
  rt.step_prefills = prefills;
  rt.step_decoders = m.decoders;
  return a.update_order(m.waiting, Duration(m.boundary_in_ns));
}

}  // namespace tempokv::service
