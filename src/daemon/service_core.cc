// ServiceCore: assembly, sessions and runtimes, shutdown.
#include "daemon/service_core.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "controller/controller.h"
#include "daemon/remote_tier.h"
#include "daemon/service_metrics.h"
#include "daemon/shared_file.h"
#include "daemon/service_state.h"
#include "ssd/read_rate_cap.h"

namespace tempokv::service {

uint64_t draw_instance_id() {
  std::random_device rd;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t(rd()) << 32) ^ rd();
  return id;
}

namespace {

// Compares in time independent of where the tokens differ.
bool same_token(std::string_view given, std::string_view want) {
  unsigned diff = given.size() == want.size() ? 0 : 1;
  for (size_t i = 0; i < want.size(); ++i) {
    diff |= static_cast<unsigned char>(want[i]) ^
            static_cast<unsigned char>(i < given.size() ? given[i] : 0);
  }
  return diff == 0;
}

// Creates `path` with `bytes` allocated (posix_fallocate): a /dev/shm too small for the tier
// fails at start, naming the setting, instead of a SIGBUS when a page is first touched.
Status allocate_shared_file(const std::string& path, uint64_t bytes, const char* setting,
                            std::optional<uint32_t> group) {
  TEMPOKV_ASSIGN_OR_RETURN(const int fd, create_shared_file(path, group));
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  close(fd);
  if (err == 0) return Status::ok();
  unlink(path.c_str());
  return Status::from_errno(err, "allocate " + std::to_string(bytes) + " bytes for " + path +
                                     " (is its filesystem large enough? lower " + setting + ")");
}

}  // namespace

ServiceCore::ServiceCore(Executor& executor, const CoreOptions& options, SendFn send)
    : executor_(executor), options_(options), send_(std::move(send)),
      instance_(options.instance != 0 ? options.instance : draw_instance_id()) {}

ServiceCore::~ServiceCore() {
  housekeeping_timer_.cancel();
  if (provider_) provider_->set_remote_source(nullptr);
  remote_.reset();  // its threads first: nothing more is posted for the core
  // Without shutdown(): the executor no longer runs, so nothing can drain; the components are
  // destroyed in reverse order of creation. The tier's file is removed like the write region.
  controller_.reset();
  provider_.reset();
  tier_.reset();
  if (tier_created_) unlink(options_.tier_path.c_str());
  // The runtimes' regions are removed as their last owners let go (puts the store still holds
  // let go when it is destroyed: inline then), then their directory.
  runtimes_.clear();
  jobs_.reset();
  if (write_dir_created_) rmdir(options_.write_dir.c_str());
}

Result<std::unique_ptr<ServiceCore>> ServiceCore::open(Executor& executor,
                                                       const CoreOptions& options, SendFn send) {
  TEMPOKV_RETURN_IF_ERROR(options.profile.validate());
  std::unique_ptr<ServiceCore> c(new ServiceCore(executor, options, std::move(send)));
  c->histograms_ = std::make_unique<Histograms>();
  SsdEngineOptions eo;
  eo.kind = options.ssd;
  eo.direct = true;
  eo.queue_depth = options.queue_depth;
  eo.hook_threads = options.hook_threads;
  // The thread-pool engine's workers each hold one request; beyond 16 they only add switching.
  eo.threads = std::min<uint32_t>(options.queue_depth, 16);
  TEMPOKV_ASSIGN_OR_RETURN(c->ssd_, make_ssd_engine(executor, eo));
  if (options.read_bytes_per_s > 0) {
    c->ssd_ = std::make_unique<ReadRateCap>(executor, std::move(c->ssd_), options.read_bytes_per_s);
  }
  StoreOptions so;
  so.dir = options.store_dir;
  so.segment_bytes = options.segment_bytes;
  so.capacity_bytes = options.store_capacity_bytes;
  so.max_object_bytes = options.max_object_bytes;
  so.write_bytes_in_flight = options.write_bytes_in_flight;
  so.write_bytes_in_flight_while_reading = options.write_bytes_in_flight_while_reading;
  TEMPOKV_ASSIGN_OR_RETURN(c->store_, Store::open(executor, *c->ssd_, so));
  if (!options.key_filter_path.empty() && !options.remote.enabled()) {
    TEMPOKV_ASSIGN_OR_RETURN(c->key_filter_,
                             KeyFilter::create(options.key_filter_path, options.key_filter_slots,
                                               c->instance_, options.shared_group));
    c->key_filter_->watch(*c->store_);
  }

  FastTierOptions to;
  to.capacity_bytes = options.tier_bytes;
  to.protected_budget_bytes = options.budget_bytes;
  to.slot_bytes = options.slot_bytes;
  to.backing = BackingKind::kFile;
  to.path = options.tier_path;
  to.populate = true;
  to.huge_pages = options.tier_huge_pages;
  if (!options.tier_is_device) {
    // Never replaces a file: one left by an earlier daemon on this data_dir was removed at start
    // (Daemon), anything else is not the daemon's to remove.
    TEMPOKV_RETURN_IF_ERROR(allocate_shared_file(options.tier_path, options.tier_bytes,
                                                 "tier.capacity_bytes", options.shared_group));
    c->tier_created_ = true;
  }
  TEMPOKV_ASSIGN_OR_RETURN(c->tier_, FastTier::create(to));
  ProviderOptions po;
  po.max_reads_in_flight = options.max_reads_in_flight;
  po.prior_read_bytes_per_s = options.prior_read_bytes_per_s;
  po.static_read_bytes_per_s = options.prior_read_bytes_per_s;
  po.write_cost = options.write_cost;
  po.issue_order = issue_order_of(options.policy);
  TEMPOKV_ASSIGN_OR_RETURN(c->provider_,
                           StagingProvider::create(executor, *c->store_, *c->tier_, po));
  ControllerOptions co;
  co.tick = options.tick;
  co.feedback.quantile = options.feedback_quantile;
  co.chain_skips_bounds = options.rhythm_horizon;  // bounds come near with its short horizon
  co.remote_prefetch = options.remote.prefetch;
  TEMPOKV_ASSIGN_OR_RETURN(c->controller_,
                           make_controller(executor, *c->provider_, options.policy, co));
  TEMPOKV_RETURN_IF_ERROR(make_shared_dir(options.write_dir, options.shared_group));
  c->write_dir_created_ = true;
  if (options.remote.enabled()) {
    TEMPOKV_ASSIGN_OR_RETURN(c->remote_, RemoteTier::open(executor, options.remote));
    c->attach_remote_source();
  }
  c->housekeeping();
  return c;
}

Result<HelloResult> ServiceCore::open_session(uint64_t session, const Hello& hello,
                                              uint32_t version) {
  if (shutting_down_) return Status::unavailable("tempokvd is shutting down");
  if (sessions_.count(session)) {
    return Status::failed_precondition("session " + std::to_string(session) + " is already open");
  }
  // A runtime listed with a token is joined only with it: one engine's sessions can never be
  // joined by another client that merely knows the runtime's name.
  if (auto t = options_.runtime_tokens.find(hello.runtime);
      !hello.runtime.empty() && t != options_.runtime_tokens.end() &&
      !same_token(hello.token, t->second)) {
    const char* given = hello.token.empty() ? "(none given)" : "(a wrong one given)";
    return Status::failed_precondition("hello: runtime '" + hello.runtime + "' needs its token " +
                                       given + " (server.tokens_file)");
  }
  // A named runtime is shared; an unnamed one is the session's own.
  const std::string name =
      hello.runtime.empty() ? "session-" + std::to_string(session) : "rt:" + hello.runtime;
  auto it = runtimes_.find(name);
  if (it == runtimes_.end()) {
    auto rt = std::make_unique<Runtime>();
    rt->name = name;
    rt->id = next_runtime_id_++;
    rt->id_salt = draw_instance_id();
    rt->serial = next_runtime_serial_++;
    rt->ranks = hello.ranks;
    AdapterOptions ao;
    ao.max_active = hello.max_active != 0 ? hello.max_active : options_.max_active;
    ao.prior_output_tokens = options_.prior_output_tokens;
    ao.rhythm_horizon = options_.rhythm_horizon;
    ao.token_budget = hello.token_budget;
    ao.async_loads = hello.async_loads;
    ao.wait_order_statistics = projects_order_statistics(options_.policy);
    ao.runtime_id = rt->id;
    TEMPOKV_ASSIGN_OR_RETURN(rt->adapter,
                             RuntimeAdapter::create(*controller_, options_.profile, ao));
    it = runtimes_.emplace(name, std::move(rt)).first;
  }
  Runtime& rt = *it->second;
  if (rt.sessions.size() >= options_.max_sessions_per_runtime) {
    return Status::resource_exhausted(
        "hello: runtime '" + hello.runtime + "' has " + std::to_string(rt.sessions.size()) +
        " sessions, its limit (server.max_sessions_per_runtime = " +
        std::to_string(options_.max_sessions_per_runtime) + ")");
  }
  auto s = std::make_unique<Session>();
  s->id = session;
  s->client = hello.client;
  s->runtime = &rt;
  rt.sessions.insert(session);
  sessions_.emplace(session, std::move(s));
  ++counters_.sessions_opened;

  HelloResult r;
  r.version = version;
  r.server = options_.server_name;
  r.session = session;
  r.runtime_id = rt.id;
  r.heartbeat_timeout_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.heartbeat_timeout).count());
  r.tier_path = options_.tier_path;
  r.tier_bytes = tier_->options().capacity_bytes;
  // From protocol version 3 a runtime's write region is named by reserve_write; older versions
  // have no write region (their reserve_write and put are refused).
  r.write_path = "";
  r.write_bytes = 0;
  r.max_manifest_entries = options_.max_manifest_entries;
  r.instance = instance_;
  r.key_filter_path = key_filter_ ? key_filter_->path() : "";
  return r;
}

void ServiceCore::close_session(uint64_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  std::unique_ptr<Session> s = std::move(it->second);
  sessions_.erase(it);
  ++counters_.sessions_closed;
  for (uint64_t offset : std::vector<uint64_t>(s->writes.begin(), s->writes.end())) {
    drop_reservation(*s, offset);
  }
  Runtime& rt = *s->runtime;
  rt.sessions.erase(session);
  if (rt.sessions.empty()) {
    end_runtime(rt);
  } else {
    // Other ranks carry on: this session's part of each shared claim ends here, and a claim
    // that waited for this rank's copy may be complete now.
    std::vector<uint64_t> ids;
    for (auto& [id, share] : shares_)
      if (share.runtime == &rt) ids.push_back(id);
    for (uint64_t id : ids) {
      ClaimShare& share = shares_.at(id);
      share.participants.erase(session);
      share.waiting.erase(session);
      share.copying.erase(session);
      maybe_end_transfer(id);
    }
  }
  check_shutdown();
}

void ServiceCore::end_runtime(Runtime& rt) {
  // Every claim of the runtime is cancelled: the adapter's for requests it still knows, the
  // controller's for claims that outlived their request (finished before their transfer ended).
  std::set<uint64_t> ids(rt.requests.begin(), rt.requests.end());
  for (const auto& [id, share] : shares_)
    if (share.runtime == &rt) ids.insert(id);
  for (uint64_t id : ids) {
    auto share = shares_.find(id);
    const bool in_transfer = share != shares_.end() && share->second.in_transfer;
    if (share != shares_.end()) ++counters_.claims_abandoned;
    (void)rt.adapter->cancel(id);
    // No session of the runtime is left to copy: a transfer it had begun ends now, and with it
    // the claim's protection.
    if (in_transfer) (void)rt.adapter->end_transfer(id);
    // A request whose claim already ended (its transfer did) has no share: its end is recorded.
    if (share != shares_.end()) record_claim_end(id);
    shares_.erase(id);
    owner_.erase(id);
  }
  (void)rt.adapter->update_order({});  // the runtime's order leaves the controller empty
  ++counters_.runtimes_ended;
  runtimes_.erase(rt.name);
}

void ServiceCore::housekeeping() {
  // A long-running daemon forgets released claims; their errors are already in the histograms.
  controller_->forget_released();
  std::weak_ptr<int> alive = alive_;
  housekeeping_timer_ = executor_.after(std::chrono::seconds(1), [this, alive] {
    if (!alive.expired()) housekeeping();
  });
}

void ServiceCore::shutdown(std::function<void(Status)> done) {
  shutting_down_ = true;
  shutdown_done_ = std::move(done);
  std::vector<uint64_t> ids;
  for (const auto& [id, s] : sessions_) ids.push_back(id);
  for (uint64_t id : ids) close_session(id);
  check_shutdown();
}

void ServiceCore::check_shutdown() {
  if (!shutting_down_ || !shutdown_done_ || !sessions_.empty()) return;
  if (puts_in_flight_ > 0 || provider_->stats().in_flight_reads > 0) {
    std::weak_ptr<int> alive = alive_;
    executor_.after(std::chrono::milliseconds(5), [this, alive] {
      if (!alive.expired()) check_shutdown();
    });
    return;
  }
  auto done = std::move(shutdown_done_);
  shutdown_done_ = nullptr;
  store_->close([done = std::move(done)](Status st) { done(st); });
}

}  // namespace tempokv::service
