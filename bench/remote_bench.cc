// Fetch rate of one object from a Redis Cluster on loopback (docs/cluster.md, "Measured"):
// RemoteClient::fetch (into a page-aligned buffer, verified) against two references on the same
// key in the same run, rounds interleaved: a raw-socket GET (one send, the length line parsed,
// the value recv'd into a buffer, nothing checked) and hiredis's own GET (redisCommand: the
// value copied into hiredis's reader and reply). Prints the median rate of each and the ratios.
//
//   remote_bench [--bytes 32MiB] [--rounds 21] [--seed host:port]
// Without --seed it starts a cluster with scripts/cluster (and stops it at exit).
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/percentile.h"
#include "common/units.h"
#include "remote/remote_client.h"

using namespace tempokv;
using namespace tempokv::remote;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "remote_bench: %s\n", why.c_str());
  std::exit(1);
}

// The reference: GET on a plain socket, the reply's value recv'd into dst, nothing verified.
double raw_get(int fd, const std::string& key, std::byte* dst, size_t cap) {
  const std::string cmd = fmt::format("*2\r\n$3\r\nGET\r\n${}\r\n{}\r\n", key.size(), key);
  const auto t0 = Clock::now();
  if (::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(cmd.size())) {
    die("raw GET: send");
  }
  char line[64];
  size_t have = 0;
  while (have < 2 || std::memcmp(line + have - 2, "\r\n", 2) != 0) {
    if (::recv(fd, line + have, 1, 0) != 1) die("raw GET: recv");
    ++have;
  }
  const size_t len = std::strtoull(line + 1, nullptr, 10);
  if (line[0] != '$' || len + 2 > cap) die("raw GET: unexpected reply");
  for (size_t got = 0; got < len + 2;) {
    const ssize_t n = ::recv(fd, dst + got, len + 2 - got, 0);
    if (n <= 0) die("raw GET: recv");
    got += static_cast<size_t>(n);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(len) / s;
}

double hiredis_get(redisContext* c, const std::string& key) {
  const auto t0 = Clock::now();
  auto* r = static_cast<redisReply*>(redisCommand(c, "GET %b", key.data(), key.size()));
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!r || r->type != REDIS_REPLY_STRING) die("hiredis GET failed");
  const double bytes = static_cast<double>(r->len);
  freeReplyObject(r);
  return bytes / s;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t bytes = 32ull << 20;
  int rounds = 21;
  std::string seed;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--bytes") {
      auto b = parse_bytes(argv[i + 1]);
      if (!b) die("--bytes: " + b.status().message());
      bytes = b.value();
    } else if (a == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else if (a == "--seed") {
      seed = argv[i + 1];
    } else {
      die("unknown argument " + a + " (--bytes, --rounds, --seed)");
    }
  }
  std::string cluster_dir;
  if (seed.empty()) {
    const int port = 16000 + static_cast<int>(::getpid() % 300) * 10;
    cluster_dir = fmt::format("/tmp/tempokv-remote-bench-{}", ::getpid());
    const std::string cmd =
        fmt::format("{}/scripts/cluster up --port {} --dir {} --maxmemory 1gb >/dev/null",
                    TEMPOKV_SOURCE_DIR, port, cluster_dir);
    if (std::system(cmd.c_str()) != 0) die("scripts/cluster up failed: " + cmd);
    seed = fmt::format("127.0.0.1:{}", port);
  }

  RemoteConfig config;
  config.seeds = {seed};
  config.io_timeout = std::chrono::milliseconds(5000);
  RemoteClient client(config);
  if (Status s = client.connect(); !s) die(s.to_string());
  std::vector<unsigned char> payload(bytes);
  for (size_t i = 0; i < bytes; ++i) payload[i] = static_cast<unsigned char>(i * 131 + 7);
  RemoteIdentity id;
  id.key = Key{1, 0xbe4c};
  id.generation = 1;
  if (Status s = client.put(id, payload); !s) die(s.to_string());
  const std::string key = object_key(id.key);
  const std::string owner = client.owner_of(key);
  const std::string host = owner.substr(0, owner.rfind(':'));
  const int port = std::atoi(owner.c_str() + owner.rfind(':') + 1);
  redisContext* hc = redisConnect(host.c_str(), port);
  redisContext* raw_socket = redisConnect(host.c_str(), port);  // its fd only, kept open
  if (!hc || hc->err || !raw_socket || raw_socket->err) die("connect to the owner failed");

  auto buf = AlignedBuffer::allocate(bytes + kHeaderBytes + 4096);
  if (!buf) die(buf.status().to_string());
  AlignedBuffer dst = std::move(buf).value();
  std::span<unsigned char> dst_span(reinterpret_cast<unsigned char*>(dst.data()), bytes);
  std::vector<double> ours, raw, hired, ratio;
  for (int r = 0; r < rounds + 1; ++r) {  // round 0 warms up and is not counted
    const auto t0 = Clock::now();
    FetchResult f = client.fetch({id.key, 1, 0}, dst_span);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!f.hit()) die(fmt::format("fetch: {} {}", fetch_outcome_name(f.outcome), f.detail));
    const double raw_rate = raw_get(raw_socket->fd, key, dst.data(), dst.size());
    const double hiredis_rate = hiredis_get(hc, key);
    if (r == 0) continue;
    ours.push_back(static_cast<double>(bytes) / s);
    raw.push_back(raw_rate);
    hired.push_back(hiredis_rate);
    ratio.push_back(ours.back() / raw_rate);
  }
  redisFree(hc);
  redisFree(raw_socket);
  const double gib = 1024.0 * 1024 * 1024;
  fmt::print("object {} on {}, {} rounds, medians:\n", format_bytes(bytes), owner, rounds);
  fmt::print("  remote fetch (verified, into buffer) {:.2f} GiB/s\n", median(ours) / gib);
  fmt::print("  raw-socket GET (no verification)     {:.2f} GiB/s\n", median(raw) / gib);
  fmt::print("  hiredis GET (reply object)           {:.2f} GiB/s\n", median(hired) / gib);
  fmt::print("  fetch / raw GET   {:.2f} (median of the rounds' ratios {:.2f})\n",
             median(ours) / median(raw), median(ratio));
  fmt::print("  fetch / hiredis   {:.2f}\n", median(ours) / median(hired));
  if (!cluster_dir.empty()) {
    const std::string cmd =
        fmt::format("{}/scripts/cluster down --dir {}", TEMPOKV_SOURCE_DIR, cluster_dir);
    (void)std::system(cmd.c_str());
  }
  return 0;
}
