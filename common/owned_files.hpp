#pragma once
// The files opbench wrote, and the rule that keeps every other file safe.
//
// Every file a run writes is listed, when the run creates it, in its folder's manifest
// `.opbench-manifest` (one JSON line per file: name, binary, run id, time). Only files a
// manifest lists are ever moved aside or continued; a file no opbench run wrote is never moved,
// overwritten or deleted: a run that would have to write at its path refuses, with one line.
//
// A report folder used again without --resume: the earlier runs' files (those its manifest
// lists) move into <dir>/earlier-<date>-<time>/, with their manifest lines, before the new run
// writes anything; a line on stderr says where they went. Everything else in the folder stays.
#include <string>
#include <vector>

namespace opbench {

// The manifest's file name, in every folder opbench writes into.
inline constexpr const char* kManifestName = ".opbench-manifest";

// Which run the files written from now on belong to; Environment sets it. Files written before
// (a dry run's CSV) are listed under the program's own name.
void set_output_owner(const std::string& binary, const std::string& run_id);

// A path the user named, with the flag that named it, for the error that refuses it.
struct NamedOutput {
  std::string flag;  // "--report-csv-path"
  std::string path;
};

// Moves the earlier runs' files listed in `dir`'s manifest, and any `named` output (each file the
// run will write at a path the user named) that an earlier opbench run wrote, into an
// earlier-<date>-<time> folder beside them. A named output that exists and no opbench run wrote is
// refused (bad_input naming its flag) before anything moves. Files this process wrote are never set
// aside. Returns the folders used (none when nothing was there); `announce` prints the line on
// stderr.
std::vector<std::string> set_aside_earlier_reports(const std::string& dir,
                                                   const std::vector<NamedOutput>& named = {},
                                                   bool announce = true);

// Before a run writes into `dir`: with --resume (`resume`), refuses a folder another binary
// wrote and any named output no opbench run wrote; else set_aside_earlier_reports.
void prepare_report_folder(const std::string& dir, const std::string& binary, bool resume,
                           const std::vector<NamedOutput>& named = {});

// How a writer is about to use a path.
enum class OutputUse {
  fresh,      // a new file: an earlier opbench file there is set aside first
  continued,  // --resume: an earlier opbench file there is continued
};

// Called by every writer before it opens `path`: a path this process wrote already, or one
// that does not exist, is fine (and listed in its folder's manifest as this run's); an earlier
// opbench file is set aside (fresh) or continued (continued); any other file is refused with
// bad_input, unchanged.
void claim_output(const std::string& path, OutputUse use = OutputUse::fresh);

// True when `path` exists and its folder's manifest lists it (some opbench run wrote it).
bool written_by_opbench(const std::string& path);

// The binaries whose files `dir`'s manifest lists (that still exist), e.g. {"bench_gemm"}.
std::vector<std::string> binaries_in(const std::string& dir);

// --resume: refuses (bad_input) a folder whose files another binary wrote, or that holds no
// opbench run at all.
void check_resumable(const std::string& dir, const std::string& binary);

}  // namespace opbench
