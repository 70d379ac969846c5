// Helpers shared by the SSD engines: the operation kinds, the words that name a request in an error
// message, the O_DIRECT argument check, and a once-per-process stderr notice. Stateless and
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "ssd/file_table.h"
#include "ssd/ssd_engine.h"

namespace tempokv {

enum class IoOp : uint8_t { kRead, kWrite, kSync };

std::string_view io_op_name(IoOp op);

// "uring read of file 3 at offset 4096, 65536 bytes" — the prefix of every per-request error.
std::string describe_io(std::string_view engine, IoOp op, FileId file, uint64_t offset, size_t len);

// InvalidArgument naming the offending value when a direct engine's offset, length or buffer
// address is not a multiple of kBlockBytes; OK otherwise (and always OK when !direct).
Status check_direct_alignment(std::string_view engine, IoOp op, FileId file, uint64_t offset,
                              const void* buf, size_t len, bool direct);

// The checks a real engine makes before it queues a request: the file is added and, for a read or
// write of a direct engine, the extent is aligned. On success *entry is the file's entry.
Status check_request(std::string_view engine, const FileTable& files, IoOp op, FileId file,
                     uint64_t offset, const void* buf, size_t len, bool direct,
                     FileTable::Entry* entry);

// Prints "tempokv: <message>" on stderr the first time it is called with this flag.
void notice_once(std::once_flag& flag, const std::string& message);

}  // namespace tempokv
