#include "common/owned_files.hpp"

#include <errno.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "common/env.hpp"
#include "common/error.hpp"

namespace fs = std::filesystem;

namespace opbench {
namespace {

struct ManifestLine {
  std::string file;  // the name inside the manifest's folder
  nlohmann::json line;
};

// Process-wide: which run this process is, and the files it has written (canonical paths), so
// that it never sets aside or refuses its own outputs.
struct Owner {
  std::mutex mutex;
  std::string binary = program_invocation_short_name;
  std::string run_id;
  std::set<fs::path> written;
};

Owner& owner() {
  static Owner o;
  return o;
}

fs::path folder_of(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// The same file however it was named (relative, through "..", before or after it exists).
fs::path canonical_path(const fs::path& path) {
  std::error_code ec;
  fs::path out = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path) : out;
}

// The manifest's lines; a line that does not parse is ignored (it can only make a file look
// foreign, so it is refused rather than moved: the safe side).
std::vector<ManifestLine> read_manifest(const fs::path& folder) {
  std::vector<ManifestLine> out;
  std::ifstream in(folder / kManifestName);
  for (std::string text; std::getline(in, text);) {
    auto line = nlohmann::json::parse(text, nullptr, false);
    if (line.is_object() && line.contains("file") && line["file"].is_string())
      out.push_back({line["file"].get<std::string>(), std::move(line)});
  }
  return out;
}

bool lists(const std::vector<ManifestLine>& manifest, const std::string& name) {
  return std::any_of(manifest.begin(), manifest.end(),
                     [&](const ManifestLine& l) { return l.file == name; });
}

void append_lines(const fs::path& folder, const std::vector<nlohmann::json>& lines) {
  if (lines.empty()) return;
  const fs::path path = folder / kManifestName;
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f)
    throw bad_input(fmt::format("{}: cannot be written: {}", path.string(), std::strerror(errno)));
  bool ok = true;
  for (const auto& line : lines) {
    const std::string text = line.dump() + "\n";
    ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && ok;
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok) throw run_failure(fmt::format("{}: write failed", path.string()));
}

// Rewrites the manifest with only `keep` (write, then rename, so it is never half written).
void rewrite_manifest(const fs::path& folder, const std::vector<ManifestLine>& keep) {
  const fs::path path = folder / kManifestName,
                 tmp = folder / (std::string(kManifestName) + ".tmp");
  {
    std::ofstream out(tmp);
    for (const auto& l : keep)
      out << l.line.dump() << "\n";
    if (!out) throw run_failure(fmt::format("{}: cannot be written", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw run_failure(fmt::format("{}: cannot be written: {}", path.string(), ec.message()));
}

nlohmann::json manifest_line(const std::string& name) {
  Owner& o = owner();
  return {{"file", name},
          {"binary", o.binary},
          {"run_id", o.run_id.empty() ? fmt::format("{}-{}", o.binary, now_compact()) : o.run_id},
          {"written", now_iso8601()}};
}

// earlier-20261122-101500, or -2, -3 ... when two runs start within the same second.
fs::path fresh_folder(const fs::path& parent, const std::string& stamp) {
  fs::path folder = parent / ("earlier-" + stamp);
  std::error_code ec;
  for (int n = 2; fs::exists(folder, ec); ++n)
    folder = parent / fmt::format("earlier-{}-{}", stamp, n);
  return folder;
}

// Moves `names` (files of `folder` its manifest lists) into a new earlier-<stamp> folder, with
// their manifest lines; returns that folder.
fs::path move_aside(const fs::path& folder, const std::set<std::string>& names,
                    const std::string& stamp) {
  const fs::path target = fresh_folder(folder, stamp);
  std::error_code ec;
  fs::create_directories(target, ec);
  if (ec) throw bad_input(fmt::format("{}: cannot be created: {}", target.string(), ec.message()));
  std::vector<ManifestLine> keep;
  std::vector<nlohmann::json> moved;
  for (auto& l : read_manifest(folder)) {
    if (!names.count(l.file)) {
      // Lines of files no longer there (deleted by hand) are dropped on the way.
      if (fs::exists(folder / l.file, ec)) keep.push_back(std::move(l));
      continue;
    }
    // A file listed twice (a run continued with --resume) moves once, keeping both lines.
    if (fs::exists(folder / l.file, ec)) {
      fs::rename(folder / l.file, target / l.file, ec);
      if (ec)
        throw bad_input(fmt::format("{}: cannot be moved aside into {}: {}",
                                    (folder / l.file).string(), target.string(), ec.message()));
    }
    moved.push_back(std::move(l.line));
  }
  append_lines(target, moved);
  rewrite_manifest(folder, keep);
  return target;
}

bool listed_in_manifest(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) &&
         lists(read_manifest(folder_of(path)), path.filename().string());
}

bool written_here(const fs::path& canonical) {
  Owner& o = owner();
  std::lock_guard lock(o.mutex);
  return o.written.count(canonical) > 0;
}

std::string not_ours(const fs::path& path) {
  return fmt::format(
      "{}: exists and no opbench run wrote it (it is not in {}): left unchanged; name another "
      "path or move it",
      path.string(), (folder_of(path) / kManifestName).string());
}

}  // namespace

void set_output_owner(const std::string& binary, const std::string& run_id) {
  Owner& o = owner();
  std::lock_guard lock(o.mutex);
  o.binary = binary;
  o.run_id = run_id;
}

bool written_by_opbench(const std::string& path) {
  return listed_in_manifest(fs::path(path));
}

std::vector<std::string> set_aside_earlier_reports(const std::string& dir,
                                                   const std::vector<NamedOutput>& named,
                                                   bool announce) {
  std::error_code ec;
  // folder (canonical) -> the names to move, and the folder as the user wrote it, for the note
  std::map<fs::path, std::set<std::string>> to_move;
  std::map<fs::path, fs::path> shown;
  auto consider = [&](const fs::path& path) {
    const fs::path canonical = canonical_path(path);
    if (written_here(canonical)) return;
    to_move[canonical.parent_path()].insert(path.filename().string());
    shown.emplace(canonical.parent_path(), folder_of(path));
  };
  // Every check first: a refused output leaves everything where it was.
  for (const auto& out : named) {
    if (out.path.empty()) continue;
    const fs::path p = out.path;
    if (!fs::is_regular_file(p, ec) || written_here(canonical_path(p))) continue;
    if (!listed_in_manifest(p)) throw bad_input(fmt::format("{} {}", out.flag, not_ours(p)));
    consider(p);
  }
  if (fs::is_directory(dir, ec))
    for (const auto& l : read_manifest(dir))
      if (fs::is_regular_file(fs::path(dir) / l.file, ec)) consider(fs::path(dir) / l.file);
  std::vector<std::string> out;
  if (to_move.empty()) return out;
  const std::string stamp = now_compact();
  for (const auto& [folder, names] : to_move) {
    const fs::path target = move_aside(folder, names, stamp);
    const fs::path as_shown = shown[folder] / target.filename();
    out.push_back(as_shown.string());
    if (announce)
      std::fprintf(stderr, "note: %s held files of an earlier opbench run: moved them to %s\n",
                   shown[folder].string().c_str(), as_shown.string().c_str());
  }
  return out;
}

void prepare_report_folder(const std::string& dir, const std::string& binary, bool resume,
                           const std::vector<NamedOutput>& named) {
  if (!resume) {
    set_aside_earlier_reports(dir, named);
    return;
  }
  check_resumable(dir, binary);
  std::error_code ec;
  for (const auto& out : named)
    if (!out.path.empty() && fs::is_regular_file(out.path, ec) && !listed_in_manifest(out.path))
      throw bad_input(fmt::format("{} {}", out.flag, not_ours(out.path)));
}

void claim_output(const std::string& path, OutputUse use) {
  const fs::path canonical = canonical_path(path);
  if (written_here(canonical)) return;
  std::error_code ec;
  const fs::path folder = folder_of(path);
  const std::string name = fs::path(path).filename().string();
  const auto status = fs::status(path, ec);
  // A device or a pipe (/dev/null, /dev/stdout, a FIFO) holds nothing a write could destroy.
  if (fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status)) return;
  if (fs::exists(status)) {
    if (!listed_in_manifest(path)) throw bad_input(not_ours(path));
    if (use == OutputUse::fresh) {
      const fs::path target = move_aside(canonical.parent_path(), {name}, now_compact());
      std::fprintf(stderr, "note: %s was written by an earlier opbench run: moved it to %s\n",
                   path.c_str(), (folder / target.filename()).string().c_str());
    }
  }
  if (!fs::is_directory(folder, ec)) {
    fs::create_directories(folder, ec);
    if (ec)
      throw bad_input(fmt::format("{}: cannot be created: {}", folder.string(), ec.message()));
  }
  append_lines(folder, {manifest_line(name)});
  Owner& o = owner();
  std::lock_guard lock(o.mutex);
  o.written.insert(canonical);
}

std::vector<std::string> binaries_in(const std::string& dir) {
  std::set<std::string> found;
  std::error_code ec;
  for (const auto& l : read_manifest(dir))
    if (fs::is_regular_file(fs::path(dir) / l.file, ec) && l.line.value("binary", "") != "")
      found.insert(l.line["binary"].get<std::string>());
  return {found.begin(), found.end()};
}

void check_resumable(const std::string& dir, const std::string& binary) {
  for (const auto& other : binaries_in(dir))
    if (other != binary)
      throw bad_input(fmt::format(
          "--resume: {} holds the reports of a {} run; {} continues only its own runs (name "
          "another --report-dir-path)",
          dir, other, binary));
}

}  // namespace opbench
