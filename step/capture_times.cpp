#include "step/capture_times.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "attention/capture_attention.hpp"
#include "collectives/capture_messages.hpp"
#include "gemm/capture_cases.hpp"

namespace opbench {
namespace {

std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool, std::string>
gemm_key(const GemmProblem& p, std::int64_t batch) {
  return {p.m, p.n, p.k, batch, p.transa, p.transb, std::string(dtype_name(p.dtype))};
}

std::tuple<std::string, std::string, std::uint64_t, int> coll_key(CollOp op, DType dtype,
                                                                  std::uint64_t bytes, int ranks) {
  return {coll_op_name(op), std::string(dtype_name(dtype)), bytes, ranks};
}

std::string attention_key(const AttentionShape& s, AttentionPass pass) {
  return fmt::format("{} {} {}", s.dims(), attention_pass_name(pass), dtype_name(s.dtype));
}

// Two APIs (operators) of one shape in the job are one shape to the step: their calls add up and
// their in-job averages weigh by calls (the second used to overwrite the first, the larger).
template <typename Map>
void add_shape(Map& shapes, const typename Map::key_type& key, const typename Map::mapped_type& s) {
  auto [it, fresh] = shapes.emplace(key, s);
  if (fresh) return;
  auto& had = it->second;
  const std::int64_t calls = had.calls + s.calls;
  if (calls > 0)
    had.average_us = (had.average_us * static_cast<double>(had.calls) +
                      s.average_us * static_cast<double>(s.calls)) /
                     static_cast<double>(calls);
  had.calls = calls;
  if (had.api != s.api) had.api += " + " + s.api;
}

}  // namespace

CaptureTimes CaptureTimes::load(const ShapeSource& source) {
  CaptureTimes t;
  t.dir_ = source.path;
  CaptureSelection sel;
  sel.source = source;
  for (const GemmCase& c : capture_cases(sel, nullptr)) {
    if (!c.captured || !c.captured->in_job_us) continue;  // no call timed
    const GemmProblem& p = c.problem;
    add_shape(t.gemms_, gemm_key(p, p.batch),
              {c.captured->api, c.captured->calls, *c.captured->in_job_us});
  }
  for (const AttentionCase& c : capture_attention_cases(source, std::nullopt, nullptr)) {
    if (!c.captured->in_job_us) continue;
    add_shape(t.attention_, attention_key(c.shape, c.pass),
              {c.captured->api, c.captured->calls, *c.captured->in_job_us});
  }
  for (const CapturedShape& shape :
       read_capture_shapes({source, std::nullopt, {"memory_bound"}, {"api"}})) {
    const bool optimizer = shape.key[0].rfind("aten::_foreach_", 0) == 0 ||
                           shape.key[0].rfind("aten::_fused_adam", 0) == 0;
    (optimizer ? t.families_.optimizer_us : t.families_.memop_us) += shape.job_us;
    (optimizer ? t.families_.optimizer_calls : t.families_.memop_calls) += shape.calls;
  }
  for (const CapturedMessage& msg : captured_messages(source, std::nullopt, nullptr)) {
    if (!msg.in_job_us) continue;
    add_shape(t.collectives_, coll_key(msg.op, msg.dtype, msg.size_bytes, msg.comm_size),
              {msg.api, msg.calls, *msg.in_job_us});
  }
  return t;
}

std::optional<OperatorTime> CaptureTimes::find(const StepOperator& op) const {
  auto time = [&](const Shape& s, double factor, const std::string& what) {
    OperatorTime t;
    t.time_us = s.average_us * factor;
    t.source = fmt::format("{}: {} {}, in-job average of {} call{}{}", dir_, s.api, what, s.calls,
                           s.calls == 1 ? "" : "s",
                           factor != 1 ? fmt::format(" x {} entries", factor) : "");
    t.origin = "captured";
    return t;
  };
  if (op.family == StepFamily::gemm) {
    const GemmProblem& p = op.gemm;
    const std::string dims = fmt::format("{}x{}x{} {}", p.m, p.n, p.k, p.layout());
    const auto exact = gemms_.find(gemm_key(p, p.batch));
    if (exact != gemms_.end()) return time(exact->second, 1, dims);
    const auto entry = gemms_.find(gemm_key(p, 1));
    if (p.batch > 1 && entry != gemms_.end())
      return time(entry->second, static_cast<double>(p.batch), dims);
    return std::nullopt;
  }
  if (op.family == StepFamily::attention) {
    const std::string what =
        fmt::format("{} {}", op.attention.dims(), attention_pass_name(op.attention_pass));
    auto it = attention_.find(attention_key(op.attention, op.attention_pass));
    if (it != attention_.end()) return time(it->second, 1, what);
    // A job that repeats each K/V head for its query heads before the fused kernel (Hugging
    // Face's repeat_kv, bench/peers/torch_train_step.py) runs this attention, FLOPs and all,
    // with as many K/V heads as query heads: that is the shape its trace or capture shows.
    if (op.attention.heads_kv < op.attention.heads_q) {
      AttentionShape expanded = op.attention;
      expanded.heads_kv = expanded.heads_q;
      it = attention_.find(attention_key(expanded, op.attention_pass));
      if (it != attention_.end())
        return time(it->second, 1,
                    fmt::format("{}, run by the job with K/V expanded to {} heads", what,
                                expanded.heads_kv));
    }
    return std::nullopt;
  }
  if (op.family == StepFamily::experts && op.moe_impl == MoeImpl::loop) return expert_loop_time(op);
  if (op.family == StepFamily::collective) {
    const StepCollective& c = op.collective;
    const auto it = collectives_.find(coll_key(
        c.op, c.dtype, static_cast<std::uint64_t>(c.size_bytes), static_cast<int>(c.group_size)));
    if (it != collectives_.end())
      return time(it->second, 1, fmt::format("{} B over {} ranks", c.size_bytes, c.group_size));
  }
  return std::nullopt;
}

std::optional<double> CaptureTimes::steps_held(const std::vector<StepOperator>& ops) const {
  std::map<GemmKey, std::int64_t> planned;  // a shape's calls in one step: operators may share it
  for (const StepOperator& op : ops)
    if (op.family == StepFamily::gemm) planned[gemm_key(op.gemm, op.gemm.batch)] += op.count;
  std::vector<double> ratios;
  for (const auto& [key, calls] : planned) {
    const auto it = gemms_.find(key);
    if (it != gemms_.end() && calls > 0)
      ratios.push_back(static_cast<double>(it->second.calls) / static_cast<double>(calls));
  }
  if (ratios.empty()) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  const std::size_t n = ratios.size();
  return n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
}

// A job that loops over its experts calls one GEMM per expert at the tokens the router gave it,
// which change from layer to layer and step to step: no captured shape is the plan's balanced
// one. The job's GEMMs that differ from an expert's only in the tokens' dimension (m in fprop and
// dgrad, k in wgrad; the shared experts' too, at every token) say how fast the job ran that
// GEMM: each expert's time is their in-job average at its tokens, interpolated linearly between
// the nearest captured token counts on either side (a GEMM's time is close to affine in one
// dimension over a short range); past the largest, scaled in proportion from it; below the
// smallest, the smallest's own (a small GEMM's fixed cost and tile rounding do not shrink with it).
std::optional<OperatorTime> CaptureTimes::expert_loop_time(const StepOperator& op) const {
  if (op.experts.tokens.empty()) return std::nullopt;
  const bool wgrad = op.experts.pass == GemmPass::wgrad;
  // Every expert of the call shares the GEMM's other dimensions: expert 0's say which they are.
  const GemmProblem first = op.experts.expert(0);
  std::map<std::int64_t, const Shape*> curve;  // tokens -> the job's shape
  for (const auto& [key, shape] : gemms_) {
    const auto& [m, n, k, batch, ta, tb, dtype] = key;
    if (batch == 1 && ta == first.transa && tb == first.transb &&
        dtype == dtype_name(first.dtype) && n == first.n && (wgrad ? m == first.m : k == first.k))
      curve[wgrad ? k : m] = &shape;
  }
  if (curve.empty()) return std::nullopt;
  double total_us = 0;
  std::int64_t shapes = 0, calls = 0;
  std::map<std::int64_t, const Shape*> seen;  // every captured token count used
  for (const std::int64_t tokens : op.experts.tokens) {
    if (tokens == 0) continue;  // no GEMM: wgrad's zeroed gradient is not timed
    const auto above = curve.lower_bound(tokens);
    if (above == curve.end()) {  // past the largest: in proportion to it
      const auto largest = std::prev(above);
      total_us += largest->second->average_us * static_cast<double>(tokens) /
                  static_cast<double>(largest->first);
      seen.insert(*largest);
    } else if (above->first == tokens || above == curve.begin()) {  // captured, or below them all
      total_us += above->second->average_us;
      seen.insert(*above);
    } else {
      const auto below = std::prev(above);
      const double f = static_cast<double>(tokens - below->first) /
                       static_cast<double>(above->first - below->first);
      total_us +=
          below->second->average_us + f * (above->second->average_us - below->second->average_us);
      seen.insert(*below);
      seen.insert(*above);
    }
  }
  if (seen.empty()) return std::nullopt;
  std::string api;
  for (const auto& [tokens, shape] : seen) {
    calls += shape->calls;
    ++shapes;
    if (api.find(shape->api) == std::string::npos) api += (api.empty() ? "" : " + ") + shape->api;
  }
  OperatorTime t;
  t.time_us = total_us;
  t.source = fmt::format(
      "{}: {} expert GEMMs ({} n {}, the tokens' dimension varying) at their tokens from {} of "
      "the job's {} shapes, in-job averages of {} calls",
      dir_, op.experts.experts(), first.layout(), first.n, shapes, api, calls);
  t.origin = "captured";
  return t;
}

}  // namespace opbench
