#include "store/segment.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "common/aligned_buffer.h"
#include "store/format.h"

namespace tempokv::store {

Result<int> open_segment_file(const std::string& path, bool direct, bool read_only) {
  int flags = (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | (direct ? O_DIRECT : 0);
  int fd = open(path.c_str(), flags);
  if (fd < 0) return Status::from_errno(errno, "open " + path + (direct ? " with O_DIRECT" : ""));
  return fd;
}

Result<int> create_segment_file(FileOps& files, const std::string& dir, uint32_t id,
                                uint64_t bytes, uint64_t capacity_bytes, bool direct,
                                std::string_view suffix) {
  std::string path = dir + "/" + segment_file_name(id) + std::string(suffix);
  TEMPOKV_ASSIGN_OR_RETURN(int fd, files.create(path, direct));
  auto fail = [&](Status st) -> Status {
    close(fd);
    (void)files.unlink(path);
    return st;
  };
  if (Status st = files.allocate(fd, path, bytes); !st.is_ok()) return fail(st);
  AlignedBytes block = allocate_blocks(kHeaderBytes);
  if (!block) return fail(Status::from_errno(ENOMEM, "allocate header block for " + path));
  encode_segment_header({id, bytes, capacity_bytes},
                        std::span<std::byte, kHeaderBytes>(block.get(), kHeaderBytes));
  if (Status st = files.write_at(fd, path, block.get(), kHeaderBytes, 0); !st.is_ok()) {
    return fail(st);
  }
  if (Status st = files.sync_data(fd, path); !st.is_ok()) return fail(st);
  if (Status st = files.sync_dir(dir); !st.is_ok()) return fail(st);
  return fd;
}

}  // namespace tempokv::store
