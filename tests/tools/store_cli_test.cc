// `tempokv store` as a user runs it: inspection never deletes, a smaller --capacity is refused
// unless --reclaim, a live writer's store is refused by inspectors, sizes that overflow are named.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/format.h"
#include "store/store_test_util.h"

namespace tempokv::testing {
namespace {

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CliRun tempokv(const std::string& args) {
  CliRun r;
  std::string cmd = std::string(TEMPOKV_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class StoreCliTest : public SmallStoreTest {
 protected:
  void SetUp() override {
    SmallStoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(fill_six_segments(h_, dir_.path()));
  }
  std::string dir() const { return " --dir " + dir_.path(); }
};

TEST_F(StoreCliTest, InspectionCommandsLeaveEverySegment) {
  ASSERT_TRUE(h_.close().is_ok());
  CliRun ls = tempokv("store ls" + dir());
  EXPECT_EQ(ls.exit_code, 0) << ls.output;
  EXPECT_NE(ls.output.find(test_key(16).to_string()), std::string::npos) << ls.output;
  CliRun stats = tempokv("store stats" + dir());
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  CliRun verify = tempokv("store verify" + dir());
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
  CliRun sized = tempokv("store ls --capacity 2MiB" + dir());  // inspection takes no sizes
  EXPECT_NE(sized.exit_code, 0);
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
}

TEST_F(StoreCliTest, WriterWithSmallerCapacityIsRefusedUnlessReclaimIsGiven) {
  ASSERT_TRUE(h_.close().is_ok());
  std::string put =
      "store put --key 00000000000000000000000000000001 --segment-bytes 1MiB"
      " --file /dev/null" +
      dir();
  CliRun refused = tempokv(put + " --capacity 2MiB");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find(std::to_string(6 * kMiB)), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find(std::to_string(2 * kMiB)), std::string::npos) << refused.output;
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
  CliRun reclaimed = tempokv(put + " --capacity 2MiB --reclaim");
  // The empty payload is refused after the open: the open itself reclaimed, and said so.
  EXPECT_NE(reclaimed.output.find("empty payload"), std::string::npos) << reclaimed.output;
  EXPECT_NE(reclaimed.output.find("reclaimed 4 oldest segment(s)"), std::string::npos)
      << reclaimed.output;
  EXPECT_EQ(segment_file_count(dir_.path()), 2u);
}

TEST_F(StoreCliTest, AWriterWithoutCapacityKeepsTheCapacityTheStoreWasMadeWith) {
  ASSERT_TRUE(h_.close().is_ok());
  const std::string file = dir_.path() + "/payload";
  std::ofstream(file) << std::string(5000, 'x');
  CliRun put = tempokv("store put --key 00000000000000000000000000000001 --segment-bytes 1MiB"
                       " --file " + file + dir());
  ASSERT_EQ(put.exit_code, 0) << put.output;
  CliRun stats = tempokv("store stats" + dir());
  ASSERT_EQ(stats.exit_code, 0) << stats.output;
  // small_options() made it with 64 MiB: not the CLI's 64 GiB for a new store.
  const std::string made = std::to_string(64 * kMiB);
  EXPECT_NE(stats.output.find("capacity_bytes       " + made), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("recorded_capacity    " + made), std::string::npos) << stats.output;
}

TEST_F(StoreCliTest, InspectingAStoreALiveWriterHoldsIsRefusedByName) {
  for (const char* cmd : {"store ls", "store stats", "store verify"}) {
    CliRun r = tempokv(cmd + dir());
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("LOCK"), std::string::npos) << cmd << ": " << r.output;
  }
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
}

TEST_F(StoreCliTest, WritersAreRefusedAStoreALiveWriterHolds) {
  // h_ holds the store open for writing, as tempokvd holds its store: no CLI writer may open it.
  for (const std::string cmd :
       {"store put --key 00000000000000000000000000000001 --file /dev/null",
        "store bench --objects 1 --object-bytes 64KiB",
        "restore-bench --paths posix --sessions=1 --session-bytes 1MiB --chunk-tokens 4 "
        "--model llama-3.1-8b"}) {
    CliRun r = tempokv(cmd + dir());
    EXPECT_NE(r.exit_code, 0) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("LOCK is held"), std::string::npos) << cmd << ": " << r.output;
  }
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
}

TEST_F(StoreCliTest, CapacityThatOverflowsIsRefusedNamingTheText) {
  ASSERT_TRUE(h_.close().is_ok());
  CliRun r = tempokv(
      "store put --key 00000000000000000000000000000001 --file /dev/null"
      " --capacity 1e25" +
      dir());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("1e25"), std::string::npos) << r.output;
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
}

// Every file in dir: name, size, modification time and a checksum of its bytes.
std::map<std::string, std::string> fingerprint(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    store::Checksum128 c = store::checksum128(bytes.data(), bytes.size());
    auto mtime = std::filesystem::last_write_time(e.path()).time_since_epoch().count();
    out[e.path().filename().string()] = std::to_string(bytes.size()) + " " + std::to_string(mtime) +
                                        " " + std::to_string(c.low) + std::to_string(c.high);
  }
  return out;
}

TEST_F(StoreCliTest, StatsAndVerifyReportDropsAndQuarantineWithoutChangingAFile) {
  // A dropped record (payload damaged, then read) and a quarantined segment (header damaged).
  std::optional<ObjectInfo> info = h_.store->lookup(test_key(16));
  ASSERT_TRUE(info.has_value());
  flip_bytes(segment_file(info->segment), info->offset + 7);
  std::vector<std::byte> buf(info->read_bytes() + kBlockBytes);
  auto* dst =
      reinterpret_cast<std::byte*>(round_up(reinterpret_cast<uintptr_t>(buf.data()), kBlockBytes));
  EXPECT_EQ(h_.get(test_key(16), dst, info->read_bytes()).status().code(), StatusCode::kCorruption);
  ASSERT_TRUE(h_.close().is_ok());
  flip_bytes(segment_file(1), 20);
  ASSERT_TRUE(h_.reopen().is_ok());  // a writer's open quarantines segment 1
  ASSERT_TRUE(h_.close().is_ok());
  std::string quarantined = store::segment_file_name(1) + std::string(store::kQuarantineSuffix);
  ASSERT_TRUE(std::filesystem::exists(dir_.path() + "/" + quarantined));

  auto before = fingerprint(dir_.path());
  CliRun stats = tempokv("store stats" + dir());
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("dropped_records      1"), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("quarantined_segments 1"), std::string::npos) << stats.output;
  CliRun verify = tempokv("store verify" + dir());
  // The damaged payload is still on disk (hidden by its drop tombstone): verify names it.
  EXPECT_EQ(verify.exit_code, 1) << verify.output;
  EXPECT_NE(verify.output.find("payload checksum mismatch"), std::string::npos) << verify.output;
  EXPECT_NE(verify.output.find("quarantined " + quarantined + "  " + std::to_string(kMiB)),
            std::string::npos)
      << verify.output;
  EXPECT_NE(verify.output.find("dropped 1"), std::string::npos) << verify.output;
  CliRun ls = tempokv("store ls" + dir());
  EXPECT_EQ(ls.exit_code, 0) << ls.output;
  EXPECT_EQ(ls.output.find(test_key(16).to_string()), std::string::npos) << ls.output;
  CliRun get = tempokv("store get --key " + test_key(15).to_string() + " --out /dev/null" + dir());
  EXPECT_EQ(get.exit_code, 0) << get.output;
  EXPECT_EQ(fingerprint(dir_.path()), before) << "an inspection command changed the store";
}

// The benches hold the store and the restore paths to fio's best, fio run beside each measured
// read: every round (restore) gets its own pair, and fio's best is at least its equal-depth rate.
bool fio_installed() { return std::system("fio --version >/dev/null 2>&1") == 0; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

// --no-verify is a diagnostic (what the checksum costs against fio): it must skip exactly the
// payload checksum, so a flipped payload byte the tags do not cover passes with it and fails without.
TEST(BenchCli, StoreBenchNoVerifySkipsOnlyThePayloadChecksum) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "O_DIRECT is refused in " << dir.path();
  std::string store = dir.path() + "/s";
  // Small segments, so that the first is sealed: a sealed segment's payloads are checked on get
  // only (an active one's at open, which would drop the object before the bench reads it).
  std::string args = "store bench --dir " + store +
                     " --segment-bytes 3MiB --objects 4 --object-bytes 1MiB --json ";
  CliRun write = tempokv(args + dir.path() + "/w.json");
  ASSERT_EQ(write.exit_code, 0) << write.output;
  EXPECT_TRUE(read_json(dir.path() + "/w.json")["checksums_verified"].get<bool>());
  // 100 bytes into the first object's payload: past its first block's 16-byte tag.
  flip_bytes(store + "/" + store::segment_file_name(1), 2 * kBlockBytes + 100);
  CliRun unchecked = tempokv(args + dir.path() + "/n.json --no-verify");
  ASSERT_EQ(unchecked.exit_code, 0) << unchecked.output;
  EXPECT_NE(unchecked.output.find("NOT checked"), std::string::npos) << unchecked.output;
  EXPECT_FALSE(read_json(dir.path() + "/n.json")["checksums_verified"].get<bool>());
  CliRun checked = tempokv(args + dir.path() + "/c.json");
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("checksum mismatch"), std::string::npos) << checked.output;
}

TEST(BenchCli, StoreBenchRefusesACapacityThatCannotHoldItsObjects) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "O_DIRECT is refused in " << dir.path();
  CliRun r = tempokv("store bench --dir " + dir.path() + "/s --segment-bytes 2MiB --capacity 4MiB "
                     "--objects 8 --object-bytes 1MiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot hold --objects 8"), std::string::npos) << r.output;
}

// Each size flag's bad value exits 2 naming the flag, before anything is written.
TEST(BenchCli, RestoreBenchRefusesABadSizeNamingItsFlag) {
  TempDir dir;
  const std::string store = dir.path() + "/store";
  for (const std::string flag : {"--session-bytes 12parsecs", "--max-request 0",
                                 "--tail-piece lots", "--tail-piece 5000"}) {
    CliRun r = tempokv("restore-bench --paths direct --sessions=1 --dir " + store + " " + flag +
                       (flag.rfind("--session-bytes", 0) == 0 ? "" : " --session-bytes 8MiB"));
    const std::string name = flag.substr(0, flag.find(' '));
    EXPECT_NE(r.exit_code, 0) << flag << ": " << r.output;
    EXPECT_NE(r.output.find(name), std::string::npos) << flag << ": " << r.output;
    EXPECT_FALSE(std::filesystem::exists(store)) << flag << ": a store was written";
  }
}

TEST(BenchCli, RestoreBenchReuseOfAMissingDirectoryCreatesNothing) {
  TempDir dir;
  const std::string missing = dir.path() + "/never-written";
  CliRun r = tempokv("restore-bench --reuse --paths posix --sessions=1 --session-bytes 8MiB --dir " +
                     missing);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("does not exist"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(missing)) << "--reuse created the directory it reads";
}

TEST(BenchCli, RestoreBenchIntoAnExistingStoreKeepsItsCapacity) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "O_DIRECT is refused in " << dir.path();
  const std::string store = dir.path() + "/s";
  const std::string file = dir.path() + "/payload";
  std::ofstream(file) << std::string(5000, 'x');
  CliRun put = tempokv("store put --key 00000000000000000000000000000001 --segment-bytes 4MiB "
                       "--capacity 8MiB --file " + file + " --dir " + store);
  ASSERT_EQ(put.exit_code, 0) << put.output;
  // 8 MiB of sessions in 1 MiB chunks do not fit beside what the 8 MiB store holds: refused, not
  // written into a store grown to the bench's own 64 GiB default.
  CliRun r = tempokv("restore-bench --paths posix --sessions=1 --session-bytes 8MiB "
                     "--chunk-tokens 8 --model llama-3.1-8b --dir " + store);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("holds a store of capacity " + std::to_string(8 * kMiB)),
            std::string::npos) << r.output;
  CliRun stats = tempokv("store stats --dir " + store);
  ASSERT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("recorded_capacity    " + std::to_string(8 * kMiB)),
            std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("objects              1\n"), std::string::npos) << stats.output;
}

TEST(BenchCli, RestoreBenchPathsChooseTheirOwnRequestSizeAndDepth) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "O_DIRECT is refused in " << dir.path();
  const std::string json = dir.path() + "/out.json";
  // 32 MiB chunks (256 tokens of 128 KiB), no --depth or --max-request: direct reads 4 MiB
  // pieces 16 deep, the baseline whole chunks one at a time.
  CliRun r = tempokv("restore-bench --dir " + dir.path() + "/s --paths odirect-bounce,direct "
                     "--tokens 512 --sessions=1 --warmup 0 --model llama-3.1-8b --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = read_json(json);
  ASSERT_EQ(j["rows"].size(), 2u) << r.output;
  EXPECT_EQ(j["rows"][0]["request_bytes"].get<uint64_t>(), 32 * kMiB);
  EXPECT_EQ(j["rows"][0]["depth"].get<uint32_t>(), 1u);
  EXPECT_EQ(j["rows"][1]["request_bytes"].get<uint64_t>(), 4 * kMiB);
  EXPECT_EQ(j["rows"][1]["depth"].get<uint32_t>(), 16u);
  EXPECT_GT(j["rows"][1]["mean_read_depth"].get<double>(), 1.0) << r.output;
  EXPECT_TRUE(j["rows"][1]["verified"].get<bool>()) << r.output;
}

TEST(BenchCli, StoreBenchComparesEachRoundWithFiosBestBesideIt) {
  if (!fio_installed()) GTEST_SKIP() << "fio is not installed";
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "O_DIRECT is refused in " << dir.path();
  std::string json = dir.path() + "/out.json";
  CliRun r = tempokv("store bench --dir " + dir.path() + "/s --objects 8 --object-bytes 1MiB " +
                     "--queue-depth 4 --rounds 3 --compare-fio --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = read_json(json);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  ASSERT_EQ(j["fio_gbps_rounds"].size(), 3u);
  ASSERT_EQ(j["fio_best_gbps_rounds"].size(), 3u);
  // The first round's ceiling: fio at the bench's depth, then 8, 16 and 32, each over exactly the
  // 8 MiB the store read; the equal-depth figure is the first run's, the best the fastest's.
  const nlohmann::json& runs = j["fio_first_runs"];
  ASSERT_EQ(runs.size(), 4u) << runs.dump();
  double fastest = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(runs[i]["depth"].get<uint32_t>(), std::vector<uint32_t>({4, 8, 16, 32})[i]);
    EXPECT_EQ(runs[i]["read_bytes"].get<uint64_t>(), 8 * kMiB) << runs.dump();
    fastest = std::max(fastest, runs[i]["gbps"].get<double>());
  }
  EXPECT_EQ(j["fio_gbps_rounds"][0].get<double>(), runs[0]["gbps"].get<double>());
  EXPECT_EQ(j["fio_best_gbps_rounds"][0].get<double>(), fastest);
  // The ratio is the median of the rounds' own ratios.
  std::vector<double> ratios;
  for (size_t i = 0; i < 3; ++i) {
    ratios.push_back(j["read_gbps_rounds"][i].get<double>() /
                     j["fio_best_gbps_rounds"][i].get<double>());
  }
  std::sort(ratios.begin(), ratios.end());
  EXPECT_DOUBLE_EQ(j["ratio_vs_best"].get<double>(), ratios[1]);
  EXPECT_NE(j["fio_command"].get<std::string>().find("glibc.malloc.hugetlb=1"), std::string::npos);
}

TEST(BenchCli, RestoreBenchPairsEveryRestoreWithFio) {
  if (!fio_installed()) GTEST_SKIP() << "fio is not installed";
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "O_DIRECT is refused in " << dir.path();
  std::string json = dir.path() + "/out.json";
  // 1.5 MiB chunks read in 1 MiB requests (1 + 0.5 MiB each), a 1 MiB final chunk.
  CliRun r = tempokv("restore-bench --dir " + dir.path() + "/s --paths direct --tokens 512 " +
                     "--chunk-tokens 12 --max-request 1MiB --depth 4 --sessions=2 " +
                     "--model llama-3.1-8b " +
                     "--compare-fio --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = read_json(json);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  ASSERT_EQ(j["rows"].size(), 1u);
  const nlohmann::json& row = j["rows"][0];
  EXPECT_TRUE(row["verified"].get<bool>()) << r.output;
  EXPECT_EQ(row["fio_pairs"].get<uint32_t>(), 2u);
  EXPECT_GT(row["fio_ratio"].get<double>(), 0);
  // fio read the session's 64 MiB at every depth, and kept the depth asked for in flight (fio's
  // own count at submission) though every chunk is larger than one request.
  const nlohmann::json& runs = row["fio_first_runs"];
  ASSERT_EQ(runs.size(), 4u) << runs.dump();
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(runs[i]["depth"].get<uint32_t>(), std::vector<uint32_t>({4, 8, 16, 32})[i]);
    EXPECT_EQ(runs[i]["read_bytes"].get<uint64_t>(), 64 * kMiB) << runs.dump();
  }
  EXPECT_GT(runs[0]["depth_share"].get<double>(), 0.5) << runs.dump();
  EXPECT_GT(runs[1]["depth_share"].get<double>(), 0.5) << runs.dump();
  EXPECT_EQ(j["fio_gbps"], row["fio_gbps"]);  // the header's figures are the direct path's
}

}  // namespace
}  // namespace tempokv::testing
