// Rolling to the next segment without blocking the loop. Creating a segment file (fallocate, the
// header write, an fdatasync and a directory fsync) took 133-159 ms on the loop thread; it now
// runs on the creator thread. The next segment is made ahead as a spare ("seg-N.tkv.next"), when it
// fits under capacity without reclaiming anything, and renamed to its segment name (directory
// synced, off the loop too) when the active segment fills. Writes that find no room wait in
// waiting_, in call order, until it is installed; the loop meanwhile serves everything else.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>

#include "store/store_impl.h"

namespace tempokv::store {

bool StoreImpl::roll() {
  if (active_ != nullptr) {
    Segment& old = *active_;
    active_ = nullptr;
    old.state = SegmentState::kSealing;
    maybe_seal(old);
  }
  if (options_.simulated) {
    // No files: the segment exists at once.
    Status st = make_room(options_.segment_bytes);
    if (st.is_ok()) st = install(next_segment_id_++, -1);
    if (!st.is_ok()) fail_waiting(st);
    return st.is_ok();
  }
  switch (next_state_) {
    case NextState::kNone: {
      Status st = make_room(options_.segment_bytes);
      if (!st.is_ok()) {
        fail_waiting(st);
        return false;
      }
      next_needed_ = true;
      start_next(/*spare=*/false);
      return false;
    }
    case NextState::kReady:
      next_needed_ = true;
      next_state_ = NextState::kPublishing;
      ++ops_in_flight_;
      creator_.run([this, id = next_id_, fd = next_fd_, alive = std::weak_ptr<int>(alive_)] {
        if (options_.on_io_thread_for_testing) options_.on_io_thread_for_testing("publish");
        std::string path = options_.dir + "/" + segment_file_name(id);
        Result<int> r = fd;
        if (Status st = files_.rename(path + std::string(kNextSuffix), path); !st.is_ok()) {
          r = Status(st.code(), "the spare segment: " + st.message());
        } else if (Status synced = files_.sync_dir(options_.dir); !synced.is_ok()) {
          r = synced;  // renamed but maybe not durably: an empty segment, harmless at the next open
        }
        if (!r.is_ok()) ::close(fd);
        executor_.post([this, id, r = std::move(r), alive]() mutable {
          if (alive.expired()) {
            if (r.is_ok()) ::close(*r);
            return;
          }
          on_next_done(id, std::move(r), /*published=*/true);
        });
      });
      return false;
    case NextState::kCreating:
    case NextState::kPublishing:
      next_needed_ = true;
      return false;
  }
  return false;
}

void StoreImpl::want_spare() {
  if (!options_.spare_segment || options_.simulated || options_.read_only || closing_ ||
      next_state_ != NextState::kNone ||
      live_disk_bytes_ + options_.segment_bytes > options_.capacity_bytes) {
    return;
  }
  start_next(/*spare=*/true);
}

void StoreImpl::start_next(bool spare) {
  next_state_ = NextState::kCreating;
  next_id_ = next_segment_id_++;
  live_disk_bytes_ += options_.segment_bytes;  // on disk from now on
  ++ops_in_flight_;
  creator_.run([this, id = next_id_, spare, alive = std::weak_ptr<int>(alive_)] {
    if (options_.on_io_thread_for_testing) options_.on_io_thread_for_testing("create");
    Result<int> fd = create_segment_file(files_, options_.dir, id, options_.segment_bytes,
                                         options_.capacity_bytes, engine_.direct(),
                                         spare ? kNextSuffix : "");
    executor_.post([this, id, spare, fd = std::move(fd), alive]() mutable {
      if (alive.expired()) {
        if (fd.is_ok()) ::close(*fd);
        return;
      }
      on_next_done(id, std::move(fd), /*published=*/!spare);
    });
  });
}

void StoreImpl::on_next_done(uint32_t id, Result<int> fd, bool published) {
  --ops_in_flight_;
  if (!fd.is_ok()) {
    // Nothing of it is left on disk (creation removes its file; a failed rename leaves the spare,
    // which the next open deletes).
    next_state_ = NextState::kNone;
    live_disk_bytes_ -= options_.segment_bytes;
    bool needed = next_needed_;
    next_needed_ = false;
    if (needed) fail_waiting(fd.status());
    maybe_finish_close();
    return;
  }
  if (!published) {
    next_state_ = NextState::kReady;
    next_fd_ = *fd;
    if (next_needed_) roll();  // publishes it
    maybe_finish_close();
    return;
  }
  next_state_ = NextState::kNone;
  next_needed_ = false;
  live_disk_bytes_ -= options_.segment_bytes;  // install() counts it as a segment
  Status st = install(id, *fd);
  if (!st.is_ok()) {
    fail_waiting(st);
  } else {
    want_spare();
    place_waiting();
  }
  maybe_finish_close();
}

Result<std::unique_ptr<Segment>> StoreImpl::new_segment(uint32_t id, int fd, std::string path) {
  Result<FileId> file = engine_.add_file(fd);
  if (!file.is_ok()) {
    if (fd >= 0) ::close(fd);
    return file.status();
  }
  auto seg = std::make_unique<Segment>();
  seg->id = id;
  seg->fd = fd;
  seg->file = *file;
  seg->path = std::move(path);
  return seg;
}

Status StoreImpl::install(uint32_t id, int fd) {
  std::string path = options_.simulated ? "" : options_.dir + "/" + segment_file_name(id);
  Result<std::unique_ptr<Segment>> made = new_segment(id, fd, path);
  if (!made.is_ok()) {
    if (!path.empty()) remove_file_off_loop(path);
    return made.status();
  }
  std::unique_ptr<Segment> seg = std::move(made).value();
  seg->bytes = options_.segment_bytes;
  seg->write_offset = kHeaderBytes;
  live_disk_bytes_ += seg->bytes;
  recorded_capacity_ = options_.capacity_bytes;  // what its header says
  active_ = seg.get();
  segments_[id] = std::move(seg);
  return Status::ok();
}

void StoreImpl::fail_waiting(const Status& st) {
  std::deque<PendingWrite*> failed;
  failed.swap(waiting_);
  for (PendingWrite* w : failed) {
    auto f = in_flight_.find(w->header.key);
    if (--f->second.count == 0) in_flight_.erase(f);
    if (!w->header.tombstone()) ++stats_.failed_puts;
    fail_soon(std::move(w->cb), st);
    if (w->prepared) {
      delete w;
      --ops_in_flight_;
    } else {
      w->abandoned = true;  // still on the worker: its continuation deletes it
    }
  }
}

void StoreImpl::discard_spare() {
  if (next_state_ != NextState::kReady) return;
  next_state_ = NextState::kNone;
  live_disk_bytes_ -= options_.segment_bytes;
  if (next_fd_ >= 0) ::close(next_fd_);
  next_fd_ = -1;
  std::string spare = options_.dir + "/" + segment_file_name(next_id_) + std::string(kNextSuffix);
  unlinker_.run([this, spare] { (void)files_.unlink(spare); });
}

}  // namespace tempokv::store
