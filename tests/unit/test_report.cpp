#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/report.hpp"
#include "common/report_files.hpp"
#include "common/resume.hpp"
#include "common/run_tally.hpp"
#include "common/summary.hpp"
#include "common/text.hpp"
#include "temp_files.hpp"

using namespace opbench;
namespace fs = std::filesystem;

namespace {
std::string read_file(const fs::path& p) {
  return test::read_text(p);
}
fs::path temp_dir(const std::string& name) {
  return test::fresh_temp_dir(name);
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

TEST_CASE("A report holds at least its header, or does not exist") {
  auto dir = temp_dir("csv_header");
  Record row;
  row.arg("m", std::int64_t{64}).metric("time_us", 1.5).result("status", std::string("ok"));
  const std::string header = "m,time_us,status\n";
  {
    // Columns known when the writer is made: the header is in the file before any row.
    CsvWriter known((dir / "known.csv").string(), false, row.names());
    CHECK(read_file(dir / "known.csv") == header);
    // Columns from the first row, and a JSON-lines file: nothing before it, not even empty.
    CsvWriter later((dir / "later.csv").string());
    JsonlWriter lines((dir / "later.jsonl").string(), nlohmann::json::object());
    CHECK_FALSE(fs::exists(dir / "later.csv"));
    CHECK_FALSE(fs::exists(dir / "later.jsonl"));
    CHECK_FALSE(later.created());
    later.write(row);
    lines.write(row);
    CHECK(read_file(dir / "later.csv") == header + "64,1.5,ok\n");
    CHECK(fs::exists(dir / "later.jsonl"));
  }
  // A run stopped before its first row: the files it lists are the ones there are.
  ReportFiles files((dir / "r").string(),
                    {ReportFormat::csv, ReportFormat::jsonl, ReportFormat::prom},
                    nlohmann::json::object(), "opbench_t", false, row.names());
  CHECK(files.paths() == std::vector<std::string>{(dir / "r.csv").string()});
  CHECK(files.listing() == std::vector<std::string>{(dir / "r.csv").string() + " (0 rows)"});
  // --resume of that header-only report: its rows follow the header; other columns are refused.
  {
    CsvWriter resumed((dir / "known.csv").string(), true, row.names());
    CHECK(resumed.rows() == 0);
    resumed.write(row);
  }
  CHECK(read_file(dir / "known.csv") == header + "64,1.5,ok\n");
  CHECK_THROWS_WITH(CsvWriter((dir / "known.csv").string(), true, {"m", "tflops", "status"}),
                    Catch::Contains("its columns differ from this run's"));
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

TEST_CASE("CSV cells are plain ASCII: a spreadsheet without a BOM reads them as written") {
  CHECK(csv_escape("tp all_reduce of mbs\xc2\xb7seq\xc2\xb7hidden") ==
        "tp all_reduce of mbs*seq*hidden");
  CHECK(csv_escape("n \xe2\x89\xa5 k \xe2\x80\x94 4\xc3\x97 faster, 2\xc2\xb5s") ==
        "\"n >= k - 4x faster, 2us\"");
  CHECK(ascii_text("caf\xc3\xa9 \xe6\x97\xa5") == "caf? ?");  // unknown: one '?' per character
}

TEST_CASE("A continued run's reports carry the earlier rows: counts, .prom and records") {
  const auto dir = temp_dir("resume_carry");
  const std::string base = (dir / "r").string();
  auto row = [](std::int64_t m, double t) {
    Record r;
    r.arg("case", std::string("mbs\xc2\xb7seq")).arg("m", m).metric("time_us", t);
    r.result("status", std::string("ok")).result("note", Value{});
    return r;
  };
  {
    ReportFiles first(base, {ReportFormat::csv, ReportFormat::prom}, nlohmann::json::object(),
                      "opbench_t");
    first.write(row(64, 1.5));
  }
  const FinishedCases finished(base + ".csv");
  CHECK(finished.contains(row(64, 0)));  // matched through the ASCII spelling the CSV holds
  CHECK_FALSE(finished.contains(row(128, 0)));
  const auto earlier = finished.records(row(0, 0));
  REQUIRE(earlier.size() == 1);
  CHECK(std::get<std::int64_t>(*earlier[0].find("m")) == 64);
  CHECK(std::get<double>(*earlier[0].find("time_us")) == 1.5);
  CHECK(std::holds_alternative<std::monostate>(*earlier[0].find("note")));

  ReportFiles second(base, {ReportFormat::csv, ReportFormat::prom}, nlohmann::json::object(),
                     "opbench_t", true);
  second.carry(earlier[0]);
  second.write(row(128, 2.5));
  CHECK(second.rows() == 2);
  const std::string prom = read_file(base + ".prom");
  // 1.5 µs in base units; status describes the run, so it labels only opbench_t_case_info
  CHECK(prom.find("opbench_t_time_seconds{case=\"mbs*seq\",m=\"64\",stat=\"mean\"} 1.5e-06") !=
        std::string::npos);
  CHECK(prom.find("m=\"128\"") != std::string::npos);
  CHECK(read_file(base + ".csv") ==
        "case,m,time_us,status,note\nmbs*seq,64,1.5,ok,\nmbs*seq,128,2.5,ok,\n");
}

TEST_CASE("One tally for the closing lines, the summary and the exit code") {
  auto row = [](const char* status, const char* note) {
    Record r;
    r.result("status", std::string(status)).result("note", std::string(note));
    return r;
  };
  RunTally t;
  t.planned = 8;
  t.add_earlier(row("ok", ""));
  t.add(row("ok", "run in fp32 on the CPU; noisy (rse 5.6% > 1.0% after 58 samples, 0.3 s)"));
  t.add(row("skipped", "bf16 needs a GPU"));
  CHECK(t.line() ==
        "3 of 8 cases: 2 ok (1 noisy), 1 skipped, 0 failed, 1 of them from the run continued "
        "(--resume)");
  // --resume into a report that held 4 rows, one of them a case of this run (issue 32: the tally
  // counted all 4 against this plan, "15 of 5 cases"): the other 3 are named apart.
  t.carried = 4;
  CHECK(t.line() ==
        "3 of 8 cases: 2 ok (1 noisy), 1 skipped, 0 failed, 1 of them from the run continued "
        "(--resume); the reports also hold 3 rows of cases outside this run");
  t.carried = 0;
  CHECK(is_noisy(row("ok", "noisy (rse 2%)")));
  CHECK_FALSE(is_noisy(row("failed", "noisy (rse 2%)")));
  RunEnd end{"", "dir", {}, true};
  CHECK(finish_run(t, end, false, 0) == 0);
  CHECK(finish_run(t, end, true, 130) == 130);
  // environment.json's outcome says what the exit code and the closing lines say.
  CHECK(run_outcome(t, false) ==
        "ok: 3 of 8 cases: 2 ok (1 noisy), 1 skipped, 0 failed, 1 of them from the run continued "
        "(--resume)");
  CHECK(run_outcome(t, true).rfind("interrupted: 3 of 8 cases: ", 0) == 0);
  RunTally skipped;
  skipped.planned = 2;
  skipped.add(row("skipped", "x"));
  skipped.add(row("skipped", "x"));
  CHECK(finish_run(skipped, end, false, 0) == kExitNothingRan);
  CHECK(run_outcome(skipped, false) == "nothing ran: 2 of 2 cases: 0 ok, 2 skipped, 0 failed");
  skipped.add(row("failed", "wrong result"));
  CHECK(finish_run(skipped, end, false, 0) == 1);
  CHECK(run_outcome(skipped, false) == "failed: 3 of 2 cases: 0 ok, 2 skipped, 1 failed");
}

TEST_CASE("Counts stay exact: integers in 64 bits, digits beyond") {
  CHECK(format_value(exact_count(1415577600)) == "1415577600");  // not 1.415578e+09
  CHECK(std::holds_alternative<std::int64_t>(exact_count(1415577600)));
  const __int128 beyond = static_cast<__int128>(1) << 70;  // 1180591620717411303424
  CHECK(format_value(exact_count(beyond)) == "1180591620717411303424");
  CHECK(format_value(exact_count(-beyond)) == "-1180591620717411303424");
  CHECK(format_value(exact_count(0)) == "0");
}

TEST_CASE("A summary names what its first rows are: the best figures, or bench_fsdp's longest") {
  char name[] = "bench_fsdp";
  char* argv[] = {name};
  const Environment env(1, argv, "bench_fsdp");
  std::vector<Record> rows;
  for (double t : {5.0, 50.0, 20.0}) {
    Record r;
    r.arg("unit", std::string("u")).metric("time_us", t);
    r.result("status", std::string("ok")).result("note", std::string(""));
    rows.push_back(r);
  }
  SummarySpec spec;
  spec.title = "bench_fsdp";
  spec.headline = "time_us";
  spec.columns = {"unit", "time_us"};
  spec.top = 2;
  spec.first_are = "longest";
  const std::string md = summary_markdown(env, rows, spec);
  CHECK_THAT(md, Catch::Contains("The longest 2 by time_us"));
  INFO(md);
  const auto table = md.find("The longest");
  REQUIRE(md.find("50", table) != std::string::npos);
  REQUIRE(md.find("20", table) != std::string::npos);
  CHECK(md.find("50", table) < md.find("20", table));  // longest first
  CHECK_THAT(md, !Catch::Contains("The best"));
}

TEST_CASE("Record::get gives a field's value of the asked type, or nothing") {
  Record row;
  row.arg("op", "all_reduce").arg("size_bytes", std::int64_t{4096}).metric("time_us", Value{});
  REQUIRE(row.get<std::string>("op"));
  CHECK(*row.get<std::string>("op") == "all_reduce");
  CHECK(*row.get<std::int64_t>("size_bytes") == 4096);
  CHECK(row.get<double>("size_bytes") == nullptr);  // another type
  CHECK(row.get<double>("time_us") == nullptr);     // empty
  CHECK(row.get<std::string>("label") == nullptr);  // absent
}
