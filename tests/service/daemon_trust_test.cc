// The trust model against a real tempokvd process (docs/service.md, "Security model"): joining a
// runtime listed in server.tokens_file needs its token, a tokens file anyone but its owner may read
// is refused, and the socket and shared files belong to server.group with mode 0660.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "service/daemon_process.h"

namespace tempokv::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class TrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "tkvd-trust-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    tokens_ = dir_ + "/tokens";
    std::ofstream(tokens_) << "# runtime token\nengine-a s3cret-a\nengine-b s3cret-b\n";
    ::chmod(tokens_.c_str(), 0600);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Result<std::unique_ptr<ServiceClient>> join(DaemonProcess& d, const std::string& runtime,
                                              const std::string& token) {
    ClientOptions o;
    o.endpoint = d.endpoint();
    o.name = "trust";
    o.runtime = runtime;
    o.token = token;
    o.call_timeout = std::chrono::seconds(5);
    return ServiceClient::connect(o);
  }
  std::string dir_;
  std::string tokens_;
};

TEST_F(TrustTest, JoiningAListedRuntimeNeedsItsToken) {
  DaemonProcess d(dir_ + "/data", {"--set", "server.tokens_file=" + tokens_});
  ASSERT_TRUE(d.start());
  auto none = join(d, "engine-a", "");
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition) << none.status().to_string();
  EXPECT_THAT(none.status().message(), HasSubstr("needs its token"));
  auto wrong = join(d, "engine-a", "s3cret-b");  // another runtime's token
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("needs its token"));
  auto right = join(d, "engine-a", "s3cret-a");
  ASSERT_TRUE(right.is_ok()) << right.status().to_string();
  // A second rank with the token joins the same runtime.
  auto rank = join(d, "engine-a", "s3cret-a");
  ASSERT_TRUE(rank.is_ok()) << rank.status().to_string();
  EXPECT_EQ((*rank)->hello().runtime_id, (*right)->hello().runtime_id);
  // A runtime the file does not list needs no token, and a session's own runtime none either.
  EXPECT_TRUE(join(d, "unlisted", "").is_ok());
  EXPECT_TRUE(join(d, "", "").is_ok());
  right->reset();
  rank->reset();
  EXPECT_EQ(d.stop(), 0);
}

TEST_F(TrustTest, ATokensFileOthersMayReadIsRefusedAtStart) {
  ::chmod(tokens_.c_str(), 0644);
  DaemonProcess d(dir_ + "/data", {"--set", "server.tokens_file=" + tokens_});
  d.log_to(dir_ + "/log");
  EXPECT_FALSE(d.start());
  std::stringstream log;
  log << std::ifstream(dir_ + "/log").rdbuf();
  EXPECT_THAT(log.str(), HasSubstr("server.tokens_file"));
  EXPECT_THAT(log.str(), HasSubstr("0644"));
}

TEST_F(TrustTest, ATokensFileItsGroupMayReadIsRefusedAtStart) {
  ::chmod(tokens_.c_str(), 0640);
  DaemonProcess d(dir_ + "/data", {"--set", "server.tokens_file=" + tokens_});
  d.log_to(dir_ + "/log");
  EXPECT_FALSE(d.start());
  std::stringstream log;
  log << std::ifstream(dir_ + "/log").rdbuf();
  EXPECT_THAT(log.str(), HasSubstr("server.tokens_file"));
  EXPECT_THAT(log.str(), HasSubstr("0640"));
}

TEST_F(TrustTest, TheSocketAndSharedFilesBelongToTheConfiguredGroup) {
  const std::string group = std::to_string(getgid());
  DaemonProcess d(dir_ + "/data", {"--set", "server.group=" + group});
  ASSERT_TRUE(d.start());
  auto c = d.connect();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_TRUE((*c)->put(Key{1, 1}, {0, 16}, std::vector<std::byte>(4096, std::byte{7})).is_ok());
  const std::string region = (*c)->write_region_path();
  // Its members may enter the regions' directory, never list it.
  struct stat dir {};
  ASSERT_EQ(::stat(std::filesystem::path(region).parent_path().c_str(), &dir), 0);
  EXPECT_EQ(dir.st_mode & 0777, 0710u);
  EXPECT_EQ(dir.st_gid, getgid());
  for (const std::string& path : {dir_ + "/data/tempokvd.sock", (*c)->hello().tier_path, region}) {
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 0777, 0660u) << path;
    EXPECT_EQ(st.st_gid, getgid()) << path;
  }
  c->reset();
  EXPECT_EQ(d.stop(), 0);
}

TEST_F(TrustTest, RequestIdsArePerRuntime) {
  DaemonProcess d(dir_ + "/data");
  ASSERT_TRUE(d.start());
  auto a = d.connect();
  auto b = d.connect();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  std::vector<std::byte> bytes(64 << 10, std::byte{7});
  ASSERT_TRUE((*a)->put(Key{9, 1}, TokenRange{0, 256}, bytes).is_ok());
  const std::vector<ManifestEntry> m = {{Key{9, 1}, bytes.size()}};
  // Both runtimes add request 1: neither can see, take or refuse the other's.
  for (auto* c : {a->get(), b->get()}) {
    ASSERT_TRUE(c->add_request({1, 2048, 256, bytes.size(), 16}).is_ok());
    ASSERT_TRUE(c->report_hit(1, m).is_ok());
    ASSERT_TRUE(c->update_order(std::vector<uint64_t>{1}).is_ok());
    ASSERT_TRUE(c->admitted(1).is_ok());
  }
  bool ready = false;
  auto answer = (*a)->request_retrieval(1, [&](ClaimId id, Result<RetrievalPath> p) {
    EXPECT_EQ(id, 1u);  // the notification names the runtime's own id
    EXPECT_TRUE(p.is_ok()) << p.status().to_string();
    ready = true;
  });
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  for (int i = 0; i < 500 && *answer == RetrievalAnswer::kWait && !ready; ++i) {
    (*a)->dispatch();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(*answer != RetrievalAnswer::kWait || ready);
  ASSERT_TRUE((*b)->cancel(1).is_ok());  // b's request 1, not a's
  ASSERT_TRUE((*a)->begin_transfer(1).is_ok());
  auto spans = (*a)->objects(1);
  ASSERT_TRUE(spans.is_ok() && spans->size() == 1);
  EXPECT_EQ(std::memcmp((*a)->tier_data() + (*spans)[0].offset, bytes.data(), bytes.size()), 0);
  ASSERT_TRUE((*a)->end_transfer(1).is_ok());
  // Errors name the runtime's own ids.
  Status unknown = (*a)->admitted(424242);
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_THAT(unknown.message(), HasSubstr("424242"));
  a->reset();
  b->reset();
  EXPECT_EQ(d.stop(), 0);
}

TEST_F(TrustTest, AnUnknownGroupIsRefusedNamingTheField) {
  DaemonProcess d(dir_ + "/data", {"--set", "server.group=no-such-group-tkv"});
  d.log_to(dir_ + "/log");
  EXPECT_FALSE(d.start());
  std::stringstream log;
  log << std::ifstream(dir_ + "/log").rdbuf();
  EXPECT_THAT(log.str(), HasSubstr("server.group"));
}

}  // namespace
}  // namespace tempokv::testing
