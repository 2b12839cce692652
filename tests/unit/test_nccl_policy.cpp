// bench_ccl's GPU decisions, on the host: which GPU a rank takes, who shares one, what NCCL's
// version and the ranks' compute capabilities allow for fp8, and nccl-tests' buffer rotation.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "collectives/device_choice.hpp"
#include "collectives/nccl_policy.hpp"

using namespace opbench;

TEST_CASE(
    "a rank's GPU: --device, then $NCCL_TESTS_DEVICE, then its local rank, then its only GPU") {
  // 8 GPUs visible, 8 ranks per node: local rank 3 takes GPU 3 (+ offset).
  CHECK(choose_rank_device(8, 3, 8, 0, std::nullopt, nullptr).device == 3);
  CHECK(choose_rank_device(8, 3, 4, 4, std::nullopt, nullptr).device == 7);
  // srun --gpus-per-task=1 (or a CUDA_VISIBLE_DEVICES wrapper): each rank sees one GPU, device 0.
  auto one = choose_rank_device(1, 5, 8, 0, std::nullopt, nullptr);
  CHECK(one.device == 0);
  CHECK(one.how == "the one GPU this rank sees");
  // The flag and nccl-tests' variable win, and must exist.
  CHECK(choose_rank_device(8, 3, 8, 0, 6, "2").device == 6);
  CHECK(choose_rank_device(8, 3, 8, 0, std::nullopt, "2").device == 2);
  CHECK_THAT(choose_rank_device(2, 0, 1, 0, std::nullopt, "5").error,
             Catch::Contains("$NCCL_TESTS_DEVICE=5 asks for GPU 5, but this rank sees 2"));
  CHECK_THAT(choose_rank_device(2, 0, 1, 0, std::nullopt, "x").error,
             Catch::Contains("is not a GPU index"));
  // 8 ranks on a node with 4 GPUs: refused with the counts.
  auto short_of = choose_rank_device(4, 5, 8, 0, std::nullopt, nullptr);
  CHECK(short_of.device == -1);
  CHECK_THAT(short_of.error, Catch::Contains("8 ranks on this host need 8 GPUs") &&
                                 Catch::Contains("but a rank sees 4"));
  CHECK(choose_rank_device(0, 0, 1, 0, std::nullopt, nullptr).device == -1);
}

TEST_CASE("two ranks of one host on one GPU are found; the same bus id on two hosts is fine") {
  CHECK(ranks_sharing_a_gpu({"a 0000:1b:00.0", "a 0000:1c:00.0", "b 0000:1b:00.0"}).empty());
  auto shared = ranks_sharing_a_gpu({"a 0000:1b:00.0", "a 0000:1c:00.0", "a 0000:1b:00.0"});
  REQUIRE(shared.size() == 1);
  CHECK(shared[0] == std::pair<int, int>{0, 2});
}

TEST_CASE(
    "fp8 collectives: NCCL 2.24 at run time, and compute capability 9.0 on every rank to reduce") {
  CHECK_THAT(*nccl_fp8_refusal(22304, 90, false),
             Catch::Contains("NCCL 2.24.0 or newer") && Catch::Contains("runs 2.23.4"));
  CHECK_FALSE(nccl_fp8_refusal(22400, 80, false));  // moving fp8 needs no fp8 arithmetic
  CHECK_THAT(*nccl_fp8_refusal(22809, 80, true), Catch::Contains("lowest among the ranks is 8.0"));
  CHECK_FALSE(nccl_fp8_refusal(22809, 90, true));
  CHECK(nccl_has_nvlink_centric_sched(22809));
  CHECK_FALSE(nccl_has_nvlink_centric_sched(22703));
}

TEST_CASE("each call takes the next slice of the buffers, as nccl-tests' startColl shifts them") {
  // 1 MiB calls in 32 MiB buffers: 32 slices, then round again.
  const std::size_t mib = 1 << 20;
  CHECK(rotation_offset(mib, 32 * mib, 0) == 0);
  CHECK(rotation_offset(mib, 32 * mib, 5) == 5 * mib);
  CHECK(rotation_offset(mib, 32 * mib, 33) == mib);
  // 3 MiB calls in 32 MiB: 10 slices, the last 2 MiB unused.
  CHECK(rotation_offset(3 * mib, 32 * mib, 9) == 27 * mib);
  CHECK(rotation_offset(3 * mib, 32 * mib, 10) == 0);
  CHECK(rotation_offset(32 * mib, 32 * mib, 7) == 0);  // the largest call never moves
  CHECK(rotation_offset(0, 32 * mib, 7) == 0);
}

namespace {

// Records the teardown as NcclCommunicator's steps would run it.
struct RecordedTeardown final : NcclTeardownSteps {
  bool graph = false;
  std::vector<std::string> order;
  bool holds_graph() const override { return graph; }
  void synchronize_stream() override { order.push_back("synchronize stream"); }
  void release_graph() override {
    order.push_back("release graph");
    graph = false;
  }
  void destroy_communicator() override { order.push_back("ncclCommDestroy"); }
  void abort_communicator() override { order.push_back("ncclCommAbort"); }
};

}  // namespace

TEST_CASE("NCCL teardown: a -G graph is released before the communicator it references") {
  // ncclCommDestroy and ncclCommAbort wait until every graph that captured NCCL calls is gone:
  // destroying the communicator first hangs the run at its end.
  RecordedTeardown with_graph;
  with_graph.graph = true;
  nccl_teardown(with_graph, NcclTeardown::destroy);
  CHECK(with_graph.order ==
        std::vector<std::string>{"synchronize stream", "release graph", "ncclCommDestroy"});

  // After an error nothing waits on the stream (a dead peer would keep it busy forever).
  RecordedTeardown aborted;
  aborted.graph = true;
  nccl_teardown(aborted, NcclTeardown::abort);
  CHECK(aborted.order == std::vector<std::string>{"release graph", "ncclCommAbort"});

  // Without -G there is no graph to release and nothing to wait for.
  RecordedTeardown plain;
  nccl_teardown(plain, NcclTeardown::destroy);
  CHECK(plain.order == std::vector<std::string>{"ncclCommDestroy"});
  RecordedTeardown plain_abort;
  nccl_teardown(plain_abort, NcclTeardown::abort);
  CHECK(plain_abort.order == std::vector<std::string>{"ncclCommAbort"});
}

TEST_CASE("ncclConfig_t.graphUsageMode: 1 with -G, 0 without, only where NCCL has the field") {
  // nccl-tests: 1 with CUDA graphs, 0 without, when built with NCCL 2.29 or newer.
  CHECK(nccl_graph_usage_mode(22900, 22900, true) == std::optional<int>(1));
  CHECK(nccl_graph_usage_mode(22907, 23001, false) == std::optional<int>(0));
  // 2.28.9 (installed here) has no such field, at build or at run time: NCCL's default stays.
  CHECK_FALSE(nccl_graph_usage_mode(22809, 22809, true));
  CHECK_FALSE(nccl_graph_usage_mode(22900, 22809, true));  // built newer, running older
  CHECK_FALSE(nccl_graph_usage_mode(22809, 22907, false));
}

TEST_CASE("an NCCL communicator destroyed while an error unwinds is aborted, not destroyed") {
  // ncclCommDestroy waits for the peers (an intra-node collective); an error escaping a case
  // destroyed the communicators on the way to MPI_Abort, with no watchdog left
  CHECK(teardown_at_destruction(0) == NcclTeardown::destroy);
  CHECK(teardown_at_destruction(1) == NcclTeardown::abort);
}

TEST_CASE("all_to_all is NCCL's ncclAlltoAll where built and running NCCL have it, as nccl-tests") {
  CHECK(nccl_native_all_to_all(22809, 22809));
  CHECK_FALSE(nccl_native_all_to_all(22809, 22703));  // torch's older NCCL loaded at run time
  CHECK_FALSE(nccl_native_all_to_all(22703, 22809));  // headers without it
}
