// tempokvd's [remote] table (docs/tempokvd-config.md, docs/cluster.md): parsed, printed, set by
// --set, validated with errors naming the field, and the password read from its file and kept
// out of every message.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "daemon/daemon_config.h"
#include "daemon/remote_tier_config.h"
#include "service/config_validate.h"

namespace tempokv::service {
namespace {

// A file in a fresh temporary directory, with the given text and mode.
class SecretFile {
 public:
  SecretFile(const std::string& text, mode_t mode) {
    char tmpl[] = "/tmp/tempokv-remote-config-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/password";
    std::ofstream(path_) << text;
    ::chmod(path_.c_str(), mode);
  }
  ~SecretFile() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

TEST(RemoteConfig, OffByDefault) {
  DaemonConfig c;
  EXPECT_FALSE(c.remote.enabled());
  Result<RemoteTierOptions> o = remote_tier_options(c.remote);
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_FALSE(o->enabled());
}

TEST(RemoteConfig, ParsesTheTable) {
  Result<DaemonConfig> r = parse_daemon_config(R"([remote]
seeds = ["127.0.0.1:7000", "[::1]:7001", "redis-a:7002"]
user = "tempokv"
password_file = "/etc/tempokv/redis.pass"
connect_timeout_ms = 150
io_timeout_ms = 900
write_behind_bytes = "2GiB"
node_rate_gib_s = 3
max_value_bytes = "512MiB"
)",
                                               "cfg.toml");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const DaemonConfig::Remote& m = r->remote;
  EXPECT_EQ(m.seeds, (std::vector<std::string>{"127.0.0.1:7000", "[::1]:7001", "redis-a:7002"}));
  EXPECT_EQ(m.user, "tempokv");
  EXPECT_EQ(m.password_file, "/etc/tempokv/redis.pass");
  EXPECT_EQ(m.connect_timeout_ms, 150u);
  EXPECT_EQ(m.io_timeout_ms, 900u);
  EXPECT_EQ(m.write_behind_bytes, 2ULL << 30);
  EXPECT_EQ(m.node_rate_gib_s, 3.0);
  EXPECT_EQ(m.max_value_bytes, 512ULL << 20);
  EXPECT_TRUE(r->validate().is_ok()) << r->validate().to_string();
}

TEST(RemoteConfig, WrongTypesNameTheFieldAndTheElement) {
  Result<DaemonConfig> r = parse_daemon_config("[remote]\nseeds = \"127.0.0.1:7000\"\n", "c.toml");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(),
            "c.toml:2:9: remote.seeds must be an array of strings (got string)");
  r = parse_daemon_config("[remote]\nseeds = [\"127.0.0.1:7000\", 7001]\n", "c.toml");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "c.toml:2:9: remote.seeds[1] must be a string (got integer)");
  r = parse_daemon_config("[remote]\npassword = \"x\"\n", "c.toml");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "c.toml:2:1: unknown key 'remote.password'");
}

TEST(RemoteConfig, SetTakesACommaSeparatedList) {
  DaemonConfig c;
  ASSERT_TRUE(apply_override(c, "remote.seeds=127.0.0.1:7000,127.0.0.1:7001").is_ok());
  EXPECT_EQ(c.remote.seeds, (std::vector<std::string>{"127.0.0.1:7000", "127.0.0.1:7001"}));
  ASSERT_TRUE(apply_override(c, "remote.seeds=").is_ok());
  EXPECT_TRUE(c.remote.seeds.empty());
}

TEST(RemoteConfig, PrintedConfigReadsBack) {
  DaemonConfig c;
  c.remote.seeds = {"127.0.0.1:7000", "quote\"d:1"};
  c.remote.user = "u";
  c.remote.password_file = "/p";
  c.remote.write_behind_bytes = 3ULL << 30;
  c.remote.node_rate_gib_s = 0.5;
  const std::string text = c.to_toml();
  EXPECT_NE(text.find("seeds = [\"127.0.0.1:7000\", \"quote\\\"d:1\"]"), std::string::npos) << text;
  Result<DaemonConfig> back = parse_daemon_config(text, "printed.toml");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->remote.seeds, c.remote.seeds);
  EXPECT_EQ(back->remote.write_behind_bytes, c.remote.write_behind_bytes);
  EXPECT_EQ(back->remote.node_rate_gib_s, 0.5);
  EXPECT_EQ(back->to_toml(), text);
}

TEST(RemoteConfig, ValidateNamesTheField) {
  EXPECT_EQ(validate_error("remote.seeds=127.0.0.1:7000,127.0.0.1:7001"), "");
  EXPECT_EQ(validate_error("remote.seeds=127.0.0.1"),
            "remote.seeds '127.0.0.1' must be HOST:PORT ([V6]:PORT) with PORT in [1, 65535]");
  EXPECT_EQ(validate_error("remote.seeds=127.0.0.1:0"),
            "remote.seeds '127.0.0.1:0' must be HOST:PORT ([V6]:PORT) with PORT in [1, 65535]");
  EXPECT_EQ(validate_error("remote.seeds=127.0.0.1:7000,127.0.0.1:7000"),
            "remote.seeds lists '127.0.0.1:7000' twice");
  EXPECT_EQ(validate_error("remote.user=tempokv"),
            "remote.user is set ('tempokv') but remote.password_file is \"\": an ACL user needs "
            "a password");
  EXPECT_EQ(validate_error("remote.password_file=pass.txt"),
            "remote.password_file must be an absolute path (got 'pass.txt')");
  EXPECT_EQ(validate_error("remote.connect_timeout_ms=0"),
            "remote.connect_timeout_ms must be in [1, 60000] (got 0)");
  EXPECT_EQ(validate_error("remote.io_timeout_ms=600001"),
            "remote.io_timeout_ms must be in [1, 600000] (got 600001)");
  EXPECT_EQ(validate_error("remote.write_behind_bytes=1MiB"),
            "remote.write_behind_bytes must be at least store.max_object_bytes (268435456), so "
            "any put can be published (got 1048576)");
  EXPECT_EQ(validate_error("remote.max_value_bytes=1MiB"),
            "remote.max_value_bytes must be at least store.max_object_bytes (268435456) (got "
            "1048576)");
  EXPECT_EQ(validate_error("remote.max_claim_fetch_ms=0"),
            "remote.max_claim_fetch_ms must be in [1, 60000] (got 0)");
  EXPECT_EQ(validate_error("remote.node_rate_gib_s=0"),
            "remote.node_rate_gib_s must be a positive, finite rate (got 0.000000)");
  EXPECT_EQ(validate_error("remote.node_rate_gib_s=inf"),
            "remote.node_rate_gib_s must be a positive, finite rate (got inf)");
}

TEST(RemoteConfig, PasswordIsReadFromItsFileAndNeverInAMessage) {
  const std::string secret = "s3cret-Pa55";
  {
    SecretFile file(secret + "\nignored second line\n", 0600);
    DaemonConfig c;
    c.remote.seeds = {"127.0.0.1:7000"};
    c.remote.user = "tempokv";
    c.remote.password_file = file.path();
    ASSERT_TRUE(c.validate().is_ok()) << c.validate().to_string();
    EXPECT_EQ(c.to_toml().find(secret), std::string::npos);  // --print-config names the file
    Result<RemoteTierOptions> o = remote_tier_options(c.remote);
    if (!remote_tier_built()) {
      ASSERT_FALSE(o.is_ok());
      EXPECT_EQ(o.status().code(), StatusCode::kFailedPrecondition);
      EXPECT_NE(o.status().message().find("libhiredis-dev"), std::string::npos);
      return;
    }
    ASSERT_TRUE(o.is_ok()) << o.status().to_string();
    EXPECT_EQ(o->password, secret);
    EXPECT_EQ(o->user, "tempokv");
    EXPECT_EQ(o->seeds, c.remote.seeds);
    EXPECT_EQ(o->io_timeout, std::chrono::milliseconds(1000));
    EXPECT_DOUBLE_EQ(o->node_rate_bytes_per_s, 2.0 * (1ULL << 30));
  }
  {
    SecretFile file(secret, 0644);  // readable by others: refused, naming the mode, not the text
    Result<std::string> r = read_password_file("remote.password_file", file.path());
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), "remote.password_file " + file.path() +
                                        " is accessible to users other than its owner (mode "
                                        "0644); chmod 600 it");
  }
  {
    SecretFile file("\n" + secret, 0600);
    Result<std::string> r = read_password_file("remote.password_file", file.path());
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(),
              "remote.password_file " + file.path() + " has an empty first line");
  }
  Result<std::string> missing = read_password_file("remote.password_file", "/nonexistent/p");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("remote.password_file /nonexistent/p"),
            std::string::npos);
}

}  // namespace
}  // namespace tempokv::service
