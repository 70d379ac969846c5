// A program outside TempoKV's tree that uses only the installed client: it connects to an
// endpoint where no daemon runs and must get a clear Unavailable naming that endpoint.
// Exit 0 when it does, 1 otherwise.
#include <chrono>
#include <cstdio>
#include <string>

#include "tempokv/client.h"

int main(int argc, char** argv) {
  tempokv::ClientOptions options;
  options.endpoint = argc > 1 ? argv[1] : "ipc:///nonexistent/tempokv-consumer/tempokvd.sock";
  options.name = "consumer";
  options.call_timeout = std::chrono::milliseconds(200);
  auto client = tempokv::ServiceClient::connect(options);
  if (client.is_ok()) {
    std::fprintf(stderr, "consumer: connected to %s, expected no daemon there\n",
                 options.endpoint.c_str());
    return 1;
  }
  const tempokv::Status& error = client.status();
  std::printf("consumer: %s\n", error.to_string().c_str());
  if (error.code() != tempokv::StatusCode::kUnavailable ||
      error.message().find(options.endpoint) == std::string::npos) {
    std::fprintf(stderr, "consumer: expected Unavailable naming %s\n", options.endpoint.c_str());
    return 1;
  }
  return 0;
}
