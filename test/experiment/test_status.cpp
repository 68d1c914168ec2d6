// The variant status type end to end: written as text in rows, parsed back once into the same
// value; anything else is reported as failed, never taken for ok.
#include <catch2/catch.hpp>

#include "experiment/results/result_row.hpp"
#include "experiment/run/status.hpp"

using namespace attndev::experiment;
using attndev::io::Json;

TEST_CASE("a status round-trips through its text", "[status]") {
  for (const Status& s : {Status::ok(), Status::skipped("no CUDA device (driver not found)"),
                          Status::failed("external command exited with status 3: boom")}) {
    Status back = Status::failed("sentinel");
    REQUIRE(parse_status(s.text(), back));
    CHECK(back == s);
  }
  CHECK(Status::ok().text() == "ok");
  CHECK(Status::skipped("x").text() == "skipped: x");
  CHECK(Status::failed("y").text() == "failed: y");
}

TEST_CASE("a reason stays on one line (it lands in CSV cells and markdown)", "[status]") {
  const Status s = Status::failed("Traceback:\n  line 3\r\nValueError: bad\n\n");
  CHECK(s.reason == "Traceback:; line 3; ValueError: bad");
  CHECK(s.text().find('\n') == std::string::npos);
}

TEST_CASE("text that is no status is refused, and a row with it reads as failed", "[status]") {
  Status s;
  for (const char* bad : {"", "OK", "skipped", "skipped:", "failed:", "pass", "ok "})
    CHECK_FALSE(parse_status(bad, s));
  Json row;
  row["status"] = "passed";
  CHECK(row_status(row).kind == StatusKind::failed);
  CHECK_THAT(row_status(row).reason, Catch::Contains("unrecognized status \"passed\""));
  row.erase("status");
  CHECK(row_status(row).kind == StatusKind::failed);
  row["status"] = "skipped: CUDA backend not built";
  CHECK(row_status(row) == Status::skipped("CUDA backend not built"));
}
