#pragma once
// --list-models, the same in every binary: one line per model of a models.json (layers, sizes,
// heads, vocabulary, default sequence length, dense or MoE), then where the file is.
#include <string>

namespace opbench {

// `path` empty: configs/models.json as the binaries find it. Returns the exit code (0).
int print_model_list(const std::string& path);

}  // namespace opbench
