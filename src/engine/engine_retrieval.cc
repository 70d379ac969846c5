// The retrieval half of ServingEngine: the prefix lookup at arrival, readiness answers, the fast
// tier -> device copies of one admitted request, byte verification in real mode, and the
// fallback to recompute.
#include <vector>

#include "common/checksum.h"
#include "engine/serving_engine.h"
#include "tempokv/client.h"
#include "workload/tokens.h"

namespace tempokv {

void ServingEngine::lookup_prefix(Live& r) {
  const Request& q = r.req;
  if (!service_) {
    // Prefix lookup in whole chunks, stopping at the first miss.
    for (const CachedChunk& c : q.chunks) {
      std::optional<ObjectInfo> info = store_->lookup(c.key);
      if (!info || c.tokens.end > q.prompt_tokens) break;
      r.manifest.push_back({c.key, info->payload_bytes});
      r.rec.cached_tokens = c.tokens.end;
      r.rec.cached_bytes += info->payload_bytes;
    }
    return;
  }
  // One round trip for every chunk of the prompt, then the same walk to the first miss.
  std::vector<Key> keys;
  for (const CachedChunk& c : q.chunks) {
    if (c.tokens.end > q.prompt_tokens) break;
    keys.push_back(c.key);
  }
  if (keys.empty()) return;
  Result<std::vector<uint64_t>> sizes = service_->lookup(keys);
  if (!sizes.is_ok()) {
    // Served as a miss: the whole prompt is prefilled, and the record says why.
    r.rec.failure = "lookup: " + sizes.status().to_string();
    return;
  }
  for (size_t i = 0; i < keys.size() && (*sizes)[i] != 0; ++i) {
    r.manifest.push_back({keys[i], (*sizes)[i]});
    r.rec.cached_tokens = q.chunks[i].tokens.end;
    r.rec.cached_bytes += (*sizes)[i];
  }
}

void ServingEngine::on_retrieval_answer(uint64_t id, Result<RetrievalPath> path) {
  auto it = live_.find(id);
  if (it == live_.end() || it->second.stage != Stage::kRetrievalWait) return;
  if (!path.is_ok()) return fall_back(it->second, path.status());
  mark_ready(it->second,
             *path == RetrievalPath::kStaged ? RequestPath::kStaged : RequestPath::kOrdinary);
}

void ServingEngine::mark_ready(Live& r, RequestPath path) {
  r.rec.path = path;
  r.retrieve = path == RequestPath::kStaged || path == RequestPath::kOrdinary;
  if (options_.baseline && r.retrieve) r.rec.ready = executor_.now();
  r.stage = Stage::kReady;
  ready_.push_back(r.rec.id);
  kick();
}

void ServingEngine::fall_back(Live& r, const Status& why) {
  const bool had_claim = r.has_claim;
  r.rec.path = RequestPath::kRecompute;
  r.rec.failure = why.to_string();
  r.rec.prefill_tokens = r.req.prompt_tokens;
  r.retrieve = false;
  r.has_claim = false;
  // A claim that is still live lets go of what it holds (one already failed answers an error).
  if (had_claim && r.stage != Stage::kWaiting) {
    // In-process the controller cancels the claim and the adapter keeps the request (its later
    // calls stay valid); the service offers only the adapter's cancel.
    if (service_) (void)api_->cancel(r.rec.id);
    if (controller_ && !options_.baseline) (void)controller_->cancel(r.rec.id);
    if (options_.baseline) (void)provider_->cancel(r.rec.id);
  }
  // Waiting: admitted later without a claim. In an iteration: it continues without retrieval.
  if (r.stage == Stage::kRetrievalWait) mark_ready(r, RequestPath::kRecompute);
}

void ServingEngine::next_retrieval() {
  Iteration& it = *iter_;
  std::weak_ptr<int> alive = alive_;
  while (it.next_retrieval < it.admits.size()) {
    const uint64_t id = it.admits[it.next_retrieval++];
    Live& r = live_.at(id);
    if (!r.retrieve) continue;
    r.rec.retrieval_start = executor_.now();
    Status st = begin_transfer(id);
    if (!st.is_ok()) {
      fall_back(r, st);
      continue;
    }
    const Duration latency = from_seconds(profile_.retrieval_latency_s);
    if (latency > Duration::zero()) {
      executor_.after(latency, [this, alive, id] {
        if (!alive.expired()) start_copies(id);
      });
    } else {
      start_copies(id);
    }
    return;
  }
  start_compute();
}

void ServingEngine::start_copies(uint64_t id) {
  Live& r = live_.at(id);
  Iteration& it = *iter_;
  it.copy_status = Status::ok();
  if (!device_ || device_->size() < r.rec.cached_bytes) {
    device_.reset();
    auto buf = transfer_.allocate(r.rec.cached_bytes);
    if (!buf.is_ok()) {
      it.copy_status = buf.status();
      return copies_done(id);
    }
    device_ = std::move(buf).value();
  }
  std::vector<service::TierSpan> spans;
  if (service_) {
    Result<std::vector<service::TierSpan>> got = service_->objects(id);
    if (got.is_ok() && got->size() != r.manifest.size()) {
      got = Status::internal("retrieval: tempokvd gave " + std::to_string(got->size()) +
                             " spans for " + std::to_string(r.manifest.size()) + " objects");
    }
    if (!got.is_ok()) {
      it.copy_status = got.status();
      return copies_done(id);
    }
    spans = std::move(got).value();
  }
  const bool need_bytes = !executor_.simulated();
  it.pending_copies = static_cast<uint32_t>(r.manifest.size());
  std::weak_ptr<int> alive = alive_;
  uint64_t offset = 0;
  for (size_t i = 0; i < r.manifest.size(); ++i) {
    const ManifestEntry& e = r.manifest[i];
    const std::byte* src = nullptr;
    if (service_) {
      src = service_span(spans[i], e.bytes);
    } else {
      provider_->tier().use(e.key);
      src = provider_->tier().data(e.key);
    }
    auto done = [this, alive, id, key = e.key](Status st) {
      if (alive.expired()) return;
      Iteration& cur = *iter_;
      if (!st.is_ok() && cur.copy_status.is_ok()) cur.copy_status = st;
      if (st.is_ok() && api_ && options_.report_objects) (void)api_->object_transferred(id, key);
      if (--cur.pending_copies == 0) copies_done(id);
    };
    if (need_bytes && src == nullptr) {
      executor_.post([done, key = e.key] {
        done(Status::failed_precondition("retrieval: object " + key.to_string() +
                                         " is not resident in the fast tier"));
      });
    } else {
      transfer_.copy_to_device(src, *device_, offset, e.bytes, done);
    }
    offset += e.bytes;
  }
}

void ServingEngine::copies_done(uint64_t id) {
  Live& r = live_.at(id);
  Iteration& it = *iter_;
  r.rec.retrieval_end = executor_.now();
  // End the transfer (and the claim's protection) before checking the bytes: verification reads
  // the device buffer, not the tier, and is a test of the run, not part of the retrieval.
  Status st = end_transfer(id);
  if (it.copy_status.is_ok()) {
    stats_.retrieved_bytes += r.rec.cached_bytes;
    if (options_.verify_bytes) verify(r);
  }
  fill_claim_timeline(r);
  if (!it.copy_status.is_ok()) {
    fall_back(r, it.copy_status);
  } else if (!st.is_ok()) {
    fall_back(r, st);
  }
  next_retrieval();
}

void ServingEngine::verify(Live& r) {
  std::vector<std::byte> host;
  uint64_t offset = 0;
  for (const ManifestEntry& e : r.manifest) {
    const std::byte* p = nullptr;
    if (device_->kind() == DeviceKind::kEmulated) {
      p = device_->data() + offset;
    } else if (device_->kind() == DeviceKind::kCuda) {
      host.resize(e.bytes);
      if (transfer_.copy_to_host(*device_, offset, host.data(), e.bytes).is_ok()) p = host.data();
    }
    offset += e.bytes;
    if (p == nullptr) continue;  // simulated: no bytes
    bool good;
    std::optional<ObjectInfo> info;
    if (store_) info = store_->lookup(e.key);
    if (info) {
      Hash128 h = xxh3_128(p, e.bytes);
      good = h.low == info->checksum_lo && h.high == info->checksum_hi;
    } else {
      // Reclaimed from the store since, or no local store (service): compare with the content it
      // was written with.
      good = chunk_bytes_match(e.key, {p, e.bytes});
    }
    ++r.rec.verified_chunks;
    ++stats_.verified_chunks;
    if (!good) {
      ++r.rec.mismatched_chunks;
      ++stats_.mismatched_chunks;
    }
  }
}

Status ServingEngine::begin_transfer(uint64_t id) {
  if (api_) return api_->begin_transfer(id);
  return provider_->begin_transfer(id);
}

Status ServingEngine::end_transfer(uint64_t id) {
  if (api_) return api_->end_transfer(id);
  TEMPOKV_RETURN_IF_ERROR(provider_->end_transfer(id));
  return provider_->release(id);
}

const std::byte* ServingEngine::service_span(const service::TierSpan& span, uint64_t bytes) const {
  // A span outside the mapping (or of another size) is reported like an absent object.
  const std::byte* tier = service_->tier_data();
  if (tier == nullptr || span.bytes != bytes || span.offset > service_->tier_bytes() ||
      bytes > service_->tier_bytes() - span.offset) {
    return nullptr;
  }
  return tier + span.offset;
}

void ServingEngine::fill_claim_timeline(Live& r) {
  if (!controller_ || options_.baseline) return;
  Result<ClaimInfo> info = controller_->info(r.rec.id);
  if (!info.is_ok()) return;
  r.rec.committed = info->timeline.committed;
  r.rec.ready = info->timeline.ready;
  r.rec.retrieval_requested = info->timeline.retrieval_requested;
  r.rec.projected_use_at_commit = info->projected_use_at_commit;
  r.rec.ttr_at_commit = info->ttr_at_commit;
  r.rec.projected_use_before_request = info->projected_use_before_request;
}

}  // namespace tempokv
