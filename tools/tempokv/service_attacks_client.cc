// The attacks a careless or hostile runtime makes through the client library: quotas it tries to
// get around by cycling sessions, manifests that would cost the daemon memory, a runtime crowded
// with sessions.
#include <memory>
#include <random>
#include <thread>

#include "service_attacks.h"
#include "tempokv/client.h"

namespace tempokv::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool running(const AttackTarget& t) { return Clock::now() < t.deadline; }

void pause(const AttackTarget& t, milliseconds d) {
  std::this_thread::sleep_until(std::min(Clock::now() + d, t.deadline));
}

void note(AttackResult& r, std::string problem) {
  if (r.problems.size() < 5) r.problems.push_back(std::move(problem));
}

std::unique_ptr<ServiceClient> join(const AttackTarget& t, const std::string& runtime,
                                    Status* why = nullptr) {
  ClientOptions o;
  o.endpoint = t.endpoint;
  o.name = "hostile";
  o.runtime = runtime;
  o.call_timeout = std::chrono::seconds(2);  // a refused connection is not waited for long
  o.map_shared_memory = false;
  auto c = ServiceClient::connect(o);
  if (!c.is_ok()) {
    if (why) *why = c.status();
    return nullptr;
  }
  return std::move(c).value();
}

// join(), tried again until the deadline: the idle connections may hold every slot for a while.
std::unique_ptr<ServiceClient> join_retrying(const AttackTarget& t, const std::string& runtime) {
  while (running(t)) {
    if (auto c = join(t, runtime)) return c;
    pause(t, milliseconds(50));
  }
  return nullptr;
}

}  // namespace

AttackResult session_cycling(const AttackTarget& t) {
  AttackResult r{"session_cycling"};
  // A session that stays keeps the runtime, and so the requests the others leave behind.
  auto keeper = join_retrying(t, "hostile-cycled");
  if (!keeper) return r;
  uint64_t next_id = 1, live = 0;
  while (running(t)) {
    auto s = join(t, "hostile-cycled");
    if (!s) {
      pause(t, milliseconds(50));
      continue;
    }
    for (int i = 0; i < 64 && running(t); ++i) {
      Status st = s->add_request({next_id++, 2048, 256, 0, 16});
      ++r.actions;
      if (st.is_ok()) {
        ++live;
      } else if (st.code() != StatusCode::kResourceExhausted) {
        note(r, "add_request refused with " + st.to_string());
      } else {
        break;  // the runtime's quota, as it should be
      }
    }
    if (live > t.max_requests_per_runtime) {
      note(r, "cycled sessions left " + std::to_string(live) +
                  " live requests in one runtime, above server.max_requests_per_runtime");
    }
    (void)s->bye();
  }
  (void)keeper->bye();
  return r;
}

AttackResult duplicate_manifests(const AttackTarget& t) {
  AttackResult r{"duplicate_manifests"};
  auto c = join_retrying(t, "");
  if (!c) return r;
  const std::vector<ManifestEntry> copies(t.max_manifest_entries, ManifestEntry{Key{5, 5}, 1});
  for (uint64_t id = 1; running(t); ++id) {
    if (!c->add_request({id, 2048, 256, 0, 16}).is_ok()) {
      pause(t, milliseconds(50));
      continue;
    }
    Status st = c->report_hit(id, copies);
    ++r.actions;
    if (st.is_ok()) note(r, "a manifest of one key repeated was accepted");
    (void)c->cancel(id);
    pause(t, milliseconds(5));
  }
  (void)c->bye();
  return r;
}

AttackResult large_manifests(const AttackTarget& t) {
  AttackResult r{"large_manifests"};
  auto c = join_retrying(t, "");
  if (!c) return r;
  std::mt19937_64 rng(t.seed * 131 + 7);
  std::vector<uint64_t> live;
  uint64_t held = 0;
  for (uint64_t id = 1; running(t); ++id) {
    std::vector<ManifestEntry> m;
    for (uint32_t i = 0; i < t.max_manifest_entries; ++i) m.push_back({Key{6, rng()}, 1});
    if (!c->add_request({id, 2048, 256, 0, 16}).is_ok()) break;
    Status st = c->report_hit(id, m);
    ++r.actions;
    if (st.is_ok()) {
      live.push_back(id);
      held += m.size();
      if (held > t.max_manifest_entries_per_runtime) {
        note(r, "a runtime's claims held " + std::to_string(held) +
                    " objects, above server.max_manifest_entries_per_runtime");
      }
      continue;
    }
    if (st.code() != StatusCode::kResourceExhausted) note(r, "report_hit: " + st.to_string());
    // Refused at the quota: let go of everything and start over.
    (void)c->cancel(id);
    for (uint64_t held_id : live) (void)c->cancel(held_id);
    live.clear();
    held = 0;
    pause(t, milliseconds(20));
  }
  (void)c->bye();
  return r;
}

AttackResult crowded_runtime(const AttackTarget& t) {
  AttackResult r{"crowded_runtime"};
  while (running(t)) {
    std::vector<std::unique_ptr<ServiceClient>> ranks;
    uint32_t refused = 0;
    for (uint32_t i = 0; i < t.max_sessions_per_runtime + 4 && running(t); ++i) {
      Status why;
      auto s = join(t, "hostile-crowded", &why);
      ++r.actions;
      if (s) {
        ranks.push_back(std::move(s));
      } else if (why.code() == StatusCode::kResourceExhausted) {
        ++refused;
      }
    }
    if (ranks.size() > t.max_sessions_per_runtime) {
      note(r, std::to_string(ranks.size()) +
                  " sessions joined one runtime, above "
                  "server.max_sessions_per_runtime");
    }
    for (auto& s : ranks) (void)s->bye();
    pause(t, milliseconds(100));
  }
  return r;
}

}  // namespace tempokv::cli
