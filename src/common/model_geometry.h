// ModelGeometry: the KV cache shape of the models TempoKV is measured with, so that byte sizes of
// sessions and chunks come from one table (DESIGN.md §2 Workloads: bytes per token = layers x
// kv_heads x head_dim x 2 (K and V) x dtype bytes).
//
// | model                      | layers | kv heads | head dim | dtype | bytes/token | 100K tokens |
// | llama-3.1-8b               |     32 |        8 |      128 | bf16  | 128 KiB     | 13.1 GB     |
// | llama-3.1-70b              |     80 |        8 |      128 | bf16  | 320 KiB     | 32.8 GB     |
// | qwen2.5-14b                |     48 |        8 |      128 | bf16  | 192 KiB     | 19.7 GB     |
// | qwen3-coder-30b-a3b        |     48 |        4 |      128 | bf16  |  96 KiB     |  9.83 GB    |
// | qwen3-coder-30b-a3b-fp8kv  |     48 |        4 |      128 | fp8   |  48 KiB     |  4.92 GB    |
//
// Seed 000 served Qwen3-Coder-30B-A3B-Instruct-FP8 (FP8 weights; vLLM keeps the KV cache in bf16
// unless told otherwise) and reports "roughly 9 GB of KV per session" for ~98-100K tokens: bf16
// KV gives 9.6-9.8 GB (9.0-9.2 GiB), and its own rate x time products (1.97 GB/s x 4.95 s =
// 9.8 GB, 4.74 GB/s x 1.73 s = 8.2 GB) bracket that; fp8 KV (4.9 GB) does not fit. So the
// seed's model is the bf16 row.
//
// Thread safety: immutable data; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tempokv/status.h"

namespace tempokv {

struct ModelGeometry {
  std::string_view name;
  uint32_t layers = 0;
  uint32_t kv_heads = 0;   // key/value heads (GQA), all tensor-parallel ranks together
  uint32_t head_dim = 0;
  uint32_t dtype_bytes = 0;  // bytes per KV element (2 for bf16/fp16, 1 for fp8)

  uint64_t bytes_per_token() const {
    return uint64_t(layers) * kv_heads * head_dim * 2 * dtype_bytes;
  }
};

std::span<const ModelGeometry> model_geometries();
// The geometry of a model by name (case-insensitive); NotFound lists the known names.
Result<ModelGeometry> find_model_geometry(std::string_view name);

}  // namespace tempokv
