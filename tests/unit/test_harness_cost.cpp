#include <catch2/catch.hpp>

#include "common/harness_cost.hpp"

using namespace opbench;

TEST_CASE("harness cost splits a case into samples, warm-up, between and set-up") {
  HarnessCost h;
  Measurement m;
  m.samples_us = {100000, 100000, 100000};  // 0.3 s timed
  m.sampling_s = 0.4;                       // 0.1 s of rotation between samples
  m.warmup_s = 0.2;
  auto j = h.add_case(1.0, m);  // 1.0 s in all: 0.4 s of set-up and checks remain
  CHECK(j["timed_s"].get<double>() == Approx(0.3));
  CHECK(j["between_samples_s"].get<double>() == Approx(0.1));
  CHECK(j["warmup_s"].get<double>() == Approx(0.2));
  CHECK(j["setup_and_check_s"].get<double>() == Approx(0.4));
  Measurement collective;  // a collective case: 0.5 s timed, 0.5 s set-up
  collective.samples_us = {500000};
  collective.sampling_s = 0.5;
  h.add_case(1.0, collective);
  auto text = h.text();
  CHECK_THAT(text, Catch::Contains("2 cases in 2.0 s"));
  CHECK_THAT(text, Catch::Contains("timed samples 0.8 s (40%)"));
  CHECK_THAT(text, Catch::Contains("set-up and checks 0.9 s (45%)"));
  CHECK_THAT(text, Catch::Contains("no result written"));
  // One Markdown block: the table's rows follow each other with no blank line between.
  CHECK_THAT(h.markdown(),
             Catch::Contains("| timed samples | 0.80 | 40.0% |\n| warm-up runs | 0.20 |"));
  h.result_written();
  CHECK_THAT(h.text(), Catch::Contains("first result after"));
}
