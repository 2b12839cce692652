#pragma once
// A report folder used again without --resume: the earlier run's reports are kept, never
// overwritten. Its report files (CSV, JSON lines, .prom, Markdown summaries, environment.json)
// move into <dir>/earlier-<date>-<time>/ before the new run writes anything, and a line on
// stderr says where they went.
#include <string>
#include <vector>

namespace opbench {

// Moves the report files found directly in `dir`, and any of `also` (report paths outside
// `dir`: --report-csv-path with its .jsonl and .prom siblings, --summary-path) that exist, into an
// earlier-<date>-<time> folder beside them. Returns the folders used (none when nothing was
// there); `announce` prints the line on stderr.
std::vector<std::string> set_aside_earlier_reports(const std::string& dir,
                                                   const std::vector<std::string>& also = {},
                                                   bool announce = true);

}  // namespace opbench
