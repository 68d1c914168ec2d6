// SIGINT, SIGTERM and SIGHUP as a request to stop a sweep after flushing (`attndev run`,
// `attndev check`): the handler only records the signal; the runner polls g_stop_signal between
// variants and returns with what is on disk (exit 75, a rerun resumes).
#pragma once

#include <csignal>
#include <cstddef>
#include <iterator>

namespace attndev::app {

inline volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" inline void on_stop_signal(int signal) {
  g_stop_signal = signal;
}

// SIGHUP comes when the terminal or ssh session of an interactive run closes: without a handler
// it killed the run with nothing flushed (exit 129); it is a request to stop like the others.
inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

inline const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
  }
  return "a signal";
}

// Installs the handlers for the lifetime of the run and restores the previous ones after, so a
// second Ctrl-C during the final table writes still gets the default (immediate) behaviour only
// once we are done.
class StopSignals {
 public:
  StopSignals() {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: a blocking write returns EINTR and is retried by us
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i)
      sigaction(kStopSignals[i], &action, &old_[i]);
  }
  ~StopSignals() {
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i)
      sigaction(kStopSignals[i], &old_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_[std::size(kStopSignals)]{};
};

}  // namespace attndev::app
