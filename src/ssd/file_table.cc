#include "ssd/file_table.h"

#include <string>

namespace tempokv {

Result<FileId> FileTable::add(int fd) {
  if (fd < 0) {
    return Status::invalid_argument("add_file: file descriptor " + std::to_string(fd) +
                                    " is not open (only the simulated engine takes -1)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].fd < 0) {
      entries_[i] = Entry{fd, false};
      return static_cast<FileId>(i);
    }
  }
  entries_.push_back(Entry{fd, false});
  return static_cast<FileId>(entries_.size() - 1);
}

void FileTable::remove(FileId file) {
  std::lock_guard<std::mutex> lock(mu_);
  if (file < entries_.size()) entries_[file] = Entry{};
}

void FileTable::set_registered(FileId file, bool registered) {
  std::lock_guard<std::mutex> lock(mu_);
  if (file < entries_.size()) entries_[file].registered = registered;
}

FileTable::Entry FileTable::get(FileId file) const {
  std::lock_guard<std::mutex> lock(mu_);
  return file < entries_.size() ? entries_[file] : Entry{};
}

}  // namespace tempokv
