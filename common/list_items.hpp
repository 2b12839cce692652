#pragma once
// A list flag names each item once. "--model tiny,TINY", "--pass fprop,fwd", "--dtype fp32,float"
// or "--m 64,64" ran the same cases twice, and compare_reports then kept one of each silently:
// an item that repeats one listed before it (as spelled, or as an alias of it) is refused.
#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace opbench {

// Appends `item` (written `text` on the command line) to the list of `flag`, or refuses it when
// the list holds it already.
template <class T>
void push_once(std::vector<T>& list, T item, std::string_view flag, std::string_view text) {
  if (std::find(list.begin(), list.end(), item) != list.end())
    throw bad_input(
        fmt::format("{}: '{}' is listed twice (an item before it is the same); list "
                    "each once",
                    flag, text));
  list.push_back(std::move(item));
}

}  // namespace opbench
