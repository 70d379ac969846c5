// DaemonConfig: everything tempokvd is told at start, read from a TOML file
// (docs/tempokvd-config.md) and adjusted by `--set table.key=value` flags. A plain value;
// validate() before use.
//
// Every field is declared once more in daemon_config_fields.cc (name, type, accessor, doc): the
// parser, the --set overrides, to_toml() and the reference table in the docs all walk that one
// list, so a new field is one line there plus its member here. Pure functions; thread-safe as
// values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "controller/error_feedback.h"
#include "store/store.h"
#include "tempokv/status.h"

namespace tempokv::service {

struct DaemonConfig {
  struct Server {
    std::string endpoint;  // ZMQ endpoint clients connect to; "" = ipc://<data_dir>/tempokvd.sock
    bool allow_remote = false;  // accept a tcp:// endpoint on a non-loopback host
    std::string metrics_address = "127.0.0.1:9464";  // Prometheus host:port; "" off; port 0 = any
    uint64_t heartbeat_timeout_ms = 10000;           // a session silent this long is ended
    uint64_t hello_timeout_ms = 10000;  // a connection without a session this long is closed
    uint32_t max_sessions = 1024;                    // client sessions open at once
    uint32_t max_sessions_per_runtime = 64;          // sessions joined to one runtime at once
    std::string group;        // group of the socket and shared files (0660); "" = the daemon's
    std::string tokens_file;  // "RUNTIME TOKEN" lines; "" = no runtime needs a token
    uint32_t max_queued_messages = 1000;  // messages waiting per session; beyond are refused
    uint64_t max_write_bytes_per_session = 512ULL << 20;  // write region held by one session
    uint32_t max_requests_per_runtime = 16384;  // live requests of one runtime's sessions
    uint32_t max_manifest_entries = 16384;      // objects in one report_hit (distinct keys)
    uint64_t max_manifest_entries_per_runtime = 262144;  // in all of a runtime's live claims
  };
  struct Store {
    std::string dir;                           // segment files; "" = <data_dir>/store
    uint64_t segment_bytes = 1ULL << 30;       // size each segment file is preallocated to
    uint64_t capacity_bytes = 64ULL << 30;     // bound on the bytes of all segments
    uint64_t max_object_bytes = 256ULL << 20;  // largest KV object a client may put
    std::string engine = "uring";              // SSD engine: "uring" or "threads"
    uint32_t queue_depth = 32;                 // SSD requests in flight (io_uring SQ entries)
    uint32_t hook_threads = 2;  // io_uring: threads that verify read payloads (0: the reaper)
    double read_bytes_per_s = 0;  // cap on read completions (emulates a slower drive); 0 = none
    // Writes at the SSD at once, and while a read is (StoreOptions: reads before writes).
    uint64_t write_bytes_in_flight = StoreOptions{}.write_bytes_in_flight;
    uint64_t write_bytes_in_flight_while_reading =
        StoreOptions{}.write_bytes_in_flight_while_reading;
  };
  struct Tier {
    uint64_t capacity_bytes = 4ULL << 30;  // size of the fast tier (host memory) arena
    uint64_t budget_bytes = 2ULL << 30;    // protected + reserved bytes; below capacity_bytes
    uint64_t slot_bytes = 4096;            // allocation unit, a multiple of 4 KiB
    std::string backing = "shm";           // "shm" (POSIX shared memory), "file" or "dax"
    std::string dir = "/dev/shm";  // shm/file tiers and the write region are created in it
    std::string path;  // dax: /dev/daxX.Y; shm/file: a file in dir, "" = DIR/tempokvd-ID-tier
    bool huge_pages = false;  // shm: ask for transparent huge pages on the arena (a hint)
  };
  struct Writes {
    uint64_t region_bytes = 1ULL << 30;  // shared write region clients stage new KV in
  };
  struct Controller {
    std::string policy = "tempokv";     // demand, immediate, queue-K, tempokv-static, tempokv, ...
    uint64_t tick_ms = 50;              // period of the controller's re-evaluation
    uint32_t max_reads_in_flight = 16;  // SSD → fast tier reads outstanding at once
    double prior_read_bytes_per_s = 2e9;  // read rate assumed before one is measured
    double write_cost = 1.0;  // device time of a written byte in read bytes (ProviderOptions)
    double feedback_quantile = ErrorFeedbackOptions{}.quantile;  // lateness weight q/(1 − q)
    std::string profile = "cpu-small";    // cost profile: a name in profiles/ or a .json path
    uint32_t max_active = 4;              // slot limit a runtime's adapter assumes by default
    uint32_t prior_output_tokens = 128;   // output length assumed before one is predicted
    bool rhythm_horizon = true;           // AdapterOptions::rhythm_horizon
  };

  // The shared KV tier on Redis Cluster (docs/cluster.md): off while seeds is empty.
  struct Remote {
    std::vector<std::string> seeds;  // "host:port" of any cluster nodes
    std::string user;                // ACL user; "" = requirepass (or no AUTH)
    std::string password_file;       // the password, read at start; never in the TOML or a log
    uint64_t connect_timeout_ms = 200;
    uint64_t io_timeout_ms = 1000;                 // deadline of one call, the whole value
    uint64_t write_behind_bytes = 1ULL << 30;      // published, not yet sent; beyond: dropped
    double node_rate_gib_s = 2.0;                  // per-node fetch rate before one is measured
    uint64_t max_value_bytes = 256ULL << 20;       // largest object published or fetched
    uint64_t max_claim_fetch_ms = 2000;  // a claim whose remote TTR is longer recomputes
    bool prefetch = true;                // ControllerOptions::remote_prefetch
    bool enabled() const { return !seeds.empty(); }
  };

  std::string data_dir = "./tempokvd-data";  // the daemon's directory: socket, store, state
  Server server;
  Store store;
  Tier tier;
  Writes writes;
  Controller controller;
  Remote remote;

  // server.endpoint, or the ipc socket in data_dir when it is empty.
  std::string resolved_endpoint() const;
  // store.dir, or data_dir/store when it is empty.
  std::string resolved_store_dir() const;
  // The shm/file tier's file for a daemon instance: tier.path (a bare name is in tier.dir), or
  // DIR/tempokvd-INSTANCE-tier; the dax device as given.
  std::string resolved_tier_path(uint64_t instance) const;
  // The write region's file: DIR/tempokvd-INSTANCE-writes.
  std::string write_region_path(uint64_t instance) const;
  // The filter of stored keys' file: DIR/tempokvd-INSTANCE-keys.
  std::string key_filter_path(uint64_t instance) const;
  // Rejects nonsense with a message naming the field as `table.key`.
  Status validate() const;
  // Every field, with its doc as a comment; parse_daemon_config() of it gives this config back.
  std::string to_toml() const;
};

// Parses a TOML document. Absent fields keep their defaults. Errors: TOML syntax as
// origin:line:col, unknown tables and keys as `table.key`, wrong types naming the field and the
// type expected. Does not validate().
Result<DaemonConfig> parse_daemon_config(std::string_view toml_text, std::string_view origin);
// Reads and parses the file at path (origin is the path).
Result<DaemonConfig> load_daemon_config(const std::string& path);
// Applies one `table.key=value` (`data_dir=value` at top level), the value read by the field's
// type: strings verbatim, true/false, integers (byte sizes also as "4KiB", "1GiB"), numbers.
Status apply_override(DaemonConfig& config, std::string_view assignment);
// The markdown reference table of every field (name, type, default, meaning), as in
// docs/tempokvd-config.md; a test keeps the two equal.
std::string daemon_config_reference();

}  // namespace tempokv::service
