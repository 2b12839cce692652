#pragma once
// Whether the cuDNN loaded at run time is new enough for a graph: the wording every family's
// refusal uses. Which version a graph needs is the family's own knowledge (attention's in
// attention/cudnn_version_policy.hpp). Pure, so it is tested on any machine.
#include <optional>
#include <string>

#include "common/version.hpp"

namespace opbench {

// Why cuDNN `version` (e.g. 91900 for 9.19.0) cannot run `what`, which needs `needed`, or nullopt.
// `why` (may be empty) says what the newer version brings.
inline std::optional<std::string> cudnn_older_than(long version, long needed,
                                                   const std::string& what,
                                                   const std::string& why = "") {
  if (version >= needed) return std::nullopt;
  return "cuDNN " + version_from_int(version) + " is older than " + version_from_int(needed) +
         ", which " + what + " needs" + (why.empty() ? "" : " (" + why + ")");
}

}  // namespace opbench
