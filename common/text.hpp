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
// "1 row", "2 rows", "1 process", "3 processes": a count and its noun in the number it takes
// (`plural` when it is not the noun and an s).
std::string counted(std::size_t n, std::string_view noun, std::string_view plural = {});
// Adds a clause to a row's note: "a" + "b" -> "a; b"; an empty clause adds nothing.
void append_note(std::string& note, std::string_view clause);
// Plain ASCII for CSV cells (a spreadsheet reads a CSV without a BOM in a legacy code page, so
// "·" would arrive as "Â·"): the few symbols our labels and notes use become ASCII spellings
// (· * × x, — -, ≥ >=, ≤ <=, ’ ', … ..., ³ ^3, ² ^2, µ u); any other non-ASCII character
// becomes '?'.
std::string ascii_text(std::string_view utf8);
// Edit distance (insertions, deletions, substitutions) between two words, for "did you mean".
std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word`, when it is close enough to be a likely misspelling (at most a
// third of the word's letters differ, or one is a prefix of the other); empty otherwise.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace opbench
