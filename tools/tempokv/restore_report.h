// The restore-bench report: the console table shaped like seed 000's Table 1, and the JSON file
// ({"fio_gbps": ..., "rows": [...]}). Plain functions; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "restore_bench.h"

namespace tempokv::cli {

std::string format_restore_table(const RestoreBenchResult& result);
nlohmann::json restore_result_json(const RestoreBenchConfig& config,
                                   const RestoreBenchResult& result);

}  // namespace tempokv::cli
