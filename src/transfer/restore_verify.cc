#include "transfer/restore_verify.h"

#include "common/aligned_buffer.h"
#include "common/checksum.h"

namespace tempokv {

Status verify_restored(const RestoreSession& session, const DeviceBuffer& dst,
                       TransferEngine& transfer) {
  if (dst.kind() == DeviceKind::kSimulated) {
    return Status::failed_precondition("a simulated device buffer holds no bytes to verify");
  }
  TEMPOKV_RETURN_IF_ERROR(check_device_range(dst, 0, session.device_bytes()));
  AlignedBuffer scratch;
  if (dst.kind() != DeviceKind::kEmulated) {
    TEMPOKV_ASSIGN_OR_RETURN(scratch, AlignedBuffer::allocate(session.max_read_bytes()));
  }
  const auto& extents = session.extents();
  for (size_t i = 0; i < extents.size(); ++i) {
    const RestoreExtent& e = extents[i];
    const std::byte* bytes = dst.data() + e.device_offset;
    if (!scratch.empty()) {
      TEMPOKV_RETURN_IF_ERROR(
          transfer.copy_to_host(dst, e.device_offset, scratch.data(), e.payload_bytes));
      bytes = scratch.data();
    }
    Hash128 h = xxh3_128(bytes, e.payload_bytes);
    if (h.low != e.checksum_lo || h.high != e.checksum_hi) {
      return Status::corruption("chunk " + std::to_string(i) + " (key " + e.key.to_string() +
                                ") differs from its stored checksum after the restore");
    }
  }
  return Status::ok();
}

}  // namespace tempokv
