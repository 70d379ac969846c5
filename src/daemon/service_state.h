// The records ServiceCore keeps per runtime, session and shared claim. Internal to the service.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/checked_ids.h"
#include "daemon/service_core.h"

namespace tempokv::service {

struct ServiceCore::Runtime {
  std::string name;
  uint32_t id = 0;
  uint64_t id_salt = 0;  // its request ids XOR this are the daemon's (service_ids.cc)
  std::unique_ptr<RuntimeAdapter> adapter;
  std::set<uint64_t> sessions;
  uint32_t ranks = 0;  // sessions that copy each claim (0: whoever asked)
  uint32_t copiers_seen = 0;  // its sessions, live or gone, that ever began a transfer
  // Ids it added that are not finished or cancelled: its live-request quota's use.
  std::unordered_set<uint64_t> requests;
  uint64_t manifest_entries = 0;  // of its shares' manifests: its manifest quota's use
  // Ids of its requests that ended (finished or cancelled), the last kEndedKept of them: an
  // order that still lists one leaves it out instead of failing.
  std::unordered_set<uint64_t> ended;
  std::deque<uint64_t> ended_order;
  // Protocol v2 steps: requests admitted by a step (tokens generated so far), and the batch of
  // the iteration the last step started.
  std::unordered_map<uint64_t, uint32_t> stepping;
  std::vector<uint64_t> step_prefills, step_decoders;
  // Requests added or ended so far (CheckedIds' counter for the two lists below).
  uint64_t requests_changes = 0;
  // live_order()'s last order given and its live part, which stand while no request was added
  // or ended since; the last step's decoders, each found the runtime's (service_step.cc).
  CheckedIds order_checked, decoders_checked;
  std::vector<uint64_t> order_live;
  // Its write region, made at its first reserve_write (service_writes.cc); puts in flight hold
  // it too, so it outlives the runtime until they are done.
  std::shared_ptr<WriteRegion> writes;
  bool writes_pending = false;  // being made on a job thread
  struct WaitingReserve {
    uint64_t session = 0, id = 0, bytes = 0;
  };
  std::vector<WaitingReserve> reserves_waiting;  // reserve_writes made while it is being made
  uint64_t serial = 0;  // tells this runtime from a later one of the same name
};

// A claim whose manifest was reported, as its sessions see it.
struct ServiceCore::ClaimShare {
  Runtime* runtime = nullptr;
  std::vector<ManifestEntry> manifest;
  bool requested = false;  // the adapter's request_retrieval was made
  std::optional<RetrievalPath> ready;  // the path once the transfer may begin
  // The store generation of each manifest entry's tier copy when it became ready: every later
  // span of the claim must show the same bytes.
  std::vector<uint64_t> generations;
  bool in_transfer = false;            // the adapter's begin_transfer was made
  // Cancelled (or its request finished) while sessions copy it: it ends, and its protection with
  // it, once no session copies it any more.
  bool cancelled = false;
  // Sessions that requested the retrieval: false while their transfer has not ended.
  std::map<uint64_t, bool> participants;
  std::set<uint64_t> waiting;   // participants owed a ready notification
  std::set<uint64_t> copying;   // participants between their begin and end transfer
  // Progressive release: the sessions that copied each object, and the objects released.
  std::map<Key, std::set<uint64_t>> objects_done;
  std::set<Key> objects_released;
};

struct ServiceCore::Session {
  uint64_t id = 0;
  std::string client;
  Runtime* runtime = nullptr;
  std::unordered_set<uint64_t> writes;  // write-region reservations it holds (offsets)
  bool copier = false;                  // it began a transfer at least once
  // Its write quota's use: write-region bytes of its reservations and of its puts in flight
  // (4 KiB slots).
  uint64_t write_bytes = 0;
  uint64_t last_step_seq = 0;           // the seq of its last step (protocol v2)
  // The decoders and waiting order its last step carried, as the client sent them (ids that ended
  // included), and that step's seq: a later step may give its lists as edits of these (protocol
  // v4). 0 while none stands (a step whose edits did not apply leaves none).
  StepLists step_lists;
  uint64_t step_lists_seq = 0;
  // The adapter's cost of the iterations its last steps started, by seq: what a step's
  // `measured` durations are compared with (kStepCostsKept of them).
  std::deque<std::pair<uint64_t, IterationCost>> step_costs;
};

}  // namespace tempokv::service
