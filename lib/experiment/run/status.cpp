#include "experiment/run/status.hpp"

namespace attndev::experiment {

namespace {

// A reason lands in a CSV cell and a markdown table: keep it on one line.
std::string one_line(std::string_view text) {
  std::string out;
  bool line_start = true;  // indentation of a continued line (a traceback's) is dropped
  for (char c : text) {
    if (c == '\n') {
      if (!out.empty() && out.back() != ' ') out += "; ";
      line_start = true;
    } else if (c == '\r' || (line_start && (c == ' ' || c == '\t'))) {
      continue;
    } else {
      out += c;
      line_start = false;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

}  // namespace

const char* status_kind_name(StatusKind kind) {
  switch (kind) {
    case StatusKind::ok:
      return "ok";
    case StatusKind::skipped:
      return "skipped";
    case StatusKind::failed:
      return "failed";
  }
  return "?";
}

Status Status::skipped(std::string_view reason) {
  return {StatusKind::skipped, one_line(reason)};
}

Status Status::failed(std::string_view reason) {
  return {StatusKind::failed, one_line(reason)};
}

std::string Status::text() const {
  if (kind == StatusKind::ok) return "ok";
  return std::string(status_kind_name(kind)) + ": " + reason;
}

bool parse_status(std::string_view text, Status& out) {
  if (text == "ok") {
    out = Status::ok();
    return true;
  }
  for (StatusKind kind : {StatusKind::skipped, StatusKind::failed}) {
    const std::string prefix = std::string(status_kind_name(kind)) + ": ";
    if (text.size() > prefix.size() && text.substr(0, prefix.size()) == prefix) {
      out = {kind, std::string(text.substr(prefix.size()))};
      return true;
    }
  }
  return false;
}

}  // namespace attndev::experiment
