// Randomized mutations of valid messages: decode never crashes, and every refusal is a typed
// InvalidArgument. Fixed seed; ASan builds (scripts/test asan) check the memory side.
#include <gtest/gtest.h>

#include <random>

#include "tempokv/protocol.h"

namespace tempokv::service {
namespace {

std::vector<std::vector<std::byte>> seeds() {
  RequestInfo info{.id = 7,
                   .prompt_tokens = 4096,
                   .cached_tokens = 2048,
                   .cached_bytes = 1 << 20,
                   .max_output_tokens = 256};
  std::vector<Op> ops = {Hello{{1}, "c"},
                         Heartbeat{},
                         AddRequest{info},
                         ReportHit{7, {{Key{1, 2}, 3}, {Key{4, 5}, 6}}},
                         UpdateOrder{{7, 8}, 5},
                         IterationStarted{{7}, {8}},
                         Admitted{7},
                         TokensGenerated{7, 3},
                         ObjectTransferred{7, Key{1, 2}},
                         Cancel{7},
                         Step{.seq = 4, .decoders = {7}, .waiting = {8, 9}},
                         Step{.seq = 5,
                              .base = 4,
                              .decoders_gone = {7},
                              .decoders_new = {8},
                              .waiting_new = {10},
                              .waiting_taken = 1}};
  std::vector<std::vector<std::byte>> out;
  for (Op& op : ops) out.push_back(encode_request(Request{kProtocolVersion, 1, std::move(op)}));
  out.push_back(encode_error(3, Status::not_found("x")));
  out.push_back(encode_ready(3, RetrievalPath::kStaged));
  out.push_back(encode_hello_reply(3, {}));
  return out;
}

TEST(ProtocolMutationTest, FlippedTruncatedAndSplicedMessagesNeverCrashTheDecoder) {
  std::mt19937_64 rng(20261130);
  const auto valid = seeds();
  int accepted = 0;
  int refused = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<std::byte> m = valid[rng() % valid.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !m.empty(); ++e) {
      switch (rng() % 4) {
        case 0:
          m[rng() % m.size()] ^= std::byte{static_cast<uint8_t>(1u << (rng() % 8))};
          break;
        case 1:
          m[rng() % m.size()] = std::byte{static_cast<uint8_t>(rng())};
          break;
        case 2:
          m.resize(rng() % m.size());
          break;
        case 3: {
          const auto& other = valid[rng() % valid.size()];
          m.insert(m.begin() + static_cast<std::ptrdiff_t>(rng() % (m.size() + 1)), other.begin(),
                   other.begin() + static_cast<std::ptrdiff_t>(rng() % (other.size() + 1)));
          break;
        }
      }
    }
    Result<Request> r = decode_request(m);
    if (r.is_ok()) {
      ++accepted;
      EXPECT_TRUE(decode_request(encode_request(*r)).is_ok());
    } else {
      ++refused;
      ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
      ASSERT_FALSE(r.status().message().empty());
    }
    Result<ServerMessage> s = decode_server_message(m);
    if (!s.is_ok()) {
      ASSERT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);  // some mutations (a changed id or count) stay valid
}

}  // namespace
}  // namespace tempokv::service
