// Process exit codes of attndev, documented in docs/results.md. Scripts and SLURM rely on them.
#pragma once

namespace attndev::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;          // a run failed (I/O error, a variant failed, ...)
inline constexpr int kExitUsage = 2;            // bad flags, bad config, bad input file
inline constexpr int kExitNothingCompared = 3;  // every variant was skipped: nothing was measured
inline constexpr int kExitInterrupted =
    75;  // SIGINT/SIGTERM/SIGHUP: results flushed, rerun resumes

}  // namespace attndev::app
