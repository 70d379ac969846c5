// The validate() message of tempokvd's default configuration after one `--set` override.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "daemon/daemon_config.h"

namespace tempokv::service {

// The validate() message after applying one override to the defaults ("" when valid).
inline std::string validate_error(const std::string& assignment) {
  DaemonConfig c;
  Status set = apply_override(c, assignment);
  EXPECT_TRUE(set.is_ok()) << set.to_string();
  Status st = c.validate();
  if (st.is_ok()) return "";
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  return st.message();
}

}  // namespace tempokv::service
