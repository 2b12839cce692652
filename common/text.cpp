#include "common/text.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace opbench {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    auto item = trim(s.substr(start, end - start));
    if (!item.empty()) out.emplace_back(item);
    start = end + 1;
  }
  return out;
}

std::string counted(std::size_t n, std::string_view noun, std::string_view plural) {
  if (n == 1) return "1 " + std::string(noun);
  return std::to_string(n) + " " + (plural.empty() ? std::string(noun) + "s" : std::string(plural));
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

void append_note(std::string& note, std::string_view clause) {
  if (clause.empty()) return;
  if (!note.empty()) note += "; ";
  note += clause;
}

std::string ascii_text(std::string_view utf8) {
  static const std::pair<std::string_view, std::string_view> kSpellings[] = {
      {"\xc2\xb7", "*"},       {"\xc3\x97", "x"},      {"\xe2\x80\x94", "-"}, {"\xe2\x80\x93", "-"},
      {"\xe2\x89\xa5", ">="},  {"\xe2\x89\xa4", "<="}, {"\xe2\x80\x99", "'"}, {"\xe2\x80\x98", "'"},
      {"\xe2\x80\xa6", "..."}, {"\xc2\xb3", "^3"},     {"\xc2\xb2", "^2"},    {"\xc2\xb5", "u"},
      {"\xe2\x86\x92", "->"}};
  std::string out;
  for (std::size_t i = 0; i < utf8.size();) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    bool spelled = false;
    for (const auto& [from, to] : kSpellings)
      if (utf8.substr(i, from.size()) == from) {
        out += to;
        i += from.size();
        spelled = true;
        break;
      }
    if (spelled) continue;
    // An unknown character: skip its UTF-8 continuation bytes, write one '?'.
    out += '?';
    ++i;
    while (i < utf8.size() && (static_cast<unsigned char>(utf8[i]) & 0xC0) == 0x80)
      ++i;
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = word.size() / 3 + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(to_lower(word), to_lower(c));
    const bool prefix = word.size() >= 3 && (c.rfind(word, 0) == 0 || word.rfind(c, 0) == 0);
    if (d < best_distance || (d == best_distance && best.empty()) || (prefix && best.empty())) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace opbench
