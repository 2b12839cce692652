#include "trace/execution_trace.hpp"

#include <fmt/format.h>

#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/error.hpp"

namespace opbench::trace {
namespace {

using json = nlohmann::json;

std::int64_t integer(const json& v) {
  return v.is_number() ? v.get<std::int64_t>() : 0;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// Elements of a recorded shape: a tensor's [d0, d1, ...], a list's [[...], [...]] (summed).
std::int64_t numel(const json& shape) {
  if (!shape.is_array() || shape.empty()) return 0;
  if (shape.front().is_array()) {
    std::int64_t n = 0;
    for (const json& s : shape)
      n += numel(s);
    return n;
  }
  std::int64_t n = 1;
  for (const json& d : shape)
    n *= integer(d);
  return n;
}

// Schema 1.0.x keeps inputs, input_shapes and input_types side by side on the node; 1.1 and
// later nest them: "inputs": {"values", "shapes", "types", "strides"}.
struct Columns {
  const json* values = nullptr;
  const json* shapes = nullptr;
  const json* types = nullptr;
  const json* strides = nullptr;
};

const json* member_of(const json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  const auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

// A node's attribute: a member of its own (schema 1.0.1: torch 1.13 to 2.2), or the value of its
// entry in the "attrs" list of {"name", "type", "value"} (1.0.2-chakra.0.0.4 and later: torch 2.3
// on, PyTorch's execution_trace_observer.cpp), where rf_id and op_schema moved.
const json* attribute(const json& node, const char* key) {
  if (const json* own = member_of(node, key)) return own;
  const json* attrs = member_of(node, "attrs");
  if (attrs == nullptr || !attrs->is_array()) return nullptr;
  for (const json& a : *attrs) {
    const json* name = member_of(a, "name");
    if (name != nullptr && name->is_string() && name->get<std::string>() == key)
      return member_of(a, "value");
  }
  return nullptr;
}

// A node's parent: "parent" (1.0.1), "ctrl_deps" (1.0.2-chakra and later).
std::int64_t parent_of(const json& node) {
  const json* parent = member_of(node, "parent");
  if (parent == nullptr) parent = member_of(node, "ctrl_deps");
  return parent != nullptr ? integer(*parent) : 0;
}

// A string member's text; "" where it is missing or not a string (nlohmann's value() throws).
std::string text_of(const json* v) {
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

Columns columns(const json& node, const char* side) {
  Columns c;
  const json* nested = member_of(node, side);
  if (nested != nullptr && nested->is_object()) {
    c.values = member_of(*nested, "values");
    c.shapes = member_of(*nested, "shapes");
    c.types = member_of(*nested, "types");
    c.strides = member_of(*nested, "strides");
  } else {
    const std::string s = side == std::string_view("inputs") ? "input" : "output";
    c.values = nested;
    c.shapes = member_of(node, (s + "_shapes").c_str());
    c.types = member_of(node, (s + "_types").c_str());
    c.strides = member_of(node, (s + "_strides").c_str());
  }
  return c;
}

const json& at(const json* list, std::size_t i) {
  static const json null;
  return list != nullptr && list->is_array() && i < list->size() ? (*list)[i] : null;
}

// A tensor value is [tensor id, storage id, offset, numel, element size, device].
std::int64_t tensor_id(const json& value) {
  return value.is_array() && value.size() >= 2 && value[0].is_number() ? integer(value[0]) : -1;
}
std::int64_t storage_id(const json& value) {
  return value.is_array() && value.size() >= 2 && value[1].is_number() ? integer(value[1]) : -1;
}

// Views that keep their input's storage order; the transposing ones flip it.
bool keeps_order(std::string_view name) {
  for (std::string_view v :
       {"aten::view", "aten::_reshape_alias", "aten::reshape", "aten::expand", "aten::unsqueeze",
        "aten::squeeze", "aten::select", "aten::slice", "aten::_unsafe_view", "aten::alias",
        "aten::detach", "aten::contiguous"})
    if (name == v) return true;
  return false;
}
long whole(const std::string& text) {
  try {
    return std::stol(text);
  } catch (const std::exception&) {
    return 0;
  }
}

bool transposes(std::string_view name, const std::vector<std::string>& scalars, std::size_t rank) {
  if (name == "aten::t" || name == "aten::numpy_T" || name == "aten::mT" || name == "aten::adjoint")
    return true;
  if (name != "aten::transpose" || scalars.size() < 3) return false;
  // transpose(self, dim0, dim1) swapping the last two dims
  long d0 = whole(scalars[1]), d1 = whole(scalars[2]);
  const long r = static_cast<long>(rank);
  if (d0 < 0) d0 += r;
  if (d1 < 0) d1 += r;
  return r >= 2 && ((d0 == r - 1 && d1 == r - 2) || (d0 == r - 2 && d1 == r - 1));
}

// A collective as PyTorch 2.4 and later state it on an execution trace's record_param_comms node
// (execution_trace_observer.cpp's getCommsNodeAttrs, pytorch#124674): the attrs
// collective_name, dtype, in_msg_nelems, out_msg_nelems, pg_size (the process group's size) and
// global_rank_stride (how far apart its ranks are). nullopt for older traces, which write no such
// attrs, and for ProcessGroupNCCL's "wait".
std::optional<ShapeHint> stated_comm(const json& n, const World& world) {
  const json* collective = attribute(n, "collective_name");
  if (collective == nullptr || !collective->is_string()) return std::nullopt;
  const json* size = attribute(n, "pg_size");
  auto whole_attr = [&](const char* key) {
    const json* v = attribute(n, key);
    return v != nullptr ? integer(*v) : 0;
  };
  ShapeHint h;
  h.comm_size_stated = size != nullptr && stated_ranks(integer(*size)) > 0;
  h.comm_size = h.comm_size_stated ? stated_ranks(integer(*size)) : world.size;
  h.comm_stride = stated_ranks(whole_attr("global_rank_stride"));
  h.comm = comm_call(collective->get<std::string>(), whole_attr("in_msg_nelems"),
                     whole_attr("out_msg_nelems"), h.comm_size, text_of(attribute(n, "dtype")));
  if (!h.comm) return std::nullopt;
  return h;
}

// The process group where an execution trace has no attrs for it: the inputs of a
// record_param_comms node (RECORD_PARAM_COMMS and RECORD_PARAM_COMMS_DATA in
// torch/csrc/distributed/c10d/ParamCommsUtils.hpp) have, across PyTorch's versions, the
// collective's name followed by its input and output split sizes (two lists, which nothing else
// precedes) and then nothing (the oldest: no size), the group's size, or its first global rank,
// rank stride and size, the newest with a bool (isAsyncOp) after it. WorkNCCL::wait's own record
// ("wait") gives its devices, not the group: not read.
struct StatedGroup {
  int size = 0;
  int stride = 0;  // 0 where the record does not say
};
std::optional<StatedGroup> legacy_group(const json* values) {
  if (values == nullptr || !values->is_array()) return std::nullopt;
  std::size_t n = values->size();
  if (n > 0 && (*values)[n - 1].is_boolean()) --n;  // isAsyncOp
  auto ints = [&](std::size_t from) {
    for (std::size_t i = from; i < n; ++i)
      if (!(*values)[i].is_number_integer()) return false;
    return true;
  };
  for (const std::size_t tail : {6, 4}) {  // name, splits, start, stride, size; name, splits, size
    if (n < tail) continue;
    const json& collective = (*values)[n - tail];
    if (!collective.is_string() || !(*values)[n - tail + 1].is_array() ||
        !(*values)[n - tail + 2].is_array() || !ints(n - tail + 3))
      continue;
    if (collective.get<std::string>() == "wait") return std::nullopt;
    StatedGroup g;
    g.size = stated_ranks((*values)[n - 1].get<std::int64_t>());
    if (g.size == 0) return std::nullopt;
    if (tail == 6) g.stride = stated_ranks((*values)[n - 2].get<std::int64_t>());
    return g;
  }
  return std::nullopt;
}

}  // namespace

struct ExecutionTraceReader::State {
  std::string path;
  World world;
  std::uint64_t assumed_size = 0;  // collectives counted with `world`'s size, not their own
  std::unique_ptr<TraceTable> table = std::make_unique<TraceTable>();
  std::unordered_set<std::int64_t> roots;             // the thread root nodes
  std::unordered_set<std::int64_t> holds_replayed;    // nodes with a replayed operator below
  std::unordered_set<std::int64_t> transposed;        // tensors stored column-major
  std::unordered_map<std::int64_t, ShapeHint> hints;  // rf_id -> the replayed call's case
  std::uint64_t nodes = 0, with_shapes = 0;
  bool schema_seen = false;
  // Collectives nest: _c10d_functional::all_reduce calls c10d::allreduce_, which records
  // record_param_comms. A chain is one call, counted at its outermost collective with the best
  // size the chain states; a collective waits here under its parent's id until the parent,
  // always written after its children, is read.
  struct PendingComm {
    std::string api;
    ShapeHint hint;
  };
  std::unordered_map<std::int64_t, std::vector<PendingComm>> comm_below;
  // a c10d operator's group, from the record_param_comms below it (legacy_group)
  std::unordered_map<std::int64_t, StatedGroup> group_below;

  void node(const json& n);
  std::optional<ShapeHint> comm_of(const std::string& name, const json& n,
                                   const std::vector<Operand>& operands,
                                   const std::vector<std::string>& scalars,
                                   std::optional<StatedGroup> stated) const;
  void tally(const PendingComm& c);
};

ExecutionTraceReader::ExecutionTraceReader(const std::string& path, const World& world)
    : s_(std::make_unique<State>()) {
  s_->path = path;
  s_->world = world;
  s_->table->path = path;
  s_->table->facts.source = "trace:et";
}
ExecutionTraceReader::~ExecutionTraceReader() = default;

void ExecutionTraceReader::member(const std::string& key, const nlohmann::json& value) {
  if (key == "schema") s_->schema_seen = true;
  if (key == "pid" && value.is_number()) s_->table->facts.pid = static_cast<long>(integer(value));
  if (key == "time" && value.is_string()) s_->table->facts.started = value.get<std::string>();
}

void ExecutionTraceReader::node(const nlohmann::json& n) {
  s_->node(n);
}

void ExecutionTraceReader::State::node(const json& n) {
  if (!n.is_object()) return;
  ++nodes;
  const std::string name = text_of(member_of(n, "name"));
  const std::int64_t id = integer(n.value("id", json(0)));
  const std::int64_t parent = parent_of(n);
  if (starts_with(name, "[pytorch|profiler|execution_")) {
    if (name.find("thread") != std::string::npos) roots.insert(id);
    return;
  }
  const Columns in = columns(n, "inputs");
  std::vector<Operand> operands;
  std::vector<std::string> scalars;  // every input's value as text ("" for tensors)
  const std::size_t count = in.shapes != nullptr && in.shapes->is_array() ? in.shapes->size() : 0;
  if (count > 0) ++with_shapes;
  for (std::size_t i = 0; i < count; ++i) {
    Operand o;
    const json& shape = at(in.shapes, i);
    if (shape.is_array() && !shape.empty() && !shape.front().is_array())
      for (const json& d : shape)
        o.dims.push_back(integer(d));
    o.numel = numel(shape);
    const json& type = at(in.types, i);
    o.type = type.is_string() ? type.get<std::string>() : "";
    const json& value = at(in.values, i);
    if (starts_with(o.type, "Tensor")) {
      o.transposed = transposed.count(tensor_id(value)) > 0;
      scalars.emplace_back();
    } else if (value.is_boolean()) {
      scalars.push_back(value.get<bool>() ? "True" : "False");
    } else {
      scalars.push_back(value.is_string() ? value.get<std::string>() : value.dump());
    }
    operands.push_back(std::move(o));
  }
  // the tensors this node makes: stored column-major or not (tensor ids are reused)
  const Columns out = columns(n, "outputs");
  if (out.values != nullptr && out.values->is_array())
    for (std::size_t i = 0; i < out.values->size(); ++i) {
      const json& value = (*out.values)[i];
      const std::int64_t tid = tensor_id(value);
      const json& first = at(in.values, 0);
      if (tid < 0 || tid == tensor_id(first)) continue;  // resolve_conj, in-place ops: itself
      const bool from_transposed = !operands.empty() && operands[0].transposed.value_or(false);
      bool result = false;
      if (transposes(name, scalars, operands.empty() ? 0 : operands[0].dims.size()))
        result = !from_transposed;
      else if (keeps_order(name) && storage_id(value) == storage_id(first))
        result = from_transposed;
      if (result)
        transposed.insert(tid);
      else
        transposed.erase(tid);
    }

  TraceTable& t = *table;
  ShapeHint hint;
  std::optional<StatedGroup> stated_group;
  if (auto below = group_below.extract(id)) stated_group = below.mapped();
  std::string unread;  // a product's or attention's dtype opbench does not benchmark
  if ((hint.gemm = gemm_call(name, operands, &unread))) {
    t.record_untimed(t.gemm_key(name, *hint.gemm), capture::Untimed::not_in_trace);
  } else if ((hint.attention = attention_call(name, operands, scalars,
                                              text_of(attribute(n, "op_schema")), &unread))) {
    t.record_untimed(t.attention_key(name, *hint.attention), capture::Untimed::not_in_trace);
  } else if (!unread.empty()) {
    t.count_unknown_dtype(name, unread);
    hint.unknown_dtype = std::move(unread);  // for a profiler trace of the same step, to say so
  } else if (auto comm = comm_of(name, n, operands, scalars, stated_group)) {
    hint = std::move(*comm);
  }
  if (name == "record_param_comms" && attribute(n, "collective_name") == nullptr)
    if (const auto group = legacy_group(in.values)) group_below[parent] = *group;
  // The collectives below this node, waiting for the outermost of their chain. A collective
  // holding one takes it for its own call (the inner one's size, if it states one, beats one
  // assumed here); one holding several (a coalesced group) is those calls, not one more. Any
  // other node passes them up: a chain may run through an operator this reader does not know.
  std::vector<PendingComm> calls;
  if (auto below = comm_below.extract(id)) calls = std::move(below.mapped());
  if (hint.comm && calls.size() == 1) {
    const ShapeHint& inner = calls.front().hint;
    if (inner.comm_size_stated || !hint.comm_size_stated) hint = inner;
    calls.front() = {name, hint};
  } else if (hint.comm && calls.empty()) {
    calls.push_back({name, hint});
  } else if (hint.comm) {
    hint.comm.reset();  // a profiler trace joined to this one counts its calls below, too
  }
  if (roots.count(parent) > 0) {
    for (const PendingComm& c : calls)
      tally(c);  // nothing above but the thread
  } else if (!calls.empty()) {
    auto& above = comm_below[parent];
    above.insert(above.end(), std::make_move_iterator(calls.begin()),
                 std::make_move_iterator(calls.end()));
  }
  const bool replayed = hint.gemm || hint.attention || hint.comm;
  if (const json* rf_id = attribute(n, "rf_id");
      (replayed || !hint.unknown_dtype.empty()) && rf_id != nullptr)
    hints.emplace(integer(*rf_id), std::move(hint));
  // Nodes come after their children: a parent learns it holds a replayed operator before it is
  // read. A top-level operator that holds none is what the replay leaves out.
  const bool holds = holds_replayed.erase(id) > 0;
  if (replayed || holds) {
    holds_replayed.insert(parent);
  } else if (roots.count(parent) > 0) {
    t.record_untimed(t.unreplayed_key(name, unreplayed_kind(name)), capture::Untimed::not_in_trace);
  }
}

// A collective's call as this node states it: record_param_comms' attrs, a c10d operator's
// tensors (in the `stated` group, from its record_param_comms, else of an assumed size), a
// functional collective's tensors and group_size.
std::optional<ShapeHint> ExecutionTraceReader::State::comm_of(
    const std::string& name, const json& n, const std::vector<Operand>& operands,
    const std::vector<std::string>& scalars, std::optional<StatedGroup> stated) const {
  if (name == "record_param_comms") return stated_comm(n, world);
  ShapeHint h;
  if (starts_with(name, "c10d::")) {
    h.comm_size = stated ? stated->size : world.size;
    h.comm_size_stated = stated.has_value();
    h.comm_stride = stated ? stated->stride : 0;
    h.comm = c10d_call(name, operands, h.comm_size);
  } else if (auto f = functional_call(name, operands, scalars, text_of(attribute(n, "op_schema")),
                                      world.size)) {
    h.comm = f->call;
    h.comm_size = f->group_size;
    h.comm_size_stated = f->size_stated;
  }
  if (!h.comm) return std::nullopt;
  return h;
}

void ExecutionTraceReader::State::tally(const PendingComm& c) {
  TraceTable& t = *table;
  t.record_untimed(t.comm_key(c.api, *c.hint.comm, c.hint.comm_size, c.hint.comm_stride),
                   capture::Untimed::not_in_trace);
  if (!c.hint.comm_size_stated) ++assumed_size;
}

std::unordered_map<std::int64_t, ShapeHint> ExecutionTraceReader::take_hints() {
  return std::move(s_->hints);
}

std::unique_ptr<TraceTable> ExecutionTraceReader::finish() {
  State& s = *s_;
  if (s.nodes == 0) throw bad_input(fmt::format("{}: an execution trace without nodes", s.path));
  if (s.with_shapes == 0)
    throw bad_input(fmt::format("{}: the execution trace records no input shapes", s.path));
  for (const auto& [parent, calls] : s.comm_below)  // below a node the trace never wrote
    for (const State::PendingComm& c : calls)
      s.tally(c);
  s.comm_below.clear();
  if (s.assumed_size > 0)
    s.table->notes.push_back(
        fmt::format("{} communication calls whose execution trace states no group size (no "
                    "record_param_comms that states it, as recent PyTorch versions write, nor a "
                    "group_size argument): communicator size {} assumed, {}",
                    s.assumed_size, s.world.size, s.world.from));
  s.table->note_unknown_dtypes();
  return std::move(s.table);
}

}  // namespace opbench::trace
