// Progress of a long run: a redrawn bar on a terminal, periodic log lines otherwise (SLURM logs
// are files, where a carriage-return bar becomes megabytes of noise).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace attndev::experiment {

class ProgressReporter {
 public:
  ProgressReporter(bool terminal, double log_interval_s);
  void update(std::size_t done, std::size_t total);
  void finish();  // ends the bar's line

 private:
  using Clock = std::chrono::steady_clock;
  bool terminal_;
  double log_interval_s_;
  bool started_ = false;
  bool drew_ = false;
  std::size_t start_done_ = 0;
  std::size_t last_done_ = 0, last_total_ = 0;
  Clock::time_point start_, last_emit_;
};

// "1:02:03", "4:05", "17s"
std::string format_duration(double seconds);

}  // namespace attndev::experiment
