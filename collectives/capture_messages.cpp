#include "collectives/capture_messages.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/capture_tables.hpp"
#include "common/error.hpp"

namespace opbench {

std::vector<CapturedMessage> captured_messages(const ShapeSource& source, std::optional<int> rank,
                                               std::vector<std::string>* left_out) {
  const std::vector<CapturedShape> shapes = read_capture_shapes(
      {source,
       rank,
       {"collective", "p2p"},
       {"api", "op", "dtype", "bytes", "comm_size", "redop", "placement", "comm_stride"}});
  std::vector<CapturedMessage> out;  // in the order read: largest in-job total first
  for (const CapturedShape& shape : shapes) {
    const std::string &api = shape.key[0], &op = shape.key[1], &dtype = shape.key[2];
    const std::int64_t bytes = std::stoll(shape.key[3]), comm_size = std::stoll(shape.key[4]);
    const std::string& redop = shape.key[5];
    const std::string what = fmt::format("{} {} {} B", api, op, bytes);
    auto leave = [&](const std::string& why) {
      if (left_out) left_out->push_back(what + ": " + why);
    };
    CapturedMessage msg;
    msg.api = api;
    try {
      // bench_ccl's ops by the capture's names; send_recv is bench_ccl's ring
      const auto ops = parse_coll_ops(op);
      if (ops.size() != 1) throw bad_input(op);
      msg.op = ops.front();
      msg.dtype = parse_dtype(dtype);
      msg.redop = redop.empty() ? RedOp::sum : parse_red_op(redop);
    } catch (const Error&) {
      leave("not an operation bench_ccl runs (op, dtype and reduction must be bench_ccl's)");
      continue;
    }
    if (comm_size < 1 || bytes < 1) {
      leave("no bytes or no communicator size");
      continue;
    }
    msg.size_bytes = static_cast<std::uint64_t>(bytes);
    msg.comm_size = static_cast<int>(comm_size);
    // per rank, as in_job_us is: every rank of a communicator makes the same calls
    msg.calls = (shape.calls + shape.tables / 2) / std::max<std::int64_t>(1, shape.tables);
    msg.placement = shape.key[6];
    msg.comm_stride = shape.key[7].empty() ? 0 : std::stoll(shape.key[7]);
    msg.in_job_us = shape.in_job_us();
    out.push_back(std::move(msg));
  }
  return out;
}

}  // namespace opbench
