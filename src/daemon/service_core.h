// ServiceCore: what tempokvd serves (docs/protocol.md): the store, the fast tier in shared
// memory, the staging provider, the controller, one RuntimeAdapter per runtime, the write region,
// and the sessions that speak for the runtimes. The transport (server.h) decodes messages, keeps
// the ordering rules and hands each request of an open session to handle(); the core answers
// through the SendFn, at once or later (a put answers when it is durable).
//
// Sessions and runtimes: a runtime is one adapter with its requests and claims; sessions join a
// runtime by name (tensor-parallel ranks) or get one of their own. A claim shared by several
// sessions (ClaimShare) ends its transfer only when every session that requested its retrieval
// has ended its own transfer or left; every session that asked is told when it is ready. When
// the last session of a runtime closes, every claim of the runtime is cancelled (protection and
// reservations released once reads in flight drain) and the runtime is forgotten.
//
// Request ids are per runtime: a runtime's ids are XORed with its random salt on the way in
// (service_ids.cc), so runtimes may use the same ids, and a session can name only its own
// runtime's requests (others are NotFound, so one client can never cancel another's claim).
//
// Ownership: owns every component; borrows the Executor, which must outlive it. Threading: the
// Executor's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "adapter/cost_profile.h"
#include "adapter/runtime_adapter.h"
#include "common/job_threads.h"
#include "controller/controller.h"
#include "daemon/key_filter.h"
#include "daemon/remote_tier_config.h"
#include "daemon/write_region.h"
#include "fasttier/fast_tier.h"
#include "provider/staging_provider.h"
#include "ssd/ssd_engine.h"
#include "store/store.h"
#include "tempokv/protocol.h"

namespace tempokv::service {

struct Metric;
class RemoteTier;

struct CoreOptions {
  // Store.
  std::string store_dir;                    // segment files
  uint64_t segment_bytes = 1ULL << 30;      // per segment file
  uint64_t store_capacity_bytes = 64ULL << 30;
  uint64_t max_object_bytes = 256ULL << 20;  // largest put
  SsdEngineKind ssd = SsdEngineKind::kUring;
  uint32_t queue_depth = 32;
  uint32_t hook_threads = 2;  // io_uring: threads verifying read payloads (SsdEngineOptions)
  // StoreOptions: reads before writes.
  uint64_t write_bytes_in_flight = StoreOptions{}.write_bytes_in_flight;
  uint64_t write_bytes_in_flight_while_reading = StoreOptions{}.write_bytes_in_flight_while_reading;
  double read_bytes_per_s = 0;  // > 0: reads capped at this rate (ReadRateCap), a slower drive
  // Fast tier: a shared file clients map read-only (on /dev/shm for POSIX shared memory).
  std::string tier_path;
  uint64_t tier_bytes = 4ULL << 30;
  uint64_t budget_bytes = 2ULL << 30;
  uint64_t slot_bytes = 4096;
  bool tier_is_device = false;  // a /dev/dax device: not created, not removed
  bool tier_huge_pages = false;  // ask for transparent huge pages on the tier (madvise, a hint)
  // Write regions (shared files clients map read-write): one per runtime that writes, made in
  // write_dir (a directory the daemon made, that clients may enter but not list), each
  // write_bytes long and backed as reservations reach; write_bytes also bounds the reservations
  // of all runtimes together (writes.region_bytes).
  std::string write_dir;
  uint64_t write_bytes = 1ULL << 30;
  // Controller and adapters.
  std::string policy = "tempokv";  // a name make_controller() builds
  Duration tick = std::chrono::milliseconds(50);
  uint32_t max_reads_in_flight = 16;
  double prior_read_bytes_per_s = 2e9;
  double write_cost = 1.0;  // ProviderOptions::write_cost
  double feedback_quantile = ErrorFeedbackOptions{}.quantile;  // ControllerOptions::feedback
  CostProfile profile;
  uint32_t max_active = 4;  // a runtime's slot limit unless its hello says otherwise
  uint32_t prior_output_tokens = 128;
  bool rhythm_horizon = AdapterOptions{}.rhythm_horizon;
  Duration heartbeat_timeout = std::chrono::seconds(10);
  std::string server_name = "tempokvd";
  uint64_t instance = 0;  // hello's `instance`; 0 draws one
  // The shared files (tier, write region) are created 0600, or 0660 owned by this group.
  std::optional<uint32_t> shared_group;
  // Quotas: write-region bytes per session, live requests and manifest entries per runtime
  // (server.max_write_bytes_per_session, .max_requests_per_runtime, .max_manifest_entries,
  // .max_manifest_entries_per_runtime): a runtime's requests and claims outlive the session that
  // added them, so they count against the runtime, whichever of its sessions comes and goes.
  uint64_t max_write_bytes_per_session = 512ULL << 20;
  uint32_t max_requests_per_runtime = 16384;
  uint32_t max_manifest_entries = 16384;
  uint64_t max_manifest_entries_per_runtime = 262144;
  uint32_t max_sessions_per_runtime = 64;  // sessions joined to one runtime at once
  // Runtimes that need a token to be joined (server.tokens_file): name -> token.
  std::map<std::string, std::string> runtime_tokens;
  // The shared remote tier ([remote], docs/cluster.md); off when its seeds are empty.
  RemoteTierOptions remote;
  // The filter of stored keys clients map (KeyFilter; hello's key_filter_path): "" for none.
  // Not made when the remote tier is on (a key missing here may be there).
  std::string key_filter_path;
  uint64_t key_filter_slots = 1ULL << 22;  // one byte each
};

class ServiceCore {
 public:
  using SendFn = std::function<void(uint64_t session, std::vector<std::byte> message)>;

  // Opens the store (scanning it: blocking, before serving), creates the shared tier and write
  // region, the provider and the controller.
  static Result<std::unique_ptr<ServiceCore>> open(Executor& executor, const CoreOptions& options,
                                                   SendFn send);
  ~ServiceCore();
  ServiceCore(const ServiceCore&) = delete;
  ServiceCore& operator=(const ServiceCore&) = delete;

  // A session's successful hello at `version`: joins or creates its runtime.
  Result<HelloResult> open_session(uint64_t session, const Hello& hello, uint32_t version);
  // One request of an open session (not hello). Replies through send, now or later.
  void handle(uint64_t session, uint64_t id, const Op& op);
  // The session ended (bye, disconnect, heartbeat timeout, shutdown): gives up what it held.
  void close_session(uint64_t session);
  bool has_session(uint64_t session) const { return sessions_.count(session) != 0; }
  // The session waits for a reply the core still owes it (a put not yet durable): it is alive
  // even if it sends nothing meanwhile.
  bool owes_reply(uint64_t session) const { return puts_by_session_.count(session) != 0; }

  // Ends every runtime (claims cancelled), waits for reads and puts in flight, closes the store,
  // then calls done. Requests after it get Unavailable.
  void shutdown(std::function<void(Status)> done);

  // Counters, for the stats op and /metrics.
  StatList stats() const;
  // Adds the transport's metrics (sessions it refused, reply latency) to both.
  void set_transport_metrics(std::function<void(std::vector<Metric>&)> fn) {
    transport_metrics_ = std::move(fn);
  }
  // The Prometheus text exposition of /metrics.
  std::string metrics_text() const;
  // tempokvd's /claims: the last kEndedClaims claims that ended, oldest first, as JSON (each
  // one's timeline and what the controller projected at its commit; service_claim_log.cc).
  std::string ended_claims_json() const;

  uint64_t instance() const { return instance_; }
  FastTier& tier() { return *tier_; }
  StagingProvider& provider() { return *provider_; }
  Controller& controller() { return *controller_; }
  Store& store() { return *store_; }

 private:
  struct Runtime;
  struct ClaimShare;
  struct Session;
  struct Histograms;
  ServiceCore(Executor& executor, const CoreOptions& options, SendFn send);

  // service_ops.cc
  Status run_op(Session& s, uint64_t id, const Op& op);
  Status claim_op(Session& s, uint64_t id, const Op& op);
  Status retrieval(Session& s, uint64_t id, uint64_t request_id);
  Status begin_transfer(Session& s, uint64_t request_id);
  Status end_transfer(Session& s, uint64_t request_id);
  Status object_transferred(Session& s, uint64_t request_id, const Key& key);
  Status cancel(Session& s, uint64_t request_id);
  Status put(Session& s, uint64_t id, const Put& put);
  Status add_request(Session& s, const RequestInfo& request);
  Status finish_request(Session& s, uint64_t request_id, uint32_t output_tokens);
  // service_writes.cc: reservations in the runtime's own region (made on first use), puts whose
  // bytes are checked against the checksum their client declared.
  Status reserve_write(Session& s, uint64_t id, uint64_t bytes);
  void make_region(Runtime& rt);
  std::shared_ptr<WriteRegion> adopt_region(std::unique_ptr<WriteRegion> region);
  Status give_reservation(Session& s, uint64_t id, uint64_t bytes);
  // Gives back a reservation the session holds (false: it holds none at offset).
  bool drop_reservation(Session& s, uint64_t offset);
  // report_hit: the manifest within its bounds (distinct keys, per claim and per runtime), then
  // the adapter's claim and the share.
  Status report_hit(Session& s, const ReportHit& m);
  // service_step.cc
  Status step(Session& s, const Step& m);
  // A step's admission of request `id` (the adapter's admitted, once per request).
  Status step_admit(Session& s, uint64_t id);
  // Sets the session's step lists from step m (in full, or its edits of the last ones); an
  // error leaves none (step_lists_seq 0) until a step gives them in full.
  Status resolve_step_lists(Session& s, const Step& m);
  void on_ready(uint64_t request_id, Result<RetrievalPath> outcome);
  // Where a ready claim's objects are: each resident, whole (the manifest's length inside the
  // tier's object and the mapping) and of the generation it became ready with (recorded on the
  // first call). Internal naming the object otherwise: such a claim is failed, never served.
  Result<std::vector<TierSpan>> spans(ClaimShare& share) const;
  Status owned(const Session& s, uint64_t request_id, const char* op) const;
  // A waiting order without the requests of the runtime that ended (finished or cancelled, as
  // a claim that ended takes its request with it): a runtime's queue may still list them.
  // Other ids the runtime does not know are an error (NotFound). Valid until the runtime's next
  // live_order; an order given again, no request added or ended since, is not looked up again.
  Result<std::span<const uint64_t>> live_order(const Session& s,
                                               std::span<const uint64_t> waiting,
                                               const char* op) const;
  void request_ended(Runtime& rt, uint64_t request_id);
  void end_share(uint64_t request_id);
  // A claim the daemon cannot serve (spans() refused it): cancelled, every session told why.
  void fail_share(uint64_t request_id, const Status& why);
  void maybe_end_transfer(uint64_t request_id);
  // The claim's request was cancelled or finished: sessions waiting or copying are told `why`;
  // the share ends now, or once no session copies it.
  void abandon_share(uint64_t request_id, uint64_t by_session, const Status& why);
  // With declared ranks: how many sessions must have copied a claim (or an object) for it to end.
  size_t copies_needed(const Runtime& rt) const;
  // Whether the sessions in `done` cover every copy the claim (or one object) waits for.
  bool all_copied(const ClaimShare& share, const std::set<uint64_t>& done) const;
  // service_ids.cc: a runtime's request ids to the daemon-wide ones (XOR its salt) and back in
  // an error's message.
  static Op to_internal_ids(Op op, uint64_t salt);
  // `more`: other ids (salted) the message may name.
  static Status to_runtime_ids(const Status& st, const Op& internal, uint64_t salt,
                               std::span<const uint64_t> more = {});
  // service_remote.cc: the shared remote tier (docs/cluster.md), when [remote] has seeds.
  // A lookup whose leading keys miss locally asks the cluster for them: true when the reply
  // (local and remote sizes) is sent later, from the probe's answer.
  bool remote_lookup(Session& s, uint64_t id, const std::vector<Key>& keys,
                     std::vector<uint64_t> bytes);
  // A report_hit naming objects only the cluster holds: refused at once (NotFound, answered
  // here: true) when a node they need is held unhealthy or their remote TTR is above
  // remote.max_claim_fetch_ms; else false and it runs as usual (the provider fetches them once
  // it commits the claim).
  bool remote_report_hit(Session& s, uint64_t id, const ReportHit& m);
  // Gives the provider its RemoteSource over the cluster (RemoteStaging).
  void attach_remote_source();
  // The store's put callback that publishes the put's bytes (copied off this thread when the
  // publisher had room) once they are stored, then runs done.
  Store::DoneCallback publish_after_put(const Key& key, TokenRange tokens, Hash128 checksum,
                                        std::shared_ptr<const std::vector<unsigned char>> copy,
                                        Store::DoneCallback done);
  void add_remote_metrics(std::vector<Metric>& m) const;
  // service_core.cc
  void end_runtime(Runtime& rt);
  void record_claim_end(uint64_t request_id);
  // service_metrics.cc: every metric, the transport's included (stats() and metrics_text()).
  std::vector<Metric> metrics() const;
  void check_shutdown();
  void housekeeping();

  Executor& executor_;
  CoreOptions options_;
  // Blocking work off the control thread: write regions made, backed and removed, put payloads
  // hashed. First member: destroyed last, after every region's last owner.
  std::shared_ptr<JobThreads> jobs_ = std::make_shared<JobThreads>(2);
  SendFn send_;
  const uint64_t instance_;  // hello's `instance`: drawn at start
  bool tier_created_ = false;  // the tier's file is this daemon's to remove
  bool write_dir_created_ = false;  // so is options_.write_dir
  std::unique_ptr<KeyFilter> key_filter_;  // before store_: its listener outlives the store
  std::unique_ptr<SsdEngine> ssd_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<FastTier> tier_;
  std::unique_ptr<StagingProvider> provider_;
  std::unique_ptr<Controller> controller_;
  uint64_t write_reserved_ = 0;  // reserved bytes of every runtime's region (4 KiB slots)
  uint64_t next_runtime_serial_ = 0;

  std::map<std::string, std::unique_ptr<Runtime>> runtimes_;  // by name
  std::unordered_map<uint64_t, std::unique_ptr<Session>> sessions_;
  std::unordered_map<uint64_t, Runtime*> owner_;  // request id -> its runtime
  std::unordered_map<uint64_t, ClaimShare> shares_;  // claims with a manifest, by request id
  uint32_t next_runtime_id_ = 0;
  uint64_t puts_in_flight_ = 0;
  std::unordered_map<uint64_t, uint32_t> puts_by_session_;  // puts in flight, by session
  bool shutting_down_ = false;
  std::function<void(Status)> shutdown_done_;
  std::unique_ptr<Histograms> histograms_;
  std::function<void(std::vector<Metric>&)> transport_metrics_;
  struct Counters {
    uint64_t sessions_opened = 0, sessions_closed = 0, requests = 0, errors = 0;
    uint64_t puts = 0, put_bytes = 0, failed_puts = 0, runtimes_ended = 0, claims_abandoned = 0;
    uint64_t steps = 0, steps_missed = 0, step_edits = 0;
    uint64_t write_regions_made = 0, put_checksum_mismatches = 0;
  } counters_;
  // The remote tier (null without [remote] seeds), and what a lookup's probe saw per key: the
  // generation the claim's fetch then expects and the node its TTR counts on (bounded: cleared
  // past kRemoteSeenKept).
  std::shared_ptr<RemoteTier> remote_;
  struct RemoteSeen {
    uint64_t generation = 0;
    std::string node;
  };
  std::unordered_map<Key, RemoteSeen> remote_seen_;
  RemoteSeen seen(const Key& key) const;  // {} when the probe's answer is not kept
  class RemoteStaging;
  std::unique_ptr<RemoteSource> remote_source_;  // the provider's, while remote_ is set
  struct RemoteCounters {
    uint64_t lookups = 0, lookup_objects = 0, claims = 0, objects_stored = 0, bytes_stored = 0;
    uint64_t misses = 0, puts_published = 0, refused_unhealthy = 0, refused_slow = 0;
    double ttr_projected_s = 0, fetch_s = 0;  // claims fetched in full: projected and taken
    uint64_t timed = 0;
  } remote_counters_;
  TimerHandle housekeeping_timer_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

// A random, nonzero id for a daemon process (hello's `instance`; its shared files' names).
uint64_t draw_instance_id();

}  // namespace tempokv::service
