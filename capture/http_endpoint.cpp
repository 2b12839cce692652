// The live /metrics endpoint of the capture (OPBENCH_CAPTURE_PORT), in its own module,
// libopbench_capture_http.so, which libopbench_capture.so opens only when a port is asked for:
// Debian's cpp-httplib is a shared library (with OpenSSL and zlib behind it), and a preloaded
// object that enters every process of a job should not bring those into all of them.
#include <httplib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

// Serves render()'s text at GET /metrics on every interface, port `port`, from a detached thread
// (the caller blocks signals around this call, so the server's threads take none). 0 on success;
// otherwise -1 with the reason in `error`.
extern "C" __attribute__((visibility("default"))) int opbench_capture_http_serve(
    int port, std::string (*render)(), char* error, std::size_t error_size) {
  auto* server = new httplib::Server();  // lives as long as the process
  server->Get("/metrics", [render](const httplib::Request&, httplib::Response& res) {
    // Prometheus' text exposition format, version 0.0.4
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  if (!server->bind_to_port("0.0.0.0", port)) {
    std::snprintf(error, error_size, "cannot listen on port %d: %s", port,
                  errno ? std::strerror(errno) : "in use or not allowed");
    delete server;
    return -1;
  }
  std::thread([server] { server->listen_after_bind(); }).detach();
  return 0;
}
