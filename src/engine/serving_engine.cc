// ServingEngine: arrivals, iteration boundaries, compute and progress reports.
#include "engine/serving_engine.h"

#include <algorithm>

namespace tempokv {

Status ServingEngine::submit(std::vector<Request> requests, TimePoint start) {
  for (const Request& r : requests) {
    if (live_.count(r.id)) {
      return Status::failed_precondition("submit: request " + std::to_string(r.id) +
                                         " is already submitted");
    }
    if (r.prompt_tokens == 0 || r.max_output_tokens == 0 || r.arrival < Duration::zero()) {
      return Status::invalid_argument("submit: request " + std::to_string(r.id) +
                                      " needs prompt tokens, a generation limit and an arrival");
    }
  }
  std::weak_ptr<int> alive = alive_;
  for (Request& r : requests) {
    const uint64_t id = r.id;
    const TimePoint at = start + r.arrival;
    Live& l = live_[id];
    l.req = std::move(r);
    ++stats_.submitted;
    executor_.at(at, [this, alive, id] {
      if (!alive.expired()) arrive(id);
    });
  }
  return Status::ok();
}

void ServingEngine::arrive(uint64_t id) {
  Live& r = live_.at(id);
  const Request& q = r.req;
  ++stats_.arrived;
  arrival_order_.push_back(id);
  r.rec.id = id;
  r.rec.engine = options_.engine_id;
  r.rec.prompt_tokens = q.prompt_tokens;
  r.rec.max_output_tokens = q.max_output_tokens;
  r.rec.arrival = executor_.now();
  lookup_prefix(r);
  r.rec.hit_chunks = static_cast<uint32_t>(r.manifest.size());
  r.has_claim = !r.manifest.empty();
  r.rec.path = r.has_claim ? RequestPath::kStaged : RequestPath::kNoHit;
  r.rec.prefill_tokens = std::max<uint32_t>(1, q.prompt_tokens - r.rec.cached_tokens);
  if (api_) {
    Status st = api_->add_request(
        {id, q.prompt_tokens, r.rec.cached_tokens, r.rec.cached_bytes, q.max_output_tokens});
    if (st.is_ok() && r.has_claim) {
      st = api_->report_hit(id, r.manifest);
      if (st.is_ok()) r.rec.claim_reported = executor_.now();
    }
    if (!st.is_ok()) fall_back(r, st);
  }
  r.stage = Stage::kWaiting;
  waiting_.push_back(id);
  if (iter_) {
    update_order();  // the adapter projects from its own estimate of the running iteration
  } else {
    kick();
  }
}

void ServingEngine::kick() {
  if (iter_ || boundary_posted_ || in_boundary_) return;
  boundary_posted_ = true;
  std::weak_ptr<int> alive = alive_;
  executor_.post([this, alive] {
    if (alive.expired()) return;
    boundary_posted_ = false;
    if (!iter_) boundary();
  });
}

void ServingEngine::update_order() {
  if (!api_) return;
  std::vector<uint64_t> waiting(waiting_.begin(), waiting_.end());
  Status st = api_->update_order(waiting);
  if (!st.is_ok()) return;  // only unknown ids fail it, which the engine never passes
  for (uint64_t id : waiting) {
    Live& r = live_.at(id);
    if (r.rec.first_ttu) continue;
    Result<Duration> ttu = api_->last_ttu(id);
    if (ttu.is_ok()) {
      r.rec.first_ttu = *ttu;
      r.rec.first_ttu_at = executor_.now();
    }
  }
}

void ServingEngine::boundary() {
  in_boundary_ = true;
  update_order();
  while (running_.size() < options_.max_active && !waiting_.empty() &&
         kv_fits(live_.at(waiting_.front()).req.prompt_tokens)) {
    uint64_t id = waiting_.front();
    waiting_.pop_front();
    admit(id);
  }
  Iteration it;
  while (!ready_.empty()) {
    uint64_t id = ready_.front();
    ready_.pop_front();
    Live& r = live_.at(id);
    r.stage = Stage::kInIteration;
    it.admits.push_back(id);
  }
  for (uint64_t id : running_) {
    if (live_.at(id).stage == Stage::kDecoding) it.decoders.push_back(id);
  }
  in_boundary_ = false;
  if (it.admits.empty() && it.decoders.empty()) return;  // idle until an arrival or a callback
  ++stats_.iterations;
  const TimePoint now = executor_.now();
  Duration retrievals{0}, compute{0};
  uint64_t context = 0;
  for (uint64_t id : it.admits) {
    const Live& r = live_.at(id);
    if (r.retrieve) retrievals += profile_.retrieval(r.rec.cached_bytes);
    compute += profile_.prefill(r.rec.prefill_tokens, r.req.prompt_tokens - r.rec.prefill_tokens);
  }
  for (uint64_t id : it.decoders) {
    const Live& r = live_.at(id);
    context += r.req.prompt_tokens + r.generated;
  }
  if (!it.decoders.empty()) compute += profile_.decode_step(context, it.decoders.size());
  it.compute_start = now + retrievals;
  it.end = it.compute_start + compute;
  if (api_) (void)api_->iteration_started(it.admits, it.decoders);  // all running
  iter_ = std::move(it);
  next_retrieval();
}

bool ServingEngine::kv_fits(uint32_t prompt_tokens) const {
  if (profile_.kv_capacity_tokens == 0 || running_.empty()) return true;
  uint64_t used = prompt_tokens;
  for (uint64_t id : running_) {
    const Live& r = live_.at(id);
    used += r.req.prompt_tokens + r.generated;
  }
  if (truth_.admits_by_line()) return !truth_.under_pressure(used);
  return used <= profile_.kv_capacity_tokens;
}

void ServingEngine::admit(uint64_t id) {
  Live& r = live_.at(id);
  running_.push_back(id);
  r.rec.admitted = executor_.now();
  if (api_) (void)api_->admitted(id);  // known and waiting: cannot fail
  if (!r.has_claim) {
    mark_ready(r, r.rec.path);
    return;
  }
  r.stage = Stage::kRetrievalWait;
  std::weak_ptr<int> alive = alive_;
  if (options_.baseline) {
    auto phase = provider_->start_ordinary(StagingClaim{id, r.manifest},
                                           [this, alive](ClaimId cid, Status st) {
                                             if (alive.expired()) return;
                                             if (st.is_ok())
                                               on_retrieval_answer(cid, RetrievalPath::kOrdinary);
                                             else
                                               on_retrieval_answer(cid, st);
                                           });
    if (!phase.is_ok()) return fall_back(r, phase.status());
    if (*phase == ClaimPhase::kOrdinaryReady) mark_ready(r, RequestPath::kOrdinary);
    return;
  }
  auto answer = api_->request_retrieval(id, [this, alive](ClaimId cid, Result<RetrievalPath> p) {
    if (!alive.expired()) on_retrieval_answer(cid, std::move(p));
  });
  if (!answer.is_ok()) return fall_back(r, answer.status());
  if (*answer == RetrievalAnswer::kReady) mark_ready(r, RequestPath::kStaged);
  if (*answer == RetrievalAnswer::kOrdinaryReady) mark_ready(r, RequestPath::kOrdinary);
}

void ServingEngine::start_compute() {
  Iteration& it = *iter_;
  const TimePoint now = executor_.now();
  Duration compute{0};
  uint64_t context = 0;
  for (uint64_t id : it.admits) {
    const Live& r = live_.at(id);
    compute += truth_.prefill(r.rec.prefill_tokens, r.req.prompt_tokens - r.rec.prefill_tokens);
  }
  for (uint64_t id : it.decoders) {
    const Live& r = live_.at(id);
    context += r.req.prompt_tokens + r.generated;
  }
  if (!it.decoders.empty()) {
    compute += truth_.decode_step(context, it.decoders.size());
    if (truth_.under_pressure(context)) {
      // The youngest decoder not yet preempted in this episode gives up its KV and recomputes it.
      for (auto id = it.decoders.rbegin(); id != it.decoders.rend(); ++id) {
        Live& r = live_.at(*id);
        if (r.preempted) continue;
        r.preempted = true;
        ++stats_.preemptions;
        if (adapter_) (void)adapter_->preempted(*id);  // a runtime reports its preemptions
        compute += truth_.recompute(r.req.prompt_tokens + r.generated);
        break;
      }
    } else {
      for (uint64_t id : it.decoders) live_.at(id).preempted = false;
    }
  }
  it.compute_start = now;
  it.end = now + compute;
  std::weak_ptr<int> alive = alive_;
  executor_.at(it.end, [this, alive] {
    if (!alive.expired()) end_iteration();
  });
}

void ServingEngine::end_iteration() {
  Iteration it = std::move(*iter_);
  iter_.reset();
  const TimePoint now = executor_.now();
  for (uint64_t id : it.admits) {
    Live& r = live_.at(id);
    r.rec.first_token = now;
    r.generated = 1;
    r.stage = Stage::kDecoding;
    if (api_) (void)api_->prefill_done(id);
    if (writer_ && r.req.writes_kv) writer_->write_produced(r.req, r.rec.hit_chunks);
    if (r.generated >= r.req.true_output_tokens()) finish(r);
  }
  for (uint64_t id : it.decoders) {
    Live& r = live_.at(id);
    ++r.generated;
    if (api_) (void)api_->tokens_generated(id, r.generated);
    if (r.generated >= r.req.true_output_tokens()) finish(r);
  }
  boundary();
}

void ServingEngine::finish(Live& r) {
  r.stage = Stage::kDone;
  r.rec.finished = executor_.now();
  r.rec.output_tokens = r.generated;
  stats_.output_tokens += r.generated;
  ++stats_.finished;
  switch (r.rec.path) {
    case RequestPath::kNoHit:
      ++stats_.no_hit;
      break;
    case RequestPath::kStaged:
      ++stats_.staged;
      break;
    case RequestPath::kOrdinary:
      ++stats_.ordinary;
      break;
    case RequestPath::kRecompute:
      ++stats_.recomputes;
      break;
  }
  if (api_) (void)api_->finished(r.rec.id, r.generated);
  std::erase(running_, r.rec.id);
}

std::vector<RequestRecord> ServingEngine::records() const {
  std::vector<RequestRecord> out;
  out.reserve(arrival_order_.size());
  for (uint64_t id : arrival_order_) out.push_back(live_.at(id).rec);
  return out;
}

}  // namespace tempokv
