// `tempokv eval --seeds N [--seed S]`: the same scenario over seeds S..S+N-1 (S = 1 by default), folded into one row per
// configuration (eval.h, docs/evaluation.md "Seeds and intervals").
#include <cmath>
#include <string>

#include "eval/eval.h"

namespace tempokv {
namespace {

// Two-sided 97.5 % quantile of Student's t with df degrees of freedom (df >= 1).
double t975(size_t df) {
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                      2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                      2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                      2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return NAN;
  if (df <= std::size(kTable)) return kTable[df - 1];
  return df <= 60 ? 2.00 : 1.96;
}

bool same_configuration(const EvalRow& a, const EvalRow& b) {
  return a.scenario == b.scenario && a.policy == b.policy && a.model == b.model &&
         a.ratio == b.ratio && a.fast_tier_gib == b.fast_tier_gib && a.rate == b.rate &&
         a.engines == b.engines;
}

double field(const EvalRow& r, const std::string& name) {
  if (name == "p95_ttft_s") return r.p95_ttft_s;
  if (name == "p50_ttft_s") return r.p50_ttft_s;
  if (name == "mean_ttft_s") return r.mean_ttft_s;
  if (name == "c_gib_s_per_req") return r.c_gib_s_per_req;
  if (name == "throughput_tok_s") return r.throughput_tok_s;
  return r.get(name);
}

}  // namespace

MeanCi mean_ci95(const std::vector<double>& values) {
  MeanCi out;
  const size_t n = values.size();
  if (n == 0) return out;
  for (double v : values) out.mean += v / double(n);
  if (n < 2) return out;
  double ss = 0;
  for (double v : values) ss += (v - out.mean) * (v - out.mean);
  out.ci95 = t975(n - 1) * std::sqrt(ss / double(n - 1)) / std::sqrt(double(n));
  return out;
}

Result<EvalResult> run_eval_seeds(const EvalOptions& options) {
  if (options.seeds < 2) return run_eval(options);
  EvalResult folded;
  std::vector<std::vector<EvalRow>> per_seed;
  const uint64_t first = options.seed;
  for (uint64_t s = first; s < first + options.seeds; ++s) {
    EvalOptions o = options;
    o.seeds = 1;
    o.seed = s;
    if (options.progress) {
      o.progress = [&options, s](const std::string& label, uint64_t done, uint64_t total) {
        options.progress("seed " + std::to_string(s) + ": " + label, done, total);
      };
    }
    TEMPOKV_ASSIGN_OR_RETURN(EvalResult r, run_eval(o));
    if (r.skipped) return r;
    if (s == first) {
      folded = r;
    } else if (r.rows.size() != folded.rows.size()) {
      return Status::internal("--seeds: seed " + std::to_string(s) + " ran " +
                              std::to_string(r.rows.size()) + " configurations, seed " + std::to_string(first) + " ran " +
                              std::to_string(folded.rows.size()));
    }
    per_seed.push_back(std::move(r.rows));
  }
  static const char* kFolded[] = {
      "p95_ttft_s", "p50_ttft_s", "mean_ttft_s", "c_gib_s_per_req", "throughput_tok_s",
      "lateness_p50_s", "lateness_p95_s", "late_claims", "ttu_err_p50_s", "ttu_err_p95_s",
      "ttr_err_p50_s", "ttr_err_p95_s", "ttr_rel_err_p95", "preemptions",
      // the fleet's (absent elsewhere: skipped)
      "hit_remote", "miss", "remote_hit_recomputed_chunks", "wrong_chunks", "leaked_bytes"};
  for (size_t i = 0; i < folded.rows.size(); ++i) {
    EvalRow& row = folded.rows[i];
    for (const auto& rows : per_seed) {
      if (!same_configuration(rows[i], row)) {
        return Status::internal("--seeds: configuration " + std::to_string(i) +
                                " differs between seeds (" + rows[i].policy + " vs " +
                                row.policy + ")");
      }
    }
    row.extra.emplace_back("seeds", double(options.seeds));
    // The histograms of every seed's claims (the first seed's row has its own only).
    for (size_t k = 0; k < row.histograms.size(); ++k) {
      std::vector<uint64_t>& sum = row.histograms[k].second;
      for (size_t s = 1; s < per_seed.size(); ++s) {
        const ErrorHistograms& h = per_seed[s][i].histograms;
        if (k >= h.size() || h[k].second.size() != sum.size()) continue;
        for (size_t b = 0; b < sum.size(); ++b) sum[b] += h[k].second[b];
      }
    }
    for (const char* name : kFolded) {
      std::vector<double> values;
      for (const auto& rows : per_seed) {
        double v = field(rows[i], name);
        if (!std::isnan(v)) values.push_back(v);
      }
      if (values.empty()) continue;
      MeanCi m = mean_ci95(values);
      row.extra.emplace_back(std::string(name) + "_mean", m.mean);
      row.extra.emplace_back(std::string(name) + "_ci95", m.ci95);
    }
    // Each seed's p95 and C as well, so that policies can be compared seed by seed (every
    // policy of a seed ran its workload): <field>_seed<S>.
    for (const char* name : {"p95_ttft_s", "c_gib_s_per_req"}) {
      for (size_t k = 0; k < per_seed.size(); ++k) {
        row.extra.emplace_back(std::string(name) + "_seed" + std::to_string(first + k),
                               field(per_seed[k][i], name));
      }
    }
  }
  folded.notes.push_back("rows: seed " + std::to_string(first) +
                         "'s run; *_mean and *_ci95 (95 % t-interval half-width) over seeds " +
                         std::to_string(first) + ".." + std::to_string(first + options.seeds - 1) +
                         "; histograms summed over them");
  return folded;
}

}  // namespace tempokv
