#include "workload/narrativeqa.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/splitmix.h"
#include "workload/tokens.h"

namespace tempokv {
namespace {

uint32_t uniform_in(uint64_t& state, uint32_t lo, uint32_t hi) {
  return lo + static_cast<uint32_t>(splitmix64(state) % (uint64_t(hi) - lo + 1));
}

// median × exp(σ·z), z standard normal (Box–Muller), rounded, in [1, limit].
uint32_t lognormal_tokens(uint64_t& rng, uint32_t median, double sigma, uint32_t limit) {
  const double u1 = std::max(1e-300, uniform01(rng));
  const double u2 = uniform01(rng);
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  const double v = std::round(double(median) * std::exp(sigma * z));
  return static_cast<uint32_t>(std::clamp(v, 1.0, double(limit)));
}

}  // namespace

Status NarrativeQaOptions::validate() const {
  auto bad = [](const std::string& m) {
    return Status::invalid_argument("NarrativeQaOptions." + m);
  };
  if (model.empty()) return bad("model is empty");
  if (chunk_tokens == 0) return bad("chunk_tokens must be >= 1");
  if (groups.empty()) return bad("groups is empty");
  for (const auto& [lo, hi] : groups) {
    if (lo == 0 || lo > hi) return bad("groups: each range needs 1 <= min <= max");
  }
  if (docs_per_group == 0) return bad("docs_per_group must be >= 1");
  if (question_min_tokens == 0 || question_min_tokens > question_max_tokens) {
    return bad("question_min_tokens must be in [1, question_max_tokens]");
  }
  if (!(cache_ratio > 0 && cache_ratio <= 1)) return bad("cache_ratio must be in (0, 1]");
  if (interval < Duration::zero()) return bad("interval must not be negative");
  if (max_output_tokens == 0) return bad("max_output_tokens must be >= 1");
  if (!(output_log_sigma >= 0 && output_log_sigma < 5) || output_median_tokens == 0) {
    return bad("output_log_sigma must be in [0, 5) and output_median_tokens >= 1");
  }
  if (output_min_tokens == 0 || output_min_tokens > max_output_tokens) {
    return bad("output_min_tokens must be in [1, max_output_tokens]");
  }
  return Status::ok();
}

Result<std::vector<Request>> make_narrativeqa(const NarrativeQaOptions& o) {
  TEMPOKV_RETURN_IF_ERROR(o.validate());
  TEMPOKV_ASSIGN_OR_RETURN(uint64_t kv_per_token,
                           resolve_kv_bytes_per_token(o.model, o.kv_bytes_per_token));
  uint64_t rng = o.seed * 0x9e3779b97f4a7c15ULL + 0x6e71ULL;  // "nq"
  std::vector<Request> requests;
  for (size_t g = 0; g < o.groups.size(); ++g) {
    for (uint32_t d = 0; d < o.docs_per_group; ++d) {
      const uint32_t doc_tokens = uniform_in(rng, o.groups[g].first, o.groups[g].second);
      const uint32_t question = uniform_in(rng, o.question_min_tokens, o.question_max_tokens);
      const uint64_t doc_seed = splitmix64(rng);
      std::vector<uint32_t> tokens;
      append_synthetic_tokens(doc_seed, doc_tokens, tokens);
      Request r;
      r.model = o.model;
      r.prompt_tokens = doc_tokens + question;
      r.suffix_tokens = question;
      r.chunks = chunk_prefix(o.model, tokens, o.chunk_tokens, kv_per_token);
      const auto by_ratio = static_cast<uint32_t>(
          std::floor(o.cache_ratio * double(doc_tokens) / double(o.chunk_tokens) + 1e-9));
      r.precomputed_chunks = std::min<uint32_t>(by_ratio, static_cast<uint32_t>(r.chunks.size()));
      r.writes_kv = false;
      r.max_output_tokens = o.max_output_tokens;
      r.output_tokens = o.output_log_sigma > 0
                            ? lognormal_tokens(rng, o.output_median_tokens, o.output_log_sigma,
                                               o.max_output_tokens)
                            : uniform_in(rng, o.output_min_tokens, o.max_output_tokens);
      requests.push_back(std::move(r));
    }
  }
  if (o.shuffle) {
    for (size_t i = requests.size(); i > 1; --i) {
      std::swap(requests[i - 1], requests[splitmix64(rng) % i]);
    }
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].id = o.first_id + i;
    requests[i].arrival = o.interval * static_cast<int64_t>(i);
  }
  return requests;
}

}  // namespace tempokv
