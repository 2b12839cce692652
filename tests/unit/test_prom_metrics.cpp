#include <catch2/catch.hpp>

#include "common/prom_metrics.hpp"

using namespace opbench;

namespace {

Record gemm_row(std::int64_t m, double time_us, const std::string& algo) {
  Record r;
  r.arg("model", std::string("tiny")).arg("m", m).arg("algo", algo);
  r.arg("working_set_bytes", std::int64_t{4096});
  r.metric("time_us", time_us).metric("p99_us", 2 * time_us).metric("tflops", 0.25);
  r.metric("pct_peak_flops", 12.5).metric("mem_bw_gbps", 3.0);
  r.result("status", std::string("ok")).result("note", std::string("free text"));
  return r;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("Prometheus text: base units, one family per quantity, labels that identify the case") {
  const std::string text =
      prometheus_text({gemm_row(64, 1.5, "cblas_sgemm")}, "opbench_gemm", {{"run_id", "r1"}});
  // µs -> seconds, TFLOPS -> FLOP/s, GB/s -> bytes/s, percent -> ratio, each worked by hand
  CHECK(has(text, "opbench_gemm_time_seconds{model=\"tiny\",m=\"64\",stat=\"mean\"} 1.5e-06\n"));
  CHECK(has(text, "opbench_gemm_time_seconds{model=\"tiny\",m=\"64\",stat=\"p99\"} 3e-06\n"));
  CHECK(has(text, "opbench_gemm_flops_per_second{model=\"tiny\",m=\"64\"} 2.5e+11\n"));
  CHECK(has(text, "opbench_gemm_peak_flops_ratio{model=\"tiny\",m=\"64\"} 0.125\n"));
  CHECK(
      has(text, "opbench_gemm_memory_bandwidth_bytes_per_second{model=\"tiny\",m=\"64\"} 3e+09\n"));
  // what describes the run labels the case's _info only; the note labels nothing
  CHECK(has(text,
            "opbench_gemm_case_info{model=\"tiny\",m=\"64\",algo=\"cblas_sgemm\","
            "working_set_bytes=\"4096\",status=\"ok\"} 1\n"));
  CHECK_FALSE(has(text, "free text"));
  CHECK(has(text, "opbench_gemm_run_info{run_id=\"r1\",opbench_version=\""));
  // one HELP and TYPE per family, saying what it is and which columns it comes from
  CHECK(has(text,
            "# HELP opbench_gemm_time_seconds Time of one call as the row names it, by "
            "statistic over the timed samples. From the report's columns time_us "
            "(stat=mean), p99_us (stat=p99)\n# TYPE opbench_gemm_time_seconds gauge\n"));
  CHECK_FALSE(has(text, "opbench metric"));
}

TEST_CASE("Prometheus text: a case run again continues its series with the later value") {
  // the same case (model, m) measured twice with a different algorithm: one series per family,
  // the later time, the later algorithm in its _info
  const std::string text = prometheus_text(
      {gemm_row(64, 1.5, "first"), gemm_row(64, 2.5, "second"), gemm_row(128, 4.0, "first")},
      "opbench_gemm", nlohmann::json::object());
  CHECK(has(text, "{model=\"tiny\",m=\"64\",stat=\"mean\"} 2.5e-06\n"));
  CHECK_FALSE(has(text, "{model=\"tiny\",m=\"64\",stat=\"mean\"} 1.5e-06\n"));
  CHECK(has(text, "{model=\"tiny\",m=\"128\",stat=\"mean\"} 4e-06\n"));
  std::size_t info = 0;
  for (std::size_t at = text.find("opbench_gemm_case_info{"); at != std::string::npos;
       at = text.find("opbench_gemm_case_info{", at + 1))
    ++info;
  CHECK(info == 2);
  CHECK(has(text, "algo=\"second\""));
}

TEST_CASE("Prometheus text: a column without a description says so, for the promtool test") {
  Record r;
  r.arg("model", std::string("tiny")).metric("brand_new_us", 1.0);
  const std::string text = prometheus_text({r}, "opbench_t", nlohmann::json::object());
  CHECK(has(text, "# HELP opbench_t_brand_new_us " + std::string(kPromUndescribed)));
  CHECK_FALSE(prom_column("brand_new_us"));
  REQUIRE(prom_column("busbw_all_groups_gbps"));
  CHECK(prom_column("busbw_all_groups_gbps")->family == "bus_bandwidth_bytes_per_second");
  CHECK(prom_column("busbw_all_groups_gbps")->value == "all");
  CHECK_FALSE(prom_family_help("bus_bandwidth_bytes_per_second").empty());
}

TEST_CASE("Which columns identify a case depends on the kind only where the docs say so") {
  CHECK(prom_column_identifies_case("opbench_gemm", "impl"));          // grouped, loop, padded
  CHECK_FALSE(prom_column_identifies_case("opbench_memops", "impl"));  // the loops' description
  CHECK(prom_column_identifies_case("opbench_attention_engines", "device"));  // the profile asked
  CHECK_FALSE(prom_column_identifies_case("opbench_attention", "device"));
  CHECK(prom_column_identifies_case("opbench_ccl", "size_bytes"));
  CHECK_FALSE(prom_column_identifies_case("opbench_ccl", "iters"));
}
