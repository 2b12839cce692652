#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/report.hpp"

using namespace opbench;
namespace fs = std::filesystem;

namespace {
std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("opbench_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST_CASE("CSV quoting follows RFC 4180") {
  CHECK(csv_escape("plain") == "plain");
  CHECK(csv_escape("a,b") == "\"a,b\"");
  CHECK(csv_escape("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_escape("a,\"b\"") == "\"a,\"\"b\"\"\"");
  CHECK(csv_escape("two\nlines") == "\"two\nlines\"");
}

TEST_CASE("values format as plain numbers") {
  CHECK(format_value(Value{std::int64_t{1099511627776}}) == "1099511627776");
  CHECK(format_value(Value{296.1159827}) == "296.116");
  CHECK(format_value(Value{0.5}) == "0.5");
  CHECK(format_value(Value{}) == "");
  CHECK(format_value(Value{std::string("x")}) == "x");
}

TEST_CASE("CsvWriter writes a header and flushed rows") {
  auto dir = temp_dir("csv");
  auto path = (dir / "out.csv").string();
  {
    CsvWriter w(path);
    Record r1;
    r1.arg("name", std::string("a,\"b\"")).metric("time_us", 12.5).result("note", Value{});
    w.write(r1);
    // Flushed already: the file holds the row before the writer closes.
    CHECK(read_file(path) == "name,time_us,note\n\"a,\"\"b\"\"\",12.5,\n");
    Record r2;
    r2.arg("name", std::string("c"))
        .metric("time_us", std::int64_t{3})
        .result("note", std::string("ok"));
    w.write(r2);
    CHECK(w.rows() == 2);
  }
  CHECK(read_file(path) == "name,time_us,note\n\"a,\"\"b\"\"\",12.5,\nc,3,ok\n");
}

TEST_CASE("JSON lines nest args and metrics") {
  Record r;
  r.arg("op", std::string("gemm"))
      .metric("tflops", 1.5)
      .optional_metric("pct", std::nullopt)
      .result("status", std::string("ok"));
  r.extra()["samples_us"] = {1.0, 2.0};
  auto j = record_to_json(r);
  CHECK(j["args"]["op"] == "gemm");
  CHECK(j["metrics"]["tflops"] == 1.5);
  CHECK(j["metrics"]["pct"].is_null());
  CHECK(j["status"] == "ok");
  CHECK(j["samples_us"].size() == 2);
}

TEST_CASE("report paths") {
  CHECK(file_safe("Llama-3.1 70B") == "llama-3.1_70b");
  CHECK(file_safe("a/b\\c") == "a_b_c");
  auto dir = temp_dir("paths");
  auto file = dir / "a_file";
  std::ofstream(file) << "x";
  CHECK_THROWS_WITH(ensure_directory(file.string()),
                    Catch::Contains("exists and is not a directory"));
  CHECK_THROWS_WITH(CsvWriter(dir.string()), Catch::Contains("is a directory"));
}
