// Internals shared by the protocol encoder and decoder: wire names of ops, answers, paths and
// status codes, and the byte sink msgpack packs into. Not part of the service's API.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <msgpack.hpp>
#include <optional>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "tempokv/protocol.h"

namespace tempokv::service::wire {

// The op table: Op's alternatives (protocol.h) and, indexed like them, their wire names. Code
// names an op by its type (kOp<Hello>), never by a number; the asserts below bind every name to
// its type, so reordering either side fails to compile.
inline constexpr std::array<std::string_view, 22> kOpNames = {
    "hello",        "heartbeat",          "add_request",
    "report_hit",   "update_order",       "iteration_started",
    "admitted",     "prefill_done",       "tokens_generated",
    "finished",     "request_retrieval",  "begin_transfer",
    "end_transfer", "object_transferred", "cancel",
    "bye",          "lookup",             "reserve_write",
    "put",          "abort_write",        "stats",
    "step"};
static_assert(kOpNames.size() == std::variant_size_v<Op>);

template <typename T, typename... Ts>
constexpr size_t op_index(const std::variant<Ts...>*) {
  constexpr bool same[] = {std::is_same_v<T, Ts>...};
  for (size_t i = 0; i < sizeof...(Ts); ++i)
    if (same[i]) return i;
  return sizeof...(Ts);
}
// The index of op type T among Op's alternatives (and in kOpNames).
template <typename T>
inline constexpr size_t kOp = op_index<T>(static_cast<const Op*>(nullptr));

static_assert(kOpNames[kOp<Hello>] == "hello");
static_assert(kOpNames[kOp<Heartbeat>] == "heartbeat");
static_assert(kOpNames[kOp<AddRequest>] == "add_request");
static_assert(kOpNames[kOp<ReportHit>] == "report_hit");
static_assert(kOpNames[kOp<UpdateOrder>] == "update_order");
static_assert(kOpNames[kOp<IterationStarted>] == "iteration_started");
static_assert(kOpNames[kOp<Admitted>] == "admitted");
static_assert(kOpNames[kOp<PrefillDone>] == "prefill_done");
static_assert(kOpNames[kOp<TokensGenerated>] == "tokens_generated");
static_assert(kOpNames[kOp<Finished>] == "finished");
static_assert(kOpNames[kOp<RequestRetrieval>] == "request_retrieval");
static_assert(kOpNames[kOp<BeginTransfer>] == "begin_transfer");
static_assert(kOpNames[kOp<EndTransfer>] == "end_transfer");
static_assert(kOpNames[kOp<ObjectTransferred>] == "object_transferred");
static_assert(kOpNames[kOp<Cancel>] == "cancel");
static_assert(kOpNames[kOp<Bye>] == "bye");
static_assert(kOpNames[kOp<Lookup>] == "lookup");
static_assert(kOpNames[kOp<ReserveWrite>] == "reserve_write");
static_assert(kOpNames[kOp<Put>] == "put");
static_assert(kOpNames[kOp<AbortWrite>] == "abort_write");
static_assert(kOpNames[kOp<GetStats>] == "stats");
static_assert(kOpNames[kOp<Step>] == "step");

std::string_view answer_name(RetrievalAnswer answer);
std::optional<RetrievalAnswer> parse_answer(std::string_view name);
std::string_view path_name(RetrievalPath path);
std::optional<RetrievalPath> parse_path(std::string_view name);
std::optional<StatusCode> parse_code(std::string_view name);

// Appends packed bytes to a vector (msgpack's packer needs only write()).
struct Sink {
  std::vector<std::byte> bytes;
  void write(const char* data, size_t size) {
    // resize + memcpy rather than insert: GCC 12 at -O3 reports a false stringop-overflow for
    // vector::insert of the packer's tiny constant-size writes.
    if (size == 0) return;
    const size_t old = bytes.size();
    bytes.resize(old + size);
    std::memcpy(bytes.data() + old, data, size);
  }
};
using Packer = msgpack::packer<Sink>;

inline void pack_str(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

// The step op's args (protocol_step.cc).
void pack_step_args(Packer& pk, const Step& m);

}  // namespace tempokv::service::wire
