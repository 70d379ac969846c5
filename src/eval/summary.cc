// The comparisons docs/evaluation.md reports under each table (format_eval_summary, report.h).
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "eval/report.h"

namespace tempokv {
namespace {

const EvalRow* find(const std::vector<const EvalRow*>& rows, const std::string& policy) {
  for (const EvalRow* r : rows) {
    if (r->policy == policy) return r;
  }
  return nullptr;
}

std::string line(const char* f, double a = 0, double b = 0, double c = 0, double d = 0,
                 double e = 0, double g = 0) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a, b, c, d, e, g);
  return buf;
}

// With --seeds the comparisons are of the means over the seeds; otherwise of the run itself.
double p95(const EvalRow* r) {
  double m = r->get("p95_ttft_s_mean");
  return std::isnan(m) ? r->p95_ttft_s : m;
}
double cost(const EvalRow* r) {
  double m = r->get("c_gib_s_per_req_mean");
  return std::isnan(m) ? r->c_gib_s_per_req : m;
}

double change_pct(double now, double before) {
  return before != 0 ? 100.0 * (now - before) / before : NAN;
}

}  // namespace

std::string format_eval_summary(const EvalResult& result) {
  if (result.rows.empty()) return "";
  std::ostringstream out;
  const std::string& scenario = result.rows.front().scenario;
  if (scenario == "fig4-policies") {
    std::map<std::pair<std::string, double>, std::vector<const EvalRow*>> groups;
    for (const EvalRow& r : result.rows) groups[{r.model, r.ratio}].push_back(&r);
    for (const auto& [key, rows] : groups) {
      const EvalRow* t = find(rows, "tempokv");
      const EvalRow* im = find(rows, "immediate");
      const EvalRow* de = find(rows, "demand");
      const EvalRow* q4 = find(rows, "queue-4");
      if (!t) continue;
      out << key.first << " " << key.second * 100 << "%: ";
      if (im && cost(im) > 0) {
        out << line("C tempokv %.2f = %.2f x immediate's %.2f (floor %.2f, with staging %.2f)",
                    cost(t), cost(t) / cost(im), cost(im), t->c_floor_gib_s_per_req,
                    t->c_floor_staging_gib_s_per_req);
      }
      if (de) {
        out << line("; p95 %.3f s vs demand %.3f s (%+.1f %%)", p95(t), p95(de),
                    change_pct(p95(t), p95(de)));
      }
      const EvalRow* best = nullptr;
      for (const EvalRow* r : {im, q4}) {
        if (r && (!best || p95(r) < p95(best))) best = r;
      }
      if (best) {
        out << "; vs best of immediate/queue-4 (" << best->policy
            << line(" %.3f s): %+.1f %%", p95(best), change_pct(p95(t), p95(best)));
      }
      const double late = t->get("lateness_p95_s_mean");
      if (!std::isnan(late)) out << line("; lateness p95 %.3f s", late);
      if (const EvalRow* pr = find(rows, "tempokv-progressive")) {
        out << line("; progressive release: C %.2f (%+.1f %%), p95 %+.1f %%, throughput %+.1f %%",
                    pr->c_gib_s_per_req, change_pct(pr->c_gib_s_per_req, t->c_gib_s_per_req),
                    change_pct(pr->p95_ttft_s, t->p95_ttft_s),
                    change_pct(pr->throughput_tok_s, t->throughput_tok_s));
      }
      out << "\n";
    }
  } else if (scenario == "fig5-capacity") {
    std::map<std::string, std::map<double, const EvalRow*>> by;
    std::map<double, std::vector<const EvalRow*>> tiers;
    for (const EvalRow& r : result.rows) {
      by[r.policy][r.fast_tier_gib] = &r;
      tiers[r.fast_tier_gib].push_back(&r);
    }
    for (const auto& [policy, m] : by) {
      if (m.size() < 2) continue;
      const EvalRow* small = m.begin()->second;
      const EvalRow* large = m.rbegin()->second;
      out << policy
          << line(": %.3g -> %.3g GiB: throughput %+.1f %%, p95 TTFT %+.1f %%, C %.2f -> %.2f\n",
                  large->fast_tier_gib, small->fast_tier_gib,
                  change_pct(small->throughput_tok_s, large->throughput_tok_s),
                  change_pct(small->p95_ttft_s, large->p95_ttft_s), large->c_gib_s_per_req,
                  small->c_gib_s_per_req);
    }
    const auto& smallest = tiers.begin()->second;
    const EvalRow *best_thr = nullptr, *best_p95 = nullptr;
    for (const EvalRow* r : smallest) {
      if (!best_thr || r->throughput_tok_s > best_thr->throughput_tok_s) best_thr = r;
      if (!best_p95 || r->p95_ttft_s < best_p95->p95_ttft_s) best_p95 = r;
    }
    out << line("at %.3g GiB: best throughput ", tiers.begin()->first) << best_thr->policy
        << ", best p95 TTFT " << best_p95->policy << "\n";
  } else if (scenario == "fig6-rate") {
    std::map<double, std::vector<const EvalRow*>> by;
    for (const EvalRow& r : result.rows) by[r.rate].push_back(&r);
    for (const auto& [rate, rows] : by) {
      const EvalRow* t = find(rows, "tempokv");
      const EvalRow* b = find(rows, "lmcache-dax");
      if (!t || !b) continue;
      out << line("r=%g: p95 TTFT tempokv %.3f s vs lmcache-dax %.3f s (%+.1f %%); throughput "
                  "%+.1f %%\n",
                  rate, t->p95_ttft_s, b->p95_ttft_s, change_pct(t->p95_ttft_s, b->p95_ttft_s),
                  change_pct(t->throughput_tok_s, b->throughput_tok_s));
    }
  } else if (scenario == "trace") {
    for (const EvalRow& r : result.rows) {
      out << r.policy << line(": %.1f s of wall time for %.0f requests\n", r.wall_s,
                              double(r.requests));
    }
  }
  return out.str();
}

}  // namespace tempokv
