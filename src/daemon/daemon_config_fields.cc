#include "daemon/daemon_config_fields.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/units.h"

namespace tempokv::service::config {
namespace {

// One accessor per member; captureless lambdas decay to the Field::ref function pointer.
#define TEMPOKV_FIELD_REF(member) [](DaemonConfig& c) -> FieldRef { return &c.member; }

constexpr std::array<std::string_view, 6> kTables = {"server", "store", "tier", "writes",
                                                     "controller", "remote"};

const Field kFields[] = {
    {"", "data_dir", FieldType::kString, TEMPOKV_FIELD_REF(data_dir),
     "The daemon's directory: the default socket, the store and state files live here."},

    {"server", "endpoint", FieldType::kString, TEMPOKV_FIELD_REF(server.endpoint),
     "ZMQ endpoint clients connect to: ipc://PATH, or tcp://HOST:PORT on a loopback host "
     "(127.x.x.x, ::1, localhost) unless allow_remote; \"\" means ipc://DATA_DIR/tempokvd.sock."},
    {"server", "allow_remote", FieldType::kBool, TEMPOKV_FIELD_REF(server.allow_remote),
     "Accept a tcp:// endpoint or a metrics_address on a non-loopback host. The protocol "
     "authenticates only joins of runtimes listed in tokens_file; /metrics not at all."},
    {"server", "metrics_address", FieldType::kString, TEMPOKV_FIELD_REF(server.metrics_address),
     "HOST:PORT of the Prometheus /metrics HTTP server ([::1]:PORT for IPv6), on a loopback host "
     "unless allow_remote; \"\" disables it; port 0 takes any free port."},
    {"server", "heartbeat_timeout_ms", FieldType::kInteger,
     TEMPOKV_FIELD_REF(server.heartbeat_timeout_ms),
     "A session that sends nothing for this long is ended and its claims released."},
    {"server", "hello_timeout_ms", FieldType::kInteger, TEMPOKV_FIELD_REF(server.hello_timeout_ms),
     "A connection that holds no session this long (it never said hello, its hello was refused, "
     "its session ended) is closed, so idle connections cannot keep others out."},
    {"server", "max_sessions", FieldType::kInteger, TEMPOKV_FIELD_REF(server.max_sessions),
     "Client sessions open at once; a hello beyond it is refused."},
    {"server", "max_sessions_per_runtime", FieldType::kInteger,
     TEMPOKV_FIELD_REF(server.max_sessions_per_runtime),
     "Sessions joined to one named runtime at once (its ranks and scheduler); a hello beyond "
     "it is refused."},
    {"server", "group", FieldType::kString, TEMPOKV_FIELD_REF(server.group),
     "Group that owns the ipc socket and the shared files (mode 0660), so its members' engines "
     "may connect; \"\" keeps the daemon's own group."},
    {"server", "tokens_file", FieldType::kString, TEMPOKV_FIELD_REF(server.tokens_file),
     "File of \"RUNTIME TOKEN\" lines (readable and writable by its owner alone): a hello "
     "joining a runtime listed there must carry its token; \"\" lists none."},
    {"server", "max_queued_messages", FieldType::kInteger,
     TEMPOKV_FIELD_REF(server.max_queued_messages),
     "Messages of one session waiting to be served; one beyond it is refused undecoded."},
    {"server", "max_write_bytes_per_session", FieldType::kBytes,
     TEMPOKV_FIELD_REF(server.max_write_bytes_per_session),
     "Write-region bytes one session may hold (reservations and puts in flight); at least "
     "store.max_object_bytes."},
    {"server", "max_requests_per_runtime", FieldType::kInteger,
     TEMPOKV_FIELD_REF(server.max_requests_per_runtime),
     "Live requests (added, not finished or cancelled) of one runtime at once, whichever of its "
     "sessions added them."},
    {"server", "max_manifest_entries", FieldType::kInteger,
     TEMPOKV_FIELD_REF(server.max_manifest_entries),
     "Objects in one report_hit, 1 to 16384; a key listed twice is refused."},
    {"server", "max_manifest_entries_per_runtime", FieldType::kInteger,
     TEMPOKV_FIELD_REF(server.max_manifest_entries_per_runtime),
     "Objects in all of one runtime's live claims; a report_hit beyond it is refused until "
     "claims end."},

    {"store", "dir", FieldType::kString, TEMPOKV_FIELD_REF(store.dir),
     "Directory of the SSD store's segment files; \"\" means DATA_DIR/store."},
    {"store", "segment_bytes", FieldType::kBytes, TEMPOKV_FIELD_REF(store.segment_bytes),
     "Size each segment file is preallocated to; a multiple of 4 KiB."},
    {"store", "capacity_bytes", FieldType::kBytes, TEMPOKV_FIELD_REF(store.capacity_bytes),
     "Bound on the bytes of all segments; the oldest segment is reclaimed beyond it."},
    {"store", "max_object_bytes", FieldType::kBytes, TEMPOKV_FIELD_REF(store.max_object_bytes),
     "Largest KV object a client may put; it plus 12 KiB must fit in one segment."},
    {"store", "engine", FieldType::kString, TEMPOKV_FIELD_REF(store.engine),
     "SSD I/O engine: \"uring\" (io_uring, falls back to threads where refused) or \"threads\"."},
    {"store", "queue_depth", FieldType::kInteger, TEMPOKV_FIELD_REF(store.queue_depth),
     "SSD requests in flight at once (io_uring submission queue entries), 1 to 32768."},
    {"store", "hook_threads", FieldType::kInteger, TEMPOKV_FIELD_REF(store.hook_threads),
     "io_uring engine: threads that verify read payloads' checksums, 0 to 64 (0: the thread "
     "that reaps completions verifies them)."},
    {"store", "read_bytes_per_s", FieldType::kNumber, TEMPOKV_FIELD_REF(store.read_bytes_per_s),
     "Reads complete no faster than this many bytes per second (a token bucket: emulates a "
     "slower drive, for experiments); 0 means no cap."},
    {"store", "write_bytes_in_flight", FieldType::kBytes,
     TEMPOKV_FIELD_REF(store.write_bytes_in_flight),
     "Bytes of puts' records at the SSD at once; more wait in the store (one record always "
     "goes), so restores are not queued behind a burst of saves."},
    {"store", "write_bytes_in_flight_while_reading", FieldType::kBytes,
     TEMPOKV_FIELD_REF(store.write_bytes_in_flight_while_reading),
     "The same bound while any read is at the SSD; 0 means one record at a time."},

    {"tier", "capacity_bytes", FieldType::kBytes, TEMPOKV_FIELD_REF(tier.capacity_bytes),
     "Size of the fast tier (host memory) arena; a multiple of slot_bytes."},
    {"tier", "budget_bytes", FieldType::kBytes, TEMPOKV_FIELD_REF(tier.budget_bytes),
     "Bytes the controller may protect or reserve for upcoming requests; below capacity_bytes."},
    {"tier", "slot_bytes", FieldType::kBytes, TEMPOKV_FIELD_REF(tier.slot_bytes),
     "Allocation unit of the arena, a multiple of 4096; the chunk size avoids fragmentation."},
    {"tier", "backing", FieldType::kString, TEMPOKV_FIELD_REF(tier.backing),
     "Where the arena lives: \"shm\" (POSIX shared memory), \"file\" or \"dax\" (a /dev/dax "
     "device)."},
    {"tier", "dir", FieldType::kString, TEMPOKV_FIELD_REF(tier.dir),
     "Directory the shm or file tier and the write region are created in; the daemon never "
     "creates or removes a shared file elsewhere."},
    {"tier", "path", FieldType::kString, TEMPOKV_FIELD_REF(tier.path),
     "dax: the device (/dev/dax*, required); shm/file: a file directly in tier.dir (a bare name "
     "is taken there), \"\" means DIR/tempokvd-INSTANCE-tier."},
    {"tier", "huge_pages", FieldType::kBool, TEMPOKV_FIELD_REF(tier.huge_pages),
     "Ask for transparent huge pages on the shm arena (madvise; used where shmem allows them)."},

    {"writes", "region_bytes", FieldType::kBytes, TEMPOKV_FIELD_REF(writes.region_bytes),
     "Size of the shared write region clients stage new KV in before a put; a multiple of 4 KiB."},

    {"controller", "policy", FieldType::kString, TEMPOKV_FIELD_REF(controller.policy),
     "Commit policy: demand, immediate, queue-K (K >= 1, e.g. queue-4), tempokv, "
     "tempokv-progressive (each object released after its own copy), tempokv-commit-order (reads "
     "issued in commit order, not use order), or TempoKV with one mechanism off: tempokv-static "
     "(error feedback), tempokv-no-wait (commit wait), tempokv-no-chain (chained deadlines), "
     "tempokv-no-order-stats (order statistics) or tempokv-no-state-ttr (a fixed-rate TTR). The "
     "baselines' reads are issued in commit order, TempoKV's in use order."},
    {"controller", "tick_ms", FieldType::kInteger, TEMPOKV_FIELD_REF(controller.tick_ms),
     "Period of the controller's re-evaluation of pending claims."},
    {"controller", "max_reads_in_flight", FieldType::kInteger,
     TEMPOKV_FIELD_REF(controller.max_reads_in_flight),
     "SSD to fast tier reads outstanding at once, 1 to 4096."},
    {"controller", "prior_read_bytes_per_s", FieldType::kNumber,
     TEMPOKV_FIELD_REF(controller.prior_read_bytes_per_s),
     "SSD read rate assumed until one is measured, bytes per second."},
    {"controller", "write_cost", FieldType::kNumber, TEMPOKV_FIELD_REF(controller.write_cost),
     "Device time of one byte the store writes, in bytes read (the SSD's read rate over its "
     "write rate), until writes have completed: the read and write rates are each calibrated "
     "over their share of the device time, and TTR waits for the writes in flight. 0: writes "
     "are not seen."},
    {"controller", "feedback_quantile", FieldType::kNumber,
     TEMPOKV_FIELD_REF(controller.feedback_quantile),
     "TempoKV's error feedback weighs a late claim q/(1 - q) times an early one: its margin is "
     "about the q-quantile of recent timing errors; 0 to below 1."},
    {"controller", "profile", FieldType::kString, TEMPOKV_FIELD_REF(controller.profile),
     "Cost profile: a name looked up in profiles/ (\"cpu-small\"), or a path to a profile JSON "
     "(contains '/' or ends in .json)."},
    {"controller", "max_active", FieldType::kInteger, TEMPOKV_FIELD_REF(controller.max_active),
     "Slot limit a runtime's adapter assumes when its hello gives none."},
    {"controller", "prior_output_tokens", FieldType::kInteger,
     TEMPOKV_FIELD_REF(controller.prior_output_tokens),
     "Output length assumed for a request before one is predicted."},
    {"controller", "rhythm_horizon", FieldType::kBool, TEMPOKV_FIELD_REF(controller.rhythm_horizon),
     "Project exact TTUs only as far ahead as the runtime's next updates can matter (twice the "
     "gap between them past the commit window), not 5 s past it: a cheaper step "
     "(docs/step-cost.md)."},

    {"remote", "seeds", FieldType::kStrings, TEMPOKV_FIELD_REF(remote.seeds),
     "HOST:PORT of Redis Cluster nodes the slot map is asked of (docs/cluster.md); [] (the "
     "default) runs without the shared remote tier."},
    {"remote", "user", FieldType::kString, TEMPOKV_FIELD_REF(remote.user),
     "ACL user the daemon authenticates as; \"\" means requirepass (AUTH with the password "
     "alone), or no AUTH when password_file is \"\" too."},
    {"remote", "password_file", FieldType::kString, TEMPOKV_FIELD_REF(remote.password_file),
     "File holding the cluster's password on its first line (readable and writable by its owner "
     "alone), read at start; the password is never taken from the TOML or a flag and never "
     "logged. \"\" means no password."},
    {"remote", "connect_timeout_ms", FieldType::kInteger,
     TEMPOKV_FIELD_REF(remote.connect_timeout_ms),
     "Bound on opening a connection to one node, 1 to 60000."},
    {"remote", "io_timeout_ms", FieldType::kInteger, TEMPOKV_FIELD_REF(remote.io_timeout_ms),
     "Deadline of one call to the cluster, the whole value included, 1 to 600000: a node that "
     "stops answering fails the call within it."},
    {"remote", "write_behind_bytes", FieldType::kBytes,
     TEMPOKV_FIELD_REF(remote.write_behind_bytes),
     "Bytes of puts waiting to be published to the cluster; a put beyond it is stored locally "
     "and its publish dropped and counted (the engine never waits); at least "
     "store.max_object_bytes."},
    {"remote", "node_rate_gib_s", FieldType::kNumber, TEMPOKV_FIELD_REF(remote.node_rate_gib_s),
     "Fetch rate from one node, GiB/s, a remote claim's TTR assumes until fetches from that "
     "node are measured; positive and finite."},
    {"remote", "max_value_bytes", FieldType::kBytes, TEMPOKV_FIELD_REF(remote.max_value_bytes),
     "Largest object published to or fetched from the cluster; at least "
     "store.max_object_bytes."},
    {"remote", "max_claim_fetch_ms", FieldType::kInteger,
     TEMPOKV_FIELD_REF(remote.max_claim_fetch_ms),
     "A claim on objects only in the cluster whose remote TTR (bytes in flight and its own over "
     "the nodes' measured rates) is longer is refused at its report_hit and the engine "
     "recomputes. 1 to 60000."},
    {"remote", "prefetch", FieldType::kBool, TEMPOKV_FIELD_REF(remote.prefetch),
     "TempoKV stages a claim on objects only in the cluster in two stages: their fetch into the "
     "store starts at the laxity of the whole path and reserves nothing; the commit comes at the "
     "laxity of the local read, once they have landed. false: the commit at the whole path's "
     "laxity starts the fetch and holds the claim's fast-tier room through it."},
};

#undef TEMPOKV_FIELD_REF

Status bad(const Field& f, std::string_view why) {
  return Status::invalid_argument(f.name() + " " + std::string(why));
}

constexpr uint64_t kMaxTomlInteger = std::numeric_limits<int64_t>::max();

}  // namespace

std::string Field::name() const {
  return table.empty() ? std::string(key) : std::string(table) + "." + std::string(key);
}

std::span<const Field> fields() { return kFields; }

std::span<const std::string_view> tables() { return kTables; }

const Field* find_field(std::string_view name) {
  for (const Field& f : fields()) {
    if (f.name() == name) return &f;
  }
  return nullptr;
}

std::string_view expected(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "a string";
    case FieldType::kBool:
      return "true or false";
    case FieldType::kInteger:
      return "an unsigned integer";
    case FieldType::kBytes:
      return "a byte size (an integer or a string such as \"1GiB\")";
    case FieldType::kNumber:
      return "a number";
    case FieldType::kStrings:
      return "an array of strings";
  }
  return "a value";
}

Status set_string(const Field& f, DaemonConfig& c, std::string value) {
  FieldRef ref = f.ref(c);
  if (!std::holds_alternative<std::string*>(ref)) return bad(f, "is not a string");
  *std::get<std::string*>(ref) = std::move(value);
  return Status::ok();
}

Status set_bool(const Field& f, DaemonConfig& c, bool value) {
  FieldRef ref = f.ref(c);
  if (!std::holds_alternative<bool*>(ref)) return bad(f, "is not a boolean");
  *std::get<bool*>(ref) = value;
  return Status::ok();
}

Status set_unsigned(const Field& f, DaemonConfig& c, int64_t value) {
  if (value < 0) return bad(f, "must not be negative (got " + std::to_string(value) + ")");
  FieldRef ref = f.ref(c);
  if (auto* p32 = std::get_if<uint32_t*>(&ref)) {
    if (static_cast<uint64_t>(value) > std::numeric_limits<uint32_t>::max()) {
      return bad(f, "must be at most 4294967295 (got " + std::to_string(value) + ")");
    }
    **p32 = static_cast<uint32_t>(value);
    return Status::ok();
  }
  if (auto* p64 = std::get_if<uint64_t*>(&ref)) {
    **p64 = static_cast<uint64_t>(value);
    return Status::ok();
  }
  return bad(f, "is not an integer");
}

Status set_number(const Field& f, DaemonConfig& c, double value) {
  FieldRef ref = f.ref(c);
  if (!std::holds_alternative<double*>(ref)) return bad(f, "is not a number");
  *std::get<double*>(ref) = value;
  return Status::ok();
}

Status set_strings(const Field& f, DaemonConfig& c, std::vector<std::string> value) {
  FieldRef ref = f.ref(c);
  if (!std::holds_alternative<std::vector<std::string>*>(ref)) {
    return bad(f, "is not a list of strings");
  }
  *std::get<std::vector<std::string>*>(ref) = std::move(value);
  return Status::ok();
}

Status set_from_text(const Field& f, DaemonConfig& c, std::string_view text) {
  auto expect = [&] {
    return bad(f,
               "expects " + std::string(expected(f.type)) + " (got '" + std::string(text) + "')");
  };
  switch (f.type) {
    case FieldType::kString:
      return set_string(f, c, std::string(text));
    case FieldType::kBool:
      if (text == "true") return set_bool(f, c, true);
      if (text == "false") return set_bool(f, c, false);
      return expect();
    case FieldType::kInteger: {
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      const bool out_of_range = ec == std::errc::result_out_of_range;
      if (text.empty() || end != text.data() + text.size() ||
          (ec != std::errc() && !out_of_range)) {
        return expect();
      }
      if (out_of_range || v > kMaxTomlInteger) {
        return bad(f, "is out of range (got '" + std::string(text) + "')");
      }
      return set_unsigned(f, c, static_cast<int64_t>(v));
    }
    case FieldType::kBytes: {
      Result<uint64_t> v = parse_bytes(text);
      uint64_t whole = 0;  // parse_bytes refuses sizes beyond 64 bits: say so for plain integers
      if (!v.is_ok() && std::from_chars(text.data(), text.data() + text.size(), whole).ec ==
                            std::errc::result_out_of_range) {
        return bad(f, "is out of range (got '" + std::string(text) + "')");
      }
      if (!v.is_ok()) return expect();
      if (*v > kMaxTomlInteger) return bad(f, "is out of range (got '" + std::string(text) + "')");
      return set_unsigned(f, c, static_cast<int64_t>(*v));
    }
    case FieldType::kNumber: {
      double v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return expect();
      return set_number(f, c, v);
    }
    case FieldType::kStrings: {
      // Comma-separated; the empty text is the empty list.
      std::vector<std::string> items;
      for (size_t at = 0; !text.empty() && at <= text.size();) {
        const size_t comma = std::min(text.find(',', at), text.size());
        items.emplace_back(text.substr(at, comma - at));
        at = comma + 1;
      }
      return set_strings(f, c, std::move(items));
    }
  }
  return expect();
}

std::string toml_quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", u);
          out += esc;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string toml_value(const Field& f, const DaemonConfig& c) {
  // The accessors take a mutable config so one list serves readers and writers; this only reads.
  FieldRef ref = f.ref(const_cast<DaemonConfig&>(c));
  if (auto* s = std::get_if<std::string*>(&ref)) return toml_quote(**s);
  if (auto* b = std::get_if<bool*>(&ref)) return **b ? "true" : "false";
  if (auto* u32 = std::get_if<uint32_t*>(&ref)) return std::to_string(**u32);
  if (auto* u64 = std::get_if<uint64_t*>(&ref)) return std::to_string(**u64);
  if (auto* list = std::get_if<std::vector<std::string>*>(&ref)) {
    std::string out = "[";
    for (const std::string& item : **list) out += (out.size() > 1 ? ", " : "") + toml_quote(item);
    return out + "]";
  }
  double d = *std::get<double*>(ref);
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Whole numbers print in full ("2000000000.0", not "2e+09"); where every integer is exact.
  if (d == std::trunc(d) && std::fabs(d) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(d)) + ".0";
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);  // shortest form that reads back
  std::string text(buf, end);
  // TOML needs a fraction or an exponent to read a float.
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace tempokv::service::config
