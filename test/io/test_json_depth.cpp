// The nesting bound every JSON input passes before it is parsed (io/json_depth.hpp).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "io/json_depth.hpp"
#include "io/jsonl.hpp"

using attndev::io::json_depth_error;
using attndev::io::kMaxJsonDepth;

namespace {

std::string nested(std::size_t depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

}  // namespace

TEST_CASE("json depth: the limit itself passes, one level more is refused with its position",
          "[io][json]") {
  CHECK_FALSE(json_depth_error(nested(kMaxJsonDepth)));
  const auto error = json_depth_error(nested(kMaxJsonDepth + 1));
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("nested deeper than 64 levels"));
  CHECK_THAT(*error, Catch::Contains("line 1, column 65"));
  CHECK(json_depth_error("{\"a\":\n" + nested(kMaxJsonDepth) + "}"));
  CHECK_THAT(*json_depth_error("{\"a\":\n" + nested(kMaxJsonDepth) + "}"),
             Catch::Contains("line 2, column 64"));
  // Objects and arrays count alike; siblings do not add up.
  std::string objects;
  for (std::size_t i = 0; i < kMaxJsonDepth + 1; ++i) objects += "{\"k\":";
  objects += "1" + std::string(kMaxJsonDepth + 1, '}');
  CHECK(json_depth_error(objects));
  std::string siblings = "[";
  for (int i = 0; i < 1000; ++i) {
    if (i) siblings += ',';
    siblings += nested(10);
  }
  CHECK_FALSE(json_depth_error(siblings + "]"));
}

TEST_CASE("json depth: brackets inside strings and comments do not count", "[io][json]") {
  const std::string in_string = "{\"s\": \"" + nested(1000) + "\\\"" + nested(1000) + "\"}";
  CHECK_FALSE(json_depth_error(in_string));
  CHECK_FALSE(json_depth_error("[\"\\\\\", " + nested(10) + "]"));  // escaped backslash ends
  const std::string commented =
      "{// " + std::string(100, '[') + "\n/* " + std::string(100, '{') + " */ \"a\": 1}";
  CHECK_FALSE(json_depth_error(commented, kMaxJsonDepth, /*comments=*/true));
  CHECK(json_depth_error(commented, kMaxJsonDepth, /*comments=*/false));
}

TEST_CASE("json depth: a results line nested too deep is a bad line, not a record", "[io][json]") {
  const auto file = std::filesystem::temp_directory_path() /
                    ("attndev_json_depth_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(file) << "{\"record\":\"row\"}\n{\"record\":\"row\",\"x\":" << nested(100000)
                      << "}\n{\"record\":\"run\"}\n";
  const attndev::io::JsonlContents c = attndev::io::read_jsonl(file);
  std::filesystem::remove(file);
  CHECK(c.records.size() == 2);
  CHECK(c.bad_lines == 1);
  CHECK(c.first_bad_line == 2);
}
