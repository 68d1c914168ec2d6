// A variant's outcome at a point, one type end to end: the runner sets it, the row carries its
// text, and readers of results parse the text back once into the same type.
//
// Three outcomes (docs/CONTRIBUTING.md #10): `ok` (compared), `skipped: <reason>` (nothing was
// compared: no device, an unsupported combination; never a pass) and `failed: <reason>` (an error,
// a crash of an external command, a wrong shape). Files spell them exactly so, as lib/cuda's
// CudaRunResult::status_text() does.
#pragma once

#include <string>
#include <string_view>

namespace attndev::experiment {

enum class StatusKind : unsigned char { ok, skipped, failed };

const char* status_kind_name(StatusKind kind);  // "ok", "skipped", "failed"

struct Status {
  StatusKind kind = StatusKind::ok;
  std::string reason;  // empty for ok; one line (newlines become "; ")

  static Status ok() { return {}; }
  static Status skipped(std::string_view reason);
  static Status failed(std::string_view reason);

  bool is_ok() const { return kind == StatusKind::ok; }
  // "ok", "skipped: <reason>", "failed: <reason>": the results files' status column.
  std::string text() const;

  friend bool operator==(const Status&, const Status&) = default;
};

// Reads what Status::text() wrote. False for anything else (a malformed or foreign row).
bool parse_status(std::string_view text, Status& out);

}  // namespace attndev::experiment
