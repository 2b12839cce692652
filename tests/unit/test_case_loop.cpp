#include <catch2/catch.hpp>

#include <filesystem>

#include "common/case_loop.hpp"
#include "temp_files.hpp"

using namespace opbench;

namespace {

// Where the loop's rows went, in the order they came.
struct KeptRows : RowSink, RowTable {
  std::vector<std::string> written, printed;
  void write(const Record& row) override { written.push_back(format_value(*row.find("case"))); }
  void print(const Record& row) override { printed.push_back(format_value(*row.find("case"))); }
};

Record case_row(const std::string& name) {
  Record row;
  row.arg("case", name).metric("time_us", 2.0).result("status", "ok");
  return row;
}

}  // namespace

TEST_CASE(
    "case loop: a case's row and a row added without a case are written, kept, printed and "
    "counted") {
  Progress progress(2, 2, true);
  HarnessCost harness;
  RunTally tally;
  std::vector<Record> rows;
  KeptRows out;
  CaseLoop loop(progress, &out, harness, tally, rows, [] { return false; });
  Measurement m;
  m.samples_us = {2.0, 2.0};
  CHECK(loop.run("first", 1, out, std::nullopt, [&] {
    return MeasuredRow{case_row("first"), m, ""};
  }));
  // bench_fsdp: a later plan entry sharing the first one's collective
  loop.add_row(out, case_row("shared"));
  CHECK(out.written == std::vector<std::string>{"first", "shared"});
  CHECK(out.printed == out.written);
  REQUIRE(rows.size() == 2);
  CHECK(tally.ok == 2);
  // only the measured case has a harness share
  CHECK(rows[0].extra().contains("harness"));
  CHECK_FALSE(rows[1].extra().contains("harness"));
}

TEST_CASE("case loop: a case does not start once the stop check says so, and nothing is written") {
  Progress progress(1, 1, true);
  HarnessCost harness;
  RunTally tally;
  std::vector<Record> rows;
  KeptRows out;
  bool stop = true;
  CaseLoop loop(progress, nullptr, harness, tally, rows, [&] { return stop; });
  bool ran = false;
  CHECK_FALSE(loop.run("case", 1, out, std::nullopt, [&] {
    ran = true;
    return MeasuredRow{case_row("case"), {}, ""};
  }));
  CHECK_FALSE(ran);
  CHECK(out.written.empty());
  stop = false;  // no table: the row is still written and kept
  CHECK(loop.run("case", 1, out, std::nullopt, [&] {
    return MeasuredRow{case_row("case"), {}, ""};
  }));
  CHECK(out.written.size() == 1);
  CHECK(out.printed.empty());
  CHECK(rows.size() == 1);
}

TEST_CASE("report sets list their files in the order the cases opened them") {
  const auto dir = opbench::test::fresh_temp_dir("report_sets_order");
  Progress progress(2, 2, true);
  HarnessCost harness;
  RunTally tally;
  std::vector<Record> rows;
  CaseLoop loop(progress, nullptr, harness, tally, rows);
  ReportOptions report;
  report.formats = {ReportFormat::csv};
  ReportSets sets(dir.string(), "ccl", report, nlohmann::json::object(), "opbench_ccl", loop);
  // all_reduce runs first, as bench_ccl's cases do, though all_gather sorts before it
  sets.open("all_reduce", case_row("a")).write(case_row("a"));
  sets.open("all_gather", case_row("b")).write(case_row("b"));
  sets.open("all_reduce", case_row("c")).write(case_row("c"));
  CHECK(sets.listing() ==
        std::vector<std::string>{(dir / "ccl_all_reduce.csv").string() + " (2 rows)",
                                 (dir / "ccl_all_gather.csv").string() + " (1 row)"});
}
