#pragma once
// An enum's names written once, as a table of (value, name) pairs: the name of a value, the value
// of a name as a user types it (any case, spaces around it), and the accepted names for an error
// message. Replaces a switch for the name and an if-chain for the parse written per enum.
#include <fmt/format.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {

template <class E, std::size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

// The value's name; `absent` for a value the table lacks (a cast from a bad integer).
template <class E, std::size_t N>
constexpr std::string_view enum_name(const EnumNames<E, N>& names, E value,
                                     std::string_view absent = "?") {
  for (const auto& [e, name] : names)
    if (e == value) return name;
  return absent;
}

template <class E, std::size_t N>
std::optional<E> enum_from_name(const EnumNames<E, N>& names, std::string_view text) {
  const std::string wanted = to_lower(trim(text));
  for (const auto& [e, name] : names)
    if (name == wanted) return e;
  return std::nullopt;
}

// "none, selective, full": the names in the table's order.
template <class E, std::size_t N>
std::string enum_name_list(const EnumNames<E, N>& names) {
  std::string out;
  for (const auto& [e, name] : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// The value of a flag's word, or bad_input: "--sharding: 'zero3' is not one of ddp, zero1, ...".
template <class E, std::size_t N>
E enum_from_flag(const EnumNames<E, N>& names, std::string_view flag, std::string_view text) {
  if (const auto e = enum_from_name(names, text)) return *e;
  throw bad_input(fmt::format("{}: '{}' is not one of {}", flag, text, enum_name_list(names)));
}

}  // namespace opbench
