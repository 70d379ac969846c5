// fig1-lead and fig2-rank: the paper's motivating measurements (§2.3). Both run one engine with
// no step jitter, so each case is one deterministic timeline.
//
// fig1-lead: staging of a 64K-token prefix is committed `lead` seconds before the request is
// submitted to an idle engine (a claim committed on the provider directly; the request's own
// claim, under Immediate, joins it at submission and the early claim is then cancelled).
//
// fig2-rank: FCFS with one active sequence; the target is the sole waiter behind a running
// predecessor whose remaining service time is nominally 0.5 or 4 s when the target's hit is
// reported; optional backlog of four committed 8 GiB claims ahead of it (committed on the
// provider before the report, released when they are ready).
#include <cstdio>
#include <memory>

#include "common/units.h"
#include "eval/scenarios.h"
#include "workload/tokens.h"

namespace tempokv {
namespace {

constexpr uint32_t kQuestionTokens = 32;

// A request of `doc_tokens` synthetic document tokens (seeded) + a question, every whole chunk
// precomputed.
Request prefix_request(const CostProfile& p, uint64_t id, uint64_t seed, uint32_t doc_tokens,
                       Duration arrival, uint32_t output) {
  std::vector<uint32_t> tokens;
  append_synthetic_tokens(seed, doc_tokens, tokens);
  Request r;
  r.id = id;
  r.arrival = arrival;
  r.model = p.model;
  r.prompt_tokens = doc_tokens + kQuestionTokens;
  r.suffix_tokens = kQuestionTokens;
  r.chunks = chunk_prefix(p.model, tokens, kDefaultChunkTokens, p.kv_bytes_per_token);
  r.precomputed_chunks = static_cast<uint32_t>(r.chunks.size());
  r.output_tokens = r.max_output_tokens = output;
  return r;
}

StagingClaim claim_of(const Request& r, ClaimId id) {
  StagingClaim c{id, {}};
  for (const CachedChunk& ch : r.chunks) c.objects.push_back({ch.key, ch.bytes});
  return c;
}

std::string profile_name(const Runner& runner) {
  return runner.sim() ? "h100-llama-3.1-8b" : "cpu-small";
}

}  // namespace

Status run_fig1_lead(Runner& runner) {
  TEMPOKV_ASSIGN_OR_RETURN(CostProfile profile, runner.profile(profile_name(runner)));
  const ModeScale scale = mode_scale(runner);
  constexpr ClaimId kEarlyClaim = 1'000'000;
  for (double lead : {0.0, 0.25, 0.5, 1.0, 2.0, 4.0}) {
    Request req = prefix_request(profile, 1, 1, 65'536, from_seconds(lead), 8);
    const double footprint_gib = double(req.chunk_bytes(req.chunks.size())) / double(kGiB);
    auto at_submission_gib_s = std::make_shared<double>(0);
    RunSpec spec;
    char label[48];
    std::snprintf(label, sizeof label, "fig1 lead %g s", lead);
    spec.label = label;
    spec.row.scenario = "fig1-lead";
    spec.row.policy = "commit-at-lead";
    spec.row.model = profile.model;
    spec.row.ratio = 1.0;
    spec.stack = base_stack(runner, profile, "immediate", scale.fast_tier_gib);
    spec.stack.jitter_sigma = 0;
    spec.stack.engines = 1;
    spec.before_submit = [req](EvalStack& s, TimePoint) {
      return s.provider().commit(claim_of(req, kEarlyClaim), [](ClaimId, Status) {}).status();
    };
    spec.after_submit = [lead, at_submission_gib_s](EvalStack& s, TimePoint start) {
      // Runs at submission, after the arrival (equal times run in scheduling order): Immediate
      // committed the request's own claim at its report, so the early claim can let go; the
      // objects stay protected (or reserved) by the request's claim. Polls if it is not yet.
      auto poll = std::make_shared<std::function<void()>>();
      *poll = [&s, poll, at_submission_gib_s] {
        Result<ClaimInfo> info = s.controller().info(1);
        if (!info.is_ok() || !info->timeline.committed) {
          s.executor().after(std::chrono::milliseconds(1), *poll);
          return;
        }
        *at_submission_gib_s = s.controller().stats().protected_gib_s;
        (void)s.provider().cancel(kEarlyClaim);
        *poll = nullptr;  // breaks the cycle
      };
      s.executor().at(start + from_seconds(lead), [poll] {
        if (*poll) (*poll)();
      });
      return Status::ok();
    };
    spec.after_run = [lead, footprint_gib, at_submission_gib_s](EvalStack& s, TimePoint,
                                                                EvalRow& row) {
      std::vector<RequestRecord> recs = s.records();
      const double ttft = recs.empty() || !recs[0].ttft() ? 0 : to_seconds(*recs[0].ttft());
      row.extra = {{"lead_s", lead},
                   {"ttft_s", ttft},
                   {"protected_gib_s", s.controller().stats().protected_gib_s},
                   {"protected_before_submission_gib_s", *at_submission_gib_s},
                   {"footprint_gib", footprint_gib}};
    };
    spec.requests = {req};
    TEMPOKV_RETURN_IF_ERROR(runner.run(std::move(spec)).status());
  }
  return Status::ok();
}

namespace {

// Output tokens of a 32-token-prompt predecessor admitted at 0 so that, seen from `report_at`,
// its remaining service (the rest of its prefill, then its decode steps, batch 1) is at least
// `remaining_s`.
uint32_t predecessor_tokens(const CostProfile& p, Duration report_at, double remaining_s) {
  double t = to_seconds(p.prefill(kQuestionTokens) - report_at);
  uint32_t n = 1;
  while (t < remaining_s) {
    t += to_seconds(p.decode_step(kQuestionTokens + n, 1));
    ++n;
  }
  return n;
}

}  // namespace

Status run_fig2_rank(Runner& runner) {
  TEMPOKV_ASSIGN_OR_RETURN(CostProfile profile, runner.profile(profile_name(runner)));
  const ModeScale scale = mode_scale(runner);
  const Duration report_at = std::chrono::milliseconds(1);
  constexpr uint32_t kBacklogClaims = 4;
  constexpr uint32_t k8GiBTokens = 65'536;  // 8 GiB of Llama-3.1-8B KV
  std::vector<Request> backlog;
  for (uint32_t i = 0; i < kBacklogClaims; ++i) {
    backlog.push_back(prefix_request(profile, 100 + i, 100 + i, k8GiBTokens, {}, 1));
  }
  for (double predecessor_s : {0.5, 4.0}) {
    for (uint32_t target_tokens : {k8GiBTokens, k8GiBTokens * 3 / 2}) {
      for (bool with_backlog : {false, true}) {
        for (const std::string& policy : runner.policies({"queue-1", "tempokv"})) {
          Request pred;
          pred.id = 1;
          pred.model = profile.model;
          pred.prompt_tokens = kQuestionTokens;
          pred.suffix_tokens = kQuestionTokens;
          pred.output_tokens = pred.max_output_tokens =
              predecessor_tokens(profile, report_at, predecessor_s);
          Request target = prefix_request(profile, 2, 7 + target_tokens, target_tokens,
                                          report_at, 8);
          const double footprint_gib =
              double(target.chunk_bytes(target.chunks.size())) / double(kGiB);
          double backlog_gib = 0;
          for (const Request& b : backlog) {
            backlog_gib += with_backlog ? double(b.chunk_bytes(b.chunks.size())) / double(kGiB) : 0;
          }
          RunSpec spec;
          char label[80];
          std::snprintf(label, sizeof label, "fig2 %gs %gGiB backlog %g %s", predecessor_s,
                        footprint_gib, backlog_gib, policy.c_str());
          spec.label = label;
          spec.row.scenario = "fig2-rank";
          spec.row.policy = policy;
          spec.row.model = profile.model;
          spec.row.ratio = 1.0;
          spec.stack = base_stack(runner, profile, policy, scale.fast_tier_gib);
          spec.stack.jitter_sigma = 0;
          spec.stack.engines = 1;
          spec.stack.max_active = 1;
          // The predecessor's generation limit is its true length and the prior does not cap
          // it, so its remaining service time is known exactly (the nominal one).
          spec.stack.prior_output_tokens = 1u << 24;
          spec.also_precompute = backlog;
          if (with_backlog) {
            spec.before_submit = [backlog](EvalStack& s, TimePoint) {
              for (const Request& b : backlog) {
                StagingProvider* provider = &s.provider();
                auto r = provider->commit(claim_of(b, b.id), [provider](ClaimId id, Status st) {
                  if (st.is_ok()) (void)provider->release(id);
                });
                TEMPOKV_RETURN_IF_ERROR(r.status());
                if (*r == CommitState::kStageReady) TEMPOKV_RETURN_IF_ERROR(provider->release(b.id));
              }
              return Status::ok();
            };
          }
          spec.after_run = [predecessor_s, footprint_gib, backlog_gib](EvalStack& s, TimePoint,
                                                                       EvalRow& row) {
            double use = 0, ready = 0, actual = 0, ttft = 0, commit = 0;
            std::optional<TimePoint> pred_end;
            for (const RequestRecord& r : s.records()) {
              if (r.id == 1) pred_end = r.finished;
            }
            for (const RequestRecord& r : s.records()) {
              if (r.id != 2 || !r.claim_reported) continue;
              const TimePoint rep = *r.claim_reported;
              // Use: when the runtime asks for the KV (admission requests the retrieval); the copy
              // itself starts at max(use, ready).
              if (r.admitted) use = to_seconds(*r.admitted - rep);
              if (r.ready) ready = to_seconds(*r.ready - rep);
              if (r.committed) commit = to_seconds(*r.committed - rep);
              if (pred_end) actual = to_seconds(*pred_end - rep);
              if (r.ttft()) ttft = to_seconds(*r.ttft());
            }
            row.extra = {{"predecessor_s", predecessor_s},
                         {"predecessor_actual_s", actual},
                         {"footprint_gib", footprint_gib},
                         {"backlog_gib", backlog_gib},
                         {"use_s", use},
                         {"ready_s", ready},
                         {"margin_s", use - ready},
                         {"commit_s", commit},
                         {"ttft_s", ttft}};
          };
          spec.requests = {pred, target};
          TEMPOKV_RETURN_IF_ERROR(runner.run(std::move(spec)).status());
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace tempokv
