// tempokvd's /claims page: the last claims that ended, each with its timeline and what the
// controller projected when it committed, so that timing can be decomposed claim by claim
// (docs/evaluation.md, the vLLM experiment). Times are seconds on the daemon's clock.
#include <nlohmann/json.hpp>

#include "daemon/service_metrics.h"
#include "daemon/service_state.h"

namespace tempokv::service {
namespace {

nlohmann::json seconds(const std::optional<TimePoint>& t) {
  return t ? nlohmann::json(to_seconds(*t)) : nlohmann::json(nullptr);
}

}  // namespace

std::string ServiceCore::ended_claims_json() const {
  nlohmann::json claims = nlohmann::json::array();
  for (const Histograms::Ended& e : histograms_->ended) {
    const ClaimInfo& i = e.info;
    const ClaimTimeline& t = i.timeline;
    claims.push_back({
        {"request", e.request_id},
        {"runtime", e.runtime},
        {"footprint_bytes", i.footprint_bytes},
        {"ordinary", i.ordinary},
        {"refused", i.refused},
        {"ordinary_only", i.ordinary_only},
        {"cancelled", i.cancelled},
        {"failure", i.failure.is_ok() ? "" : i.failure.to_string()},
        {"reported_s", seconds(t.reported)},
        {"committed_s", seconds(t.committed)},
        {"ready_s", seconds(t.ready)},
        {"retrieval_requested_s", seconds(t.retrieval_requested)},
        {"transfer_start_s", seconds(t.transfer_start)},
        {"transfer_end_s", seconds(t.transfer_end)},
        {"released_s", seconds(t.released)},
        {"projected_use_at_commit_s", seconds(i.projected_use_at_commit)},
        {"projected_use_before_request_s", seconds(i.projected_use_before_request)},
        {"ttr_at_commit_s", i.ttr_at_commit ? nlohmann::json(to_seconds(*i.ttr_at_commit))
                                            : nlohmann::json(nullptr)},
    });
  }
  nlohmann::json out = {{"now_s", to_seconds(executor_.now())}, {"claims", std::move(claims)}};
  return out.dump() + "\n";
}

}  // namespace tempokv::service
