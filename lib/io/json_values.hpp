// Numbers in result files: non-finite values travel as strings, never as null.
//
// JSON has no NaN or infinity; nlohmann writes them as `null`, which a reader cannot tell apart
// from "missing". A deviation of NaN is a finding (a broken kernel), so it must survive the trip:
// we write "nan", "inf", "-inf" and read them back as the same doubles.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attndev::io {

using Json = nlohmann::ordered_json;  // rows keep their column order in files

// "nan", "inf" or "-inf" for a non-finite value, "" for a finite one: the one spelling of
// non-finite numbers in every file, table and terminal line attndev writes (printf's spellings
// differ by platform: "-nan", "Infinity").
std::string_view nonfinite_text(double value);

// `value` through a printf format of one double ("%.3g"), or nonfinite_text when not finite.
std::string format_double(double value, const char* printf_format);

// A finite double as a JSON number; NaN/inf as the strings "nan", "inf", "-inf".
Json number_json(double value);

// Reads what number_json wrote (and plain integers). False for anything else.
bool json_to_double(const Json& value, double& out);

// Shortest text that parses back to the same double (std::to_chars); "nan", "inf", "-inf".
std::string format_number(double value);

// A JSON scalar as a CSV/markdown cell: strings verbatim, numbers via format_number, booleans as
// true/false, null/absent as the empty string.
std::string cell_text(const Json& value);

}  // namespace attndev::io
