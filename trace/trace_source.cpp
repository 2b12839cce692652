#include "trace/trace_source.hpp"

#include "trace/trace_reader.hpp"

namespace opbench::trace {

ShapeSource job_shape_source(const JobShapesOptions& job) {
  if (job.trace_path.empty()) return ShapeSource::capture_folder(job.capture_path);
  ShapeSource s{"--trace-path", job.trace_path, {}, {}};
  for (const auto& table : read_traces(job.trace_path)) {
    s.tables.emplace_back(table->path + " (converted)", table->csv());
    for (const std::string& note : table->notes)
      s.notes.push_back(table->path + ": " + note);
  }
  return s;
}

}  // namespace opbench::trace
