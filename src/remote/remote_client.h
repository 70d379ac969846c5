// RemoteClient: a small Redis Cluster client over hiredis for the remote KV tier
// (docs/cluster.md). It routes by slot (CLUSTER SLOTS, MOVED, ASK), keeps one connection per
// node (dropped after any error, reopened on the next call), bounds every call by a connect
// timeout and an I/O deadline for the whole call, authenticates new connections (requirepass or
// ACL user) and never puts the password in a message. Objects carry their identity in a header
// (value_format.h) and are verified after every fetch: a bad or partial value is a miss with a
// counted reason, never bytes.
//
// Blocking and not thread-safe: one RemoteClient per I/O thread, never on the control thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "remote/value_format.h"
#include "tempokv/status.h"

namespace tempokv::remote {

struct RemoteConfig {
  std::vector<std::string> seeds;  // "host:port" of any nodes; the slot map is asked of them
  std::string user;                // ACL user ("": requirepass only, or no auth)
  std::string password;            // "": no AUTH. Never logged, never in a Status message
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds io_timeout{1000};  // deadline of one call, the whole value included
  uint64_t max_value_bytes = 256ull << 20;     // payload bytes above this are refused
  int max_redirects = 5;                       // MOVED/ASK hops one call follows
  // InvalidArgument naming the field when a value is unusable.
  Status validate() const;
};

// Why a fetch did not return KV. kHit is the only outcome whose bytes may be used.
enum class FetchOutcome : uint8_t {
  kHit = 0,
  kAbsent,           // no such key (never stored, or evicted by the cluster)
  kBadHeader,        // magic, version, header check or a value shorter than a header
  kWrongKey,         // the header names another key
  kWrongGeneration,  // another generation than the one asked for
  kWrongLayout,      // another layout digest than the one asked for
  kTooLarge,         // payload above the caller's buffer or max_value_bytes
  kTruncated,        // the value's length differs from header + payload_bytes
  kChecksum,         // the payload's XXH3-128 differs from the header's
  kUnavailable,      // node down, timeout, connection lost mid-value, too many redirects
  kCount,
};
std::string_view fetch_outcome_name(FetchOutcome outcome);

struct FetchResult {
  FetchOutcome outcome = FetchOutcome::kUnavailable;
  RemoteIdentity identity;  // valid on kHit
  std::string detail;       // why, for a miss (never a password)
  bool hit() const { return outcome == FetchOutcome::kHit; }
};

// What a fetch expects. generation 0 accepts any generation.
struct FetchRequest {
  Key key;
  uint64_t generation = 0;
  uint64_t layout_digest = 0;
};

struct NodeStats {
  std::string address;  // host:port
  bool healthy = true;  // false after a failed call until a call to it succeeds again
  uint64_t fetches = 0;
  uint64_t fetch_bytes = 0;
  uint64_t failures = 0;
  double fetch_seconds = 0;  // wall time of successful fetches: fetch_bytes / this is the rate
};

struct RemoteStats {
  std::array<uint64_t, static_cast<size_t>(FetchOutcome::kCount)> fetches{};  // per outcome
  uint64_t moved = 0;
  uint64_t ask = 0;
  uint64_t connects = 0;
  uint64_t slot_refreshes = 0;
  uint64_t puts = 0;
  uint64_t put_oom = 0;     // the cluster refused a put for memory (a failed publish)
  uint64_t put_failed = 0;  // any other failed put
  std::array<uint64_t, static_cast<size_t>(FetchOutcome::kCount)> probes{};  // per outcome
  uint64_t count(FetchOutcome o) const { return fetches[static_cast<size_t>(o)]; }
};

// A reply to command(): the text of a bulk/status/error reply, or an integer as text; arrays
// are flattened one element per line.
struct CommandReply {
  bool error = false;
  std::string text;
};

class RemoteClient {
 public:
  explicit RemoteClient(RemoteConfig config);
  ~RemoteClient();
  RemoteClient(const RemoteClient&) = delete;
  RemoteClient& operator=(const RemoteClient&) = delete;

  // Validates the config and loads the slot map from the seeds.
  Status connect();
  // Stores payload under id.key with its identity (id.payload_bytes and id.checksum are set
  // from the payload). ResourceExhausted on -OOM, Unavailable when no node answered in time.
  Status put(const RemoteIdentity& id, std::span<const unsigned char> payload);
  // Reads the object into dst (the payload only), verified. dst's bytes are KV only on kHit.
  FetchResult fetch(const FetchRequest& request, std::span<unsigned char> dst);
  // The identity in the object's header, read with GETRANGE (its 80 bytes; the payload stays in
  // the cluster), checked as a fetch checks it (own check, magic, version, key). kHit with the
  // identity, kAbsent, kBadHeader, kWrongKey or kUnavailable; counted in stats().probes.
  FetchResult probe(const Key& key);
  // Runs a command on the node that owns routing_key's slot, following redirects.
  Result<CommandReply> command(std::string_view routing_key, const std::vector<std::string>& argv);
  // Runs a command on one node by address.
  Result<CommandReply> command_at(const std::string& address, const std::vector<std::string>& argv);
  // Sum of INFO stats evicted_keys over the masters.
  Result<uint64_t> evicted_keys();
  // host:port of the master the slot map names for a key's slot ("" when unknown).
  std::string owner_of(std::string_view redis_key) const;
  std::vector<std::string> masters() const;

  const RemoteStats& stats() const { return stats_; }
  std::vector<NodeStats> node_stats() const;

 private:
  struct Node;
  // One attempt on a node; sets *redirect to the node a MOVED or ASK reply named.
  using Attempt = std::function<Status(Node& n, bool asking, std::string* redirect, bool* moved)>;
  Status refresh_slots();
  Node* node(const std::string& address);
  Status ensure_connected(Node& n);
  void fail(Node& n);  // a node failure: connection dropped, node unhealthy, slot map stale
  void drop(Node& n);  // the stream is out of step (a value left unread): reconnect next time
  // Runs attempt on the owner of key's slot, following up to max_redirects MOVED/ASK replies.
  Status route(std::string_view key, const Attempt& attempt);
  Status fetch_once(Node& n, const FetchRequest& request, std::span<unsigned char> dst, bool asking,
                    std::string* redirect, bool* moved, FetchResult* out);
  Status put_once(Node& n, const std::string& key, const HeaderBytes& header,
                  std::span<const unsigned char> payload, bool asking, std::string* redirect,
                  bool* moved);

  RemoteConfig config_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::array<int16_t, 16384> slot_owner_{};  // index into nodes_, -1 unknown
  bool refresh_needed_ = true;
  RemoteStats stats_;
};

}  // namespace tempokv::remote
