#include "restore_measure.h"

#include <chrono>
#include <fstream>
#include <set>
#include <string>

#include "common/resource_usage.h"
#include "transfer/restore_verify.h"

namespace tempokv::cli {
namespace {

uint64_t disk_read_bytes(const std::string& device) {
  if (device.empty()) return 0;
  Result<BlockCounters> c = read_block_counters(device);
  return c.is_ok() ? c->read_bytes : 0;
}

}  // namespace

RestoreSample measure_restore(RestoreRig& rig, RestorePath& path, const std::vector<Key>& keys,
                              DeviceBuffer& dst) {
  RestoreSample sample;
  // Evicted from every cache: the drive must do the work, as in the seed's repeat windows.
  std::set<uint32_t> segments;
  for (const Key& k : keys) {
    if (auto info = rig.store.lookup(k)) segments.insert(info->segment);
  }
  for (uint32_t seg : segments) {
    Status st = drop_page_cache(rig.store.segment_path(seg));
    if (!st.is_ok()) {
      sample.status = st;
      return sample;
    }
  }
  const RestoreStats stages0 = path.stats();
  CopyCountersSnapshot path0 = stages0.cpu_copies;
  CopyCountersSnapshot engine0 = rig.transfer.stats().cpu_copies;
  uint64_t disk0 = disk_read_bytes(rig.block_device);
  double dma0 = rig.transfer.emulated_dma_cpu_seconds();
  double cpu0 = process_cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();

  bool done = false;
  Result<uint64_t> result = Status::internal("restore did not complete");
  Result<RestoreSession> session = RestoreSession::resolve(rig.store, keys);
  if (session.is_ok()) {
    path.restore(*session, dst, [&](Result<uint64_t> r) {
      result = std::move(r);
      done = true;
    });
    rig.executor.run_until([&] { return done; });
  } else {
    result = session.status();
  }

  auto t1 = std::chrono::steady_clock::now();
  sample.cpu_s = process_cpu_seconds() - cpu0;
  sample.emulated_dma_cpu_s = rig.transfer.emulated_dma_cpu_seconds() - dma0;
  sample.disk_read_bytes = disk_read_bytes(rig.block_device) - disk0;
  sample.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const RestoreStats stages1 = path.stats();
  CopyCountersSnapshot path1 = stages1.cpu_copies;
  sample.path_read_bytes = stages1.read_bytes - stages0.read_bytes;
  if (const uint64_t reads = stages1.reads - stages0.reads; reads > 0) {
    const double restore_ns = double(stages1.restore_ns - stages0.restore_ns);
    sample.path_ms = restore_ns / 1e6;
    if (restore_ns > 0) {
      sample.mean_read_depth = double(stages1.read_depth_ns - stages0.read_depth_ns) / restore_ns;
    }
    sample.read_ms_mean = double(stages1.read_ns - stages0.read_ns) / double(reads) / 1e6;
    sample.copy_ms_mean = double(stages1.copy_ns - stages0.copy_ns) / double(reads) / 1e6;
    sample.tail_ms = double(stages1.tail_ns - stages0.tail_ns) / 1e6;
  }
  CopyCountersSnapshot engine1 = rig.transfer.stats().cpu_copies;
  sample.host_copy_bytes = (path1.host_copy_bytes - path0.host_copy_bytes) +
                           (engine1.host_copy_bytes - engine0.host_copy_bytes);
  sample.emulated_copy_bytes =
      (path1.emulated_device_copy_bytes - path0.emulated_device_copy_bytes) +
      (engine1.emulated_device_copy_bytes - engine0.emulated_device_copy_bytes);
  if (!result.is_ok()) {
    sample.status = result.status();
    return sample;
  }
  sample.payload_bytes = *result;
  // Outside the window: every restored byte against the checksum the store recorded.
  sample.status = verify_restored(*session, dst, rig.transfer);
  sample.verified = sample.status.is_ok();
  return sample;
}

void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";  // resets the peak RSS (VmHWM) to the current RSS
}

uint64_t read_peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return peak_rss_bytes();
}

}  // namespace tempokv::cli
