// FastTier::plan_eviction: which evictable objects to evict so that one run of the arena is long
// enough for a new object, when the allocator found none. LRU alone would evict in use order until
// a run appears — possibly the whole cache, for nothing, when non-evictable objects split every
// run. The choice is the window of free and evictable space whose most recent victim is the least
// recent (fewest bytes, then lowest address, on a tie).
//
// How it is found without looking at the whole arena: walk the evictable objects in eviction order;
// the first object v for which free space and evictable objects no more recent than v form a run
// long enough is the most recent victim of the best window, and that window contains v (any
// window of older objects alone would have been found at an earlier step). So each step looks only
// at the pieces within `charge` bytes of v, through the address index by_offset_: a fill of a tier
// full of evictable objects costs a step or two, not a sort of the arena.
// plan_eviction_reference is the whole-arena walk (sorted by address on every call) it is tested
// against.
#include <algorithm>
#include <string>

#include "fasttier/fast_tier.h"

namespace tempokv {

namespace {

// A piece of the arena: an object holding memory, or a free gap between objects.
struct Piece {
  uint64_t begin = 0, end = 0;
  const Key* key = nullptr;  // nullptr: a free gap
  bool movable = true;       // free, or an evictable object
  uint64_t rank = 0;
};

// The best window among windows starting at pieces[first..last_start] (every piece movable):
// each extends right until it is `charge` long; it must reach pieces[must_reach] (SIZE_MAX: any).
// Least newest rank, then fewest object bytes, then lowest address.
std::optional<std::vector<Key>> best_window(const std::vector<Piece>& pieces, uint64_t charge,
                                            size_t must_reach) {
  struct Window {
    size_t first = 0, last = 0;
    uint64_t newest_rank = 0, bytes = 0;
  };
  std::optional<Window> best;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i].movable) continue;
    Window w{i, i, 0, 0};
    bool fits = false;
    for (size_t j = i; j < pieces.size() && pieces[j].movable; ++j) {
      if (pieces[j].key != nullptr) {
        w.newest_rank = std::max(w.newest_rank, pieces[j].rank);
        w.bytes += pieces[j].end - pieces[j].begin;
      }
      if (pieces[j].end - pieces[i].begin >= charge) {
        w.last = j;
        fits = true;
        break;
      }
    }
    if (!fits || (must_reach != SIZE_MAX && (i > must_reach || w.last < must_reach))) continue;
    if (!best || w.newest_rank < best->newest_rank ||
        (w.newest_rank == best->newest_rank && w.bytes < best->bytes)) {
      best = w;
    }
  }
  if (!best) return std::nullopt;
  std::vector<Key> victims;
  for (size_t j = best->first; j <= best->last; ++j) {
    if (pieces[j].key != nullptr) victims.push_back(*pieces[j].key);
  }
  return victims;
}

std::string keys_text(const std::optional<std::vector<Key>>& keys) {
  if (!keys) return "none";
  std::string out;
  for (const Key& k : *keys) {
    if (!out.empty()) out += ' ';
    out += k.to_string();
  }
  return out;
}

}  // namespace

std::optional<std::vector<Key>> FastTier::plan_eviction(uint64_t charge) const {
  // One slot: every object holds at least one whole slot and a free slot would have been found, so
  // the best window is the least recent evictable object alone.
  if (charge <= alloc_.slot_bytes()) {
    if (std::optional<Key> victim = eviction_->victim()) return std::vector<Key>{*victim};
    return std::nullopt;
  }
  std::optional<std::vector<Key>> victims;
  eviction_->for_each_in_order([&](const Key& v) {
    victims = window_around(v, charge);
    return !victims;
  });
  return victims;
}

std::optional<std::vector<Key>> FastTier::window_around(const Key& v, uint64_t charge) const {
  const FastObject& vo = objects_.at(v);
  const uint64_t v_rank = eviction_->rank(v);
  auto piece_of = [&](std::map<uint64_t, Key>::const_iterator it) {
    const FastObject& o = objects_.at(it->second);
    const bool can_go = evictable(o) && eviction_->rank(it->second) <= v_rank;
    return Piece{it->first, it->first + o.charge_bytes, &it->second, can_go,
                 can_go ? eviction_->rank(it->second) : 0};
  };
  const auto v_it = by_offset_.find(vo.offset);
  // Left of v: pieces until `charge` bytes before v's start (a window starting further left is long
  // enough before it reaches v), or the first piece that cannot move.
  std::vector<Piece> left;
  uint64_t pos = vo.offset;
  for (auto it = v_it; vo.offset - pos < charge;) {
    const uint64_t prev_end = it == by_offset_.begin()
                                  ? 0
                                  : std::prev(it)->first +
                                        objects_.at(std::prev(it)->second).charge_bytes;
    if (prev_end < pos) {
      left.push_back({prev_end, pos});
      pos = prev_end;
      continue;
    }
    if (it == by_offset_.begin()) break;
    --it;
    Piece p = piece_of(it);
    if (!p.movable) break;
    left.push_back(p);
    pos = p.begin;
  }
  std::vector<Piece> pieces(left.rbegin(), left.rend());
  const size_t v_index = pieces.size();
  pieces.push_back({vo.offset, vo.offset + vo.charge_bytes, &v_it->second, true, v_rank});
  // Right of v: until `charge` bytes past v's start (no window starting at or before v needs
  // more), the arena's end, or a piece that cannot move.
  pos = pieces.back().end;
  for (auto it = std::next(v_it); pos - vo.offset < charge;) {
    const uint64_t next_begin = it == by_offset_.end() ? alloc_.capacity_bytes() : it->first;
    if (pos < next_begin) {
      pieces.push_back({pos, next_begin});
      pos = next_begin;
      continue;
    }
    if (it == by_offset_.end()) break;
    Piece p = piece_of(it);
    if (!p.movable) break;
    pieces.push_back(p);
    pos = p.end;
    ++it;
  }
  return best_window(pieces, charge, v_index);
}

Status FastTier::check_eviction_plan(uint64_t charge) const {
  if (alloc_.largest_free_bytes() >= charge) return Status::ok();  // no plan: the fill fits
  std::optional<std::vector<Key>> fast = plan_eviction(charge);
  std::optional<std::vector<Key>> reference = plan_eviction_reference(charge);
  if (fast == reference) return Status::ok();
  return Status::internal("eviction plans differ for " + std::to_string(charge) +
                          " bytes: indexed " + keys_text(fast) + ", reference " +
                          keys_text(reference));
}

std::optional<std::vector<Key>> FastTier::plan_eviction_reference(uint64_t charge) const {
  // The arena in address order: objects holding memory, and the free gaps between them.
  std::vector<Piece> objects;
  for (const auto& [key, o] : objects_) {
    if (o.residency == Residency::kAbsent) continue;
    bool can_go = evictable(o);
    objects.push_back(
        {o.offset, o.offset + o.charge_bytes, &key, can_go, can_go ? eviction_->rank(key) : 0});
  }
  std::sort(objects.begin(), objects.end(),
            [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
  std::vector<Piece> pieces;
  uint64_t pos = 0;
  for (const Piece& p : objects) {
    if (p.begin > pos) pieces.push_back({pos, p.begin});
    pieces.push_back(p);
    pos = p.end;
  }
  if (pos < alloc_.capacity_bytes()) pieces.push_back({pos, alloc_.capacity_bytes()});
  return best_window(pieces, charge, SIZE_MAX);
}

}  // namespace tempokv
