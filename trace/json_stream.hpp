#pragma once
// A profiler trace read as a stream: a trace of a real job is hundreds of MB to several GB of
// JSON, one top-level object whose big member is an array of events (Kineto's `traceEvents`,
// an execution trace's `nodes`). Each element of a top-level array is handed over as soon as it
// is parsed and then dropped, so memory follows one event, not the file. A file that is one
// array (the Chrome trace format's JSON Array Format, the legacy autograd profiler's export) is
// that array of events: its elements come as `traceEvents`'. Plain or gzip (zlib reads both the
// same way).
#include <nlohmann/json.hpp>
#include <string>

namespace opbench::trace {

class JsonSink {
 public:
  virtual ~JsonSink() = default;
  // A top-level member that is not an array (small: `schema`, `distributedInfo`, `pid`, ...).
  virtual void member(const std::string& key, const nlohmann::json& value) = 0;
  // One element of the top-level array `key`.
  virtual void element(const std::string& key, nlohmann::json& value) = 0;
};

// Streams `path` into `sink`. bad_input naming the file and the byte offset (in the
// decompressed text for a gzip file) when it cannot be read, is not JSON or ends early; the
// sink's own bad_input passes through, and nlohmann's exceptions from the sink (a member of
// an unexpected type) become bad_input naming the file.
void stream_json(const std::string& path, JsonSink& sink);

}  // namespace opbench::trace
