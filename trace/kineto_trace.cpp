#include "trace/kineto_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "trace/step_phase.hpp"

namespace opbench::trace {
namespace {

using json = nlohmann::json;

// One call of an operator that owns time: a replayed case, or an operator no benchmark
// replays (its self time on the CPU; its kernels' time on the GPU).
struct Instance {
  std::uint32_t key = 0;  // into State::keys
  bool replayed = false;
  double cpu_ns = 0;  // a replayed call's whole duration; another's own (less its children)
  double gpu_ns = 0;
  std::uint32_t kernels = 0;
  Phase phase = Phase::forward;  // of the step (trace/step_phase.hpp)
};

// An operator still open on its thread (a trace lists a thread's operators by start time).
struct Open {
  double end_us = 0;
  std::uint32_t instance = 0;
  bool inside_replayed = false;  // it is a replayed call, or inside one: its children belong to it
  bool owner = false;            // it made its instance (not a call inside a replayed one)
  // its key is a collective from the execution trace's shapes, with the group size assumed: a
  // child's record_param_comms, which states the group, replaces it (comm_hint_name: its api)
  bool comm_hint = false;
  std::string comm_hint_name;
  double children_us = 0;
  double dur_us = 0;
  Phase phase = Phase::forward;
};

// A CUDA runtime or driver call that carries a correlation id (a launch, a copy, a memset).
struct LaunchCall {
  std::int64_t correlation = 0, external = 0;  // External id 0: the trace names none
  double end_us = 0;                           // when it returned; NaN without a timestamp
};

struct Kernel {
  std::int64_t external = 0, correlation = 0, device = 0;
  double start_us = 0, dur_ns = 0;
};

std::int64_t integer(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.get<std::int64_t>();
  if (v.is_number_float()) return static_cast<std::int64_t>(v.get<double>());
  if (v.is_string()) {
    try {
      return std::stoll(v.get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return 0;
}

double number(const json& v) {
  if (v.is_number()) return v.get<double>();
  return 0.0;
}

const json* find(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string text(const json* v) {
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// A member's value, or `otherwise` where it is missing or `object` is no object: a trace's
// "args" may be null or an array, where nlohmann's value() would throw.
json member_or(const json& object, const char* key, json otherwise) {
  const json* v = find(object, key);
  return v != nullptr ? *v : otherwise;
}

// "Input Dims", "Input type" and "Input Strides" into operands.
std::vector<Operand> operands(const json& args) {
  std::vector<Operand> out;
  const json* dims = find(args, "Input Dims");
  if (dims == nullptr || !dims->is_array()) return out;
  const json* types = find(args, "Input type");
  const json* strides = find(args, "Input Strides");
  out.resize(dims->size());
  for (std::size_t i = 0; i < dims->size(); ++i) {
    Operand& o = out[i];
    const json& d = (*dims)[i];
    if (d.is_array() &&
        std::all_of(d.begin(), d.end(), [](const json& x) { return x.is_number(); })) {
      o.numel = 1;
      for (const json& x : d) {
        o.dims.push_back(integer(x));
        o.numel *= o.dims.back();
      }
    }
    if (types != nullptr && types->is_array() && i < types->size() && (*types)[i].is_string())
      o.type = (*types)[i].get<std::string>();
    if (strides != nullptr && strides->is_array() && i < strides->size() && o.dims.size() >= 2) {
      const json& st = (*strides)[i];
      if (st.is_array() && st.size() == o.dims.size()) {
        const std::size_t r = o.dims.size();
        const std::int64_t rows = o.dims[r - 2], s_row = integer(st[r - 2]),
                           s_col = integer(st[r - 1]);
        // column-major storage of the last two dims: a transposed view
        o.transposed = s_col != 1 && s_row == 1 && rows > 1;
        if (o.dims[r - 1] == 1) o.transposed = false;
      }
    }
  }
  return out;
}

std::vector<std::string> concrete_inputs(const json& args) {
  std::vector<std::string> out;
  if (const json* c = find(args, "Concrete Inputs"); c != nullptr && c->is_array())
    for (const json& v : *c)
      out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

}  // namespace

struct KinetoReader::State {
  std::string path;
  World world;
  std::uint64_t assumed_group = 0;  // communication calls whose group size is world.size
  const std::unordered_map<std::int64_t, ShapeHint>* hints = nullptr;
  std::uint64_t hinted = 0;
  bool comm_hinted = false;  // classify's key was a collective from an execution-trace hint
  std::unique_ptr<TraceTable> table = std::make_unique<TraceTable>();
  std::vector<capture::CaptureKey> keys;
  std::unordered_map<capture::CaptureKey, std::uint32_t, capture::CaptureKeyHash> key_index;
  std::vector<Instance> instances;
  std::vector<std::pair<std::int64_t, std::uint32_t>> links;  // External id -> instance
  std::vector<LaunchCall> launches;                           // by correlation once sorted
  std::vector<Kernel> kernels;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<Open>> threads;
  std::map<std::pair<std::int64_t, std::int64_t>, double> last_start;
  std::uint64_t ops = 0, ops_with_shapes = 0, out_of_order = 0, overrun = 0, unknown_layout = 0,
                no_timestamp = 0, unknown_causal = 0;
  std::int64_t first_pid = -1;
  double overlap_us = 0;  // kernels of one device running at once, beyond the first
  bool rank_from_trace = false;
  int late_world = 0;   // a distributedInfo world_size read after the events (an on-demand trace)
  bool phases = false;  // an operator of the backward or the optimizer's step was seen
  bool optimizer_seen = false;  // one inside Optimizer.step#: torch.optim's annotation

  std::uint32_t key_of(const capture::CaptureKey& k) {
    const auto [it, added] = key_index.emplace(k, static_cast<std::uint32_t>(keys.size()));
    if (added) keys.push_back(k);
    return it->second;
  }

  std::uint32_t new_instance(const capture::CaptureKey& k, bool replayed, Phase phase) {
    instances.push_back({key_of(k), replayed, 0, 0, 0, phase});
    return static_cast<std::uint32_t>(instances.size() - 1);
  }

  // A replayed call owns its whole duration (what it calls inside is part of it), another
  // operator its own time, less its children's.
  void close(const Open& o) {
    if (!o.owner) return;
    Instance& inst = instances[o.instance];
    double own_us = inst.replayed ? o.dur_us : o.dur_us - o.children_us;
    // children that outlast their parent (events out of order, clocks of different threads):
    // the nesting is wrong, and a negative time would break the capture file's rules
    if (own_us < 0) {
      ++overrun;
      own_us = 0;
    }
    inst.cpu_ns += own_us * 1e3;
  }

  // A collective as the trace's communication metadata states it (record_param_comms'
  // "Collective name", message sizes, "Group size", "Global rank stride": written only for a group
  // whose ranks are evenly spaced), keyed under `api`; nullopt without it.
  std::optional<capture::CaptureKey> stated_comm(const std::string& api, const json& args) {
    const json* coll = find(args, "Collective name");
    if (coll == nullptr || !coll->is_string()) return std::nullopt;
    const json* stated = find(args, "Group size");
    const bool known = stated != nullptr && integer(*stated) > 0;
    const int group = known ? static_cast<int>(integer(*stated)) : world.size;
    const auto c = comm_call(
        coll->get<std::string>(), integer(member_or(args, "In msg nelems", json(0))),
        integer(member_or(args, "Out msg nelems", json(0))), group, text(find(args, "dtype")));
    if (!c) return std::nullopt;
    if (!known) ++assumed_group;
    const json* stride = find(args, "Global rank stride");
    return table->comm_key(api, *c, group, stride != nullptr ? stated_ranks(integer(*stride)) : 0);
  }

  // The key of an operator: its case when a benchmark replays it, else its own name.
  std::pair<capture::CaptureKey, bool> classify(const std::string& name, const json& args) {
    TraceTable& t = *table;
    const std::vector<Operand> in = operands(args);
    if (!in.empty()) ++ops_with_shapes;
    if (in.empty() && hints != nullptr) {  // its shapes from the execution trace beside it
      const json* rf = find(args, "Record function id");
      const auto h = rf != nullptr ? hints->find(integer(*rf)) : hints->end();
      if (h != hints->end()) {
        ++hinted;
        if (h->second.gemm) return {t.gemm_key(name, *h->second.gemm), true};
        if (h->second.attention) return {t.attention_key(name, *h->second.attention), true};
        if (h->second.comm) {
          if (!h->second.comm_size_stated) {  // assumed: a record_param_comms child may state it
            ++assumed_group;
            comm_hinted = true;
          }
          return {t.comm_key(name, *h->second.comm, h->second.comm_size, h->second.comm_stride),
                  true};
        }
        if (!h->second.unknown_dtype.empty()) t.count_unknown_dtype(name, h->second.unknown_dtype);
      }
    }
    std::string unread;  // a product's or attention's dtype opbench does not benchmark
    if (auto g = gemm_call(name, in, &unread)) {
      if (!g->layout_known) ++unknown_layout;
      return {t.gemm_key(name, *g), true};
    }
    if (auto a = attention_call(name, in, concrete_inputs(args), {}, &unread)) {
      if (!a->causal) ++unknown_causal;
      return {t.attention_key(name, *a), true};
    }
    if (!unread.empty()) t.count_unknown_dtype(name, unread);
    if (auto c = stated_comm(name, args)) return {*c, true};
    if (is_step_marker(name))
      return {t.unreplayed_key("ProfilerStep (time between operators)", "other"), false};
    return {t.unreplayed_key(name, unreplayed_kind(name)), false};
  }

  void op(const json& e) {
    const std::string name = text(find(e, "name"));
    const double ts = number(e.value("ts", json(0.0))), dur = number(e.value("dur", json(0.0)));
    const std::pair<std::int64_t, std::int64_t> thread{integer(e.value("pid", json(0))),
                                                       integer(e.value("tid", json(0)))};
    if (first_pid < 0) first_pid = thread.first;
    const json empty = json::object();
    const json* args_p = find(e, "args");
    const json& args = args_p != nullptr ? *args_p : empty;
    ++ops;
    if (is_step_marker(name)) ++table->steps;
    auto& stack = threads[thread];
    double& last = last_start[thread];
    if (ts < last) ++out_of_order;
    last = std::max(last, ts);
    while (!stack.empty() && stack.back().end_us <= ts) {
      close(stack.back());
      stack.pop_back();
    }
    Open o;
    o.end_us = ts + dur;
    o.dur_us = dur;
    o.phase = phase_of(name, stack.empty() ? Phase::forward : stack.back().phase);
    if (o.phase != Phase::forward) phases = true;  // opened here or by an enclosing operator
    if (o.phase == Phase::optimizer) optimizer_seen = true;
    if (!stack.empty()) stack.back().children_us += dur;
    if (!stack.empty() && stack.back().inside_replayed) {
      o.instance = stack.back().instance;  // its kernels are the replayed call's
      o.inside_replayed = true;
      Open& parent = stack.back();
      if (parent.comm_hint) {  // the stated group beats the one assumed for the hint
        if (auto stated = stated_comm(parent.comm_hint_name, args)) {
          instances[o.instance].key = key_of(*stated);
          --assumed_group;  // the hint's assumption, no longer made
          parent.comm_hint = false;
        }
      }
    } else {
      const auto [key, replayed] = classify(name, args);
      o.instance = new_instance(key, replayed, o.phase);
      o.inside_replayed = replayed;
      o.owner = true;
      if (std::exchange(comm_hinted, false)) {
        o.comm_hint = true;
        o.comm_hint_name = name;
      }
    }
    if (const json* ext = find(args, "External id")) links.emplace_back(integer(*ext), o.instance);
    stack.push_back(o);
  }

  void gpu(const json& e) {
    const json empty = json::object();
    const json* args_p = find(e, "args");
    const json& args = args_p != nullptr ? *args_p : empty;
    const double ts = number(e.value("ts", json(0.0))), dur = number(e.value("dur", json(0.0)));
    if (!(ts > 0)) {   // no timestamp (pytorch/kineto#109): its gap to the next kernel would be
      ++no_timestamp;  // the whole epoch, charged as idle
      return;
    }
    Kernel k;
    k.external = integer(member_or(args, "External id", json(0)));
    k.correlation = integer(member_or(args, "correlation", json(0)));
    k.start_us = ts;
    k.dur_ns = dur * 1e3;
    k.device = integer(member_or(args, "device", member_or(e, "pid", json(0))));
    kernels.push_back(k);
  }

  std::unique_ptr<TraceTable> finish();
};

KinetoReader::KinetoReader(const std::string& path, const World& world,
                           const std::unordered_map<std::int64_t, ShapeHint>* hints)
    : s_(std::make_unique<State>()) {
  s_->path = path;
  s_->world = world;
  s_->hints = hints;
  s_->table->path = path;
}
KinetoReader::~KinetoReader() = default;

void KinetoReader::member(const std::string& key, const nlohmann::json& value) {
  if (key == "distributedInfo" && value.is_object()) {
    if (const json* r = find(value, "rank")) {
      s_->table->facts.rank = std::to_string(integer(*r));
      s_->rank_from_trace = true;
    }
    if (const json* w = find(value, "world_size"); w != nullptr && integer(*w) > 0) {
      // after the events, the calls it would have sized are read already
      if (s_->ops > 0)
        s_->late_world = static_cast<int>(integer(*w));
      else
        s_->world = {static_cast<int>(integer(*w)), "this trace's distributedInfo world_size"};
    }
  }
}

void KinetoReader::event(nlohmann::json& e) {
  if (!e.is_object() || text(find(e, "ph")) != "X") return;
  const std::string cat = text(find(e, "cat"));
  // Two annotations nest operators as an operator does: the step marker, and the optimizer's
  // step (the phase of the operators inside it, trace/step_phase.hpp)
  auto nests = [&] {
    const std::string name = text(find(e, "name"));
    return is_step_marker(name) || is_optimizer_step(name);
  };
  if (cat == "cpu_op" || (cat == "user_annotation" && nests())) {
    s_->op(e);
  } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
    s_->gpu(e);
  } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
    if (const json* a = find(e, "args")) {
      const std::int64_t ext = integer(member_or(*a, "External id", json(0)));
      const std::int64_t corr = integer(member_or(*a, "correlation", json(0)));
      const double ts = number(e.value("ts", json(0.0))), dur = number(e.value("dur", json(0.0)));
      if (corr != 0)
        s_->launches.push_back(
            {corr, ext, ts > 0 ? ts + dur : std::numeric_limits<double>::quiet_NaN()});
    }
  }
}

std::unique_ptr<TraceTable> KinetoReader::finish() {
  return s_->finish();
}

std::unique_ptr<TraceTable> KinetoReader::State::finish() {
  TraceTable& t = *table;
  for (auto& [thread, stack] : threads)
    while (!stack.empty()) {
      close(stack.back());
      stack.pop_back();
    }
  if (ops == 0)
    throw bad_input(
        fmt::format("{}: a PyTorch profiler trace without operators (no cpu_op "
                    "event): profile with activities including ProfilerActivity.CPU",
                    path));
  if (ops_with_shapes == 0 && hinted == 0)
    throw NoShapes(fmt::format("{}: the trace records no operator shapes: profile with "
                               "torch.profiler.profile(record_shapes=True), or put the "
                               "execution trace of the same step beside it",
                               path),
                   t.facts.rank, static_cast<long>(first_pid));
  if (hinted > 0)
    t.notes.push_back(
        fmt::format("{} calls' shapes from the execution trace beside it (linked "
                    "by record-function id)",
                    hinted));
  if (first_pid >= 0) t.facts.pid = static_cast<long>(first_pid);
  const bool on_gpu = !kernels.empty();
  t.facts.source = on_gpu ? "trace:gpu" : "trace:cpu";
  if (on_gpu) {
    std::sort(links.begin(), links.end());
    std::sort(launches.begin(), launches.end(), [](const LaunchCall& a, const LaunchCall& b) {
      return a.correlation < b.correlation;
    });
    auto instance_of = [&](std::int64_t external) -> const std::uint32_t* {
      const auto it =
          std::lower_bound(links.begin(), links.end(), std::make_pair(external, std::uint32_t{0}));
      return it != links.end() && it->first == external ? &it->second : nullptr;
    };
    // Every kernel as a span on its device, with the operator that launched it and when
    std::map<std::int64_t, std::vector<GpuSpan>> spans;  // by device
    for (const Kernel& k : kernels) {
      // The launch that queued it (CUPTI gives every API call its own correlation id): its
      // External id where the kernel has none, and when it returned
      const auto l = std::lower_bound(launches.begin(), launches.end(), k.correlation,
                                      [](const LaunchCall& a, std::int64_t correlation) {
                                        return a.correlation < correlation;
                                      });
      const LaunchCall* launch =
          k.correlation != 0 && l != launches.end() && l->correlation == k.correlation ? &*l
                                                                                       : nullptr;
      const std::int64_t external =
          k.external != 0 || launch == nullptr ? k.external : launch->external;
      const std::uint32_t* i = external != 0 ? instance_of(external) : nullptr;
      GpuSpan& span = spans[k.device].emplace_back();
      span.start_us = k.start_us;
      span.end_us = k.start_us + k.dur_ns / 1e3;
      span.linked = i != nullptr;
      if (i != nullptr) {
        span.phase = instances[*i].phase;
        span.owner = *i;
      }
      if (launch != nullptr) span.launched_us = launch->end_us;
    }
    // GPU idle: the time, between a device's first and last kernel, when none ran; split by
    // the phase of the kernel each wait ended in where the trace shows the step's phases. The
    // gaps before kernels already queued count in their operators' time (idle_by_phase).
    double unlinked_ns = 0;
    std::uint64_t unlinked = 0;
    for (auto& [device, device_spans] : spans) {
      const PhaseIdle idle = idle_by_phase(device_spans);
      // kernels on several streams at once (a collective under a GEMM) are each counted whole:
      // the rows then sum to more than the device's span, by the overlap
      double rows_us = idle.total_us(), last_us = 0;
      for (const GpuSpan& span : device_spans) {
        const double ns = (span.end_us - span.start_us + span.queued_gap_us) * 1e3;
        rows_us += ns / 1e3;
        last_us = std::max(last_us, span.end_us);
        if (span.owner < 0) {
          unlinked_ns += ns;
          ++unlinked;
          continue;
        }
        instances[static_cast<std::size_t>(span.owner)].gpu_ns += ns;
        ++instances[static_cast<std::size_t>(span.owner)].kernels;
      }
      // (idle_by_phase sorted the spans by start)
      const double over = rows_us - (last_us - device_spans.front().start_us);
      if (over > 0.5) overlap_us += over;
      if (!phases) {
        t.record(t.unreplayed_key(fmt::format("(GPU {} idle)", device), "idle"),
                 idle.total_us() * 1e3);
        continue;
      }
      for (int p = 0; p < kPhases; ++p)
        if (idle.seen[p])
          t.record(t.unreplayed_key(
                       fmt::format("(GPU {} idle, {})", device, phase_name(static_cast<Phase>(p))),
                       "idle"),
                   idle.idle_us[p] * 1e3);
    }
    for (const Instance& inst : instances) {
      if (inst.kernels > 0)
        t.record(keys[inst.key], inst.gpu_ns);
      else if (inst.replayed)
        t.record_untimed(keys[inst.key], capture::Untimed::no_kernel);
    }
    if (unlinked > 0) {
      const auto key = t.unreplayed_key("(GPU work without an operator)", "other");
      for (std::uint64_t i = 0; i < unlinked; ++i)
        t.record(key, unlinked_ns / static_cast<double>(unlinked));
      t.notes.push_back(
          fmt::format("{} GPU kernels are linked to no operator of the trace", unlinked));
    }
  } else {
    for (const Instance& inst : instances)
      t.record(keys[inst.key], inst.cpu_ns);
  }
  if (phases && !optimizer_seen && !kernels.empty())
    t.notes.push_back(
        "a backward but no Optimizer.step# annotation (an optimizer outside torch.optim, or one "
        "run under torch.compile): the optimizer's kernels and the GPU's waits for them count "
        "with the forward's");
  if (overlap_us > 0)
    t.notes.push_back(fmt::format(
        "kernels on several streams ran at once for {:.1f} us (communication under compute): "
        "each is counted whole, so the rows sum to that much more than the devices' span",
        overlap_us));
  if (no_timestamp > 0)
    t.notes.push_back(
        fmt::format("{} GPU events without a timestamp (ts 0) left out: their time "
                    "is in no row, and no idle time is counted around them",
                    no_timestamp));
  if (out_of_order > 0 || overrun > 0)
    t.notes.push_back(fmt::format(
        "{} operators started before an earlier one of their thread, {} had children "
        "outlasting them (own time taken as 0): nesting, and so own times, are approximate",
        out_of_order, overrun));
  if (assumed_group > 0)
    t.notes.push_back(fmt::format(
        "{} communication calls whose trace records no group size (no \"Group size\", or "
        "shapes from the execution trace): communicator size {} assumed, {}{}",
        assumed_group, world.size, world.from,
        late_world > 0 && late_world != world.size
            ? fmt::format(" (its distributedInfo, world_size {}, comes after the events)",
                          late_world)
            : ""));
  if (unknown_layout > 0)
    t.notes.push_back(
        fmt::format("{} GEMM calls without Input Strides: taken as layout NN", unknown_layout));
  if (unknown_causal > 0)
    t.notes.push_back(
        fmt::format("{} attention calls without is_causal's value (no Concrete "
                    "Inputs): taken as not causal",
                    unknown_causal));
  t.note_unknown_dtypes();
  if (!rank_from_trace) t.notes.push_back("no distributedInfo: the rank comes from the file name");
  return std::move(table);
}

}  // namespace opbench::trace
