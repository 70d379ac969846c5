#include "ssd/io_args.h"

#include <cstdio>

#include "common/units.h"

namespace tempokv {

std::string_view io_op_name(IoOp op) {
  switch (op) {
    case IoOp::kRead:
      return "read";
    case IoOp::kWrite:
      return "write";
    case IoOp::kSync:
      return "sync";
  }
  return "io";
}

std::string describe_io(std::string_view engine, IoOp op, FileId file, uint64_t offset,
                        size_t len) {
  std::string s =
      std::string(engine) + " " + std::string(io_op_name(op)) + " of file " + std::to_string(file);
  if (op != IoOp::kSync) {
    s += " at offset " + std::to_string(offset) + ", " + std::to_string(len) + " bytes";
  }
  return s;
}

Status check_direct_alignment(std::string_view engine, IoOp op, FileId file, uint64_t offset,
                              const void* buf, size_t len, bool direct) {
  if (!direct) return Status::ok();
  const char* what = nullptr;
  std::string value;
  if (!is_aligned(offset, kBlockBytes)) {
    what = "offset";
    value = std::to_string(offset);
  } else if (!is_aligned(len, kBlockBytes)) {
    what = "length";
    value = std::to_string(len);
  } else if (!is_aligned(buf, kBlockBytes)) {
    what = "buffer address";
    char hex[32];
    std::snprintf(hex, sizeof hex, "%p", buf);
    value = hex;
  } else {
    return Status::ok();
  }
  return Status::invalid_argument(describe_io(engine, op, file, offset, len) + ": " + what + " " +
                                  value + " is not a multiple of " + std::to_string(kBlockBytes) +
                                  " (O_DIRECT alignment)");
}

void notice_once(std::once_flag& flag, const std::string& message) {
  std::call_once(flag, [&] { std::fprintf(stderr, "tempokv: %s\n", message.c_str()); });
}

Status check_request(std::string_view engine, const FileTable& files, IoOp op, FileId file,
                     uint64_t offset, const void* buf, size_t len, bool direct,
                     FileTable::Entry* entry) {
  *entry = files.get(file);
  if (entry->fd < 0) {
    return Status::invalid_argument(describe_io(engine, op, file, offset, len) + ": file id " +
                                    std::to_string(file) + " is not added");
  }
  if (op == IoOp::kSync) return Status::ok();
  return check_direct_alignment(engine, op, file, offset, buf, len, direct);
}

}  // namespace tempokv
