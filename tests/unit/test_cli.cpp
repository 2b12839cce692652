#include <catch2/catch.hpp>
#include <cxxopts.hpp>

#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/text.hpp"

using namespace opbench;

TEST_CASE("sizes use binary multipliers like nccl-tests") {
  CHECK(parse_size("4096") == 4096);
  CHECK(parse_size("1K") == 1024);
  CHECK(parse_size("64M") == 64ull * 1024 * 1024);
  CHECK(parse_size("2G") == 2ull * 1024 * 1024 * 1024);
  CHECK(parse_size("64KiB") == 65536);
  CHECK(parse_size("64kb") == 65536);
  CHECK(parse_size("0.5K") == 512);
  CHECK(parse_size("1.5M") == 1572864);
}

TEST_CASE("bad sizes are refused with the flag's name") {
  CHECK_THROWS_WITH(parse_size("abc", "-b"), Catch::Contains("-b: 'abc' is not a size"));
  CHECK_THROWS_AS(parse_size("-1"), Error);
  CHECK_THROWS_AS(parse_size("1X"), Error);
  CHECK_THROWS_WITH(parse_size("1.3"), Catch::Contains("not a whole number"));
  CHECK_THROWS_AS(parse_size("99999999999T"), Error);
  CHECK_THROWS_WITH(parse_positive_int("0", "--tp"), Catch::Contains("--tp: must be at least 1"));
}

TEST_CASE("integer lists take values and inclusive ranges") {
  auto r = parse_int_list("64:8192:64", "--m");
  REQUIRE(r.size() == 128);
  CHECK(r.front() == 64);
  CHECK(r[1] == 128);
  CHECK(r.back() == 8192);
  CHECK(parse_int_list("1:10:3", "--m") == std::vector<std::int64_t>{1, 4, 7, 10});
  CHECK(parse_int_list("1:9:3", "--m") == std::vector<std::int64_t>{1, 4, 7});
  CHECK(parse_int_list("128, 256,1K", "--n") == std::vector<std::int64_t>{128, 256, 1024});
  CHECK(parse_int_list("3:5", "--k") == std::vector<std::int64_t>{3, 4, 5});
  // Geometric: 1K, 2K, 4K, 8K; the factor stops before passing stop.
  CHECK(parse_int_list("1K:8K:x2", "--size") == std::vector<std::int64_t>{1024, 2048, 4096, 8192});
  CHECK(parse_int_list("3:100:x4", "--size") == std::vector<std::int64_t>{3, 12, 48});
  CHECK(parse_int_list("1K:1G:x2", "--size").size() == 21);
}

TEST_CASE("bad lists are refused") {
  CHECK_THROWS_WITH(parse_int_list("10:1", "--m"), Catch::Contains("ends before it starts"));
  CHECK_THROWS_WITH(parse_int_list("a:b", "--m"), Catch::Contains("--m"));
  CHECK_THROWS_WITH(parse_int_list("1:2:3:4", "--m"), Catch::Contains("not a range"));
  CHECK_THROWS_WITH(parse_int_list("", "--m"), Catch::Contains("empty list"));
  CHECK_THROWS_AS(parse_int_list("0", "--m"), Error);
  CHECK_THROWS_WITH(parse_int_list("1:8:x1", "--size"), Catch::Contains("factor of at least x2"));
  CHECK_THROWS_WITH(parse_int_list("1:8:xy", "--size"), Catch::Contains("--size"));
}

TEST_CASE("single-letter long flags become short flags") {
  std::vector<std::string> in{"bench", "--m", "8", "--n=16", "--model", "x", "--k=1:4"};
  std::vector<char*> argv;
  for (auto& s : in)
    argv.push_back(s.data());
  auto out = normalize_single_letter_flags(static_cast<int>(argv.size()), argv.data());
  CHECK(out ==
        std::vector<std::string>{"bench", "-m", "8", "-n", "16", "--model", "x", "-k", "1:4"});
}

TEST_CASE("a misspelt flag gets the nearest one, and only a near one") {
  CHECK(edit_distance("mdoel", "model") == 2);
  CHECK(edit_distance("", "abc") == 3);
  const std::vector<std::string> flags{"model", "model-config-path", "seq-len", "micro-batch",
                                       "pass"};
  CHECK(closest_match("mdoel", flags) == "model");
  CHECK(closest_match("seqlen", flags) == "seq-len");
  CHECK(closest_match("passes", flags) == "pass");  // a prefix of it
  CHECK(closest_match("backend", flags).empty());
}

TEST_CASE("an unknown flag is one bad_input line with a suggestion") {
  auto options = [] {
    cxxopts::Options o("t", "");
    o.add_options()("model", "m", cxxopts::value<std::string>());
    o.add_options(kAliasGroup)("passes", "old", cxxopts::value<std::string>());
    return o;
  };
  auto misspelt = options();
  const char* argv[] = {"t", "--mdoel", "x"};
  CHECK_THROWS_WITH(parse_command_line(misspelt, 3, const_cast<char**>(argv), [] {}),
                    "unknown flag '--mdoel'; did you mean --model? (see --help)");
  auto aliased = options();
  const char* alias[] = {"t", "--passes", "fprop"};  // an alias parses, though --help hides it
  auto parsed = parse_command_line(aliased, 3, const_cast<char**>(alias), [] {});
  REQUIRE(parsed);
  CHECK((*parsed)["passes"].as<std::string>() == "fprop");
}
