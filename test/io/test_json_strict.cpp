// Duplicate keys in any JSON attndev reads (io/json_strict.hpp): refused with both places named.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "files.hpp"
#include "io/json_strict.hpp"
#include "io/jsonl.hpp"

using attndev::io::json_duplicate_key_error;
using attndev::io::json_text_error;

TEST_CASE("json strict: a key twice in one object is refused with its path and both positions",
          "[io][json]") {
  const std::string text = "{\"name\": \"x\",\n \"axes\": {\"seq_len\": 8,\n  \"seq_len\": 16}}";
  const auto error = json_duplicate_key_error(text);
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("key \"seq_len\" appears twice"));
  CHECK_THAT(*error, Catch::Contains("axes.seq_len at line 3, column 3"));
  CHECK_THAT(*error, Catch::Contains("first at line 2, column 11"));
  // Top level, inside an array element, and spelled with an escape.
  CHECK_THAT(*json_duplicate_key_error(R"({"variants": [1], "variants": [2]})"),
             Catch::Contains("(variants at line 1, column 19"));
  CHECK_THAT(*json_duplicate_key_error(R"({"v": [{}, {"a": 1, "a": 2}]})"),
             Catch::Contains("v[1].a at"));
  CHECK(json_duplicate_key_error(R"({"a": 1, "\u0061": 2})"));
  CHECK(json_text_error(R"({"a": 1, "a": 1})"));
}

TEST_CASE("json strict: the same key in different objects, in strings and in comments passes",
          "[io][json]") {
  CHECK_FALSE(
      json_duplicate_key_error(R"({"a": {"a": 1}, "b": {"a": 2}, "c": [{"a": 1}, {"a": 2}]})"));
  CHECK_FALSE(json_duplicate_key_error(R"({"a": "\"a\": 1, \"a\"", "b": ["a", "a"]})"));
  CHECK_FALSE(json_duplicate_key_error("{\"a\": 1, // \"a\": 2\n \"b\": 2}", /*comments=*/true));
  CHECK_FALSE(json_duplicate_key_error(R"({"a": 1, "A": 2, "a ": 3})"));
  CHECK_FALSE(json_duplicate_key_error("[1, 2, {\"x\": [3, 4]}]"));
}

TEST_CASE("json strict: a results line with a key twice is a bad line, not the last value",
          "[io][json]") {
  const std::string text = "{\"id\": \"a\", \"status\": \"ok\"}\n{\"id\": \"b\", \"id\": \"c\"}\n";
  const auto path = std::filesystem::temp_directory_path() /
                    ("attndev_strict_" + std::to_string(::getpid()) + ".jsonl");
  attndev::test::write_text(path, text);
  const auto parsed = attndev::io::read_jsonl(path);
  std::filesystem::remove(path);
  CHECK(parsed.records.size() == 1);
  CHECK(parsed.bad_lines == 1);
  CHECK(parsed.first_bad_line == 2);
}
