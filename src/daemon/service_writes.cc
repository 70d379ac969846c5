// ServiceCore: the write path. Each runtime stages its puts in a write region of its own, made
// at its first reserve_write on a job thread under a random name (WriteRegion); a put names the
// XXH3-128 its client computed, and the bytes in the region must hash to it before the store
// takes them (docs/protocol.md, "Shared memory"; docs/service.md, "Security model").
#include <cstdio>

#include "common/checksum.h"
#include "common/units.h"

#include "daemon/remote_tier.h"
#include "daemon/service_core.h"
#include "daemon/service_state.h"

namespace tempokv::service {
namespace {

// Reservations beyond the backed part grow it by at least this much at once.
constexpr uint64_t kAllocateStep = 64ULL << 20;

std::string hex128(uint64_t a, uint64_t b) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace

Status ServiceCore::reserve_write(Session& s, uint64_t id, uint64_t bytes) {
  if (bytes == 0) return Status::invalid_argument("reserve_write: bytes must be positive");
  if (bytes > options_.max_object_bytes) {
    return Status::invalid_argument("reserve_write: " + std::to_string(bytes) +
                                    " bytes exceed the largest object (" +
                                    std::to_string(options_.max_object_bytes) + " bytes)");
  }
  Runtime& rt = *s.runtime;
  if (!rt.writes) {
    // Its region is being made: this reservation waits for it (and fails with it).
    rt.reserves_waiting.push_back({s.id, id, bytes});
    if (!rt.writes_pending) make_region(rt);
    return Status::ok();
  }
  return give_reservation(s, id, bytes);
}

void ServiceCore::make_region(Runtime& rt) {
  rt.writes_pending = true;
  const std::string path = options_.write_dir + "/rt-" +
                           hex128(draw_instance_id(), draw_instance_id());
  std::weak_ptr<int> alive = alive_;
  jobs_->run([this, alive, path, name = rt.name, serial = rt.serial, bytes = options_.write_bytes,
              group = options_.shared_group] {
    auto made = WriteRegion::create(path, bytes, group);
    std::shared_ptr<WriteRegion> region;
    if (made.is_ok()) region = adopt_region(std::move(made).value());
    executor_.post([this, alive, name, serial, region, st = made.status()] {
      if (alive.expired()) return;
      auto it = runtimes_.find(name);
      if (it == runtimes_.end() || it->second->serial != serial) return;  // it ended meanwhile
      Runtime& made_for = *it->second;
      made_for.writes_pending = false;
      std::vector<Runtime::WaitingReserve> waiting = std::move(made_for.reserves_waiting);
      made_for.reserves_waiting.clear();
      if (region) {
        made_for.writes = region;
        ++counters_.write_regions_made;
      }
      for (const auto& w : waiting) {
        auto s = sessions_.find(w.session);
        if (s == sessions_.end()) continue;
        Status r = region ? give_reservation(*s->second, w.id, w.bytes)
                          : Status(st.code(), "reserve_write: the runtime's write region: " +
                                                  st.message());
        if (!r.is_ok()) {
          ++counters_.errors;
          send_(w.session, encode_error(w.id, r));
        }
      }
    });
  });
}

std::shared_ptr<WriteRegion> ServiceCore::adopt_region(std::unique_ptr<WriteRegion> region) {
  // Unmapping and removing the file blocks: the last owner's release runs it on a job thread,
  // or inline once the jobs are gone (the core is being destroyed).
  std::weak_ptr<JobThreads> jobs = jobs_;
  return std::shared_ptr<WriteRegion>(region.release(), [jobs](WriteRegion* w) {
    if (auto j = jobs.lock()) {
      j->run([w] { delete w; });
    } else {
      delete w;
    }
  });
}

Status ServiceCore::give_reservation(Session& s, uint64_t id, uint64_t bytes) {
  const uint64_t charge = round_up(bytes, kBlockBytes);
  if (s.write_bytes + charge > options_.max_write_bytes_per_session) {
    return Status::resource_exhausted(
        "reserve_write: the session's write quota (server.max_write_bytes_per_session = " +
        std::to_string(options_.max_write_bytes_per_session) + " bytes) holds " +
        std::to_string(s.write_bytes) + " bytes in reservations and puts in flight; " +
        std::to_string(charge) + " more do not fit; retry after its puts complete");
  }
  if (write_reserved_ + charge > options_.write_bytes) {
    return Status::resource_exhausted(
        "reserve_write: the write regions of all runtimes hold " +
        std::to_string(write_reserved_) + " bytes in reservations and puts in flight; " +
        std::to_string(charge) + " more exceed writes.region_bytes (" +
        std::to_string(options_.write_bytes) + "); retry after outstanding puts complete");
  }
  std::shared_ptr<WriteRegion> region = s.runtime->writes;
  TEMPOKV_ASSIGN_OR_RETURN(uint64_t offset, region->reserve(bytes));
  s.writes.insert(offset);
  s.write_bytes += charge;
  write_reserved_ += charge;
  const uint64_t end = offset + charge;
  if (end <= region->allocated()) {
    send_(s.id, encode_offset_reply(id, offset, region->path(), region->bytes()));
    return Status::ok();
  }
  // Backed first, off this thread: a client never touches a page the file system cannot give.
  const uint64_t target = std::min(region->bytes(), std::max(end, region->allocated() + kAllocateStep));
  std::weak_ptr<int> alive = alive_;
  jobs_->run([this, alive, region, target, session = s.id, id, offset] {
    Status st = region->allocate(target);
    executor_.post([this, alive, region, target, session, id, offset, st] {
      if (alive.expired()) return;
      auto holder = sessions_.find(session);
      const bool held = holder != sessions_.end() && holder->second->writes.count(offset) &&
                        holder->second->runtime->writes == region;
      if (st.is_ok()) region->set_allocated(target);
      if (!held) return;  // the session ended, or gave the reservation back meanwhile
      if (st.is_ok()) {
        send_(session, encode_offset_reply(id, offset, region->path(), region->bytes()));
        return;
      }
      drop_reservation(*holder->second, offset);
      ++counters_.errors;
      send_(session, encode_error(id, Status(st.code(), "reserve_write: " + st.message())));
    });
  });
  return Status::ok();
}

bool ServiceCore::drop_reservation(Session& s, uint64_t offset) {
  if (!s.writes.erase(offset)) return false;
  WriteRegion& region = *s.runtime->writes;
  const uint64_t charge = round_up(region.reserved(offset).value_or(0), kBlockBytes);
  s.write_bytes -= charge;
  write_reserved_ -= charge;
  region.release(offset);
  return true;
}

Status ServiceCore::put(Session& s, uint64_t id, const Put& m) {
  std::shared_ptr<WriteRegion> region = s.runtime->writes;
  std::optional<uint64_t> reserved = region ? region->reserved(m.offset) : std::nullopt;
  if (!s.writes.count(m.offset) || !reserved) {
    return Status::invalid_argument("put: offset " + std::to_string(m.offset) +
                                    " is not a write reservation of this session");
  }
  if (m.bytes == 0 || m.bytes > *reserved) {
    return Status::invalid_argument("put: bytes " + std::to_string(m.bytes) +
                                    " must be in 1.." + std::to_string(*reserved) +
                                    " (the reservation at offset " + std::to_string(m.offset) +
                                    ")");
  }
  // The reservation now belongs to the put: it is freed when the store is done with the bytes,
  // even if the session ends first (or now, when the put is refused).
  s.writes.erase(m.offset);
  ++puts_in_flight_;
  ++puts_by_session_[s.id];
  const uint64_t session = s.id;
  const uint64_t charge = round_up(*reserved, kBlockBytes);
  std::weak_ptr<int> alive = alive_;
  auto done = [this, alive, region, session, id, offset = m.offset, bytes = m.bytes,
               charge](Status st) {
    if (alive.expired()) return;
    region->release(offset);
    write_reserved_ -= charge;
    auto owner = sessions_.find(session);
    if (owner != sessions_.end()) owner->second->write_bytes -= charge;
    --puts_in_flight_;
    if (--puts_by_session_[session] == 0) puts_by_session_.erase(session);
    if (st.is_ok()) {
      ++counters_.puts;
      counters_.put_bytes += bytes;
      if (sessions_.count(session)) send_(session, encode_reply(id));
    } else {
      ++counters_.failed_puts;
      ++counters_.errors;
      if (sessions_.count(session)) send_(session, encode_error(id, st));
    }
    check_shutdown();
  };
  // The bytes in the region must be the ones the client hashed: hashed here off the control
  // thread, and only then given to the store, which takes that checksum as the record's. A
  // store key already stored follows the store's one rule (Store::put): the same bytes are a
  // success with nothing written, other bytes a new generation.
  const Hash128 declared{m.checksum_low, m.checksum_high};
  // With the remote tier, the bytes are copied here too when its publisher has room (the region
  // is given back when the store is done; the publish happens after).
  jobs_->run([this, alive, region, declared, m, remote = remote_,
              done = std::move(done)]() mutable {
    const Hash128 found = xxh3_128(region->data(m.offset), m.bytes);
    std::shared_ptr<const std::vector<unsigned char>> copy;
    if (remote && found == declared && remote->admit(m.bytes)) {
      const auto* p = reinterpret_cast<const unsigned char*>(region->data(m.offset));
      copy = std::make_shared<const std::vector<unsigned char>>(p, p + m.bytes);
    }
    executor_.post([this, alive, declared, found, m, region, copy = std::move(copy),
                    done = std::move(done)]() mutable {
      if (alive.expired()) return;
      if (!(found == declared)) {
        ++counters_.put_checksum_mismatches;
        return done(Status::invalid_argument(
            "put of key " + m.key.to_string() + ": the " + std::to_string(m.bytes) +
            " bytes at offset " + std::to_string(m.offset) + " hash to " +
            hex128(found.high, found.low) + ", not the checksum the put declared (" +
            hex128(declared.high, declared.low) + "): they changed after the client hashed "
            "them; nothing was stored"));
      }
      store_->put_hashed(m.key, m.tokens, region->data(m.offset), m.bytes, declared,
                         publish_after_put(m.key, m.tokens, declared, std::move(copy),
                                           std::move(done)));
    });
  });
  return Status::ok();
}

}  // namespace tempokv::service
