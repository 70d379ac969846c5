// EvalStack in service mode: engines whose runtime calls, lookups and copies go through their own
// ServiceClient to the run's tempokvd, and the wait for the daemon to release what they held.
#include <functional>
#include <string>

#include "eval/eval_service.h"
#include "eval/stack.h"

namespace tempokv {

Status EvalStack::create_service_engines() {
  const StackConfig& config = config_;
  RealExecutor* loop = storage_.real();
  if (loop == nullptr || storage_.has_store()) {
    return Status::invalid_argument(
        "EvalStack: service mode needs a real-mode storage without a local store");
  }
  if (config.baseline() || config.write_produced_kv) {
    return Status::invalid_argument("EvalStack: policy " + config.policy +
                                    (config.baseline() ? "" : " with produced-KV writes") +
                                    " needs the in-process stack, not the service");
  }
  for (uint32_t k = 0; k < config.engines; ++k) {
    // The device link is the in-process real mode's: memcpy paced to the profile's rate.
    TransferEngineOptions xo;
    xo.kind = TransferEngineKind::kEmulated;
    xo.pin_with_mlock = false;
    xo.emulated_link_bytes_per_s = config.profile.retrieval_bytes_per_s;
    TEMPOKV_ASSIGN_OR_RETURN(auto link, make_transfer_engine(*loop, xo));
    links_.push_back(std::move(link));

    // Its own runtime, as each in-process engine has its own adapter (runtime_id = engine).
    ClientOptions co;
    co.endpoint = config.service_endpoint;
    co.name = "eval-engine-" + std::to_string(k);
    co.max_active = config.max_active;
    co.pipeline_reports = config.pipeline_reports;
    TEMPOKV_ASSIGN_OR_RETURN(auto client, ServiceClient::connect(co));
    TEMPOKV_RETURN_IF_ERROR(client->attach(*loop));
    clients_.push_back(std::move(client));

    EngineOptions eo;
    eo.engine_id = k;
    eo.max_active = config.max_active;
    eo.jitter_sigma = config.jitter_sigma;
    eo.seed = config.seed + k;
    eo.verify_bytes = config.verify_bytes;
    eo.prior_output_tokens = config.prior_output_tokens;
    // As a runtime connector would (python/tempokv/vllm_connector.py makes none): the per-object
    // reports are round trips that only progressive release acts on.
    eo.report_objects = config.policy == "tempokv-progressive";
    EngineContext c;
    c.executor = loop;
    c.transfer = links_.back().get();
    c.service = clients_.back().get();
    TEMPOKV_ASSIGN_OR_RETURN(auto engine, ServingEngine::create(c, config.profile, eo));
    engines_.push_back(std::move(engine));
  }
  return Status::ok();
}

ServiceCallStats EvalStack::sum_service_calls() const {
  ServiceCallStats s;
  for (const auto& c : clients_) {
    s.calls += c->calls();
    s.seconds += c->call_seconds();
    s.late_errors += c->late_errors();
  }
  return s;
}

Status EvalStack::drain_service() {
  if (clients_.empty()) return Status::ok();
  // The daemon's counters are polled from the loop (a stats call blocks it for a round trip);
  // reads and reservations finish on the daemon meanwhile.
  constexpr Duration kPoll = std::chrono::milliseconds(5);
  ServiceClient& client = *clients_.front();
  Executor& ex = storage_.executor();
  bool done = false;
  Status failed;
  TimerHandle timer;
  std::function<void()> poll;
  poll = [&] {
    Result<service::StatList> stats = client.stats();
    Result<ControlCounters> c =
        stats.is_ok() ? service_counters(*stats) : Result<ControlCounters>(stats.status());
    if (!c.is_ok()) {
      failed = c.status();
      done = true;
    } else if (c->drained()) {
      done = true;
    } else {
      timer = ex.after(kPoll, poll);
    }
  };
  poll();
  Status st =
      done ? Status::ok() : storage_.drive([&] { return done; }, nullptr, std::chrono::minutes(1));
  timer.cancel();
  if (!st.is_ok()) return st;
  return failed;
}

}  // namespace tempokv
