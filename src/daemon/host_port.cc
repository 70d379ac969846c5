#include "daemon/host_port.h"

#include <arpa/inet.h>

#include <charconv>

namespace tempokv::service {

Result<HostPort> parse_host_port(std::string_view text) {
  std::string_view host, port_text;
  if (text.starts_with('[')) {
    const size_t close = text.find("]:");
    if (close != std::string_view::npos) {
      host = text.substr(1, close - 1);
      port_text = text.substr(close + 2);
    }
  } else if (const size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  uint16_t port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (host.empty() || port_text.empty() || ec != std::errc() ||
      end != port_text.data() + port_text.size()) {
    // Appended piecewise: `"'" + std::string&&` trips GCC 12's -Wrestrict false positive at -O3.
    std::string message = "'";
    message += text;
    message += "' is not HOST:PORT ([V6]:PORT) with PORT in [0, 65535]";
    return Status::invalid_argument(message);
  }
  return HostPort{std::string(host), port};
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  const std::string h(host);
  return inet_pton(AF_INET, h.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

}  // namespace tempokv::service
