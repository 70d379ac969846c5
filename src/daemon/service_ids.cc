// ServiceCore: per-runtime request-id spaces. A runtime's ids reach the adapter and the
// controller (whose claims are keyed by id across the daemon) XORed with the runtime's random
// salt, so two runtimes may use the same ids: a collision of the salted ids needs another
// runtime's secret salt. Translating is arithmetic, not a lookup, so a step of 1,000 ids costs
// no map probes. Ids go back to the runtime's own in notifications and error messages.
#include <string>
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
  }
  template <typename T>
  void operator()(T&) const {}  // no request ids
};

// The request ids an op names, its first kMaxNamed (an error message names one or two): the
// cost of translating a message stays bounded whatever the op's lists hold.
constexpr size_t kMaxNamed = 256;
std::vector<uint64_t> named_ids(const Op& op) {
  std::vector<uint64_t> out;
  auto add = [&](uint64_t id) {
    if (out.size() < kMaxNamed) out.push_back(id);
  };
  auto add_all = [&](const std::vector<uint64_t>& ids) {
    for (uint64_t id : ids) add(id);
  };
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (requires { m.request_id; }) add(m.request_id);
        if constexpr (std::is_same_v<T, AddRequest>) add(m.request.id);
        if constexpr (std::is_same_v<T, UpdateOrder>) add_all(m.waiting);
        if constexpr (std::is_same_v<T, IterationStarted>) {
          add_all(m.prefills);
          add_all(m.decoders);
        }
        if constexpr (std::is_same_v<T, Step>) {
          for (const RequestInfo& r : m.queued) add(r.id);
          for (const StepFinished& f : m.finished) add(f.request_id);
          for (const StepPrefill& p : m.prefills) add(p.request_id);
          add_all(m.decoders);
          add_all(m.waiting);
          add_all(m.admitted);
        }
      },
      op);
  return out;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from == to) return;
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) {
    s.replace(at, from.size(), to);
  }
}

}  // namespace

Op ServiceCore::to_internal_ids(Op op, uint64_t salt) {
  std::visit(Salter{salt}, op);
  return op;
}

Status ServiceCore::to_runtime_ids(const Status& st, const Op& internal, uint64_t salt) {
  if (st.is_ok()) return st;
  std::string message = st.message();
  for (uint64_t id : named_ids(internal)) {
    replace_all(message, std::to_string(id), std::to_string(id ^ salt));
  }
  return Status(st.code(), message);
}

}  // namespace tempokv::service
