// Collectives through MPI on host buffers. Types MPI lacks (fp16, bf16, fp8) move as raw bytes
// and reduce through user-defined MPI ops that compute in float, as a CPU would.
#include "collectives/mpi_communicator.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <map>

#include "collectives/coll_check.hpp"
#include "common/error.hpp"
#include "common/host_buffer.hpp"

namespace opbench {
namespace {

bool needs_user_op(DType t) {
  return t == DType::fp16 || t == DType::bf16 || t == DType::fp8_e4m3 || t == DType::fp8_e5m2;
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::fp64:
      return MPI_DOUBLE;
    case DType::fp32:
      return MPI_FLOAT;
    case DType::fp16:
    case DType::bf16:
      return MPI_UINT16_T;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
    case DType::uint8:
      return MPI_UINT8_T;
    case DType::int8:
      return MPI_INT8_T;
    case DType::int32:
      return MPI_INT32_T;
    case DType::int64:
      return MPI_INT64_T;
    case DType::uint32:
      return MPI_UINT32_T;
    case DType::uint64:
      return MPI_UINT64_T;
    default:
      throw std::logic_error("mpi_type: no MPI type for " + std::string(dtype_name(t)));
  }
}

// Encoding and decoding of the types MPI cannot reduce, resolved at compile time so the user op
// below runs one conversion per element, not a dispatch.
template <DType T>
struct Codec;
template <class B, float (*Decode)(B), B (*Encode)(float)>
struct CodecOf {
  using Bits = B;
  static float decode(Bits b) { return Decode(b); }
  static Bits encode(float v) { return Encode(v); }
};
template <>
struct Codec<DType::bf16> : CodecOf<std::uint16_t, bf16_to_float, float_to_bf16> {};
template <>
struct Codec<DType::fp16> : CodecOf<std::uint16_t, fp16_to_float, float_to_fp16> {};
template <>
struct Codec<DType::fp8_e4m3> : CodecOf<std::uint8_t, fp8_e4m3_to_float, float_to_fp8_e4m3> {};
template <>
struct Codec<DType::fp8_e5m2> : CodecOf<std::uint8_t, fp8_e5m2_to_float, float_to_fp8_e5m2> {};

// A reduction on a type MPI cannot reduce: decode to float, combine, round back.
template <DType T, RedOp R>
void emulated_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  using C = Codec<T>;
  auto a = static_cast<const typename C::Bits*>(in);
  auto b = static_cast<typename C::Bits*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = C::decode(a[i]), y = C::decode(b[i]);
    float r = R == RedOp::sum    ? x + y
              : R == RedOp::prod ? x * y
              : R == RedOp::min  ? std::min(x, y)
                                 : std::max(x, y);
    b[i] = C::encode(r);
  }
}

template <DType T>
MPI_User_function* emulated_for(RedOp r) {
  switch (r) {
    case RedOp::sum:
      return &emulated_reduce<T, RedOp::sum>;
    case RedOp::prod:
      return &emulated_reduce<T, RedOp::prod>;
    case RedOp::min:
      return &emulated_reduce<T, RedOp::min>;
    default:
      return &emulated_reduce<T, RedOp::max>;
  }
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
  }
  ~MpiCommunicator() override {
    for (auto& [key, op] : user_ops_)
      MPI_Op_free(&op);
  }

  std::string backend() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::optional<std::string> unsupported(const CollCall& c) const override {
    if (c.dtype == DType::tf32)
      return std::string("tf32 is a compute mode, not a collective data type");
    if (is_reduction(c.op) && c.redop == RedOp::avg)
      return std::string("MPI has no average reduction; avg runs on the nccl backend");
    return std::nullopt;
  }

  void prepare(const CollCall& c) override {
    const std::size_t ts = dtype_size(c.dtype);
    const auto send_bytes = static_cast<std::size_t>(c.counts.send_count) * ts;
    const auto recv_bytes = static_cast<std::size_t>(std::max(
                                c.counts.recv_count, c.in_place ? c.counts.send_count : 0)) *
                            ts;
    if (send_.bytes() < send_bytes) send_ = HostBuffer(send_bytes);
    if (recv_.bytes() < recv_bytes) recv_ = HostBuffer(recv_bytes);
    fill(c);
  }

  void launch(const CollCall& c) override {
    const MPI_Datatype type = mpi_type(c.dtype);
    void* send = c.in_place ? MPI_IN_PLACE : send_.data();
    void* recv = recv_.data();
    const auto count = static_cast<int>(c.counts.count);
    int rc = MPI_SUCCESS;
    switch (c.op) {
      case CollOp::all_reduce:
        rc = MPI_Allreduce(send, recv, count, type, reduction(c), comm_);
        break;
      case CollOp::all_gather:
        rc = MPI_Allgather(send, count, type, recv, count, type, comm_);
        break;
      case CollOp::reduce_scatter:
        rc = MPI_Reduce_scatter_block(send, recv, count, type, reduction(c), comm_);
        break;
      case CollOp::all_to_all:
        rc = MPI_Alltoall(send, count, type, recv, count, type, comm_);
        break;
      case CollOp::broadcast:  // the root's receive buffer holds its data (see fill)
        rc = MPI_Bcast(recv, count, type, c.root, comm_);
        break;
      case CollOp::reduce:
        if (c.in_place && rank_ != c.root) send = recv;  // non-roots send from the one buffer
        rc = MPI_Reduce(send, recv, count, type, reduction(c), c.root, comm_);
        break;
      case CollOp::send_recv: {
        const int next = (rank_ + 1) % size_, prev = (rank_ - 1 + size_) % size_;
        if (c.in_place)
          rc = MPI_Sendrecv_replace(recv, count, type, next, 0, prev, 0, comm_, MPI_STATUS_IGNORE);
        else
          rc = MPI_Sendrecv(send_.data(), count, type, next, 0, recv, count, type, prev, 0, comm_,
                            MPI_STATUS_IGNORE);
        break;
      }
    }
    // The call has completed: the guard's thread sees progress (a relaxed store: the count is
    // all it reads, and only this thread writes it).
    completed_.store(completed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING] = {};
      int len = 0;
      MPI_Error_string(rc, text, &len);
      throw run_failure(fmt::format("MPI {} failed: {}", coll_op_name(c.op), text));
    }
  }

  void wait() override {}  // MPI calls complete before they return

  std::vector<double> time_each(const CollCall& c, int iters) override {
    std::vector<double> us;
    double t = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      launch(c);
      const double now = MPI_Wtime();
      us.push_back((now - t) * 1e6);
      t = now;
    }
    return us;
  }

  std::int64_t check(const CollCall& c, bool corrupt_for_test) override {
    fill(c);
    launch(c);
    const PatternSpec spec = make_pattern(c, size_);
    const std::int64_t n = result_elements(c, rank_, size_);
    if (corrupt_for_test && n > 0)
      store_from_double(recv_.data(), c.dtype, 0, expected_result(c, spec, rank_, size_, 0) + 3);
    std::int64_t wrong = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      double got = element_as_double(recv_.data(), c.dtype, static_cast<std::size_t>(j));
      if (!pattern_matches(spec, got, expected_result(c, spec, rank_, size_, j))) ++wrong;
    }
    return wrong;
  }

  // Nothing to tear down (ending the process ends the job); the next case gets a new one.
  void abort() override { aborted_ = true; }
  bool aborted() const override { return aborted_; }
  std::int64_t completed_calls() override { return completed_.load(std::memory_order_relaxed); }

 private:
  // Input pattern into the send data (or where in-place ops read it), and a poison value in
  // the result region so that an element the op fails to write is counted wrong.
  void fill(const CollCall& c) {
    const PatternSpec spec = make_pattern(c, size_);
    const std::int64_t recv_elems =
        std::max(c.counts.recv_count, c.in_place ? c.counts.send_count : 0);
    for (std::int64_t i = 0; i < recv_elems; ++i)
      store_from_double(recv_.data(), c.dtype, static_cast<std::size_t>(i), kPatternPoison);
    void* input = send_.data();
    std::int64_t offset = 0;
    if (c.in_place) {
      input = recv_.data();
      if (c.op == CollOp::all_gather) offset = rank_ * c.counts.count;
    }
    for (std::int64_t i = 0; i < c.counts.send_count; ++i)
      store_from_double(input, c.dtype, static_cast<std::size_t>(offset + i),
                        input_element(spec, rank_, i));
    if (c.op == CollOp::broadcast && !c.in_place && rank_ == c.root)
      std::memcpy(recv_.data(), send_.data(),
                  static_cast<std::size_t>(c.counts.count) * dtype_size(c.dtype));
  }

  MPI_Op reduction(const CollCall& c) {
    if (!needs_user_op(c.dtype)) {
      switch (c.redop) {
        case RedOp::sum:
          return MPI_SUM;
        case RedOp::prod:
          return MPI_PROD;
        case RedOp::min:
          return MPI_MIN;
        case RedOp::max:
          return MPI_MAX;
        case RedOp::avg:
          break;
      }
      throw std::logic_error("avg reaches the MPI backend");
    }
    auto key = std::make_pair(c.dtype, c.redop);
    auto it = user_ops_.find(key);
    if (it != user_ops_.end()) return it->second;
    MPI_User_function* fn = c.dtype == DType::fp16       ? emulated_for<DType::fp16>(c.redop)
                            : c.dtype == DType::bf16     ? emulated_for<DType::bf16>(c.redop)
                            : c.dtype == DType::fp8_e4m3 ? emulated_for<DType::fp8_e4m3>(c.redop)
                                                         : emulated_for<DType::fp8_e5m2>(c.redop);
    MPI_Op op;
    MPI_Op_create(fn, 1, &op);
    user_ops_[key] = op;
    return op;
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  HostBuffer send_, recv_;
  std::map<std::pair<DType, RedOp>, MPI_Op> user_ops_;
  bool aborted_ = false;
  std::atomic<std::int64_t> completed_{0};  // calls returned; read by the runner's guard
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm) {
  return std::make_unique<MpiCommunicator>(comm);
}

}  // namespace opbench
