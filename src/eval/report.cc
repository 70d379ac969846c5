#include "eval/report.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tempokv {
namespace {

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Status::io_error("cannot write " + path);
  out << text;
  out.close();
  if (!out) return Status::io_error("error writing " + path);
  return Status::ok();
}

std::string num(double v, const char* f = "%.3f") {
  if (std::isnan(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

struct Column {
  std::string header;
  std::function<std::string(const EvalRow&)> cell;
};

std::string render(const std::vector<EvalRow>& rows, const std::vector<Column>& cols) {
  std::vector<size_t> width;
  for (const Column& c : cols) width.push_back(c.header.size());
  std::vector<std::vector<std::string>> cells;
  for (const EvalRow& r : rows) {
    std::vector<std::string> line;
    for (size_t i = 0; i < cols.size(); ++i) {
      line.push_back(cols[i].cell(r));
      width[i] = std::max(width[i], line.back().size());
    }
    cells.push_back(std::move(line));
  }
  std::ostringstream out;
  auto emit = [&](const std::vector<std::string>& line) {
    for (size_t i = 0; i < line.size(); ++i) {
      out << (i ? "  " : "");
      // Text columns left-aligned (the first ones), numbers right-aligned.
      if (i < 1) {
        out << line[i] << std::string(width[i] - line[i].size(), ' ');
      } else {
        out << std::string(width[i] - line[i].size(), ' ') << line[i];
      }
    }
    out << "\n";
  };
  std::vector<std::string> head;
  for (const Column& c : cols) head.push_back(c.header);
  emit(head);
  for (const auto& line : cells) emit(line);
  return out.str();
}

Column text(const std::string& h, std::function<std::string(const EvalRow&)> f) {
  return {h, std::move(f)};
}
Column number(const std::string& h, std::function<double(const EvalRow&)> f,
              const char* format = "%.3f") {
  return {h, [f = std::move(f), format](const EvalRow& r) { return num(f(r), format); }};
}
Column extra(const std::string& h, const std::string& name, const char* format = "%.3f") {
  return number(h, [name](const EvalRow& r) { return r.get(name); }, format);
}

std::vector<Column> serving_columns() {
  return {number("done", [](const EvalRow& r) { return double(r.completed); }, "%.0f"),
          number("p50 s", [](const EvalRow& r) { return r.p50_ttft_s; }),
          number("p95 s", [](const EvalRow& r) { return r.p95_ttft_s; }),
          number("p99 s", [](const EvalRow& r) { return r.p99_ttft_s; }),
          number("tok/s", [](const EvalRow& r) { return r.throughput_tok_s; }, "%.1f"),
          number("C GiB.s/req", [](const EvalRow& r) { return r.c_gib_s_per_req; }, "%.3g"),
          number("floor", [](const EvalRow& r) { return r.c_floor_gib_s_per_req; }, "%.3g"),
          number("floor+stg", [](const EvalRow& r) { return r.c_floor_staging_gib_s_per_req; },
                 "%.3g"),
          number("refused", [](const EvalRow& r) { return double(r.refused_commits); }, "%.0f"),
          number("ordinary", [](const EvalRow& r) { return double(r.ordinary_retrievals); },
                 "%.0f"),
          number("wall s", [](const EvalRow& r) { return r.wall_s; }, "%.2f")};
}

std::string ratio_text(const EvalRow& r) { return num(r.ratio * 100, "%g%%"); }

}  // namespace

std::string rows_json(const EvalResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const EvalRow& r : result.rows) {
    nlohmann::json j = {{"scenario", r.scenario},
                        {"truth", r.truth},
                        {"policy", r.policy},
                        {"model", r.model},
                        {"ratio", r.ratio},
                        {"fast_tier_gib", r.fast_tier_gib},
                        {"budget_gib", r.budget_gib},
                        {"rate", r.rate},
                        {"engines", r.engines},
                        {"requests", r.requests},
                        {"completed", r.completed},
                        {"output_tokens", r.output_tokens},
                        {"p50_ttft_s", r.p50_ttft_s},
                        {"p95_ttft_s", r.p95_ttft_s},
                        {"p99_ttft_s", r.p99_ttft_s},
                        {"mean_ttft_s", r.mean_ttft_s},
                        {"throughput_tok_s", r.throughput_tok_s},
                        {"makespan_s", r.makespan_s},
                        {"c_gib_s_per_req", r.c_gib_s_per_req},
                        {"c_floor_gib_s_per_req", r.c_floor_gib_s_per_req},
                        {"c_floor_staging_gib_s_per_req", r.c_floor_staging_gib_s_per_req},
                        {"refused_commits", r.refused_commits},
                        {"refused_attempts", r.refused_attempts},
                        {"commits", r.commits},
                        {"ordinary_retrievals", r.ordinary_retrievals},
                        {"staged_retrievals", r.staged_retrievals},
                        {"no_hit", r.no_hit},
                        {"recomputes", r.recomputes},
                        {"verified_chunks", r.verified_chunks},
                        {"mismatched_chunks", r.mismatched_chunks},
                        {"wall_s", r.wall_s}};
    for (const auto& [k, v] : r.extra) j[k] = v;
    if (!r.histograms.empty()) {
      // As the vLLM rows carry tempokvd's /metrics buckets: {name: [[le, cumulative], ...]}.
      const std::vector<double> bounds = projection_error_bounds();
      nlohmann::json h = nlohmann::json::object();
      for (const auto& [name, counts] : r.histograms) {
        nlohmann::json buckets = nlohmann::json::array();
        for (size_t i = 0; i < counts.size(); ++i) {
          const std::string le = i < bounds.size() ? bucket_label(bounds[i]) : "+Inf";
          buckets.push_back(nlohmann::json::array({le, counts[i]}));
        }
        h[name] = std::move(buckets);
      }
      j["histograms"] = std::move(h);
    }
    rows.push_back(std::move(j));
  }
  return nlohmann::json{{"rows", rows}}.dump(1) + "\n";
}

Status write_rows_json(const EvalResult& result, const std::string& path) {
  return write_file(path, rows_json(result));
}

std::string requests_csv(const EvalResult& result) {
  std::ostringstream out;
  out << "scenario,policy,model,ratio,fast_tier_gib,rate,run,id,engine,prompt_tokens,hit_chunks,"
         "cached_tokens,cached_bytes,prefill_tokens,output_tokens,max_output_tokens,path,"
         "arrival_s,claim_reported_s,committed_s,ready_s,admitted_s,retrieval_start_s,"
         "retrieval_end_s,first_token_s,finished_s,ttft_s,first_ttu_s,verified_chunks,"
         "mismatched_chunks,failure,retrieval_requested_s,projected_use_at_commit_s,"
         "ttr_at_commit_s,projected_use_before_request_s\n";
  for (size_t run = 0; run < result.runs.size(); ++run) {
    const RunRecords& rr = result.runs[run];
    const EvalRow& row = result.rows[rr.row];
    auto t = [&](const std::optional<TimePoint>& tp) {
      return tp ? num(to_seconds(*tp - rr.start), "%.6f") : std::string();
    };
    for (const RequestRecord& r : rr.records) {
      std::string failure = r.failure;
      for (char& c : failure) {
        if (c == ',' || c == '\n' || c == '"') c = ';';
      }
      out << row.scenario << ',' << row.policy << ',' << row.model << ',' << row.ratio << ','
          << num(row.fast_tier_gib, "%g") << ',' << num(row.rate, "%g") << ',' << run << ','
          << r.id << ',' << r.engine << ',' << r.prompt_tokens << ',' << r.hit_chunks << ','
          << r.cached_tokens << ',' << r.cached_bytes << ',' << r.prefill_tokens << ','
          << r.output_tokens << ',' << r.max_output_tokens << ',' << request_path_name(r.path)
          << ',' << num(to_seconds(r.arrival - rr.start), "%.6f") << ',' << t(r.claim_reported)
          << ',' << t(r.committed) << ',' << t(r.ready) << ',' << t(r.admitted) << ','
          << t(r.retrieval_start) << ',' << t(r.retrieval_end) << ',' << t(r.first_token) << ','
          << t(r.finished) << ',' << (r.ttft() ? num(to_seconds(*r.ttft()), "%.6f") : "") << ','
          << (r.first_ttu ? num(to_seconds(*r.first_ttu), "%.6f") : "") << ','
          << r.verified_chunks << ',' << r.mismatched_chunks << ',' << failure << ','
          << t(r.retrieval_requested) << ',' << t(r.projected_use_at_commit) << ','
          << (r.ttr_at_commit ? num(to_seconds(*r.ttr_at_commit), "%.6f") : "") << ','
          << t(r.projected_use_before_request) << '\n';
    }
  }
  return out.str();
}

Status write_requests_csv(const EvalResult& result, const std::string& path) {
  return write_file(path, requests_csv(result));
}

std::string format_eval_table(const EvalResult& result) {
  if (result.rows.empty()) return "";
  const std::string& scenario = result.rows.front().scenario;
  std::vector<Column> cols;
  auto policy = text("policy", [](const EvalRow& r) { return r.policy; });
  if (scenario == "fig1-lead") {
    cols = {policy, extra("lead s", "lead_s", "%g"), extra("ttft s", "ttft_s"),
            extra("protected GiB.s", "protected_gib_s", "%.2f"),
            extra("before submit GiB.s", "protected_before_submission_gib_s", "%.2f"),
            extra("footprint GiB", "footprint_gib", "%.2f")};
  } else if (scenario == "fig2-rank") {
    cols = {policy,
            extra("pred s", "predecessor_s", "%g"),
            extra("pred actual s", "predecessor_actual_s"),
            extra("target GiB", "footprint_gib", "%g"),
            extra("backlog GiB", "backlog_gib", "%g"),
            extra("commit s", "commit_s"),
            extra("ready s", "ready_s"),
            extra("use s", "use_s"),
            extra("margin s", "margin_s", "%+.3f"),
            extra("ttft s", "ttft_s")};
  } else {
    cols = {policy};
    if (!result.rows.front().truth.empty()) {
      cols.push_back(text("truth", [](const EvalRow& r) { return r.truth; }));
    }
    if (scenario == "fig4-policies") {
      cols.push_back(text("model", [](const EvalRow& r) { return r.model; }));
      cols.push_back(text("ratio", ratio_text));
    } else if (scenario == "fig5-capacity") {
      cols.push_back(number("tier GiB", [](const EvalRow& r) { return r.fast_tier_gib; }, "%.3g"));
    } else if (scenario == "fig6-rate") {
      cols.push_back(number("rate/s", [](const EvalRow& r) { return r.rate; }, "%g"));
    } else if (scenario == "trace") {
      cols.push_back(number("engines", [](const EvalRow& r) { return double(r.engines); }, "%.0f"));
      cols.push_back(extra("util", "utilisation", "%.2f"));
      cols.push_back(extra("hit reqs", "hit_requests", "%.0f"));
    }
    for (Column& c : serving_columns()) cols.push_back(std::move(c));
    bool real = false;
    for (const EvalRow& r : result.rows) real = real || r.verified_chunks > 0;
    if (real) {
      cols.push_back(number("verified", [](const EvalRow& r) { return double(r.verified_chunks); },
                            "%.0f"));
      cols.push_back(number("mismatch",
                            [](const EvalRow& r) { return double(r.mismatched_chunks); }, "%.0f"));
    }
    bool service = false;
    for (const EvalRow& r : result.rows) {
      service = service || !std::isnan(r.get("service_ms_per_claim"));
    }
    if (service) {
      cols.push_back(extra("calls/claim", "service_calls_per_claim", "%.1f"));
      cols.push_back(extra("ms/claim", "service_ms_per_claim", "%.2f"));
    }
  }
  return render(result.rows, cols);
}

}  // namespace tempokv
