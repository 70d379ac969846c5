// The records ServiceCore keeps per runtime, session and shared claim. Internal to the service.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "service/service_core.h"

namespace tempokv::service {

struct ServiceCore::Runtime {
  std::string name;
  uint32_t id = 0;
  std::unique_ptr<RuntimeAdapter> adapter;
  std::set<uint64_t> sessions;
  uint32_t ranks = 0;  // sessions that copy each claim (0: whoever asked)
  std::unordered_set<uint64_t> requests;  // ids it added that are not finished or cancelled
};

// A claim whose manifest was reported, as its sessions see it.
struct ServiceCore::ClaimShare {
  Runtime* runtime = nullptr;
  std::vector<ManifestEntry> manifest;
  bool requested = false;  // the adapter's request_retrieval was made
  std::optional<RetrievalPath> ready;  // the path once the transfer may begin
  bool in_transfer = false;            // the adapter's begin_transfer was made
  // Sessions that requested the retrieval: false while their transfer has not ended.
  std::map<uint64_t, bool> participants;
  std::set<uint64_t> waiting;   // participants owed a ready notification
  std::set<uint64_t> copying;   // participants between their begin and end transfer
  std::map<Key, uint32_t> objects_done;  // object_transferred counts (progressive release)
};

struct ServiceCore::Session {
  uint64_t id = 0;
  std::string client;
  Runtime* runtime = nullptr;
  std::unordered_set<uint64_t> writes;  // write-region reservations it holds (offsets)
};

}  // namespace tempokv::service
