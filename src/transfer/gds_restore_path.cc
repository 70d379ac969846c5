// The gds path: GPUDirect Storage. cuFile reads each piece of a chunk from the segment file
// straight into the CUDA destination (a peer-to-peer DMA from the NVMe drive where nvidia-fs or
// P2PDMA is present; cuFile's compatibility mode bounces through host memory elsewhere, which is
// cuFile's business, not a copy of ours). Requests are at most 16 MiB; the batch API
// (cuFileBatchIOSetUp/Submit/GetStatus) keeps `depth` of them in flight from one thread where the
// library has it, else `depth` threads issue cuFileRead. cuFile handles are registered once per
// segment file and kept while restores read it (closed by the first restore that does not, and by
// release()); the destination buffer is registered once by register_destination(). Without
// nvidia-fs (compatibility mode) the bytes bounce through host memory: counted as a host copy.
//
// Unavailable (with the reason) without CUDA device memory or without libcufile.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "common/units.h"
#include "transfer/cufile_api.h"
#include "transfer/restore_path.h"
#if TEMPOKV_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tempokv {
namespace {

constexpr uint64_t kMaxGdsRequestBytes = 16ULL << 20;

class GdsRestorePath final : public RestorePath {
 public:
  GdsRestorePath(Executor& executor, TransferEngine& transfer, const RestorePathOptions& options)
      : executor_(executor), transfer_(transfer), options_(options) {}
  ~GdsRestorePath() override { release(); }

  std::string_view name() const override { return "gds"; }

  Status prepare() override {
    TEMPOKV_RETURN_IF_ERROR(options_.validate());
    if (api_) return Status::ok();
    if (transfer_.device_kind() != DeviceKind::kCuda) {
      return Status::unavailable("no GPU: the destination is " +
                                 transfer_.device_description() +
                                 " memory and cuFile needs CUDA memory");
    }
#if TEMPOKV_HAVE_CUDA
    cudaGetDevice(&cuda_device_);
#endif
    TEMPOKV_ASSIGN_OR_RETURN(api_, CuFileApi::load());
    mode_ = detect_gds_mode();
    piece_bytes_ = std::min(options_.slot_bytes, kMaxGdsRequestBytes);
    const char* env = std::getenv("TEMPOKV_GDS_BATCH");
    bool want_batch = !(env && std::string(env) == "0");
    if (want_batch && api_->has_batch()) {
      cufile::Error e = api_->batch_setup(&batch_, options_.depth);
      use_batch_ = e.err == 0;
    }
    stop_ = false;
    int threads = use_batch_ ? 1 : int(options_.depth);
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
    return Status::ok();
  }

  Status register_destination(DeviceBuffer& dst) override {
    if (!api_) return Status::failed_precondition("gds: not prepared");
    cufile::Error e = api_->buf_register(dst.data(), dst.size(), 0);
    if (e.err != 0) return Status::io_error("cuFileBufRegister: " + cufile_error_string(e));
    return Status::ok();
  }
  void unregister_destination(DeviceBuffer& dst) override {
    if (api_) api_->buf_deregister(dst.data());
  }

  std::string detail() const override {
    return std::string(use_batch_ ? "cuFile batch API" : "cuFileRead threads") + ", " +
           gds_mode_description(mode_);
  }

  void restore(const RestoreSession& session, DeviceBuffer& dst, RestoreCallback cb) override {
    Status st = api_ ? Status::ok() : Status::failed_precondition("gds: not prepared");
    if (st.is_ok() && dst.kind() != DeviceKind::kCuda) {
      st = Status::invalid_argument("gds: the destination must be CUDA memory");
    }
    if (st.is_ok()) st = check_device_range(dst, 0, session.device_bytes());
    if (st.is_ok() && busy()) st = Status::failed_precondition("gds: restore in flight");
    if (st.is_ok()) st = plan(session);
    if (st.is_ok() && pieces_.empty()) st = Status::invalid_argument("gds: empty session");
    if (!st.is_ok()) {
      ++stats_.failures;
      executor_.post([cb = std::move(cb), st] { cb(st); });
      return;
    }
    {
      std::lock_guard lock(mu_);
      active_ = true;
      dst_ = &dst;
      cb_ = std::move(cb);
      next_piece_ = 0;
      done_pieces_ = 0;
      error_ = Status::ok();
      ++generation_;
    }
    cv_.notify_all();
  }

  void release() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
    if (api_) {
      if (batch_) api_->batch_destroy(batch_);
      for (auto& [path, f] : files_) {
        api_->handle_deregister(f.handle);
        ::close(f.fd);
      }
    }
    batch_ = nullptr;
    use_batch_ = false;
    files_.clear();
    api_ = nullptr;
  }

  RestoreStats stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }

 private:
  struct File {
    int fd;
    cufile::Handle handle;
  };
  struct Piece {
    cufile::Handle handle;
    uint64_t file_offset;
    uint64_t bytes;
    uint64_t device_offset;
    uint64_t payload_bytes;  // of these bytes, the ones that are payload
  };

  // Resolves file handles (registered once per file) and cuts the session into requests.
  Status plan(const RestoreSession& session) {
    // A handle holds its segment file open: kept for the next restore of the same files, closed
    // once a restore no longer reads them (the segment may be unpinned and reclaimed by now, and an
    // open descriptor would keep a deleted segment's space allocated).
    std::unordered_set<std::string> wanted(session.files().begin(), session.files().end());
    for (auto it = files_.begin(); it != files_.end();) {
      if (wanted.count(it->first) != 0) {
        ++it;
        continue;
      }
      api_->handle_deregister(it->second.handle);
      ::close(it->second.fd);
      it = files_.erase(it);
    }
    std::vector<cufile::Handle> handles;
    for (const std::string& path : session.files()) {
      auto it = files_.find(path);
      if (it == files_.end()) {
        int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0) return Status::from_errno(errno, "gds: open " + path);
        cufile::Descr d{};
        d.type = cufile::kHandleTypeOpaqueFd;
        d.handle.fd = fd;
        cufile::Handle h = nullptr;
        cufile::Error e = api_->handle_register(&h, &d);
        if (e.err != 0) {
          ::close(fd);
          return Status::io_error("cuFileHandleRegister " + path + ": " + cufile_error_string(e));
        }
        it = files_.emplace(path, File{fd, h}).first;
      }
      handles.push_back(it->second.handle);
    }
    std::lock_guard lock(mu_);  // workers index pieces_ under mu_
    pieces_.clear();
    for (const RestoreExtent& e : session.extents()) {
      for (uint64_t off = 0; off < e.read_bytes; off += piece_bytes_) {
        uint64_t n = std::min(piece_bytes_, e.read_bytes - off);
        pieces_.push_back(Piece{handles[e.file_index], e.file_offset + off, n,
                                e.device_offset + off, std::min(n, e.payload_bytes - off)});
      }
    }
    return Status::ok();
  }

  void worker_loop() {
#if TEMPOKV_HAVE_CUDA
    cudaSetDevice(cuda_device_);  // cuFile uses the thread's current context
#endif
    uint64_t seen = 0;
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      lock.unlock();
      if (use_batch_) {
        run_batch();
      } else {
        run_sync();
      }
      lock.lock();
    }
  }

  bool busy() const {
    std::lock_guard lock(mu_);
    return active_;
  }

  // The next request of the restore in flight, or false when every one has been taken.
  bool take_pieces(size_t max, size_t* first, size_t* count) {
    std::lock_guard lock(mu_);
    if (!active_ || next_piece_ >= pieces_.size()) return false;
    *first = next_piece_;
    *count = std::min(max, pieces_.size() - next_piece_);
    next_piece_ += *count;
    return true;
  }

  void run_sync() {
    size_t i = 0, one = 0;
    while (take_pieces(1, &i, &one)) {
      const Piece& p = pieces_[i];
      ssize_t n = api_->read(p.handle, dst_->data(), p.bytes, off_t(p.file_offset),
                             off_t(p.device_offset));
      Status st;
      if (n < 0 || uint64_t(n) < p.bytes) {
        st = Status::io_error("cuFileRead of " + std::to_string(p.bytes) + " bytes at offset " +
                              std::to_string(p.file_offset) + " returned " + std::to_string(n));
      }
      complete_pieces(1, p.payload_bytes, std::move(st));
    }
  }

  void run_batch() {
    std::vector<cufile::IoParams> params(options_.depth);
    std::vector<cufile::IoEvents> events(options_.depth);
    size_t first = 0, count = 0;
    // One wave of up to `depth` requests, then reap them all: simple, and with 16 MiB requests
    // the gap between waves is small next to the transfer.
    while (take_pieces(options_.depth, &first, &count)) {
      unsigned k = unsigned(count);
      for (unsigned j = 0; j < k; ++j) {
        const Piece& p = pieces_[first + j];
        cufile::IoParams& io = params[j];
        io = cufile::IoParams{};
        io.mode = cufile::kBatch;
        io.u.batch.devPtr_base = dst_->data();
        io.u.batch.file_offset = off_t(p.file_offset);
        io.u.batch.devPtr_offset = off_t(p.device_offset);
        io.u.batch.size = p.bytes;
        io.fh = p.handle;
        io.opcode = cufile::kRead;
        io.cookie = reinterpret_cast<void*>(first + j);
      }
      cufile::Error e = api_->batch_submit(batch_, k, params.data(), 0);
      if (e.err != 0) {
        abandon(k, Status::io_error("cuFileBatchIOSubmit: " + cufile_error_string(e)));
        return;
      }
      unsigned reaped = 0;
      while (reaped < k) {
        unsigned nr = k - reaped;
        timespec timeout{5, 0};
        e = api_->batch_get_status(batch_, 1, &nr, events.data(), &timeout);
        if (e.err != 0) {
          abandon(k - reaped,
                  Status::io_error("cuFileBatchIOGetStatus: " + cufile_error_string(e)));
          return;
        }
        for (unsigned j = 0; j < nr; ++j) {
          const Piece& p = pieces_[reinterpret_cast<size_t>(events[j].cookie)];
          Status st;
          if (events[j].status != cufile::kComplete || events[j].ret != p.bytes) {
            st = Status::io_error("cuFile batch read at offset " + std::to_string(p.file_offset) +
                                  " ended with status " + std::to_string(events[j].status) +
                                  ", " + std::to_string(int64_t(events[j].ret)) + " bytes");
          }
          complete_pieces(1, p.payload_bytes, std::move(st));
        }
        reaped += nr;
      }
    }
  }

  // Gives up on `taken` requests already taken and on every request not yet taken.
  void abandon(size_t taken, Status st) {
    size_t untaken = 0;
    {
      std::lock_guard lock(mu_);
      untaken = pieces_.size() - next_piece_;
      next_piece_ = pieces_.size();
    }
    complete_pieces(taken + untaken, 0, std::move(st));
  }

  // Counts finished requests; the one that finishes the restore posts its callback.
  void complete_pieces(size_t count, uint64_t payload_bytes, Status st) {
    std::lock_guard lock(mu_);
    if (!st.is_ok() && error_.is_ok()) error_ = std::move(st);
    restored_bytes_ += payload_bytes;
    stats_.reads += count;
    done_pieces_ += count;
    if (done_pieces_ < pieces_.size()) return;
    Result<uint64_t> result = restored_bytes_;
    if (error_.is_ok()) {
      ++stats_.restores;
      stats_.bytes += restored_bytes_;
      if (mode_ == GdsMode::kCompat) stats_.cpu_copies.host_copy_bytes += restored_bytes_;
    } else {
      ++stats_.failures;
      result = error_;
    }
    restored_bytes_ = 0;
    active_ = false;
    executor_.post([cb = std::move(cb_), result = std::move(result)]() mutable {
      cb(std::move(result));
    });
  }

  Executor& executor_;
  TransferEngine& transfer_;
  RestorePathOptions options_;
  const CuFileApi* api_ = nullptr;
  int cuda_device_ = 0;
  uint64_t piece_bytes_ = kMaxGdsRequestBytes;
  bool use_batch_ = false;
  GdsMode mode_ = GdsMode::kCompat;
  cufile::BatchHandle batch_ = nullptr;
  std::unordered_map<std::string, File> files_;  // executor thread only
  std::vector<Piece> pieces_;                    // written before a generation starts
  std::vector<std::thread> workers_;

  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t generation_ = 0;  // one per restore, wakes the workers
  DeviceBuffer* dst_ = nullptr;
  RestoreCallback cb_;
  bool active_ = false;  // a restore is in flight
  size_t next_piece_ = 0;
  size_t done_pieces_ = 0;
  uint64_t restored_bytes_ = 0;
  Status error_;
  RestoreStats stats_;
};

}  // namespace

std::unique_ptr<RestorePath> make_gds_restore_path(Executor& executor, TransferEngine& transfer,
                                                   const RestorePathOptions& options) {
  return std::make_unique<GdsRestorePath>(executor, transfer, options);
}

}  // namespace tempokv
