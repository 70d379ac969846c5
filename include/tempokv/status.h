// Status and Result<T>: the one result type of every fallible call in TempoKV.
//
// A Status is a code plus a message naming what was wrong. Result<T> holds either a value or a
// non-OK Status. Both are cheap to move and never throw; no exception crosses a component
// boundary. Thread-safe as values (no shared state).
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tempokv {

enum class StatusCode {
  kOk = 0,
  kNotFound,
  kCorruption,
  kIOError,
  kInvalidArgument,
  kResourceExhausted,  // capacity, budget, or disk space (ENOSPC) ran out
  kUnavailable,        // an optional back end (CUDA, cuFile, io_uring) is not usable here
  kCancelled,
  kFailedPrecondition,  // the call is not legal in the object's current state
  kInternal,
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status io_error(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status invalid_argument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status resource_exhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status failed_precondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  // From an errno value of a failed system call: ENOSPC/EDQUOT map to ResourceExhausted,
  // ENOENT to NotFound, EINVAL to InvalidArgument, the rest to IOError.
  static Status from_errno(int err, std::string_view what);

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NotFound: key 0x... is not in the store"
  std::string to_string() const;

  bool operator==(const Status& o) const { return code_ == o.code_ && message_ == o.message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).is_ok() && "Result from an OK Status has no value");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tempokv

// Returns early from the enclosing function with the Status when it is not OK.
#define TEMPOKV_RETURN_IF_ERROR(expr)            \
  do {                                           \
    ::tempokv::Status _st = (expr);              \
    if (!_st.is_ok()) return _st;                \
  } while (0)

#define TEMPOKV_CONCAT_INNER(a, b) a##b
#define TEMPOKV_CONCAT(a, b) TEMPOKV_CONCAT_INNER(a, b)
// Declares `lhs` from a Result's value, or returns its Status from the enclosing function.
#define TEMPOKV_ASSIGN_OR_RETURN(lhs, expr) \
  TEMPOKV_ASSIGN_OR_RETURN_IMPL(TEMPOKV_CONCAT(_res_, __LINE__), lhs, expr)
#define TEMPOKV_ASSIGN_OR_RETURN_IMPL(res, lhs, expr) \
  auto res = (expr);                                  \
  if (!res.is_ok()) return res.status();              \
  lhs = std::move(res).value()
