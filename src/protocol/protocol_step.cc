// The codec of protocol v2's step op (docs/protocol.md, "step"): one message per scheduler
// iteration with the batch, the requests that finished and entered the queue, and the order.
#include "protocol/fields.h"
#include "protocol/wire.h"
#include "tempokv/protocol.h"

namespace tempokv::service {
namespace wire {

namespace {

void pack_u64s(Packer& pk, std::initializer_list<uint64_t> values) {
  pk.pack_array(static_cast<uint32_t>(values.size()));
  for (uint64_t v : values) pk.pack(v);
}

void pack_ids(Packer& pk, std::string_view name, const std::vector<uint64_t>& ids) {
  pack_str(pk, name);
  pk.pack_array(static_cast<uint32_t>(ids.size()));
  for (uint64_t id : ids) pk.pack(id);
}

constexpr const char* kPairShape = "[request_id, count]";

Result<uint32_t> narrow(uint64_t v, const std::string& what) {
  if (v > UINT32_MAX) return bad(what + " is " + std::to_string(v) + ", above 2^32-1");
  return static_cast<uint32_t>(v);
}

}  // namespace

void pack_step_args(Packer& pk, const Step& m) {
  pk.pack_map(6 + (m.base ? 5 : 2) + (m.measures ? 1 : 0));
  pack_str(pk, "seq");
  pk.pack(m.seq);
  pack_str(pk, "queued");
  pk.pack_array(static_cast<uint32_t>(m.queued.size()));
  for (const RequestInfo& r : m.queued) {
    pack_u64s(pk, {r.id, r.prompt_tokens, r.cached_tokens, r.cached_bytes, r.max_output_tokens});
  }
  pack_str(pk, "finished");
  pk.pack_array(static_cast<uint32_t>(m.finished.size()));
  for (const StepFinished& x : m.finished) pack_u64s(pk, {x.request_id, x.output_tokens});
  pack_str(pk, "prefills");
  pk.pack_array(static_cast<uint32_t>(m.prefills.size()));
  for (const StepPrefill& x : m.prefills) pack_u64s(pk, {x.request_id, x.tokens});
  if (m.base) {
    pack_str(pk, "base");
    pk.pack(*m.base);
    pack_ids(pk, "decoders_gone", m.decoders_gone);
    pack_ids(pk, "decoders_new", m.decoders_new);
    pack_str(pk, "waiting_taken");
    pk.pack(m.waiting_taken);
    pack_ids(pk, "waiting_new", m.waiting_new);
  } else {
    pack_ids(pk, "decoders", m.decoders);
    pack_ids(pk, "waiting", m.waiting);
  }
  pack_str(pk, "boundary_in_ns");
  pk.pack(m.boundary_in_ns);
  pack_ids(pk, "admitted", m.admitted);
  if (m.measures) {
    pack_str(pk, "measured");
    pk.pack_array(static_cast<uint32_t>(m.measured.size()));
    for (const StepMeasured& x : m.measured) {
      pack_u64s(pk, {x.seq, static_cast<uint64_t>(x.duration_ns)});
    }
  }
}

Result<Step> read_step_args(const object& args, const std::string& where) {
  TEMPOKV_ASSIGN_OR_RETURN(
      Fields f, Fields::read(args, where,
                             {"seq", "queued", "finished", "prefills", "decoders", "waiting",
                              "boundary_in_ns", "admitted", "measured", "base", "decoders_gone",
                              "decoders_new", "waiting_taken", "waiting_new"}));
  Step m;
  TEMPOKV_ASSIGN_OR_RETURN(m.seq, f.u64("seq"));
  constexpr const char* kQueuedShape =
      "[request_id, prompt_tokens, cached_tokens, cached_bytes, max_output_tokens]";
  TEMPOKV_RETURN_IF_ERROR(read_rows<5>(
      f, "queued", kMaxIdList, kQueuedShape, [&](const uint64_t* v, const std::string& w) {
        RequestInfo r;
        r.id = v[0];
        TEMPOKV_ASSIGN_OR_RETURN(r.prompt_tokens, narrow(v[1], w + "[1]"));
        TEMPOKV_ASSIGN_OR_RETURN(r.cached_tokens, narrow(v[2], w + "[2]"));
        r.cached_bytes = v[3];
        TEMPOKV_ASSIGN_OR_RETURN(r.max_output_tokens, narrow(v[4], w + "[4]"));
        m.queued.push_back(r);
        return Status::ok();
      }));
  TEMPOKV_RETURN_IF_ERROR(read_rows<2>(
      f, "finished", kMaxIdList, kPairShape, [&](const uint64_t* v, const std::string& w) {
        TEMPOKV_ASSIGN_OR_RETURN(uint32_t n, narrow(v[1], w + "[1]"));
        m.finished.push_back({v[0], n});
        return Status::ok();
      }));
  TEMPOKV_RETURN_IF_ERROR(read_rows<2>(
      f, "prefills", kMaxIdList, kPairShape, [&](const uint64_t* v, const std::string& w) {
        TEMPOKV_ASSIGN_OR_RETURN(uint32_t n, narrow(v[1], w + "[1]"));
        m.prefills.push_back({v[0], n});
        return Status::ok();
      }));
  if (f.get("base") == nullptr) {
    for (const char* edit : {"decoders_gone", "decoders_new", "waiting_taken", "waiting_new"}) {
      if (f.get(edit) != nullptr) return bad(f.what(edit) + " needs a base (the step it edits)");
    }
    TEMPOKV_ASSIGN_OR_RETURN(m.decoders, f.ids("decoders"));
    TEMPOKV_ASSIGN_OR_RETURN(m.waiting, f.ids("waiting"));
  } else {
    for (const char* full : {"decoders", "waiting"}) {
      if (f.get(full) != nullptr) {
        return bad(f.what(full) +
                   " comes with a base: a step gives its lists in full or as "
                   "edits of its base, not both");
      }
    }
    TEMPOKV_ASSIGN_OR_RETURN(m.base, f.u64("base"));
    TEMPOKV_ASSIGN_OR_RETURN(m.decoders_gone, f.ids("decoders_gone"));
    TEMPOKV_ASSIGN_OR_RETURN(m.decoders_new, f.ids("decoders_new"));
    TEMPOKV_ASSIGN_OR_RETURN(m.waiting_taken, f.u32("waiting_taken"));
    TEMPOKV_ASSIGN_OR_RETURN(m.waiting_new, f.ids("waiting_new"));
  }
  if (f.get("boundary_in_ns") != nullptr) {
    TEMPOKV_ASSIGN_OR_RETURN(uint64_t ns, f.u64("boundary_in_ns"));
    if (ns > static_cast<uint64_t>(INT64_MAX)) return bad(f.what("boundary_in_ns") + " overflows");
    m.boundary_in_ns = static_cast<int64_t>(ns);
  }
  if (f.get("admitted") != nullptr) {
    TEMPOKV_ASSIGN_OR_RETURN(m.admitted, f.ids("admitted"));
  }
  if (f.get("measured") != nullptr) {
    m.measures = true;
    TEMPOKV_RETURN_IF_ERROR(read_rows<2>(f, "measured", kMaxIdList, "[seq, duration_ns]",
                                         [&](const uint64_t* v, const std::string& w) {
                                           if (v[1] > static_cast<uint64_t>(INT64_MAX)) {
                                             return bad(w + "[1] overflows");
                                           }
                                           m.measured.push_back({v[0], static_cast<int64_t>(v[1])});
                                           return Status::ok();
                                         }));
  }
  return m;
}

}  // namespace wire
}  // namespace tempokv::service
