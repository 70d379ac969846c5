// The write path: put/remove place a record in the active segment in call order, write it
// (zero-copy when the caller's payload is 4 KiB-aligned), and complete it after the segment's next
// fdatasync (group commit). A full segment is sealed once its writes are synced. Payloads of
// 64 KiB or more are hashed (and copied when unaligned) on the write worker's thread while they
// wait for placement and submission; a write waits in waiting_ while the next segment is made.
#include <cstring>

#include "store/store_impl.h"

namespace tempokv::store {
namespace {

// Below this a payload is copied into one buffer with its header: one write beats three.
constexpr size_t kZeroCopyMinBytes = 64 * kKiB;

}  // namespace

void StoreImpl::put_record(const Key& key, TokenRange tokens, const void* data, size_t bytes,
                           std::optional<Checksum128> known, DoneCallback cb) {
  Status bad;
  std::string what = "put of key " + key.to_string() + ": ";
  if (closing_) bad = Status::failed_precondition(what + "the store is closing");
  else if (options_.read_only) bad = Status::failed_precondition(what + "the store is read-only");
  else if (bytes == 0) bad = Status::invalid_argument(what + "empty payload (0 bytes)");
  else if (bytes > options_.max_object_bytes) {
    bad = Status::invalid_argument(what + "payload of " + std::to_string(bytes) +
                                   " bytes exceeds max_object_bytes (" +
                                   std::to_string(options_.max_object_bytes) + ")");
  } else if (data == nullptr && !options_.simulated) {
    bad = Status::invalid_argument(what + "data is null (allowed only in simulated mode)");
  } else if (tokens.end < tokens.begin) {
    bad = Status::invalid_argument(what + "token range [" + std::to_string(tokens.begin) + ", " +
                                   std::to_string(tokens.end) + ") ends before it begins");
  }
  if (!bad.is_ok()) {
    ++stats_.failed_puts;
    return fail_soon(std::move(cb), std::move(bad));
  }
  RecordHeader h;
  h.key = key;
  h.tokens = tokens;
  h.payload_bytes = bytes;
  if (known) h.payload_checksum = *known;
  if (!options_.simulated && bytes < kZeroCopyMinBytes) {
    // Small: hashed (and copied) here, since the caller may reuse its buffer on return.
    if (!known) h.payload_checksum = checksum128(data, bytes);
    if (unchanged(key, bytes, h.payload_checksum, /*own_write=*/false)) {
      ++stats_.unchanged_puts;
      return fail_soon(std::move(cb), Status::ok());
    }
  }
  PendingWrite* w = admit(h, std::move(cb));
  w->data = data;
  if (options_.simulated) {
    w->prepared = true;
  } else if (bytes < kZeroCopyMinBytes) {
    prepare_payload(w, data);
    w->prepared = true;
  } else {
    // At ~20 GB/s hashing is ~1.6 ms per 32 MiB chunk, 50 ms per GiB, and an unaligned payload's
    // copy as much again: both run on the worker (the caller keeps data until cb), so the loop
    // goes on serving claims. The record's place in the log is fixed by call order, except for a
    // key already stored or on its way: that put is placed once its checksum says whether it
    // stores anything (an identical re-put writes no record, and a record placed is written).
    const bool maybe_unchanged = index_.contains(key) && in_flight_.at(key).count == 1;
    worker_.run([this, w, data, maybe_unchanged, hashed = known.has_value(),
                 alive = std::weak_ptr<int>(alive_)] {
      if (options_.on_io_thread_for_testing) options_.on_io_thread_for_testing("prepare");
      if (!hashed) w->header.payload_checksum = checksum128(data, w->header.payload_bytes);
      const bool same = maybe_unchanged;  // prepare_payload only when a record will be written
      if (!same) prepare_payload(w, data);
      executor_.post([this, w, same, data, alive] {
        if (alive.expired()) return delete w;
        if (w->abandoned) {
          delete w;
          --ops_in_flight_;
          return maybe_finish_close();
        }
        if (same) {
          const RecordHeader& rh = w->header;
          if (unchanged(rh.key, rh.payload_bytes, rh.payload_checksum, /*own_write=*/true)) {
            return finish_unchanged(w);
          }
          // Changed meanwhile, or other bytes: a record after all, placed now.
          worker_.run([this, w, data, alive] {
            prepare_payload(w, data);
            executor_.post([this, w, alive] {
              if (alive.expired()) return delete w;
              w->prepared = true;
              waiting_.push_back(w);
              place_waiting();
            });
          });
          return;
        }
        w->prepared = true;
        maybe_submit(w);
      });
    });
    if (maybe_unchanged) return;  // placed when prepared
  }
  waiting_.push_back(w);
  place_waiting();
}

bool StoreImpl::unchanged(const Key& key, uint64_t bytes, const Checksum128& checksum,
                          bool own_write) const {
  if (options_.simulated) return false;  // no bytes to compare
  auto it = index_.find(key);
  if (it == index_.end() || it->second.payload_bytes != bytes ||
      !(it->second.checksum == checksum)) {
    return false;
  }
  auto f = in_flight_.find(key);
  const uint32_t others = f == in_flight_.end() ? 0 : f->second.count - (own_write ? 1 : 0);
  return others == 0;
}

void StoreImpl::finish_unchanged(PendingWrite* w) {
  std::unique_ptr<PendingWrite> owned(w);
  in_flight_.erase(w->header.key);  // it was the key's only write on its way
  --ops_in_flight_;
  ++stats_.unchanged_puts;
  DoneCallback cb = std::move(w->cb);
  if (cb) cb(Status::ok());
  maybe_finish_close();
}

void StoreImpl::remove(const Key& key, DoneCallback cb) {
  std::string what = "remove of key " + key.to_string() + ": ";
  if (closing_) return fail_soon(std::move(cb), Status::failed_precondition(what + "store closing"));
  if (options_.read_only) {
    return fail_soon(std::move(cb), Status::failed_precondition(what + "the store is read-only"));
  }
  if (!index_.contains(key) && !in_flight_.contains(key)) {
    return fail_soon(std::move(cb), Status::not_found(what + "not in the store"));
  }
  RecordHeader h;
  h.flags = kFlagTombstone;
  h.key = key;
  PendingWrite* w = admit(h, std::move(cb));
  if (!options_.simulated) prepare_payload(w, nullptr);
  w->prepared = true;
  index_erase(key);  // invisible at once; durable when cb runs
  waiting_.push_back(w);
  place_waiting();
}

PendingWrite* StoreImpl::admit(const RecordHeader& header, DoneCallback cb) {
  auto* w = new PendingWrite;
  w->header = header;
  w->header.sequence = next_sequence_++;
  w->cb = std::move(cb);
  ++ops_in_flight_;
  InFlight& f = in_flight_[header.key];
  f.newest_sequence = w->header.sequence;
  ++f.count;
  return w;
}

void StoreImpl::place_waiting() {
  while (!waiting_.empty()) {
    PendingWrite* w = waiting_.front();
    uint64_t rb = w->header.record_bytes();
    if (active_ == nullptr || active_->write_offset + rb + kHeaderBytes > active_->bytes) {
      if (!roll()) return;  // resumes when the next segment lands (or waiting_ failed)
      continue;
    }
    waiting_.pop_front();
    Segment& seg = *active_;
    w->header.segment_id = seg.id;
    w->segment = &seg;
    w->offset = seg.write_offset;
    w->placed = true;
    seg.write_offset += rb;
    ++seg.records;
    ++seg.writes_in_flight;
    maybe_submit(w);
  }
}

void StoreImpl::maybe_submit(PendingWrite* w) {
  if (!w->placed || !w->prepared) return;
  ready_writes_.push_back(w);
  pump_writes();
}

void StoreImpl::pump_writes() {
  if (pumping_) return;  // the outer call's loop goes on
  pumping_ = true;
  while (!ready_writes_.empty()) {
    PendingWrite* w = ready_writes_.front();
    const uint64_t rb = w->header.record_bytes();
    const uint64_t limit = gets_at_engine_ > 0 ? options_.write_bytes_in_flight_while_reading
                                               : options_.write_bytes_in_flight;
    // A record is at least its header block: bytes at the engine > 0 means a write is there.
    if (write_bytes_at_engine_ > 0 && write_bytes_at_engine_ + rb > limit) break;
    ready_writes_.pop_front();
    write_bytes_at_engine_ += rb;
    submit(w);
  }
  pumping_ = false;
}

void prepare_payload(PendingWrite* w, const void* data) {
  size_t bytes = w->header.payload_bytes;
  w->zero_copy = data != nullptr && is_aligned(data, kBlockBytes) && bytes >= kZeroCopyMinBytes;
  w->head = allocate_blocks(w->zero_copy ? kHeaderBytes : w->header.record_bytes());
  size_t tail_bytes = w->zero_copy ? bytes % kBlockBytes : 0;
  if (tail_bytes > 0) w->tail = allocate_blocks(kBlockBytes);
  if (!w->head || (tail_bytes > 0 && !w->tail)) {
    w->status = Status::resource_exhausted("out of memory for a write buffer");
    return;
  }
  const auto* src = static_cast<const std::byte*>(data);
  if (!w->zero_copy) {
    if (bytes > 0) std::memcpy(w->head.get() + kHeaderBytes, src, bytes);
  } else if (tail_bytes > 0) {
    std::memcpy(w->tail.get(), src + (bytes - tail_bytes), tail_bytes);
  }
}

void StoreImpl::submit(PendingWrite* w) {
  Segment& seg = *w->segment;
  uint64_t rb = w->header.record_bytes();
  auto write = [&](uint64_t offset, const void* buf, size_t len) {
    if (write_listener_) write_listener_(len, true);
    engine_.write(seg.file, offset, buf, len, [this, w, len](Result<size_t> r) {
      if (write_listener_) write_listener_(len, false);
      on_piece_done(w, std::move(r), len);
    });
  };
  if (options_.simulated) {
    w->pieces_left = 1;
    return write(w->offset, nullptr, rb);
  }
  if (!w->status.is_ok()) {
    Status st = std::move(w->status);
    w->status = Status::ok();
    w->pieces_left = 1;
    return on_piece_done(w, std::move(st), rb);
  }
  encode_record_header(w->header, std::span<std::byte, kHeaderBytes>(w->head.get(), kHeaderBytes));
  if (!w->zero_copy) {
    w->pieces_left = 1;
    return write(w->offset, w->head.get(), rb);
  }
  size_t bytes = w->header.payload_bytes;
  size_t tail_bytes = bytes % kBlockBytes;
  size_t body = bytes - tail_bytes;
  w->pieces_left = tail_bytes > 0 ? 3 : 2;
  write(w->offset, w->head.get(), kHeaderBytes);
  write(w->offset + kHeaderBytes, w->data, body);
  if (tail_bytes > 0) write(w->offset + kHeaderBytes + body, w->tail.get(), kBlockBytes);
}

void StoreImpl::on_piece_done(PendingWrite* w, Result<size_t> r, size_t expected) {
  if (w->status.is_ok()) {
    if (!r.is_ok()) {
      w->status = r.status();
    } else if (*r < expected) {
      w->status = Status::io_error("short write to " + w->segment->path + ": " +
                                   std::to_string(*r) + " of " + std::to_string(expected) +
                                   " bytes");
    }
  }
  if (--w->pieces_left > 0) return;
  write_bytes_at_engine_ -= w->header.record_bytes();
  pump_writes();
  Segment& seg = *w->segment;
  --seg.writes_in_flight;
  if (w->status.is_ok()) {
    seg.unsynced.push_back(w);
    return maybe_sync(seg);
  }
  retire(seg);
  Status st = w->status;
  DoneCallback cb = finish(w, st);
  maybe_seal(seg);
  if (cb) cb(st);
  maybe_finish_close();
}

void StoreImpl::maybe_sync(Segment& seg) {
  if (seg.sync_in_flight || seg.unsynced.empty()) return;
  seg.sync_in_flight = true;
  std::vector<PendingWrite*> batch;
  batch.swap(seg.unsynced);
  if (seg.sync_failed) {
    // No sync can vouch for these any more (Segment::sync_failed): they fail, as a sync would.
    // Posted, so that the caller (a write's completion) is off the stack first; the segment
    // stays (a sync in flight keeps it from reclamation).
    std::weak_ptr<int> alive = alive_;
    executor_.post([this, &seg, batch = std::move(batch), alive]() mutable {
      if (alive.expired()) return;
      on_sync_done(seg, std::move(batch),
                   Status::io_error("an earlier fdatasync of " + seg.path +
                                    " failed: records written to it since are not durable"));
    });
    return;
  }
  engine_.sync(seg.file, [this, &seg, batch = std::move(batch)](Result<size_t> r) mutable {
    on_sync_done(seg, std::move(batch), std::move(r));
  });
}

void StoreImpl::on_sync_done(Segment& seg, std::vector<PendingWrite*> batch, Result<size_t> r) {
  seg.sync_in_flight = false;
  ++stats_.syncs;
  Status st = r.status();
  if (!st.is_ok()) {
    retire(seg);
    seg.sync_failed = true;
  }
  bool sealed = false;
  std::vector<std::pair<DoneCallback, Status>> done;
  done.reserve(batch.size());
  for (PendingWrite* w : batch) {
    sealed = sealed || w->header.seal();
    done.emplace_back(finish(w, st), st);
  }
  maybe_sync(seg);
  maybe_seal(seg);
  // Reclamation may destroy seg: nothing below touches it.
  if (sealed) (void)make_room(0);
  for (auto& [cb, s] : done) {
    if (cb) cb(s);
  }
  maybe_finish_close();
}

Store::DoneCallback StoreImpl::finish(PendingWrite* w, const Status& st) {
  std::unique_ptr<PendingWrite> owned(w);
  Segment& seg = *w->segment;
  --ops_in_flight_;
  const RecordHeader& h = w->header;
  if (h.seal()) {
    if (st.is_ok() && !seg.failed) seg.state = SegmentState::kSealed;
    else seg.state = SegmentState::kRetired;
    return std::move(w->cb);
  }
  auto f = in_flight_.find(h.key);
  bool newest = f->second.newest_sequence == h.sequence;
  if (--f->second.count == 0) in_flight_.erase(f);
  if (h.tombstone()) {
    if (st.is_ok()) ++stats_.removes;
    return std::move(w->cb);
  }
  if (!st.is_ok()) {
    ++stats_.failed_puts;
    return std::move(w->cb);
  }
  ++stats_.puts;
  stats_.put_bytes += h.payload_bytes;
  if (newest) {
    index_put(h.key, {seg.id, w->offset + kHeaderBytes, h.payload_bytes, h.tokens,
                      h.payload_checksum, h.sequence});
    seg.keys.push_back(h.key);
  }
  return std::move(w->cb);
}

void StoreImpl::maybe_seal(Segment& seg) {
  if (seg.state != SegmentState::kSealing || seg.seal_issued || seg.writes_in_flight > 0 ||
      !seg.unsynced.empty() || seg.sync_in_flight) {
    return;
  }
  if (seg.failed) {
    seg.state = SegmentState::kRetired;
    return;
  }
  seg.seal_issued = true;
  auto* w = new PendingWrite;
  w->header.flags = kFlagSeal;
  w->header.segment_id = seg.id;
  w->header.sequence = next_sequence_++;
  w->header.aux = seg.records;
  w->segment = &seg;
  w->offset = seg.write_offset;
  w->placed = true;
  ++seg.writes_in_flight;
  ++ops_in_flight_;
  if (!options_.simulated) prepare_payload(w, nullptr);
  w->prepared = true;
  maybe_submit(w);
}

void StoreImpl::retire(Segment& seg) {
  seg.failed = true;
  if (&seg == active_) active_ = nullptr;
  if (seg.state == SegmentState::kActive ||
      (seg.state == SegmentState::kSealing && !seg.seal_issued)) {
    seg.state = SegmentState::kRetired;
  }
}

}  // namespace tempokv::store
