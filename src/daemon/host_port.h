// "HOST:PORT" addresses as tempokvd's configuration writes them ("127.0.0.1:9464",
// "localhost:0", "[::1]:9464"), and the loopback test the endpoint rules use. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tempokv/status.h"

namespace tempokv::service {

struct HostPort {
  std::string host;  // without the brackets of an IPv6 literal
  uint16_t port = 0;
};

// Splits at the last ':' (or after "[v6]"); the host must be non-empty and the port a decimal in
// [0, 65535]. InvalidArgument naming the text otherwise.
Result<HostPort> parse_host_port(std::string_view text);
// localhost, ::1, or an IPv4 address in 127.0.0.0/8.
bool is_loopback_host(std::string_view host);

}  // namespace tempokv::service
