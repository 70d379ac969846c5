// The transport's metrics (sessions, messages, connections, reply latency), added to the core's
// for /metrics and the stats op (ServiceCore::set_transport_metrics). Threading: the server's.
#pragma once

#include <vector>

#include "daemon/server.h"
#include "daemon/service_metrics.h"

namespace tempokv::service {

void add_transport_metrics(const Server& server, std::vector<Metric>& m);

}  // namespace tempokv::service
