#include "adapter/ttu_estimator.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "adapter/order_statistics.h"

namespace tempokv {
namespace {

// A request holding a slot whose retrieval and prefill are still to run.
struct Pending {
  uint64_t context_tokens;    // its prompt (or context so far)
  uint32_t remaining_tokens;  // predicted tokens still to generate, its first included
  uint32_t prefill_tokens;    // still to compute, > 0
  uint64_t retrieval_bytes;   // moved by its retrieval, in the iteration of its first chunk
  Duration ready_at;          // its prefill cannot run in an iteration that starts before this
};

// With async loads: a request whose KV is loading, holding no slot (in the runtime's order).
struct Loading {
  uint64_t context_tokens;
  uint32_t remaining_tokens;
  uint32_t prefill_tokens;
  Duration loaded_at;  // its KV is on the device: it may take a free slot at a boundary from here
};

// The decoding slots as aggregates. `tick` counts decode steps so far (a prefill iteration is one
// for the decoders in it); a slot joining at tick j with context c and r tokens to go completes at
// tick j + r, and its context at tick k is c + (k − j). So the batch's summed context is
// Σ(c − j) + batch·tick, and completions come off a heap of completion ticks.
// Preemption (TtuEstimator::set_preemption_line): each decoder is preempted and recomputes its
// context once per episode of KV pressure, the youngest first, one per step; an entry remembers
// the episode it was preempted in.
class Decoders {
 public:
  // preempted: already in the current episode of pressure. Joins in admission order.
  void join(uint64_t context, uint32_t remaining, bool preempted = false) {
    const int64_t base = static_cast<int64_t>(context) - tick_;
    base_ += base;
    done_.push_back({tick_ + remaining, base, preempted ? episode_ : -1, joined_++});
    std::push_heap(done_.begin(), done_.end(), LaterCompletion{});
    if (!preempted) ++unpreempted_;
  }
  uint64_t batch() const { return done_.size(); }
  uint64_t context() const {
    return static_cast<uint64_t>(base_ + static_cast<int64_t>(batch()) * tick_);
  }
  uint64_t unpreempted() const { return unpreempted_; }
  // Steps until the first completion (at least one).
  uint32_t steps_to_first_completion() const {
    return static_cast<uint32_t>(std::max<int64_t>(1, done_.front().done - tick_));
  }
  // Every decoder advances `steps` tokens; those that reach their predicted length leave.
  void advance(uint32_t steps) {
    tick_ += steps;
    while (!done_.empty() && done_.front().done <= tick_) {
      base_ -= done_.front().base;
      if (done_.front().preempted_in != episode_) --unpreempted_;
      std::pop_heap(done_.begin(), done_.end(), LaterCompletion{});
      done_.pop_back();
    }
  }
  // A step starts with the batch's summed context above `line` (> 0): the youngest decoder not
  // yet preempted in this episode recomputes its context. At or below the line the episode ends.
  // Returns the recompute's cost; O(batch) only when one is preempted.
  Duration preempt(uint64_t line, const CostProfile& profile) {
    if (context() <= line) {
      if (unpreempted_ != batch()) {
        ++episode_;
        unpreempted_ = batch();
      }
      return Duration::zero();
    }
    if (unpreempted_ == 0) return Duration::zero();
    Entry* youngest = nullptr;
    for (Entry& e : done_) {
      if (e.preempted_in != episode_ && (!youngest || e.joined > youngest->joined)) youngest = &e;
    }
    youngest->preempted_in = episode_;
    --unpreempted_;
    return profile.prefill(static_cast<uint64_t>(youngest->base + tick_), 0);
  }

 private:
  struct Entry {
    int64_t done;          // completion tick
    int64_t base;          // context − joining tick
    int64_t preempted_in;  // the episode it was preempted in (−1: none)
    int64_t joined;        // join order
  };
  // A heap ordered by completion tick only: entries of one tick leave together, in any order.
  struct LaterCompletion {
    bool operator()(const Entry& a, const Entry& b) const { return a.done > b.done; }
  };
  std::vector<Entry> done_;
  int64_t tick_ = 0;
  int64_t base_ = 0;  // Σ(context − joining tick) of the decoders
  int64_t episode_ = 0;
  int64_t joined_ = 0;
  uint64_t unpreempted_ = 0;  // decoders not preempted in the current episode
};

// A request decoding at the snapshot and the tokens it is projected to generate still.
struct Decoding {
  const RunningRequest* request;
  uint32_t remaining;
};

// AdapterOptions::wait_order_statistics: the decoders complete at the expected order statistics
// of their remaining outputs (TtuEstimator's constructor).
void complete_in_order(const OutputPredictor& predictor, std::vector<Decoding>& decoding) {
  std::vector<TaggedAtom> atoms;
  std::vector<OutputPredictor::Atom> one;
  for (size_t i = 0; i < decoding.size(); ++i) {
    one.clear();
    const RunningRequest& r = *decoding[i].request;
    predictor.conditional_atoms(r.generated_tokens, r.max_output_tokens,
                                TtuEstimator::kOrderAtoms, one);
    for (const OutputPredictor::Atom& a : one) {
      atoms.push_back({a.tokens, a.weight, static_cast<uint32_t>(i)});
    }
  }
  const auto n = static_cast<uint32_t>(decoding.size());
  const std::vector<double> expected = expected_order_statistics(atoms, n, n);
  // The j-th smallest mean takes the j-th statistic (ties in snapshot order), bounded by its
  // request's generation limit.
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return decoding[a].remaining < decoding[b].remaining;
  });
  for (uint32_t j = 0; j < n; ++j) {
    Decoding& d = decoding[order[j]];
    const uint32_t cap = d.request->max_output_tokens - d.request->generated_tokens;
    const auto tokens = static_cast<uint32_t>(std::max(1.0, std::round(expected[j])));
    d.remaining = std::min(tokens, cap);
  }
}

// Used when the queue can never move (a slot limit of zero).
constexpr Duration kNever = std::chrono::hours(24 * 365);

}  // namespace

std::vector<Duration> TtuEstimator::estimate(const RuntimeSnapshot& snap, Duration horizon,
                                             std::vector<uint64_t>* admission_context,
                                             size_t exact_through) const {
  const size_t n_waiting = snap.waiting.size();
  std::vector<Duration> ttu(n_waiting, kNever);
  if (admission_context) admission_context->assign(n_waiting, 0);
  if (n_waiting == 0 || snap.max_active == 0) return ttu;

  const bool async = snap.async_loads;
  Decoders decoders;
  std::vector<Pending> pending;  // admitted, prefill not run yet (in admission order)
  uint64_t pending_context = 0;
  std::vector<Loading> loading;  // async loads: KV loading, no slot held (in order)
  uint64_t loading_context = 0;
  std::vector<Decoding> decoding;  // the requests decoding at the snapshot
  for (const RunningRequest& r : snap.running) {
    uint32_t rem = remaining(r.generated_tokens, r.max_output_tokens);
    if (async && r.loading) {
      loading.push_back({r.context_tokens, std::max<uint32_t>(rem, 1),
                         std::max<uint32_t>(r.prefill_tokens_left, 1),
                         Duration(int64_t(r.ready_in_ns))});
      loading_context += r.context_tokens;
      continue;
    }
    if (r.prefill_tokens_left == 0) {
      // rem == 0: finishing at this boundary.
      if (rem > 0) decoding.push_back({&r, rem});
      continue;
    }
    // An async load's copy is not the iteration's.
    pending.push_back({r.context_tokens, std::max<uint32_t>(rem, 1), r.prefill_tokens_left,
                       async ? 0 : r.cached_bytes, Duration(int64_t(r.ready_in_ns))});
    pending_context += r.context_tokens;
  }
  if (order_statistics_ && decoding.size() >= 2 && decoding.size() <= kMaxOrderSlots) {
    complete_in_order(predictor_, decoding);
  }
  for (const Decoding& d : decoding) {
    decoders.join(d.request->context_tokens, d.remaining, d.request->preempted);
  }
  // The runtime's KV-capacity admission rule (as the engine's): the slots' contexts and the prompt
  // fit, or nothing holds a slot (a loading request holds its KV blocks too).
  auto kv_fits = [&](uint32_t prompt_tokens) {
    const uint64_t held = decoders.batch() + pending.size() + loading.size();
    if (snap.kv_capacity_tokens == 0 || held == 0) return true;
    return decoders.context() + pending_context + loading_context + prompt_tokens <=
           snap.kv_capacity_tokens;
  };

  Duration t{static_cast<int64_t>(snap.boundary_in_ns)};
  size_t next = 0;
  while (next < n_waiting) {
    if (t > horizon && next >= exact_through) {
      std::fill(ttu.begin() + static_cast<std::ptrdiff_t>(next), ttu.end(), t);
      break;
    }
    if (async) {
      // vLLM's schedule(): the running requests' tokens come out of the budget first; requests
      // whose KV has arrived take the free slots (in order, skipping those still loading), then
      // the waiting order is walked while a slot is free and tokens are left.
      uint64_t budget = UINT64_MAX;
      if (snap.token_budget != 0) {
        uint64_t used = decoders.batch();
        for (const Pending& p : pending) used += p.prefill_tokens;
        budget = snap.token_budget > used ? snap.token_budget - used : 0;
      }
      auto slot_free = [&] {
        return decoders.batch() + pending.size() < snap.max_active && budget > 0;
      };
      for (size_t i = 0; i < loading.size() && slot_free();) {
        const Loading l = loading[i];
        if (l.loaded_at > t) {
          ++i;
          continue;
        }
        pending.push_back({l.context_tokens, l.remaining_tokens, l.prefill_tokens, 0, Duration{0}});
        pending_context += l.context_tokens;
        loading_context -= l.context_tokens;
        budget -= std::min<uint64_t>(l.prefill_tokens, budget);
        loading.erase(loading.begin() + static_cast<std::ptrdiff_t>(i));
      }
      while (slot_free() && next < n_waiting && kv_fits(snap.waiting[next].prompt_tokens)) {
        const WaitingRequest& w = snap.waiting[next];
        ttu[next] = t;  // its load starts (a hit), or it is admitted (none)
        const uint32_t prefill = std::max<uint32_t>(1, w.prompt_tokens - w.cached_tokens);
        const uint32_t rem = remaining(0, w.max_output_tokens);
        if (w.cached_tokens > 0) {
          const Duration ready = std::max(t, Duration(int64_t(w.ready_in_ns)));
          loading.push_back({w.prompt_tokens, rem, prefill, ready + Duration(int64_t(w.load_ns))});
          loading_context += w.prompt_tokens;
        } else {
          pending.push_back({w.prompt_tokens, rem, prefill, 0, Duration{0}});
          pending_context += w.prompt_tokens;
          budget -= std::min<uint64_t>(prefill, budget);
        }
        ++next;
      }
    }
    // Admissions at this boundary: the runtime asks for each one's KV now (its TTU).
    while (!async && decoders.batch() + pending.size() < snap.max_active && next < n_waiting &&
           kv_fits(snap.waiting[next].prompt_tokens)) {
      const WaitingRequest& w = snap.waiting[next];
      ttu[next] = t;
      pending.push_back({w.prompt_tokens, remaining(0, w.max_output_tokens),
                         std::max<uint32_t>(1, w.prompt_tokens - w.cached_tokens), w.cached_bytes,
                         Duration(int64_t(w.ready_in_ns))});
      pending_context += w.prompt_tokens;
      if (admission_context) (*admission_context)[next] = decoders.context() + pending_context;
      ++next;
    }
    if (next >= n_waiting) break;
    // The iteration starting at t: retrievals (one after another) and prefills of the admitted
    // requests whose KV is ready, and one decode step of the requests already decoding.
    // With a token budget (chunked prefill) the decoders' tokens come first and the prefills of
    // ready requests share the rest in admission order, a chunk each; a request decodes once its
    // last chunk has run. Without one every ready prefill runs whole.
    Duration iteration{0};
    Duration blocked_until = Duration::max();  // earliest KV of a request that cannot run yet
    if (decoders.batch() + pending.size() < snap.max_active) {
      // A slot is free: a load that ends during the iteration takes it at the next boundary.
      for (const Loading& l : loading) {
        if (l.loaded_at > t) blocked_until = std::min(blocked_until, l.loaded_at);
      }
    }
    bool prefills = false;
    uint64_t budget = snap.token_budget == 0 ? UINT64_MAX
                      : snap.token_budget > decoders.batch() ? snap.token_budget - decoders.batch()
                                                             : 1;  // never starve: one token
    for (Pending& p : pending) {
      if (p.ready_at > t) {
        blocked_until = std::min(blocked_until, p.ready_at);
        continue;
      }
      if (budget == 0) continue;
      prefills = true;
      const uint32_t chunk = static_cast<uint32_t>(std::min<uint64_t>(p.prefill_tokens, budget));
      budget -= chunk;
      iteration += profile_.retrieval(p.retrieval_bytes) +
                   profile_.prefill(chunk, p.context_tokens - p.prefill_tokens);
      p.retrieval_bytes = 0;
      p.prefill_tokens -= chunk;
    }
    if (prefills) {
      if (decoders.batch() > 0) {
        iteration += profile_.decode_step(decoders.context(), decoders.batch());
        if (preemption_line_ > 0) iteration += decoders.preempt(preemption_line_, profile_);
      }
      decoders.advance(1);
      // A prefill's last chunk yields the first token, like a decode step: the request decodes
      // from here on.
      std::erase_if(pending, [&](const Pending& p) {
        if (p.ready_at > t || p.prefill_tokens > 0) return false;
        pending_context -= p.context_tokens;
        if (p.remaining_tokens > 1) decoders.join(p.context_tokens + 1, p.remaining_tokens - 1);
        return true;
      });
      t += iteration;
    } else if (decoders.batch() > 0) {
      // Decode steps of a fixed batch until the first predicted completion, or until a waiting
      // request's KV is ready (it joins the iteration after).
      if (preemption_line_ > 0) t += decoders.preempt(preemption_line_, profile_);
      uint32_t steps = decoders.steps_to_first_completion();
      const uint64_t context = decoders.context(), batch = decoders.batch();
      if (preemption_line_ > 0 && context <= preemption_line_) {
        // The run stops before the first step above the line (an episode starts there).
        const uint64_t below = (preemption_line_ - context) / batch + 1;
        steps = static_cast<uint32_t>(std::min<uint64_t>(steps, below));
      } else if (preemption_line_ > 0 && decoders.unpreempted() > 0) {
        steps = 1;  // one preemption per step while some decoder is not preempted yet
      }
      if (blocked_until != Duration::max()) {
        uint32_t lo = 1, hi = steps;  // fewest steps that reach blocked_until
        while (lo < hi) {
          uint32_t mid = lo + (hi - lo) / 2;
          if (t + profile_.decode_steps(mid, context, batch) >= blocked_until) {
            hi = mid;
          } else {
            lo = mid + 1;
          }
        }
        steps = lo;
      }
      t += profile_.decode_steps(steps, context, batch);
      decoders.advance(steps);
    } else if (blocked_until != Duration::max()) {
      t = blocked_until;  // idle until a request's KV is ready
    } else {
      break;  // nothing running: cannot happen with the slots full
    }
  }
  return ttu;
}

}  // namespace tempokv
