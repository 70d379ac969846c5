// ServiceCore: per-runtime request-id spaces. A runtime's ids reach the adapter and the
// controller (whose claims are keyed by id across the daemon) XORed with the runtime's random
// salt, so two runtimes may use the same ids: a collision of the salted ids needs another
// runtime's secret salt. Translating is arithmetic, not a lookup, so a step of 1,000 ids costs
// no map probes. Ids go back to the runtime's own in notifications and error messages.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "daemon/service_core.h"
#include "daemon/service_state.h"

namespace tempokv::service {
namespace {

struct Salter {
  uint64_t salt;
  void id(uint64_t& v) const { v ^= salt; }
  void ids(std::vector<uint64_t>& v) const {
    for (uint64_t& x : v) x ^= salt;
  }
  void operator()(AddRequest& m) const { id(m.request.id); }
  void operator()(ReportHit& m) const { id(m.request_id); }
  void operator()(UpdateOrder& m) const { ids(m.waiting); }
  void operator()(IterationStarted& m) const {
    ids(m.prefills);
    ids(m.decoders);
  }
  void operator()(Admitted& m) const { id(m.request_id); }
  void operator()(PrefillDone& m) const { id(m.request_id); }
  void operator()(TokensGenerated& m) const { id(m.request_id); }
  void operator()(Finished& m) const { id(m.request_id); }
  void operator()(RequestRetrieval& m) const { id(m.request_id); }
  void operator()(BeginTransfer& m) const { id(m.request_id); }
  void operator()(EndTransfer& m) const { id(m.request_id); }
  void operator()(ObjectTransferred& m) const { id(m.request_id); }
  void operator()(Cancel& m) const { id(m.request_id); }
  void operator()(Step& m) const {
    for (RequestInfo& r : m.queued) id(r.id);
    for (StepFinished& f : m.finished) id(f.request_id);
    for (StepPrefill& p : m.prefills) id(p.request_id);
    ids(m.decoders);
    ids(m.waiting);
    ids(m.admitted);
    ids(m.decoders_gone);
    ids(m.decoders_new);
    ids(m.waiting_new);
  }
  template <typename T>
  void operator()(T&) const {}  // no request ids
};

// Every request id an op names (salted). Only an error reply collects them.
std::vector<uint64_t> named_ids(const Op& op) {
  std::vector<uint64_t> out;
  auto add_all = [&](const std::vector<uint64_t>& ids) {
    out.insert(out.end(), ids.begin(), ids.end());
  };
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (requires { m.request_id; }) out.push_back(m.request_id);
        if constexpr (std::is_same_v<T, AddRequest>) out.push_back(m.request.id);
        if constexpr (std::is_same_v<T, UpdateOrder>) add_all(m.waiting);
        if constexpr (std::is_same_v<T, IterationStarted>) {
          add_all(m.prefills);
          add_all(m.decoders);
        }
        if constexpr (std::is_same_v<T, Step>) {
          for (const RequestInfo& r : m.queued) out.push_back(r.id);
          for (const StepFinished& f : m.finished) out.push_back(f.request_id);
          for (const StepPrefill& p : m.prefills) out.push_back(p.request_id);
          add_all(m.decoders);
          add_all(m.waiting);
          add_all(m.admitted);
          add_all(m.decoders_gone);
          add_all(m.decoders_new);
          add_all(m.waiting_new);
        }
      },
      op);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Op ServiceCore::to_internal_ids(Op op, uint64_t salt) {
  std::visit(Salter{salt}, op);
  return op;
}

Status ServiceCore::to_runtime_ids(const Status& st, const Op& internal, uint64_t salt,
                                   std::span<const uint64_t> more) {
  if (st.is_ok()) return st;
  // Each whole number in the message that is one of the op's ids goes back to the runtime's own:
  // a message names one or two, so the cost is the op's size (once, sorted) whatever its lists
  // hold, and an id anywhere in them is translated.
  std::vector<uint64_t> ids = named_ids(internal);
  if (!more.empty()) {
    ids.insert(ids.end(), more.begin(), more.end());
    std::sort(ids.begin(), ids.end());
  }
  const std::string& in = st.message();
  std::string out;
  out.reserve(in.size());
  for (size_t at = 0; at < in.size();) {
    if (!std::isdigit(static_cast<unsigned char>(in[at]))) {
      out += in[at++];
      continue;
    }
    size_t end = at;
    while (end < in.size() && std::isdigit(static_cast<unsigned char>(in[end]))) ++end;
    const std::string_view number(in.data() + at, end - at);
    uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec == std::errc() && ptr == number.data() + number.size() &&
        std::binary_search(ids.begin(), ids.end(), v)) {
      out += std::to_string(v ^ salt);
    } else {
      out += number;
    }
    at = end;
  }
  return Status(st.code(), out);
}

}  // namespace tempokv::service
