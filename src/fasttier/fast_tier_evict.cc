// FastTier::plan_eviction: which evictable objects to evict so that one run of the arena is long
// enough for a new object, when the allocator found none. LRU alone would evict in use order until
// a run appears — possibly the whole cache, for nothing, when non-evictable objects split every
// run. Here the arena is walked once in address order instead.
#include <algorithm>

#include "fasttier/fast_tier.h"

namespace tempokv {

std::optional<std::vector<Key>> FastTier::plan_eviction(uint64_t charge) const {
  // One slot: every object holds at least one whole slot and a free slot would have been found, so
  // the best window is the least recent evictable object alone (the walk below picks it too). O(1)
  // instead of sorting the whole arena for every fill of a full tier.
  if (charge <= alloc_.slot_bytes()) {
    if (std::optional<Key> victim = eviction_->victim()) return std::vector<Key>{*victim};
    return std::nullopt;
  }
  // The arena in address order: objects holding memory, and the free gaps between them.
  struct Piece {
    uint64_t begin = 0, end = 0;
    const Key* key = nullptr;  // nullptr: a free gap
    bool movable = true;       // free, or an evictable object
    uint64_t rank = 0;
  };
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

  // Windows start where a piece starts (sliding one left to that start never adds a victim).
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
    if (!fits) continue;
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

}  // namespace tempokv
