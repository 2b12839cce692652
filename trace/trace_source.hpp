#pragma once
// --capture-path or --trace-path as the capture tables a family reads (common/capture_tables):
// a capture folder as it is, a trace converted in memory into the capture's own tables.
#include "common/capture_tables.hpp"
#include "common/job_shapes.hpp"

namespace opbench::trace {

ShapeSource job_shape_source(const JobShapesOptions& job);

}  // namespace opbench::trace
