#pragma once
// Prometheus' text exposition format, the parts every writer of it shares (the binaries' .prom
// files and the capture library's textfile and /metrics). Header-only: the capture library
// links nothing of the project.
#include <string>

namespace opbench {

// A label value as the format quotes it: backslash, double quote and line feed escaped.
inline std::string prom_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace opbench
