#include "trace/json_stream.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <istream>
#include <memory>
#include <streambuf>

#include "common/error.hpp"

namespace opbench::trace {
namespace {

// A read-only stream buffer over zlib's gzFile, which reads gzip and plain files alike.
class GzBuffer : public std::streambuf {
 public:
  explicit GzBuffer(const std::string& path) : file_(gzopen(path.c_str(), "rb")) {
    if (file_ != nullptr) gzbuffer(file_, 1 << 20);
  }
  ~GzBuffer() override {
    if (file_ != nullptr) gzclose(file_);
  }
  GzBuffer(const GzBuffer&) = delete;
  GzBuffer& operator=(const GzBuffer&) = delete;

  bool open() const { return file_ != nullptr; }
  bool compressed() const { return file_ != nullptr && gzdirect(file_) == 0; }
  // zlib's message when the last read failed (a truncated or damaged gzip stream), else "".
  const std::string& error() const { return error_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    if (n <= 0) {
      int code = Z_OK;
      const char* message = gzerror(file_, &code);
      if (n < 0 || (code != Z_OK && code != Z_STREAM_END))
        error_ = message != nullptr ? message : "read error";
      return traits_type::eof();
    }
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile file_;
  std::array<char, 1 << 20> buffer_{};
  std::string error_;
};

}  // namespace

void stream_json(const std::string& path, JsonSink& sink) {
  auto buffer = std::make_unique<GzBuffer>(path);
  if (!buffer->open())
    throw bad_input(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::istream in(buffer.get());
  using json = nlohmann::json;
  std::string key;         // the top-level member being read
  bool in_array = false;   // that member is an array
  bool top_array = false;  // the file is one array: the Chrome trace's JSON Array Format
  json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (depth == 0 && event == E::array_start) top_array = true;
    if (depth == 1 && top_array) {  // an event, streamed as traceEvents' are (never kept)
      if (event != E::object_end && event != E::array_end && event != E::value) return true;
      sink.element("traceEvents", parsed);
      return false;
    }
    if (depth == 1) {
      if (event == E::key) {
        key = parsed.get<std::string>();
      } else if (event == E::array_start) {
        in_array = true;
      } else if (event == E::array_end) {
        in_array = false;
        return false;  // its elements are gone already
      } else if (event == E::object_end || event == E::value) {
        sink.member(key, parsed);
        return false;
      }
      return true;
    }
    if (depth == 2 && in_array && (event == E::object_end || event == E::value)) {
      sink.element(key, parsed);
      return false;
    }
    return true;
  };
  try {
    const json rest = json::parse(in, callback, true, false);  // what the sink left: small
    (void)rest;
  } catch (const json::parse_error& e) {
    std::string where = fmt::format("byte {}", e.byte);
    if (buffer->compressed()) where += " of the decompressed text";
    // nlohmann's text after its "[json.exception.parse_error.101] " tag
    const std::string what = e.what();
    const std::string cause =
        !buffer->error().empty()
            ? "gzip data ends early or is damaged (" + buffer->error() + ")"
            : what.substr(what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2);
    throw bad_input(fmt::format("{}: not a readable JSON trace at {}: {}", path, where, cause));
  } catch (const json::exception& e) {
    // a sink reading a member of an unexpected type: the file's fault, one line naming it
    const std::string what = e.what();
    throw bad_input(
        fmt::format("{}: an entry of an unexpected form: {}", path,
                    what.substr(what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2)));
  }
}

}  // namespace opbench::trace
