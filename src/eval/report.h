// Writing an evaluation's results: the JSON rows ({"rows": [...]}, the fields scripts/plot and
// docs/evaluation.md name), one CSV row per request, and the console table of a scenario.
// Free functions over values; thread-safe.
#pragma once

#include <string>

#include "eval/eval.h"
#include "tempokv/status.h"

namespace tempokv {

// {"rows": [...]} with every common field and each row's extra fields.
std::string rows_json(const EvalResult& result);
Status write_rows_json(const EvalResult& result, const std::string& path);
// One header line and one line per request of every run: the run's identity, then the request's
// RequestRecord with times in seconds from the run's first submission (empty when unset).
std::string requests_csv(const EvalResult& result);
Status write_requests_csv(const EvalResult& result, const std::string& path);
// The console table of a scenario's rows (its own columns for fig1, fig2 and trace).
std::string format_eval_table(const EvalResult& result);
// The comparisons under a table: fig4 C ratios, floors and p95 changes; fig5 changes from the
// largest to the smallest tier; fig6 per rate; trace wall time per policy.
std::string format_eval_summary(const EvalResult& result);

}  // namespace tempokv
