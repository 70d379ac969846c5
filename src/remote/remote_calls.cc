// RemoteClient's calls: routing with redirects, fetch (verified, into the caller's buffer), put,
// and plain commands.
#include <fmt/format.h>

#include <charconv>

#include "remote/node_io.h"
#include "remote/remote_client.h"
#include "remote/slot.h"

namespace tempokv::remote {

namespace {

constexpr size_t kHashPiece = 256 << 10;  // hash each piece as it lands, while it is in cache

Status ask_first(redisContext* c) {
  auto* r = static_cast<redisReply*>(redisCommand(c, "ASKING"));
  if (!r) return Status::unavailable("ASKING: no reply");
  const bool ok = r->type == REDIS_REPLY_STATUS;
  freeReplyObject(r);
  return ok ? Status::ok() : Status::unavailable("ASKING refused");
}

}  // namespace

void RemoteClient::drop(Node& n) {
  if (n.ctx) redisFree(n.ctx);
  n.ctx = nullptr;
}

Status RemoteClient::route(std::string_view key, const Attempt& attempt) {
  if (refresh_needed_) (void)refresh_slots();
  const uint16_t slot = key_slot(key);
  const int16_t owner = slot_owner_[slot];
  if (owner < 0)
    return Status::unavailable(fmt::format("remote: slot {} has no known owner", slot));
  std::string target = nodes_[static_cast<size_t>(owner)]->address;
  bool asking = false;
  for (int hop = 0; hop <= config_.max_redirects; ++hop) {
    Node* n = node(target);
    if (!n) return Status::unavailable(fmt::format("remote: bad node address '{}'", target));
    if (Status s = ensure_connected(*n); !s) {
      if (n->ctx == nullptr && s.code() == StatusCode::kUnavailable) fail(*n);
      return s;
    }
    std::string redirect;
    bool moved = false;
    Status s = attempt(*n, asking, &redirect, &moved);
    if (redirect.empty()) return s;
    if (moved) {
      ++stats_.moved;
      Node* to = node(redirect);
      if (!to) return Status::unavailable(fmt::format("remote: bad MOVED address '{}'", redirect));
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i].get() == to) slot_owner_[slot] = static_cast<int16_t>(i);
      }
      refresh_needed_ = true;  // a resharding moves more than one slot
      asking = false;
    } else {
      ++stats_.ask;
      asking = true;
    }
    target = redirect;
  }
  return Status::unavailable(
      fmt::format("remote: more than {} redirects for slot {}", config_.max_redirects, slot));
}

FetchResult RemoteClient::fetch(const FetchRequest& request, std::span<unsigned char> dst) {
  FetchResult out;
  const std::string key = object_key(request.key);
  Status s = route(key, [&](Node& n, bool asking, std::string* redirect, bool* moved) {
    return fetch_once(n, request, dst, asking, redirect, moved, &out);
  });
  if (!s) {
    out.outcome = FetchOutcome::kUnavailable;
    out.detail = s.message();
  }
  ++stats_.fetches[static_cast<size_t>(out.outcome)];
  return out;
}

Status RemoteClient::fetch_once(Node& n, const FetchRequest& request, std::span<unsigned char> dst,
                                bool asking, std::string* redirect, bool* moved, FetchResult* out) {
  const auto start = Clock::now();
  const auto deadline = start + config_.io_timeout;
  auto node_failed = [&](const Status& s) {
    fail(n);
    return Status::unavailable(fmt::format("remote node {}: {}", n.address, s.message()));
  };
  auto miss = [&](FetchOutcome o, std::string detail, bool in_step) {
    if (!in_step) drop(n);
    out->outcome = o;
    out->detail = std::move(detail);
    return Status::ok();
  };
  if (asking) {
    if (Status s = ask_first(n.ctx); !s) return node_failed(s);
  }
  const std::string key = object_key(request.key);
  std::string cmd = resp_prefix({"GET", key}, 0);
  iovec iov{cmd.data(), cmd.size()};
  if (Status s = write_all(n.ctx->fd, &iov, 1, deadline); !s) return node_failed(s);
  ReplyReader reader(n.ctx->fd, deadline);
  std::string line;
  if (Status s = reader.read_line(&line); !s) return node_failed(s);
  if (line.starts_with('-')) {
    RedirectLine r = parse_redirect(std::string_view(line).substr(1));
    if (r.kind == RedirectLine::kNone) {
      return Status::unavailable(fmt::format("remote node {}: {}", n.address, line.substr(1)));
    }
    *redirect = r.address;
    *moved = r.kind == RedirectLine::kMoved;
    return Status::ok();
  }
  long long len = 0;
  if (!line.starts_with('$') ||
      std::from_chars(line.data() + 1, line.data() + line.size(), len).ec != std::errc()) {
    return node_failed(Status::io_error("unexpected reply to GET"));
  }
  if (len < 0) return miss(FetchOutcome::kAbsent, "no such key", true);
  if (static_cast<uint64_t>(len) < kHeaderBytes) {
    return miss(FetchOutcome::kBadHeader, fmt::format("value of {} bytes", len), false);
  }
  HeaderBytes header;
  if (Status s = reader.read_exact(header.data(), kHeaderBytes); !s) return node_failed(s);
  const std::optional<RemoteIdentity> id = decode_header(header.data());
  const uint64_t value_payload = static_cast<uint64_t>(len) - kHeaderBytes;
  if (!id) return miss(FetchOutcome::kBadHeader, "header check failed", false);
  if (id->key != request.key) return miss(FetchOutcome::kWrongKey, id->key.to_string(), false);
  if (request.generation != 0 && id->generation != request.generation) {
    return miss(FetchOutcome::kWrongGeneration, fmt::format("generation {}", id->generation),
                false);
  }
  if (id->layout_digest != request.layout_digest) {
    return miss(FetchOutcome::kWrongLayout, fmt::format("layout {:#x}", id->layout_digest), false);
  }
  if (id->payload_bytes != value_payload) {
    return miss(FetchOutcome::kTruncated,
                fmt::format("value holds {} payload bytes, header says {}", value_payload,
                            id->payload_bytes),
                false);
  }
  if (value_payload > dst.size() || value_payload > config_.max_value_bytes) {
    return miss(FetchOutcome::kTooLarge,
                fmt::format("{} payload bytes, buffer {}", value_payload, dst.size()), false);
  }
  Xxh3Stream hash;
  for (uint64_t done = 0; done < value_payload;) {
    const uint64_t piece = std::min<uint64_t>(kHashPiece, value_payload - done);
    if (Status s = reader.read_exact(dst.data() + done, piece); !s) return node_failed(s);
    hash.update(dst.data() + done, piece);
    done += piece;
  }
  char crlf[2];
  if (Status s = reader.read_exact(crlf, 2); !s) return node_failed(s);
  if (hash.digest() != id->checksum) {
    return miss(FetchOutcome::kChecksum, "payload checksum differs from the header's", true);
  }
  out->outcome = FetchOutcome::kHit;
  out->identity = *id;
  n.stats.healthy = true;
  ++n.stats.fetches;
  n.stats.fetch_bytes += value_payload;
  n.stats.fetch_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  return Status::ok();
}

Status RemoteClient::put(const RemoteIdentity& id, std::span<const unsigned char> payload) {
  ++stats_.puts;
  if (payload.size() > config_.max_value_bytes) {
    ++stats_.put_failed;
    return Status::invalid_argument(fmt::format("remote put of {} bytes: above max_value_bytes {}",
                                                payload.size(), config_.max_value_bytes));
  }
  RemoteIdentity full = id;
  full.payload_bytes = payload.size();
  full.checksum = xxh3_128(payload.data(), payload.size());
  const HeaderBytes header = encode_header(full);
  const std::string key = object_key(id.key);
  Status s = route(key, [&](Node& n, bool asking, std::string* redirect, bool* moved) {
    return put_once(n, key, header, payload, asking, redirect, moved);
  });
  if (!s) {
    if (s.code() == StatusCode::kResourceExhausted) {
      ++stats_.put_oom;
    } else {
      ++stats_.put_failed;
    }
  }
  return s;
}

Status RemoteClient::put_once(Node& n, const std::string& key, const HeaderBytes& header,
                              std::span<const unsigned char> payload, bool asking,
                              std::string* redirect, bool* moved) {
  const auto deadline = Clock::now() + config_.io_timeout;
  auto node_failed = [&](const Status& s) {
    fail(n);
    return Status::unavailable(fmt::format("remote node {}: {}", n.address, s.message()));
  };
  if (asking) {
    if (Status s = ask_first(n.ctx); !s) return node_failed(s);
  }
  std::string cmd = resp_prefix({"SET", key}, kHeaderBytes + payload.size());
  char crlf[] = "\r\n";
  iovec iov[4] = {{cmd.data(), cmd.size()},
                  {const_cast<unsigned char*>(header.data()), header.size()},
                  {const_cast<unsigned char*>(payload.data()), payload.size()},
                  {crlf, 2}};
  if (Status s = write_all(n.ctx->fd, iov, 4, deadline); !s) return node_failed(s);
  ReplyReader reader(n.ctx->fd, deadline);
  std::string line;
  if (Status s = reader.read_line(&line); !s) return node_failed(s);
  if (line == "+OK") return Status::ok();
  if (line.starts_with("-OOM")) {
    return Status::resource_exhausted(fmt::format("remote node {}: {}", n.address, line.substr(1)));
  }
  RedirectLine r = parse_redirect(line.starts_with('-') ? line.substr(1) : "");
  if (r.kind == RedirectLine::kNone) {
    return Status::io_error(fmt::format("remote node {}: SET: {}", n.address, line));
  }
  *redirect = r.address;
  *moved = r.kind == RedirectLine::kMoved;
  return Status::ok();
}

Result<CommandReply> RemoteClient::command(std::string_view routing_key,
                                           const std::vector<std::string>& argv) {
  CommandReply out;
  Status s = route(routing_key, [&](Node& n, bool asking, std::string* redirect, bool* moved) {
    if (asking) {
      if (Status a = ask_first(n.ctx); !a) {
        fail(n);
        return a;
      }
    }
    Result<CommandReply> r = command_at(n.address, argv);
    if (!r) return r.status();
    out = std::move(r).value();
    if (out.error) {
      RedirectLine rd = parse_redirect(out.text);
      if (rd.kind != RedirectLine::kNone) {
        *redirect = rd.address;
        *moved = rd.kind == RedirectLine::kMoved;
      }
    }
    return Status::ok();
  });
  if (!s) return s;
  return out;
}

FetchResult RemoteClient::probe(const Key& key) {
  FetchResult out;
  const std::string redis_key = object_key(key);
  Result<CommandReply> r =
      command(redis_key, {"GETRANGE", redis_key, "0", std::to_string(kHeaderBytes - 1)});
  if (!r) {
    out.outcome = FetchOutcome::kUnavailable;
    out.detail = r.status().message();
  } else if (r->error) {
    out.outcome = FetchOutcome::kUnavailable;
    out.detail = "remote: GETRANGE of " + redis_key + " failed: " + r->text;
  } else if (r->text.empty()) {
    out.outcome = FetchOutcome::kAbsent;
  } else if (r->text.size() != kHeaderBytes) {
    out.outcome = FetchOutcome::kBadHeader;
    out.detail = "remote: " + redis_key + " is shorter than a header";
  } else if (std::optional<RemoteIdentity> id =
                 decode_header(reinterpret_cast<const unsigned char*>(r->text.data()));
             !id) {
    out.outcome = FetchOutcome::kBadHeader;
    out.detail = "remote: " + redis_key + " has no valid header";
  } else if (!(id->key == key)) {
    out.outcome = FetchOutcome::kWrongKey;
    out.detail = "remote: " + redis_key + " names another key";
  } else {
    out.outcome = FetchOutcome::kHit;
    out.identity = *id;
  }
  ++stats_.probes[static_cast<size_t>(out.outcome)];
  return out;
}

Result<CommandReply> RemoteClient::command_at(const std::string& address,
                                              const std::vector<std::string>& argv) {
  Node* n = node(address);
  if (!n) return Status::invalid_argument(fmt::format("remote: bad node address '{}'", address));
  if (Status s = ensure_connected(*n); !s) return s;
  std::vector<std::string_view> views(argv.begin(), argv.end());
  Result<CommandReply> r = run_command(n->ctx, views);
  if (!r) {
    fail(*n);
    return Status::unavailable(fmt::format("remote node {}: {}", address, r.status().message()));
  }
  return r;
}

Result<uint64_t> RemoteClient::evicted_keys() {
  if (refresh_needed_) (void)refresh_slots();
  uint64_t total = 0;
  for (const std::string& m : masters()) {
    Result<CommandReply> r = command_at(m, {"INFO", "stats"});
    if (!r) return r.status();
    const std::string& t = r.value().text;
    const size_t at = t.find("evicted_keys:");
    if (at == std::string::npos) return Status::io_error(fmt::format("{}: no evicted_keys", m));
    uint64_t v = 0;
    std::from_chars(t.data() + at + 13, t.data() + t.size(), v);
    total += v;
  }
  return total;
}

}  // namespace tempokv::remote
