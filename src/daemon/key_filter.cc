#include "daemon/key_filter.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "daemon/shared_file.h"

namespace tempokv::service {
namespace {

constexpr char kMagic[8] = {'T', 'K', 'V', 'K', 'E', 'Y', 'S', '1'};
constexpr size_t kSeedsAt = 24, kInstanceAt = 40, kLiveAt = 48, kKeysAt = 56;

uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t draw_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

template <typename T>
void put(std::byte* base, size_t at, T value) {
  std::memcpy(base + at, &value, sizeof(T));
}

}  // namespace

uint64_t KeyFilter::slot(const Key& key, uint64_t seed, uint64_t slots) {
  return mix(mix(key.model ^ seed) ^ key.hash) & (slots - 1);
}

Result<std::unique_ptr<KeyFilter>> KeyFilter::create(const std::string& path, uint64_t slots,
                                                     uint64_t instance,
                                                     std::optional<uint32_t> group) {
  if (slots < 64 || (slots & (slots - 1)) != 0) {
    return Status::invalid_argument("key filter: slots must be a power of two of at least 64, "
                                    "got " + std::to_string(slots));
  }
  TEMPOKV_ASSIGN_OR_RETURN(const int fd, create_shared_file(path, group));
  const uint64_t bytes = kHeaderBytes + slots;
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  void* p = err == 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  const int map_err = errno;
  close(fd);
  if (err != 0 || p == MAP_FAILED) {
    unlink(path.c_str());
    return Status::from_errno(err != 0 ? err : map_err,
                              "make the key filter " + path + " (" + std::to_string(bytes) +
                                  " bytes; is its filesystem large enough?)");
  }
  std::unique_ptr<KeyFilter> f(new KeyFilter(path, slots, static_cast<std::byte*>(p)));
  f->seeds_[0] = draw_seed();
  f->seeds_[1] = draw_seed();
  std::memcpy(f->base_, kMagic, sizeof(kMagic));
  put<uint32_t>(f->base_, 8, kVersion);
  put<uint32_t>(f->base_, 12, static_cast<uint32_t>(kHeaderBytes));
  put<uint64_t>(f->base_, 16, slots);
  put<uint64_t>(f->base_, kSeedsAt, f->seeds_[0]);
  put<uint64_t>(f->base_, kSeedsAt + 8, f->seeds_[1]);
  put<uint64_t>(f->base_, kInstanceAt, instance);
  put<uint32_t>(f->base_, kLiveAt, 1);
  return f;
}

KeyFilter::KeyFilter(std::string path, uint64_t slots, std::byte* base)
    : path_(std::move(path)), slots_(slots), base_(base),
      counters_(reinterpret_cast<uint8_t*>(base + kHeaderBytes)) {}

KeyFilter::~KeyFilter() {
  put<uint32_t>(base_, kLiveAt, 0);  // a client still mapping it stops using it
  munmap(base_, kHeaderBytes + slots_);
  unlink(path_.c_str());
}

void KeyFilter::watch(Store& store) {
  for (const ObjectInfo& o : store.list()) add(o.key);
  store.set_index_listener([this](const Key& key, bool added) {
    if (added) {
      add(key);
    } else {
      remove(key);
    }
  });
}

void KeyFilter::change(const Key& key, int delta) {
  for (uint64_t seed : seeds_) {
    uint8_t& c = counters_[slot(key, seed, slots_)];
    if (c == kSaturated) continue;  // its true count is unknown now: never lowered again
    if (delta < 0 && c == 0) continue;  // not counted in (cannot happen: added first)
    c = static_cast<uint8_t>(c + delta);
  }
  uint64_t n = keys();
  put<uint64_t>(base_, kKeysAt, delta > 0 ? n + 1 : (n > 0 ? n - 1 : 0));
}

void KeyFilter::add(const Key& key) { change(key, +1); }
void KeyFilter::remove(const Key& key) { change(key, -1); }

bool KeyFilter::may_hold(const Key& key) const {
  return counters_[slot(key, seeds_[0], slots_)] != 0 &&
         counters_[slot(key, seeds_[1], slots_)] != 0;
}

uint64_t KeyFilter::keys() const {
  uint64_t n = 0;
  std::memcpy(&n, base_ + kKeysAt, sizeof(n));
  return n;
}

}  // namespace tempokv::service
