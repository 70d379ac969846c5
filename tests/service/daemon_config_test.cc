#include "daemon/daemon_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "daemon/daemon.h"
#include "service/config_validate.h"

namespace tempokv::service {
namespace {

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(TEMPOKV_SOURCE_DIR) + "/" + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The message of parsing text as "cfg.toml", or "" when it parsed.
std::string parse_error(const std::string& text) {
  Result<DaemonConfig> r = parse_daemon_config(text, "cfg.toml");
  if (r.is_ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(DaemonConfig, DefaultsValidate) {
  DaemonConfig c;
  EXPECT_TRUE(c.validate().is_ok()) << c.validate().to_string();
  EXPECT_EQ(c.resolved_endpoint(), "ipc://./tempokvd-data/tempokvd.sock");
  EXPECT_EQ(c.resolved_store_dir(), "./tempokvd-data/store");
  c.data_dir = "/var/lib/tempokvd/";
  EXPECT_EQ(c.resolved_endpoint(), "ipc:///var/lib/tempokvd/tempokvd.sock");
  EXPECT_EQ(c.resolved_store_dir(), "/var/lib/tempokvd/store");
}

TEST(DaemonConfig, EmptyDocumentGivesTheDefaults) {
  Result<DaemonConfig> r = parse_daemon_config("", "empty.toml");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->to_toml(), DaemonConfig{}.to_toml());
}

TEST(DaemonConfig, ExampleFileParsesAndValidates) {
  Result<DaemonConfig> r =
      load_daemon_config(std::string(TEMPOKV_SOURCE_DIR) + "/docs/tempokvd.example.toml");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->validate().is_ok()) << r->validate().to_string();
}

TEST(DaemonConfig, MissingFileIsNotFound) {
  Result<DaemonConfig> r = load_daemon_config("/nonexistent/tempokvd.toml");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/tempokvd.toml"), std::string::npos);
}

TEST(DaemonConfig, ParsesEveryKindOfValue) {
  Result<DaemonConfig> r = parse_daemon_config(R"(
data_dir = "/srv/tkv"
[server]
endpoint = "tcp://127.0.0.1:7000"
allow_remote = true
max_sessions = 8
[store]
segment_bytes = "512MiB"
capacity_bytes = 8589934592
[tier]
backing = "file"
dir = "/mnt/pmem"
path = "/mnt/pmem/tier"
huge_pages = true
[controller]
policy = "queue-4"
prior_read_bytes_per_s = 3
write_cost = 0
)",
                                               "cfg.toml");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->data_dir, "/srv/tkv");
  EXPECT_EQ(r->server.endpoint, "tcp://127.0.0.1:7000");
  EXPECT_TRUE(r->server.allow_remote);
  EXPECT_EQ(r->server.max_sessions, 8u);
  EXPECT_EQ(r->store.segment_bytes, 512ULL << 20);
  EXPECT_EQ(r->store.capacity_bytes, 8ULL << 30);
  EXPECT_EQ(r->tier.backing, "file");
  EXPECT_TRUE(r->tier.huge_pages);
  EXPECT_EQ(r->controller.policy, "queue-4");
  EXPECT_EQ(r->controller.prior_read_bytes_per_s, 3.0);  // an integer is a number too
  EXPECT_EQ(r->controller.write_cost, 0.0);              // writes not seen
  EXPECT_EQ(r->tier.capacity_bytes, DaemonConfig{}.tier.capacity_bytes);  // absent: default
  EXPECT_TRUE(r->validate().is_ok()) << r->validate().to_string();
}

TEST(DaemonConfig, UnknownKeysAndTablesAreNamedWithTheirPosition) {
  EXPECT_EQ(parse_error("[server]\nmax_session = 3\n"),
            "cfg.toml:2:1: unknown key 'server.max_session'");
  EXPECT_EQ(parse_error("datadir = \"x\"\n"), "cfg.toml:1:1: unknown key 'datadir'");
  EXPECT_EQ(parse_error("[logging]\nlevel = 1\n"), "cfg.toml:1:2: unknown table 'logging'");
  EXPECT_EQ(parse_error("[server.tls]\ncert = \"x\"\n"),
            "cfg.toml:1:9: unknown table 'server.tls'");
}

TEST(DaemonConfig, WrongTypesNameTheFieldAndTheTypeExpected) {
  EXPECT_EQ(parse_error("[server]\nmax_sessions = \"many\"\n"),
            "cfg.toml:2:16: server.max_sessions must be an unsigned integer (got string)");
  EXPECT_EQ(parse_error("[server]\nallow_remote = 1\n"),
            "cfg.toml:2:16: server.allow_remote must be true or false (got integer)");
  EXPECT_EQ(parse_error("data_dir = 5\n"),
            "cfg.toml:1:12: data_dir must be a string (got integer)");
  EXPECT_NE(parse_error("[tier]\ncapacity_bytes = true\n")
                .find("tier.capacity_bytes must be a byte size"),
            std::string::npos);
  EXPECT_EQ(parse_error("[controller]\nprior_read_bytes_per_s = \"fast\"\n"),
            "cfg.toml:2:26: controller.prior_read_bytes_per_s must be a number (got string)");
  EXPECT_EQ(parse_error("[controller]\npolicy = [\"tempokv\"]\n"),
            "cfg.toml:2:10: controller.policy must be a string (got array)");
  EXPECT_EQ(parse_error("server = 5\n"), "cfg.toml:1:10: 'server' must be a table (got integer)");
}

TEST(DaemonConfig, OutOfRangeIntegersNameTheField) {
  EXPECT_EQ(parse_error("[server]\nmax_sessions = -1\n"),
            "cfg.toml:2:16: server.max_sessions must not be negative (got -1)");
  EXPECT_EQ(parse_error("[server]\nmax_sessions = 5000000000\n"),
            "cfg.toml:2:16: server.max_sessions must be at most 4294967295 (got 5000000000)");
  EXPECT_EQ(parse_error("[tier]\nslot_bytes = \"lots\"\n"),
            "cfg.toml:2:14: tier.slot_bytes must be a byte size (an integer or a string such as "
            "\"1GiB\") (got 'lots')");
}

TEST(DaemonConfig, SyntaxErrorsGiveOriginLineAndColumn) {
  std::string err = parse_error("data_dir = \"x\"\n[server\nmax_sessions = 1\n");
  EXPECT_EQ(err.rfind("cfg.toml:2:", 0), 0u) << err;
  err = parse_error("[store]\nqueue_depth = = 3\n");
  EXPECT_EQ(err.rfind("cfg.toml:2:", 0), 0u) << err;
}

TEST(DaemonConfig, ValidateNamesTheOffendingField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"data_dir=", "data_dir "},
      {"server.endpoint=udp://127.0.0.1:5", "server.endpoint "},
      {"server.endpoint=ipc://", "server.endpoint "},
      {"server.endpoint=tcp://127.0.0.1:0", "server.endpoint "},
      {"server.endpoint=tcp://127.0.0.1", "server.endpoint "},
      {"server.endpoint=tcp://10.1.2.3:5555", "set server.allow_remote = true"},
      {"server.endpoint=tcp://*:5555", "server.endpoint "},
      {"server.metrics_address=9464", "server.metrics_address "},
      {"server.metrics_address=127.0.0.1:70000", "server.metrics_address "},
      {"server.metrics_address=0.0.0.0:9464", "server.metrics_address "},  // not loopback
      {"server.heartbeat_timeout_ms=0", "server.heartbeat_timeout_ms "},
      {"server.max_sessions=0", "server.max_sessions "},
      {"store.segment_bytes=5000", "store.segment_bytes "},
      {"store.segment_bytes=8KiB", "store.segment_bytes "},
      {"store.capacity_bytes=512MiB", "store.capacity_bytes "},
      {"store.capacity_bytes=0", "store.capacity_bytes "},
      {"store.max_object_bytes=1GiB", "store.max_object_bytes "},
      {"store.max_object_bytes=0", "store.max_object_bytes "},
      {"store.engine=spdk", "store.engine "},
      {"store.queue_depth=0", "store.queue_depth "},
      {"store.hook_threads=65", "store.hook_threads "},
      {"store.read_bytes_per_s=-1", "store.read_bytes_per_s "},
      {"store.read_bytes_per_s=inf", "store.read_bytes_per_s "},
      {"tier.slot_bytes=1000", "tier.slot_bytes "},
      {"tier.capacity_bytes=0", "tier.capacity_bytes "},
      {"tier.budget_bytes=4GiB", "tier.budget_bytes "},
      {"tier.budget_bytes=0", "tier.budget_bytes "},
      {"tier.backing=ram", "tier.backing "},
      {"tier.backing=dax", "tier.path "},
      {"writes.region_bytes=100", "writes.region_bytes "},
      {"writes.region_bytes=0", "writes.region_bytes "},
      {"controller.policy=fancy", "controller.policy "},
      {"controller.policy=queue-0", "controller.policy "},
      {"controller.policy=queue-", "controller.policy "},
      {"controller.policy=queue-2x", "controller.policy "},
      {"controller.tick_ms=0", "controller.tick_ms "},
      {"controller.max_reads_in_flight=0", "controller.max_reads_in_flight "},
      {"controller.prior_read_bytes_per_s=0", "controller.prior_read_bytes_per_s "},
      {"controller.prior_read_bytes_per_s=inf", "controller.prior_read_bytes_per_s "},
      {"controller.write_cost=-0.5", "controller.write_cost "},
      {"controller.write_cost=inf", "controller.write_cost "},
      {"controller.feedback_quantile=1", "controller.feedback_quantile "},
      {"controller.feedback_quantile=-0.1", "controller.feedback_quantile "},
      {"controller.feedback_quantile=nan", "controller.feedback_quantile "},
      {"controller.profile=", "controller.profile "},
      {"controller.profile=cpu small", "controller.profile "},
      {"controller.max_active=0", "controller.max_active "},
      {"controller.prior_output_tokens=0", "controller.prior_output_tokens "},
  };
  for (const auto& [assignment, field] : cases) {
    std::string err = validate_error(assignment);
    EXPECT_NE(err.find(field), std::string::npos) << assignment << " gave '" << err << "'";
  }
}

TEST(DaemonConfig, MetricsBeyondLoopbackNeedAllowRemote) {
  DaemonConfig c;
  ASSERT_TRUE(apply_override(c, "server.metrics_address=0.0.0.0:9464").is_ok());
  EXPECT_NE(c.validate().message().find("/metrics has no authentication"), std::string::npos)
      << c.validate().to_string();
  ASSERT_TRUE(apply_override(c, "server.allow_remote=true").is_ok());
  EXPECT_TRUE(c.validate().is_ok()) << c.validate().to_string();
}

TEST(DaemonConfig, EndpointFormsThatValidate) {
  for (const char* assignment :
       {"server.endpoint=ipc:///tmp/t.sock", "server.endpoint=tcp://127.0.0.2:1",
        "server.endpoint=tcp://localhost:5555", "server.endpoint=tcp://[::1]:5555",
        "server.metrics_address=", "server.metrics_address=localhost:0",
        "server.metrics_address=[::1]:9464", "controller.policy=queue-16",
        "controller.policy=tempokv-progressive", "controller.profile=profiles/h100.json",
        "tier.backing=file"}) {
    DaemonConfig c;
    ASSERT_TRUE(apply_override(c, assignment).is_ok()) << assignment;
    if (c.tier.backing == "file") {
      c.tier.dir = "/tmp";
      c.tier.path = "/tmp/tier";
    }
    EXPECT_TRUE(c.validate().is_ok()) << assignment << ": " << c.validate().to_string();
  }
  DaemonConfig remote;
  remote.server.endpoint = "tcp://0.0.0.0:5555";
  remote.server.allow_remote = true;
  EXPECT_TRUE(remote.validate().is_ok()) << remote.validate().to_string();
}

TEST(DaemonConfig, TierPathIsConfinedToTierDir) {
  for (const char* path : {"/etc/passwd", "/dev/shm/../etc/x", "/dev/shm/sub/tier", "rel/tier",
                           "/dev/shmx/tier"}) {
    DaemonConfig c;
    c.tier.path = path;
    Status st = c.validate();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << path;
    EXPECT_NE(st.message().find("tier.path"), std::string::npos) << st.to_string();
  }
  DaemonConfig ok;
  ok.tier.path = "/dev/shm/my-tier";
  EXPECT_TRUE(ok.validate().is_ok()) << ok.validate().to_string();
  EXPECT_EQ(ok.resolved_tier_path(1), "/dev/shm/my-tier");
  ok.tier.path = "bare-name";
  EXPECT_TRUE(ok.validate().is_ok()) << ok.validate().to_string();
  EXPECT_EQ(ok.resolved_tier_path(1), "/dev/shm/bare-name");
  ok.tier.path = "";
  EXPECT_EQ(ok.resolved_tier_path(0xabc), "/dev/shm/tempokvd-0000000000000abc-tier");
  EXPECT_EQ(ok.write_region_path(0xabc), "/dev/shm/tempokvd-0000000000000abc-writes");
  DaemonConfig dax;
  dax.tier.backing = "dax";
  dax.tier.path = "/tmp/not-a-device";
  EXPECT_NE(dax.validate().message().find("/dev/dax"), std::string::npos);
  dax.tier.path = "/dev/dax0.0";
  EXPECT_TRUE(dax.validate().is_ok()) << dax.validate().to_string();
}

TEST(DaemonConfig, SessionQuotasAreChecked) {
  DaemonConfig c;
  c.server.max_write_bytes_per_session = 4096;  // below store.max_object_bytes
  EXPECT_NE(c.validate().message().find("server.max_write_bytes_per_session"), std::string::npos);
  c = DaemonConfig{};
  c.server.max_queued_messages = 0;
  EXPECT_NE(c.validate().message().find("server.max_queued_messages"), std::string::npos);
  c = DaemonConfig{};
  c.server.max_requests_per_runtime = 0;
  EXPECT_NE(c.validate().message().find("server.max_requests_per_runtime"), std::string::npos);
  c = DaemonConfig{};
  c.server.max_sessions_per_runtime = 0;
  EXPECT_NE(c.validate().message().find("server.max_sessions_per_runtime"), std::string::npos);
  c = DaemonConfig{};
  c.server.max_manifest_entries = 16385;  // beyond the protocol's limit
  EXPECT_NE(c.validate().message().find("server.max_manifest_entries"), std::string::npos);
  c = DaemonConfig{};
  c.server.max_manifest_entries_per_runtime = c.server.max_manifest_entries - 1;
  EXPECT_NE(c.validate().message().find("server.max_manifest_entries_per_runtime"),
            std::string::npos);
}

TEST(DaemonConfig, TooLongIpcPathIsRefused) {
  DaemonConfig c;
  c.data_dir = "/" + std::string(120, 'd');
  EXPECT_NE(c.validate().message().find("server.endpoint ipc path is"), std::string::npos);
}

TEST(DaemonConfig, OverridesParseByTheFieldsType) {
  DaemonConfig c;
  ASSERT_TRUE(apply_override(c, "data_dir=/a=b").is_ok());  // splits at the first '='
  EXPECT_EQ(c.data_dir, "/a=b");
  ASSERT_TRUE(apply_override(c, "server.allow_remote=true").is_ok());
  EXPECT_TRUE(c.server.allow_remote);
  ASSERT_TRUE(apply_override(c, "server.max_sessions=12").is_ok());
  EXPECT_EQ(c.server.max_sessions, 12u);
  ASSERT_TRUE(apply_override(c, "tier.capacity_bytes=8GiB").is_ok());
  EXPECT_EQ(c.tier.capacity_bytes, 8ULL << 30);
  ASSERT_TRUE(apply_override(c, "tier.slot_bytes=65536").is_ok());
  EXPECT_EQ(c.tier.slot_bytes, 65536u);
  ASSERT_TRUE(apply_override(c, "controller.prior_read_bytes_per_s=1.5e9").is_ok());
  EXPECT_EQ(c.controller.prior_read_bytes_per_s, 1.5e9);
  ASSERT_TRUE(apply_override(c, "server.endpoint=").is_ok());
  EXPECT_EQ(c.server.endpoint, "");
}

TEST(DaemonConfig, BadOverridesNameTheFieldAndTheTypeExpected) {
  DaemonConfig c;
  EXPECT_EQ(apply_override(c, "server.max_sessions=abc").message(),
            "--set: server.max_sessions expects an unsigned integer (got 'abc')");
  EXPECT_EQ(apply_override(c, "server.max_sessions=-1").message(),
            "--set: server.max_sessions expects an unsigned integer (got '-1')");
  EXPECT_EQ(apply_override(c, "server.max_sessions=4294967296").message(),
            "--set: server.max_sessions must be at most 4294967295 (got 4294967296)");
  EXPECT_EQ(apply_override(c, "store.capacity_bytes=99999999999999999999").message(),
            "--set: store.capacity_bytes is out of range (got '99999999999999999999')");
  EXPECT_EQ(apply_override(c, "server.allow_remote=yes").message(),
            "--set: server.allow_remote expects true or false (got 'yes')");
  EXPECT_EQ(apply_override(c, "controller.prior_read_bytes_per_s=fast").message(),
            "--set: controller.prior_read_bytes_per_s expects a number (got 'fast')");
  EXPECT_NE(apply_override(c, "tier.slot_bytes=4 bananas").message().find("tier.slot_bytes"),
            std::string::npos);
  EXPECT_EQ(apply_override(c, "server.bogus=1").message(), "--set: unknown key 'server.bogus'");
  EXPECT_EQ(apply_override(c, "server=1").message(), "--set: unknown key 'server'");
  EXPECT_EQ(apply_override(c, "server.max_sessions").message(),
            "--set 'server.max_sessions': expected table.key=value");
  EXPECT_EQ(c.to_toml(), DaemonConfig{}.to_toml());  // failed overrides change nothing
}

TEST(DaemonConfig, ToTomlRoundTripsEveryField) {
  DaemonConfig c;
  c.data_dir = "/srv/quote\"back\\slash\nnew\ttab";
  c.server.endpoint = "tcp://[::1]:6000";
  c.server.allow_remote = true;
  c.server.metrics_address = "";
  c.server.heartbeat_timeout_ms = 1234;
  c.server.max_sessions = 4294967295u;
  c.store.dir = "/nvme/store";
  c.store.segment_bytes = 512ULL << 20;
  c.store.capacity_bytes = (1ULL << 40) + 4096;
  c.store.max_object_bytes = 3;
  c.store.engine = "threads";
  c.store.queue_depth = 7;
  c.store.hook_threads = 0;
  c.tier.capacity_bytes = 12ULL << 30;
  c.tier.budget_bytes = 11ULL << 30;
  c.tier.slot_bytes = 8192;
  c.tier.backing = "dax";
  c.tier.path = "/dev/dax0.0";
  c.tier.huge_pages = true;
  c.writes.region_bytes = 4096;
  c.controller.policy = "queue-3";
  c.controller.tick_ms = 9;
  c.controller.max_reads_in_flight = 5;
  c.controller.prior_read_bytes_per_s = 0.1;
  c.controller.write_cost = 2.5;
  c.controller.feedback_quantile = 0.95;
  c.controller.profile = "h100-llama-3.1-8b";
  c.controller.max_active = 2;
  c.controller.prior_output_tokens = 1;

  const std::string text = c.to_toml();
  Result<DaemonConfig> back = parse_daemon_config(text, "printed.toml");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string() << "\n" << text;
  EXPECT_EQ(back->to_toml(), text);
  EXPECT_EQ(back->data_dir, c.data_dir);
  EXPECT_EQ(back->server.max_sessions, c.server.max_sessions);
  EXPECT_EQ(back->store.capacity_bytes, c.store.capacity_bytes);
  EXPECT_EQ(back->store.hook_threads, 0u);
  EXPECT_EQ(back->controller.prior_read_bytes_per_s, 0.1);
  EXPECT_EQ(back->controller.write_cost, 2.5);
  EXPECT_TRUE(back->tier.huge_pages);

  for (double rate : {2e9, 1.0, 123456.789, 1e300}) {
    DaemonConfig d;
    d.controller.prior_read_bytes_per_s = rate;
    Result<DaemonConfig> r = parse_daemon_config(d.to_toml(), "rate.toml");
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->controller.prior_read_bytes_per_s, rate);
  }
}

// The config file's write cost is the one the daemon's staging provider gets (it was fixed at
// ProviderOptions' default, 1.0, before it was a field).
TEST(DaemonConfig, WriteCostReachesTheDaemonsOptions) {
  DaemonConfig c;
  EXPECT_EQ(c.controller.write_cost, 1.0);
  ASSERT_TRUE(apply_override(c, "controller.write_cost=0.25").is_ok());
  Result<CoreOptions> o = core_options(c, std::string(TEMPOKV_SOURCE_DIR) + "/profiles", 7);
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->write_cost, 0.25);
}

// The daemon's options from the default configuration with `overrides` applied.
Result<CoreOptions> options_with(std::initializer_list<const char*> overrides) {
  DaemonConfig c;
  for (const char* o : overrides) TEMPOKV_RETURN_IF_ERROR(apply_override(c, o));
  return core_options(c, std::string(TEMPOKV_SOURCE_DIR) + "/profiles", 7);
}

// store.hook_threads reaches the daemon's options (it was always the engine's default, 2).
TEST(DaemonConfig, HookThreadsReachTheDaemonsOptions) {
  EXPECT_EQ(DaemonConfig{}.store.hook_threads, 2u);
  Result<CoreOptions> o = options_with({"store.hook_threads=5"});
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->hook_threads, 5u);
}

// controller.feedback_quantile reaches the controller's options through the core's.
TEST(DaemonConfig, FeedbackQuantileReachesTheDaemonsOptions) {
  EXPECT_EQ(DaemonConfig{}.controller.feedback_quantile, ErrorFeedbackOptions{}.quantile);
  Result<CoreOptions> o = options_with({"controller.feedback_quantile=0.95"});
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->feedback_quantile, 0.95);
}

// The store's write bounds (reads before writes) reach the store's options.
TEST(DaemonConfig, WriteBoundsReachTheDaemonsOptions) {
  Result<CoreOptions> o = options_with(
      {"store.write_bytes_in_flight=8MiB", "store.write_bytes_in_flight_while_reading=1MiB"});
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->write_bytes_in_flight, 8ULL << 20);
  EXPECT_EQ(o->write_bytes_in_flight_while_reading, 1ULL << 20);
}

TEST(DaemonConfig, DocsReferenceTableMatchesTheFieldList) {
  const std::string docs = read_source_file("docs/tempokvd-config.md");
  ASSERT_FALSE(docs.empty());
  EXPECT_NE(docs.find(daemon_config_reference()), std::string::npos)
      << "docs/tempokvd-config.md is out of date; its table should read:\n"
      << daemon_config_reference();
}

}  // namespace
}  // namespace tempokv::service
