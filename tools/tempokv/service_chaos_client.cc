#include "service_chaos_client.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

namespace tempokv::cli::chaos {
namespace {

using std::chrono::milliseconds;

void tell(int fd, const std::string& line) {
  const std::string l = line + "\n";
  (void)!write(fd, l.data(), l.size());  // a short write to a pipe is atomic
}

}  // namespace

std::vector<std::byte> chaos_payload(uint64_t hash, uint64_t base_bytes) {
  std::vector<std::byte> p(base_bytes + (hash % 4) * 4096);
  uint64_t x = hash * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i < p.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p.data() + i, &x, std::min<size_t>(8, p.size() - i));
  }
  return p;
}

double stat(const service::StatList& s, const std::string& name) {
  for (const auto& [n, v] : s)
    if (n == name) return v;
  return 0;
}

ClientOptions client_options(const std::string& endpoint, const std::string& name) {
  ClientOptions co;
  co.endpoint = endpoint;
  co.name = name;
  co.call_timeout = std::chrono::seconds(5);
  co.lookup_timeout = co.call_timeout;
  return co;
}

Status stage_and_check(ServiceClient& c, uint64_t id, const std::vector<ManifestEntry>& m,
                       uint64_t object_bytes, const std::function<void()>& in_transfer) {
  uint64_t total = 0;
  for (const ManifestEntry& e : m) total += e.bytes;
  TEMPOKV_RETURN_IF_ERROR(c.add_request({id, 1024, 1024, total, 8}));
  auto fail = [&](Status st) {
    (void)c.cancel(id);
    return st;
  };
  Status st = c.report_hit(id, m);
  if (st.is_ok()) st = c.update_order(std::vector<uint64_t>{id});
  if (st.is_ok()) st = c.admitted(id);
  if (!st.is_ok()) return fail(st);
  bool ready = false;
  Status outcome;
  auto answer = c.request_retrieval(id, [&](ClaimId, Result<RetrievalPath> p) {
    ready = true;
    outcome = p.status();
  });
  if (!answer.is_ok()) return fail(answer.status());
  if (*answer == RetrievalAnswer::kWait) {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (!ready && Clock::now() < until) {
      c.dispatch();
      if (!ready) std::this_thread::sleep_for(milliseconds(1));
    }
    if (!ready) return fail(Status::unavailable("claim not ready within 10 s"));
    if (!outcome.is_ok()) return fail(outcome);
  }
  auto spans = c.objects(id);
  if (!spans.is_ok()) return fail(spans.status());
  TEMPOKV_RETURN_IF_ERROR(c.begin_transfer(id));
  in_transfer();
  Status bytes_ok = Status::ok();
  if (spans->size() != m.size() || c.tier_data() == nullptr) {
    bytes_ok = Status::corruption("claim answered with " + std::to_string(spans->size()) +
                                  " spans for " + std::to_string(m.size()) + " objects");
  }
  for (size_t i = 0; bytes_ok.is_ok() && i < m.size(); ++i) {
    const service::TierSpan& s = (*spans)[i];
    const std::vector<std::byte> want = chaos_payload(m[i].key.hash, object_bytes);
    if (s.bytes != want.size() || s.offset + s.bytes > c.tier_bytes() ||
        std::memcmp(c.tier_data() + s.offset, want.data(), want.size()) != 0) {
      bytes_ok = Status::corruption("object " + m[i].key.to_string() + " differs from its put");
    }
  }
  TEMPOKV_RETURN_IF_ERROR(c.end_transfer(id));
  (void)c.finished(id, 1);
  return bytes_ok;
}

int run_worker(const std::string& endpoint, uint64_t worker, const ChaosOptions& o,
               Clock::time_point deadline, int out) {
  std::unique_ptr<ServiceClient> c;
  for (int i = 0; i < 100 && !c; ++i) {
    auto r = ServiceClient::connect(client_options(endpoint, "chaos-" + std::to_string(worker)));
    if (r.is_ok()) {
      c = std::move(r).value();
    } else {
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  if (!c) {
    tell(out, "E connect");
    return 1;
  }
  std::mt19937_64 rng(o.seed * 1000003 + worker);
  std::vector<ManifestEntry> mine;  // acknowledged puts
  uint64_t puts = 0, claims = 0;
  while (Clock::now() < deadline) {
    if (mine.size() < 2 || rng() % 2 == 0) {
      const uint64_t hash = (uint64_t(worker) << 32) | puts++;
      const std::vector<std::byte> bytes = chaos_payload(hash, o.object_bytes);
      tell(out, "P");
      Status st = c->put(Key{kModel, hash}, TokenRange{0, 256}, bytes);
      if (st.is_ok()) {
        mine.push_back({Key{kModel, hash}, bytes.size()});
        tell(out, "A " + std::to_string(hash) + " " + std::to_string(bytes.size()));
      } else {
        tell(out, "E put: " + st.to_string());
        std::this_thread::sleep_for(milliseconds(20));
      }
      continue;
    }
    std::vector<ManifestEntry> m;
    for (size_t k = 0, n = 1 + rng() % 4; k < n; ++k) m.push_back(mine[rng() % mine.size()]);
    std::sort(m.begin(), m.end(), [](auto& a, auto& b) { return a.key.hash < b.key.hash; });
    m.erase(std::unique(m.begin(), m.end(), [](auto& a, auto& b) { return a.key == b.key; }),
            m.end());
    const uint64_t id = (uint64_t(worker) << 32) | claims++;
    Status st = stage_and_check(*c, id, m, o.object_bytes, [&] {
      tell(out, "T");
      std::this_thread::sleep_for(milliseconds(10));  // the copy to the device
    });
    if (st.is_ok()) {
      tell(out, "V");
    } else if (st.code() == StatusCode::kCorruption) {
      tell(out, "M " + st.to_string());
    } else {
      tell(out, "E claim: " + st.to_string());
      std::this_thread::sleep_for(milliseconds(20));
    }
    tell(out, "C");
  }
  (void)c->bye();
  tell(out, "D");
  return 0;
}

}  // namespace tempokv::cli::chaos
