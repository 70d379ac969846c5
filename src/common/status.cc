#include "tempokv/status.h"

#include <cerrno>
#include <cstring>

namespace tempokv {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kIOError: return "IOError";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

Status Status::from_errno(int err, std::string_view what) {
  std::string msg = std::string(what) + ": " + std::strerror(err);
  switch (err) {
    case ENOSPC:
    case EDQUOT: return resource_exhausted(std::move(msg));
    case ENOENT: return not_found(std::move(msg));
    case EINVAL: return invalid_argument(std::move(msg));
    case ECANCELED: return cancelled(std::move(msg));
    default: return io_error(std::move(msg));
  }
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace tempokv
