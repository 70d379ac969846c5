#include "restore_report.h"

#include <fmt/format.h>

#include "common/units.h"

namespace tempokv::cli {

std::string format_restore_table(const RestoreBenchResult& r) {
  std::string out;
  out += fmt::format("Restore of one {}-token session ({} per token), median of {} restores; "
                     "block device {}{}\n",
                     r.tokens, format_bytes(r.bytes_per_token),
                     r.rows.empty() ? 0 : r.rows.front().restores,
                     r.block_device.empty() ? "unknown" : r.block_device,
                     r.fio_gbps ? fmt::format("; fio best {:.2f} GB/s (depth {}), {:.2f} GB/s at "
                                              "the direct path's depth (medians over restores, fio beside each)",
                                              *r.fio_gbps, r.fio_best_depth,
                                              *r.fio_equal_depth_gbps)
                                : "");
  out += fmt::format("| {:<15}| {:>18} | {:>9} | {:>9} | {:>19} | {:>8} | {:>15} | {:>10} | {:>8} |\n",
                     "CONFIGURATION", "RESTORE p50 / p95", "DISK READ", "DELIVERY",
                     "CPU / REQ (host)", "CPU COPY", "vs fio (=depth)", "PEAK RSS", "VERIFIED");
  out += "|" + std::string(16, '-') + "|" + std::string(20, '-') + "|" + std::string(11, '-') +
         "|" + std::string(11, '-') + "|" + std::string(21, '-') + "|" + std::string(10, '-') +
         "|" + std::string(17, '-') + "|" + std::string(12, '-') + "|" + std::string(10, '-') +
         "|\n";
  for (const RestoreBenchRow& row : r.rows) {
    if (!row.available) {
      out += fmt::format("| {:<15}| unavailable: {}\n", row.path, row.unavailable_reason);
      continue;
    }
    std::string cpu = fmt::format("{:.3f} ({:.3f}) c-s", row.cpu_core_s_per_req,
                                  row.cpu_core_s_per_req_excl_emulated_dma);
    out += fmt::format(
        "| {:<15}| {:>7.0f} / {:>5.0f} ms | {:>4.2f} GB/s | {:>4.2f} GB/s | {:>19} | {:>6.2f} B | "
        "{:>15} | {:>10} | {:>8} |\n",
        row.path, row.restore_ms_median, row.restore_ms_p95, row.disk_read_gbps,
        row.delivery_gbps, cpu, row.cpu_copy_bytes_per_byte,
        row.fio_ratio ? fmt::format("{:.2f} ({:.2f})", *row.fio_ratio, *row.fio_equal_depth_ratio)
                      : "-",
        format_bytes(row.peak_rss_bytes), row.verified ? "yes" : "NO");
  }
  out += "vs fio: the path's read rate (its requests' bytes over the restore time; the device's "
         "counters for gds) over fio's best over depths {the path's, 8, 16, 32} (in brackets: "
         "over fio at the path's depth), fio reading the same session beside each restore; the "
         "median of the pairs' ratios.\n";
  out += "CPU / REQ: core-seconds of all threads per restore; (host) leaves out the emulated "
         "device copy, which a GPU's DMA engine does.\nCPU COPY: bytes the CPU copied on the "
         "host side per byte restored (page cache, bounce buffer, driver staging).\n";
  for (const RestoreBenchRow& row : r.rows) {
    if (row.available) {
      out += fmt::format("  {}: {}, {} per request", row.path, row.detail,
                         format_bytes(row.request_bytes));
      if (row.read_ms_mean > 0) {
        out += fmt::format("; {:.2f} reads in flight on average, a read {:.2f} ms, a device copy "
                           "{:.2f} ms, {:.0f} ms from restore() to its callback of which "
                           "{:.2f} ms after the last read",
                           row.mean_read_depth, row.read_ms_mean, row.copy_ms_mean,
                           row.path_ms_median, row.tail_ms);
      }
      out += "\n";
    }
    if (!row.error.empty()) out += fmt::format("  {} failed: {}\n", row.path, row.error);
  }
  if (!r.fio_note.empty()) out += "  fio: " + r.fio_note + "\n";
  return out;
}

nlohmann::json restore_result_json(const RestoreBenchConfig& c, const RestoreBenchResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const RestoreBenchRow& row : r.rows) {
    nlohmann::json j = {
        {"path", row.path},
        {"available", row.available},
        {"fio_ratio", row.fio_ratio ? nlohmann::json(*row.fio_ratio) : nlohmann::json(nullptr)},
        {"fio_equal_depth_ratio", row.fio_equal_depth_ratio
                                      ? nlohmann::json(*row.fio_equal_depth_ratio)
                                      : nlohmann::json(nullptr)},
        {"fio_gbps", row.fio_gbps ? nlohmann::json(*row.fio_gbps) : nlohmann::json(nullptr)},
        {"fio_equal_depth_gbps", row.fio_equal_depth_gbps
                                     ? nlohmann::json(*row.fio_equal_depth_gbps)
                                     : nlohmann::json(nullptr)},
        {"fio_best_depth", row.fio_best_depth},
        {"fio_pairs", row.fio_pairs},
        {"fio_first_runs", fio_runs_json(row.fio_first_runs)},
        {"restore_ms_median", row.restore_ms_median},
        {"restore_ms_p95", row.restore_ms_p95},
        {"disk_read_gbps", row.disk_read_gbps},
        {"delivery_gbps", row.delivery_gbps},
        {"cpu_core_s_per_req", row.cpu_core_s_per_req},
        {"cpu_core_s_per_req_excl_emulated_dma", row.cpu_core_s_per_req_excl_emulated_dma},
        {"cpu_copy_bytes_per_byte", row.cpu_copy_bytes_per_byte},
        {"emulated_device_copy_bytes_per_byte", row.emulated_device_copy_bytes_per_byte},
        {"verified", row.verified},
        {"peak_rss_bytes", row.peak_rss_bytes},
        {"mean_read_depth", row.mean_read_depth},
        {"read_ms_mean", row.read_ms_mean},
        {"copy_ms_mean", row.copy_ms_mean},
        {"tail_ms", row.tail_ms},
        {"path_ms_median", row.path_ms_median},
        {"chunk_tokens", row.chunk_tokens},
        {"session_bytes", row.session_bytes},
        {"request_bytes", row.request_bytes},
        {"depth", row.depth},
        {"restores", row.restores},
        {"device", row.device},
        {"detail", row.detail},
    };
    if (!row.available) j["unavailable_reason"] = row.unavailable_reason;
    if (!row.error.empty()) j["error"] = row.error;
    rows.push_back(std::move(j));
  }
  return {
      {"fio_gbps", r.fio_gbps ? nlohmann::json(*r.fio_gbps) : nlohmann::json(nullptr)},
      {"fio_equal_depth_gbps", r.fio_equal_depth_gbps ? nlohmann::json(*r.fio_equal_depth_gbps)
                                                      : nlohmann::json(nullptr)},
      {"fio_best_depth", r.fio_best_depth},
      {"fio_note", r.fio_note},
      {"block_device", r.block_device},
      {"model", c.model},
      {"tokens", r.tokens},
      {"bytes_per_token", r.bytes_per_token},
      {"sessions", c.sessions},
      {"rows", std::move(rows)},
  };
}

}  // namespace tempokv::cli
