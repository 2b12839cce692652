// A run never moves, overwrites or deletes a file no opbench run wrote (common/owned_files).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/owned_files.hpp"
#include "common/report.hpp"
#include "temp_files.hpp"

using namespace opbench;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  return test::read_text(p);
}
fs::path fresh_dir(const std::string& name) {
  return test::fresh_temp_dir("owned_" + name);
}

// What a user keeps in a folder they also write reports into.
void user_files(const fs::path& dir) {
  std::ofstream(dir / "README.md") << "# my project\n";
  std::ofstream(dir / "mydata.csv") << "a,b\n1,2\n";
  std::ofstream(dir / "environment.json") << "{\"mine\": true}\n";
  std::ofstream(dir / "notes.md") << "notes\n";
}

void same_user_files(const fs::path& dir) {
  CHECK(read_file(dir / "README.md") == "# my project\n");
  CHECK(read_file(dir / "mydata.csv") == "a,b\n1,2\n");
  CHECK(read_file(dir / "environment.json") == "{\"mine\": true}\n");
  CHECK(read_file(dir / "notes.md") == "notes\n");
}

// A file an earlier opbench process wrote: the file and its manifest line, as that run left them.
void earlier_run_file(const fs::path& dir, const std::string& name,
                      const std::string& binary = "bench_gemm") {
  std::ofstream(dir / name) << "earlier " << name << "\n";
  std::ofstream(dir / kManifestName, std::ios::app)
      << nlohmann::json{{"file", name}, {"binary", binary}, {"run_id", binary + "-1"}}.dump()
      << "\n";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::bad_input);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("A folder used again: only the earlier run's files move aside, a user's stay") {
  const auto dir = fresh_dir("again");
  user_files(dir);
  earlier_run_file(dir, "gemm_tiny.csv");
  earlier_run_file(dir, "gemm_tiny.jsonl");
  const auto moved = set_aside_earlier_reports(dir.string(), {}, false);
  REQUIRE(moved.size() == 1);
  const fs::path earlier = moved[0];
  CHECK(earlier.parent_path() == dir);
  CHECK(earlier.filename().string().rfind("earlier-", 0) == 0);
  CHECK(read_file(earlier / "gemm_tiny.csv") == "earlier gemm_tiny.csv\n");
  CHECK(fs::exists(earlier / "gemm_tiny.jsonl"));
  CHECK_FALSE(fs::exists(dir / "gemm_tiny.csv"));
  same_user_files(dir);
  // The moved files' lines went with them: the folder's manifest lists nothing now, the earlier
  // folder's lists both, so a later look still knows them as opbench's.
  CHECK(read_file(dir / kManifestName).empty());
  CHECK(written_by_opbench((earlier / "gemm_tiny.csv").string()));
  CHECK(set_aside_earlier_reports(dir.string(), {}, false).empty());  // nothing left to move
  same_user_files(dir);
}

TEST_CASE("A named output that no opbench run wrote is refused, and nothing moves") {
  const auto dir = fresh_dir("named");
  user_files(dir);
  earlier_run_file(dir, "gemm_tiny.csv");
  const std::string message = error_of([&] {
    set_aside_earlier_reports(dir.string(), {{"--summary-path", (dir / "notes.md").string()}},
                              false);
  });
  CHECK(message.rfind("--summary-path " + (dir / "notes.md").string() +
                          ": exists and no opbench run wrote it",
                      0) == 0);
  CHECK(fs::exists(dir / "gemm_tiny.csv"));  // the check came before any move
  same_user_files(dir);
  // An earlier opbench file at a named path outside the folder moves aside in its own folder.
  const auto other = fresh_dir("named_other");
  earlier_run_file(other, "summary.md");
  const auto moved = set_aside_earlier_reports(
      dir.string(), {{"--summary-path", (other / "summary.md").string()}}, false);
  REQUIRE(moved.size() == 2);
  CHECK_FALSE(fs::exists(other / "summary.md"));
}

TEST_CASE("Every writer claims its path: new files are listed, a user's file is refused") {
  const auto dir = fresh_dir("claim");
  user_files(dir);
  const std::string csv = (dir / "mydata.csv").string();
  CHECK(error_of([&] {
          CsvWriter w(csv);
        }).find("mydata.csv: exists and no opbench run wrote it") != std::string::npos);
  CHECK(error_of([&] { CsvWriter w(csv, true); }) != "");  // not continued either
  same_user_files(dir);

  const std::string mine = (dir / "gemm_mine.csv").string();
  {
    CsvWriter w(mine);
    CHECK_FALSE(fs::exists(mine));  // claimed when made, created with its first row
    Record row;
    row.arg("m", std::int64_t{64});
    w.write(row);
  }
  CHECK(written_by_opbench(mine));
  CHECK_FALSE(written_by_opbench(csv));
  claim_output(mine);  // this process wrote it: claiming again changes nothing
  CHECK(fs::exists(mine));
  claim_output("/dev/null");  // a device holds nothing to lose, and gets no manifest
  CHECK_FALSE(fs::exists(fs::path("/dev") / kManifestName));

  // An earlier run's file at the path: set aside when written afresh, kept when continued.
  earlier_run_file(dir, "old.csv");
  earlier_run_file(dir, "continued.csv");
  claim_output((dir / "old.csv").string(), OutputUse::fresh);
  CHECK_FALSE(fs::exists(dir / "old.csv"));
  claim_output((dir / "continued.csv").string(), OutputUse::continued);
  CHECK(read_file(dir / "continued.csv") == "earlier continued.csv\n");
  same_user_files(dir);
}

TEST_CASE("Resume: only a run of the same binary is continued") {
  const auto dir = fresh_dir("resume");
  earlier_run_file(dir, "attention.csv", "bench_attention");
  CHECK(binaries_in(dir.string()) == std::vector<std::string>{"bench_attention"});
  CHECK(error_of([&] {
          check_resumable(dir.string(), "bench_gemm");
        }).find("holds the reports of a bench_attention run") != std::string::npos);
  check_resumable(dir.string(), "bench_attention");
  check_resumable(fresh_dir("resume_empty").string(), "bench_gemm");  // nothing there yet
}

TEST_CASE("environment.json: a user's is left alone; a continued run keeps the earlier one") {
  const auto dir = fresh_dir("env");
  user_files(dir);
  char name[] = "bench_gemm";
  char* argv[] = {name};
  Environment env(1, argv, "bench_gemm");
  env.write(dir.string(), false);
  CHECK(env.path() == (dir / ("environment-" + env.run_id() + ".json")).string());
  same_user_files(dir);

  const auto resumed = fresh_dir("env_resume");
  std::ofstream(resumed / "environment.json")
      << R"({"binary": "bench_gemm", "run_id": "bench_gemm-1", "earlier_runs": [{"run_id": "bench_gemm-0"}]})";
  std::ofstream(resumed / kManifestName)
      << R"({"file": "environment.json", "binary": "bench_gemm"})"
      << "\n";
  Environment next(1, argv, "bench_gemm");
  next.write(resumed.string(), true);
  const auto written = nlohmann::json::parse(read_file(resumed / "environment.json"));
  CHECK(written["run_id"] == next.run_id());
  REQUIRE(written["earlier_runs"].size() == 2);
  CHECK(written["earlier_runs"][0]["run_id"] == "bench_gemm-0");
  CHECK(written["earlier_runs"][1]["run_id"] == "bench_gemm-1");
  CHECK_FALSE(written["earlier_runs"][1].contains("earlier_runs"));
}
