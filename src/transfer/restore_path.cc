#include "transfer/restore_path.h"

namespace tempokv {

const std::vector<std::string>& restore_path_names() {
  static const std::vector<std::string> kNames = {"posix", "odirect-bounce", "direct", "gds"};
  return kNames;
}

}  // namespace tempokv
