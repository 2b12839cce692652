#include "gemm/gemm_cases.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

constexpr std::int64_t kMaxGemmDim = std::int64_t{1} << 31;

bool read_transpose(JsonEntry& e, const std::string& key) {
  if (!e.has(key)) {
    e.get_optional_string(key);  // marks the key as known
    return false;
  }
  std::string v = to_lower(e.get_string(key));
  if (v == "n") return false;
  if (v == "t") return true;
  e.fail(key, fmt::format("'{}' is not N or T", v));
}

std::pair<bool, bool> parse_layout(const std::string& layout) {
  std::string l = to_lower(layout);
  if (l.size() != 2 || (l[0] != 'n' && l[0] != 't') || (l[1] != 'n' && l[1] != 't'))
    throw bad_input(fmt::format("--layout: '{}' is not one of NN, NT, TN, TT", layout));
  return {l[0] == 't', l[1] == 't'};
}

// Where the routed tokens land: the EP group's per-expert counts and its most loaded rank.
struct Routed {
  std::vector<std::int64_t> group;
  RankLoad busiest;
};

Routed route(const ModelConfig& model, const MoeRun& moe, std::int64_t tokens_per_rank) {
  const auto& e = *model.moe;
  if (moe.ep < 1) throw bad_input(fmt::format("--ep: must be at least 1, got {}", moe.ep));
  if (e.n_routed_experts % moe.ep != 0)
    throw bad_input(fmt::format("--ep {}: does not divide the {} routed experts of model '{}'",
                                moe.ep, e.n_routed_experts, model.name));
  Routed r;
  r.group =
      route_tokens(moe.routing, e.n_routed_experts, e.num_experts_per_tok, moe.ep, tokens_per_rank);
  r.busiest = busiest_rank(r.group, moe.ep);
  return r;
}

// The expert rows of a routed expert layer: one per pass and implementation.
void add_expert_cases(const GemmCase& base, const LinearLayer& layer, const ModelConfig& model,
                      const MoeRun& moe, const Routed& routed, DType dtype, GemmPass pass,
                      std::vector<GemmCase>& out) {
  for (MoeImpl impl : moe.impls) {
    GemmCase c = base;
    ExpertCase x;
    x.impl = impl;
    x.ep = moe.ep;
    x.routing = moe.routing.text;
    x.rank = routed.busiest.rank;
    x.experts = ExpertGemm{pass, layer.N, layer.K, routed.busiest.counts, dtype};
    x.group_tokens = routed.group;
    c.problem = x.experts.padded();
    c.calls_per_step = model.moe_layers();
    const std::string etp =
        moe.etp > 0 && moe.etp != base.tp ? fmt::format(", etp {}", moe.etp) : std::string();
    c.note =
        fmt::format("{} routing, ep {}{}: rank {} is the most loaded ({} to {} tokens per expert)",
                    moe.routing.text, moe.ep, etp, x.rank, routed.busiest.min, routed.busiest.max);
    c.experts = std::move(x);
    out.push_back(std::move(c));
  }
}

}  // namespace

std::vector<GemmCase> model_cases(const ModelConfig& model, std::int64_t tp,
                                  const std::vector<std::int64_t>& micro_batches,
                                  const std::vector<std::int64_t>& seqlens,
                                  const std::vector<GemmPass>& passes,
                                  const std::vector<DType>& dtypes, const MoeRun& moe,
                                  bool separate_projections) {
  std::vector<GemmCase> out;
  // No --seq-len: the model's own (0 tells ParallelConfig so).
  const std::vector<std::int64_t> lengths =
      seqlens.empty() ? std::vector<std::int64_t>{0} : seqlens;
  for (std::int64_t seqlen : lengths)
    for (std::int64_t mb : micro_batches) {
      ParallelConfig parallel{tp, mb, seqlen, separate_projections, moe.etp};
      std::optional<Routed> routed;
      if (model.moe)
        routed = route(model, moe,
                       expert_routed_tokens(mb * (seqlen > 0 ? seqlen : model.seqlen), tp,
                                            parallel.expert_tp()));
      for (const auto& layer : model_linear_layers(model, parallel))
        for (DType dtype : dtypes)
          for (GemmPass pass : passes) {
            GemmCase c;
            c.report = model.name;
            c.model = model.name;
            c.gemm = layer.name;
            c.pass = pass_name(pass);
            c.problem = pass_problem(layer, pass, dtype);
            c.calls_per_step = layer.calls_per_step;
            c.tp = tp;
            c.micro_batch = mb;
            c.seqlen = seqlen > 0 ? seqlen : model.seqlen;
            c.note = layer.note;
            c.repeated_flops = layer.repeated_flops(c.problem.flops());
            if (layer.routed_expert)
              add_expert_cases(c, layer, model, moe, *routed, dtype, pass, out);
            else
              out.push_back(std::move(c));
          }
    }
  return out;
}

std::vector<GemmCase> shape_file_cases(const std::string& path, const std::vector<DType>& dtypes) {
  return shape_cases_from_json(load_json_file(path), path, dtypes);
}

std::vector<GemmCase> shape_cases_from_json(const nlohmann::json& doc, const std::string& path,
                                            const std::vector<DType>& dtypes) {
  std::vector<GemmCase> out;
  for_each_entry(doc, path, "name", [&](JsonEntry& e) {
    GemmCase c;
    c.report = "shapes";
    c.model = "shapes";
    c.gemm = e.get_string("name");
    c.problem.m = e.get_int("m", 1, kMaxGemmDim);
    c.problem.n = e.get_int("n", 1, kMaxGemmDim);
    c.problem.k = e.get_int("k", 1, kMaxGemmDim);
    c.problem.batch = e.get_optional_int("batch", 1, kMaxGemmDim).value_or(1);
    c.problem.transa = read_transpose(e, "transa");
    c.problem.transb = read_transpose(e, "transb");
    std::vector<DType> entry_dtypes = dtypes;
    if (auto d = e.get_optional_string("dtype")) {
      try {
        entry_dtypes = {parse_dtype(*d)};
      } catch (const Error& err) {
        e.fail("dtype", err.what());
      }
    }
    e.reject_unknown_keys();
    for (DType dtype : entry_dtypes) {
      GemmCase typed = c;
      typed.problem.dtype = dtype;
      typed.problem.out_dtype = gemm_output_dtype(dtype);
      out.push_back(std::move(typed));
    }
  });
  return out;
}

std::vector<GemmCase> sweep_cases(const std::vector<std::int64_t>& ms,
                                  const std::vector<std::int64_t>& ns,
                                  const std::vector<std::int64_t>& ks, std::int64_t batch,
                                  const std::string& layout, const std::vector<DType>& dtypes) {
  auto [transa, transb] = parse_layout(layout);
  std::vector<GemmCase> out;
  for (DType dtype : dtypes)
    for (auto m : ms)
      for (auto n : ns)
        for (auto k : ks) {
          GemmCase c;
          c.report = "sweep";
          c.model = "sweep";
          c.gemm = "sweep";
          c.problem =
              GemmProblem{m, n, k, batch, transa, transb, dtype, gemm_output_dtype(dtype), false};
          out.push_back(std::move(c));
        }
  return out;
}

}  // namespace opbench
