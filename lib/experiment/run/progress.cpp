#include "experiment/run/progress.hpp"

#include "io/log.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace attndev::experiment {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buffer[32];
  if (s >= 3600) {
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  } else if (s >= 60) {
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%lds", s);
  }
  return buffer;
}

ProgressReporter::ProgressReporter(bool terminal, double log_interval_s)
    : terminal_(terminal), log_interval_s_(log_interval_s) {}

void ProgressReporter::update(std::size_t done, std::size_t total) {
  const Clock::time_point now = Clock::now();
  if (!started_) {
    started_ = true;
    start_ = last_emit_ = now;
    start_done_ = done;
  }
  last_done_ = done;
  last_total_ = total;
  const double since_emit = std::chrono::duration<double>(now - last_emit_).count();
  const bool final = done >= total;
  if (terminal_ ? (since_emit < 0.1 && !final && drew_) : (since_emit < log_interval_s_ && !final))
    return;
  if (!terminal_ && final && done == start_done_) return;  // nothing ran: no line
  last_emit_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done - start_done_) / elapsed : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total - done) / rate : NAN;
  const double fraction = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r[%s] %zu/%zu points  %.2f pt/s  ETA %s   ", bar.c_str(), done, total,
                 rate, format_duration(eta).c_str());
    std::fflush(stderr);
    drew_ = true;
  } else {
    log::info("progress: {}/{} points ({:.0f}%), {:.2f} points/s, ETA {}", done, total,
              100 * fraction, rate, format_duration(eta));
  }
}

void ProgressReporter::finish() {
  if (terminal_ && drew_) std::fprintf(stderr, "\n");
  drew_ = false;
}

}  // namespace attndev::experiment
