#include "adapter/cost_profile.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tempokv {

Duration CostProfile::prefill(uint64_t n, uint64_t context_tokens) const {
  double x = static_cast<double>(n);
  double m = static_cast<double>(context_tokens);
  return from_seconds(prefill_a_s + prefill_b_s_per_token * x +
                      prefill_c_s_per_token2 * (x * x + 2 * x * m));
}

Duration CostProfile::decode_step(uint64_t context_tokens, uint64_t batch) const {
  return from_seconds(decode_a_s + decode_b_s_per_context_token * double(context_tokens) +
                      decode_c_s_per_seq * double(batch));
}

Duration CostProfile::decode_steps(uint64_t steps, uint64_t context_tokens, uint64_t batch) const {
  double m = static_cast<double>(steps);
  double b = static_cast<double>(batch);
  // Σ_{k=0}^{m-1} (a + β(ctx + k·batch) + c·batch) = m(a + c·batch) + β(m·ctx + batch·m(m−1)/2)
  double s = m * (decode_a_s + decode_c_s_per_seq * b) +
             decode_b_s_per_context_token * (m * double(context_tokens) + b * m * (m - 1) / 2);
  return from_seconds(s);
}

Duration CostProfile::retrieval(uint64_t bytes) const {
  if (bytes == 0) return Duration::zero();
  return from_seconds(retrieval_latency_s + double(bytes) / retrieval_bytes_per_s);
}

CostProfile CostProfile::perturbed(double e) const {
  CostProfile p = *this;
  if (e == 0) return p;
  const double up = 1 + e, down = 1 - e;
  p.prefill_a_s *= up;
  p.prefill_b_s_per_token *= down;
  p.prefill_c_s_per_token2 *= up;
  p.decode_a_s *= down;
  p.decode_b_s_per_context_token *= up;
  p.decode_c_s_per_seq *= down;
  p.retrieval_latency_s *= up;
  p.retrieval_bytes_per_s /= up;
  return p;
}

CostProfile CostProfile::scaled(double f, double decode_f) const {
  CostProfile p = *this;
  for (double* v : {&p.prefill_a_s, &p.prefill_b_s_per_token, &p.prefill_c_s_per_token2,
                    &p.retrieval_latency_s}) {
    *v *= f;
  }
  for (double* v : {&p.decode_a_s, &p.decode_b_s_per_context_token, &p.decode_c_s_per_seq}) {
    *v *= decode_f;
  }
  p.retrieval_bytes_per_s /= f;
  return p;
}

Status CostProfile::validate() const {
  auto bad = [&](const char* field, const char* why) {
    return Status::invalid_argument("cost profile '" + name + "': " + field + " " + why);
  };
  if (name.empty()) return Status::invalid_argument("cost profile: name is empty");
  if (kv_bytes_per_token == 0) return bad("kv_bytes_per_token", "must be positive");
  for (auto [field, v] : {std::pair{"prefill.a_s", prefill_a_s},
                          {"prefill.b_s_per_token", prefill_b_s_per_token},
                          {"prefill.c_s_per_token2", prefill_c_s_per_token2},
                          {"decode.a_s", decode_a_s},
                          {"decode.b_s_per_context_token", decode_b_s_per_context_token},
                          {"decode.c_s_per_seq", decode_c_s_per_seq},
                          {"retrieval.latency_s", retrieval_latency_s}}) {
    if (!(v >= 0)) return bad(field, "must be a non-negative number");
  }
  if (!(retrieval_bytes_per_s > 0)) return bad("retrieval.bytes_per_s", "must be positive");
  if (decode_a_s + decode_c_s_per_seq <= 0) return bad("decode", "step cost must be positive");
  return Status::ok();
}

Result<CostProfile> CostProfile::parse(const std::string& text, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::invalid_argument("cost profile " + origin + " is not a JSON object");
  }
  CostProfile p;
  std::string missing;
  auto num = [&](const nlohmann::json& obj, const char* section, const char* field) -> double {
    if (!obj.contains(field) || !obj[field].is_number()) {
      if (missing.empty()) missing = *section ? std::string(section) + "." + field : field;
      return 0;
    }
    return obj[field].get<double>();
  };
  auto section = [&](const char* s) -> const nlohmann::json& {
    static const nlohmann::json kEmpty = nlohmann::json::object();
    return j.contains(s) && j[s].is_object() ? j[s] : kEmpty;
  };
  p.name = j.value("name", "");
  p.model = j.value("model", "");
  p.kv_bytes_per_token = static_cast<uint64_t>(num(j, "", "kv_bytes_per_token"));
  p.prefill_a_s = num(section("prefill"), "prefill", "a_s");
  p.prefill_b_s_per_token = num(section("prefill"), "prefill", "b_s_per_token");
  p.prefill_c_s_per_token2 = num(section("prefill"), "prefill", "c_s_per_token2");
  p.decode_a_s = num(section("decode"), "decode", "a_s");
  p.decode_b_s_per_context_token = num(section("decode"), "decode", "b_s_per_context_token");
  p.decode_c_s_per_seq = num(section("decode"), "decode", "c_s_per_seq");
  p.retrieval_latency_s = num(section("retrieval"), "retrieval", "latency_s");
  p.retrieval_bytes_per_s = num(section("retrieval"), "retrieval", "bytes_per_s");
  if (j.contains("gpu")) {  // optional
    p.kv_capacity_tokens = static_cast<uint64_t>(num(section("gpu"), "gpu", "kv_capacity_tokens"));
  }
  if (!missing.empty()) {
    return Status::invalid_argument("cost profile " + origin + ": field " + missing +
                                    " is missing or not a number");
  }
  TEMPOKV_RETURN_IF_ERROR(p.validate());
  return p;
}

Result<CostProfile> CostProfile::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::not_found("cost profile " + path + " cannot be opened");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

}  // namespace tempokv
