#include "workload/mooncake_trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "workload/tokens.h"

namespace tempokv {
namespace {

Status line_error(std::string_view origin, size_t line_no, const std::string& what) {
  return Status::invalid_argument(std::string(origin) + ":" + std::to_string(line_no) + ": " +
                                  what);
}

Result<uint32_t> token_count(const nlohmann::json& j, const char* field, std::string_view origin,
                             size_t line_no) {
  if (!j.contains(field) || !j[field].is_number_integer() || j[field].get<int64_t>() < 0 ||
      j[field].get<int64_t>() > int64_t{UINT32_MAX}) {
    return line_error(origin, line_no,
                      std::string("field ") + field + " is missing or not a token count");
  }
  return static_cast<uint32_t>(j[field].get<int64_t>());
}

}  // namespace

Result<TraceRecord> parse_trace_line(std::string_view line, std::string_view origin,
                                     size_t line_no) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return line_error(origin, line_no, "not a JSON object");
  }
  TraceRecord r;
  if (!j.contains("timestamp") || !j["timestamp"].is_number() || j["timestamp"].get<double>() < 0) {
    return line_error(origin, line_no, "field timestamp is missing or not a non-negative number");
  }
  r.timestamp_ms = j["timestamp"].get<double>();
  TEMPOKV_ASSIGN_OR_RETURN(r.input_length, token_count(j, "input_length", origin, line_no));
  TEMPOKV_ASSIGN_OR_RETURN(r.output_length, token_count(j, "output_length", origin, line_no));
  if (r.input_length == 0) return line_error(origin, line_no, "input_length is zero");
  if (!j.contains("hash_ids") || !j["hash_ids"].is_array()) {
    return line_error(origin, line_no, "field hash_ids is missing or not an array");
  }
  r.hash_ids.reserve(j["hash_ids"].size());
  for (const auto& h : j["hash_ids"]) {
    if (!h.is_number_unsigned()) {
      return line_error(origin, line_no, "hash_ids holds a value that is not an unsigned integer");
    }
    r.hash_ids.push_back(h.get<uint64_t>());
  }
  return r;
}

Result<std::vector<TraceRecord>> parse_trace(std::istream& in, std::string_view origin) {
  std::vector<TraceRecord> out;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    TEMPOKV_ASSIGN_OR_RETURN(TraceRecord r, parse_trace_line(line, origin, line_no));
    out.push_back(std::move(r));
  }
  if (in.bad()) return Status::io_error(std::string(origin) + ": read failed");
  return out;
}

Result<std::vector<TraceRecord>> load_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::not_found("trace " + path + " cannot be opened");
  return parse_trace(in, path);
}

Status TraceReplayOptions::validate() const {
  auto bad = [](const std::string& m) {
    return Status::invalid_argument("TraceReplayOptions." + m);
  };
  if (model.empty()) return bad("model is empty");
  if (block_tokens == 0 || chunk_tokens == 0 || block_tokens % chunk_tokens != 0) {
    return bad("chunk_tokens must divide block_tokens (both >= 1)");
  }
  if (window_start < Duration::zero()) return bad("window_start must not be negative");
  if (window_duration && *window_duration <= Duration::zero()) {
    return bad("window_duration must be positive");
  }
  if (!(time_scale > 0) || !std::isfinite(time_scale)) return bad("time_scale must be positive");
  if (max_output_tokens == 0) return bad("max_output_tokens must be >= 1");
  return Status::ok();
}

Result<std::vector<Request>> make_trace_requests(std::span<const TraceRecord> records,
                                                 const TraceReplayOptions& o) {
  TEMPOKV_RETURN_IF_ERROR(o.validate());
  TEMPOKV_ASSIGN_OR_RETURN(uint64_t kv_per_token,
                           resolve_kv_bytes_per_token(o.model, o.kv_bytes_per_token));
  const uint64_t mid = model_id(o.model);
  const uint32_t per_block = o.block_tokens / o.chunk_tokens;
  // Hash ids are prefix hashes: (id, position in block) fixes the chunk and everything before it,
  // so its chained key is computed once, at its first appearance.
  std::unordered_map<uint64_t, uint64_t> chunk_hash;  // id * per_block + j -> chain hash
  std::vector<uint32_t> tokens;
  std::vector<Request> out;
  uint64_t id = o.first_id;
  for (const TraceRecord& rec : records) {
    Duration ts = from_seconds(rec.timestamp_ms / 1000.0);
    if (ts < o.window_start) continue;
    if (o.window_duration && ts >= o.window_start + *o.window_duration) continue;
    Request r;
    r.id = id++;
    r.arrival = from_seconds(to_seconds(ts - o.window_start) * o.time_scale);
    r.model = o.model;
    r.prompt_tokens = rec.input_length;
    r.max_output_tokens = o.max_output_tokens;
    r.output_tokens = std::max<uint32_t>(rec.output_length, 1);
    r.writes_kv = true;
    uint64_t prev = 0;
    for (size_t b = 0; b < rec.hash_ids.size(); ++b) {
      const uint64_t block_begin = uint64_t(b) * o.block_tokens;
      for (uint32_t j = 0; j < per_block; ++j) {
        const uint64_t begin = block_begin + uint64_t(j) * o.chunk_tokens;
        if (begin + o.chunk_tokens > rec.input_length) break;
        const uint64_t slot = rec.hash_ids[b] * per_block + j;
        auto it = chunk_hash.find(slot);
        if (it == chunk_hash.end()) {
          tokens.clear();
          append_synthetic_tokens(o.token_seed ^ (slot * 0x9e3779b97f4a7c15ULL), o.chunk_tokens,
                                  tokens);
          it = chunk_hash.emplace(slot, chain_hash(prev, tokens)).first;
        }
        prev = it->second;
        r.chunks.push_back({Key{mid, prev}, uint64_t(o.chunk_tokens) * kv_per_token,
                            TokenRange{static_cast<uint32_t>(begin),
                                       static_cast<uint32_t>(begin + o.chunk_tokens)}});
      }
    }
    // Chunks past the prompt (hash_ids longer than input_length says) are not part of it.
    const uint32_t cached_max = static_cast<uint32_t>(r.chunks.size()) * o.chunk_tokens;
    r.suffix_tokens = r.prompt_tokens - cached_max;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tempokv
