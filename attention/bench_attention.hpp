#pragma once

namespace opbench {

// The whole of bench_attention. Returns the exit code.
int bench_attention_main(int argc, char** argv);

}  // namespace opbench
