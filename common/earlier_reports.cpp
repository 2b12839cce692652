#include "common/earlier_reports.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "common/env.hpp"
#include "common/error.hpp"

namespace fs = std::filesystem;

namespace opbench {
namespace {

bool is_report_file(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".csv" || ext == ".jsonl" || ext == ".prom" || ext == ".md" ||
         p.filename() == "environment.json";
}

// earlier-20261122-101500, or -2, -3 ... when two runs start within the same second.
fs::path fresh_folder(const fs::path& parent, const std::string& stamp) {
  fs::path folder = parent / ("earlier-" + stamp);
  std::error_code ec;
  for (int n = 2; fs::exists(folder, ec); ++n)
    folder = parent / fmt::format("earlier-{}-{}", stamp, n);
  return folder;
}

}  // namespace

std::vector<std::string> set_aside_earlier_reports(const std::string& dir,
                                                   const std::vector<std::string>& also,
                                                   bool announce) {
  std::error_code ec;
  std::vector<fs::path> found;
  if (fs::is_directory(dir, ec))
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.is_regular_file(ec) && is_report_file(entry.path())) found.push_back(entry.path());
  for (const auto& path : also) {
    if (path.empty()) continue;
    // A CSV comes with its .jsonl and .prom siblings; anything else (a summary) alone.
    std::vector<fs::path> candidates{path};
    if (candidates[0].extension() == ".csv")
      for (const char* ext : {".jsonl", ".prom"})
        candidates.push_back(fs::path(path).replace_extension(ext));
    for (const auto& p : candidates)
      if (fs::is_regular_file(p, ec) && fs::weakly_canonical(fs::absolute(p).parent_path(), ec) !=
                                            fs::weakly_canonical(fs::absolute(dir), ec))
        found.push_back(p);
  }
  if (found.empty()) return {};
  const std::string stamp = now_compact();
  std::map<fs::path, fs::path> folder_of;  // parent -> its earlier-... folder
  for (const auto& p : found) {
    auto& folder = folder_of[p.parent_path()];
    if (folder.empty()) {
      folder = fresh_folder(p.parent_path().empty() ? fs::path(".") : p.parent_path(), stamp);
      fs::create_directories(folder, ec);
      if (ec)
        throw bad_input(fmt::format("{}: cannot be created: {}", folder.string(), ec.message()));
    }
    fs::rename(p, folder / p.filename(), ec);
    if (ec)
      throw bad_input(fmt::format("{}: cannot be moved aside into {}: {}", p.string(),
                                  folder.string(), ec.message()));
  }
  std::vector<std::string> out;
  for (const auto& [parent, folder] : folder_of) {
    out.push_back(folder.string());
    if (announce)
      std::fprintf(stderr, "note: %s held reports of an earlier run: moved them to %s\n",
                   parent.empty() ? "." : parent.string().c_str(), folder.string().c_str());
  }
  return out;
}

}  // namespace opbench
