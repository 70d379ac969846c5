#include "common/model_geometry.h"

#include <array>
#include <cctype>
#include <string>

namespace tempokv {
namespace {

constexpr std::array<ModelGeometry, 5> kModels = {{
    {"llama-3.1-8b", 32, 8, 128, 2},
    {"llama-3.1-70b", 80, 8, 128, 2},
    {"qwen2.5-14b", 48, 8, 128, 2},
    {"qwen3-coder-30b-a3b", 48, 4, 128, 2},
    {"qwen3-coder-30b-a3b-fp8kv", 48, 4, 128, 1},
}};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::span<const ModelGeometry> model_geometries() { return kModels; }

Result<ModelGeometry> find_model_geometry(std::string_view name) {
  std::string known;
  for (const ModelGeometry& m : kModels) {
    if (iequals(m.name, name)) return m;
    known += (known.empty() ? "" : ", ") + std::string(m.name);
  }
  return Status::not_found("unknown model '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace tempokv
