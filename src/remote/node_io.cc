#include "remote/node_io.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace tempokv::remote {
namespace {

Status wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Status::unavailable("timed out");
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()) + 1);
    if (r > 0) return Status::ok();
    if (r == 0) continue;
    if (errno != EINTR) return Status::from_errno(errno, "poll");
  }
}

}  // namespace

RedirectLine parse_redirect(std::string_view e) {
  RedirectLine r;
  if (e.starts_with("MOVED ")) {
    r.kind = RedirectLine::kMoved;
  } else if (e.starts_with("ASK ")) {
    r.kind = RedirectLine::kAsk;
  } else {
    return r;
  }
  const size_t sp = e.rfind(' ');
  r.address = std::string(e.substr(sp + 1));
  return r;
}

Status ReplyReader::recv_some(void* dst, size_t max, size_t* got, const char* closed) {
  for (;;) {
    const ssize_t n = ::recv(fd_, dst, max, MSG_DONTWAIT);
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return Status::ok();
    }
    if (n == 0) return Status::io_error(closed);
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Status s = wait_fd(fd_, POLLIN, deadline_); !s) return s;
    } else if (errno != EINTR) {
      return Status::from_errno(errno, "recv");
    }
  }
}

Status ReplyReader::read_line(std::string* line) {
  line->clear();
  for (;;) {
    for (size_t i = begin_; i < end_; ++i) {
      if (buf_[i] == '\n' && !line->empty() && line->back() == '\r') {
        line->pop_back();
        begin_ = i + 1;
        return Status::ok();
      }
      line->push_back(buf_[i]);
    }
    begin_ = end_ = 0;
    if (line->size() > 4096) return Status::io_error("reply line too long");
    // A small read: the first line of a reply is short, and what follows it is the value,
    // which read_exact puts straight where it belongs. poll() only when nothing is there yet.
    if (Status s = recv_some(buf_, 64, &end_, "connection closed"); !s) return s;
  }
}

Status ReplyReader::read_exact(void* dst, size_t bytes) {
  auto* out = static_cast<unsigned char*>(dst);
  const size_t take = std::min(bytes, end_ - begin_);
  std::memcpy(out, buf_ + begin_, take);
  begin_ += take;
  size_t got = take;
  while (got < bytes) {
    // A value that keeps trickling in is bounded too: the deadline is the whole call's.
    if (Clock::now() >= deadline_) return Status::unavailable("timed out");
    size_t n = 0;
    if (Status s = recv_some(out + got, bytes - got, &n, "connection closed mid-value"); !s) {
      return s;
    }
    got += n;
  }
  return Status::ok();
}

Status write_all(int fd, iovec* iov, int iovcnt, Clock::time_point deadline) {
  while (iovcnt > 0) {
    if (Status s = wait_fd(fd, POLLOUT, deadline); !s) return s;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(iovcnt);
    ssize_t n = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::from_errno(errno, "send");
    }
    while (iovcnt > 0 && static_cast<size_t>(n) >= iov->iov_len) {
      n -= static_cast<ssize_t>(iov->iov_len);
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + n;
      iov->iov_len -= static_cast<size_t>(n);
    }
  }
  return Status::ok();
}

std::string resp_prefix(const std::vector<std::string_view>& args, size_t last_bytes) {
  std::string out = fmt::format("*{}\r\n", args.size() + (last_bytes > 0 ? 1 : 0));
  for (std::string_view a : args) out += fmt::format("${}\r\n{}\r\n", a.size(), a);
  if (last_bytes > 0) out += fmt::format("${}\r\n", last_bytes);
  return out;
}

namespace {

CommandReply to_reply(const redisReply* r) {
  CommandReply out;
  switch (r->type) {
    case REDIS_REPLY_ERROR:
      out.error = true;
      [[fallthrough]];
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.text = std::to_string(r->integer);
      break;
    case REDIS_REPLY_ARRAY:
      for (size_t i = 0; i < r->elements; ++i) {
        if (i) out.text += '\n';
        out.text += to_reply(r->element[i]).text;
      }
      break;
    default:
      break;
  }
  return out;
}

}  // namespace

Result<CommandReply> run_command(redisContext* c, const std::vector<std::string_view>& argv) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (auto a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
  if (!r) return Status::unavailable(fmt::format("{}", c->err ? c->errstr : "no reply"));
  CommandReply out = to_reply(r);
  freeReplyObject(r);
  return out;
}

}  // namespace tempokv::remote
