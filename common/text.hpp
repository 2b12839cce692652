#pragma once
// Small string helpers shared by the parsers.
#include <string>
#include <string_view>
#include <vector>

namespace opbench {

std::string_view trim(std::string_view s);
std::string to_lower(std::string_view s);
// Splits on `sep`, trims each item and drops empty items ("a, b,,c" -> a b c).
std::vector<std::string> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& items, std::string_view sep);
// Adds a clause to a row's note: "a" + "b" -> "a; b"; an empty clause adds nothing.
void append_note(std::string& note, std::string_view clause);

}  // namespace opbench
