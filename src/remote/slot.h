// Redis Cluster's key → slot map: CRC16-XMODEM of the key (or of its hash tag, the text inside
// the first "{...}" when that text is not empty) mod 16384. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace tempokv::remote {

inline constexpr uint32_t kSlots = 16384;

uint16_t crc16_xmodem(std::string_view bytes);
uint16_t key_slot(std::string_view key);

}  // namespace tempokv::remote
