// `constraints` of an experiment config: "AXIS OP AXIS-or-INTEGER" and the one comparison the
// parser and the plan share.
#include "experiment/spec/config_parse.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "config/keys.hpp"
#include "config/suggest.hpp"

namespace attndev::experiment {

bool compare(long long a, CompareOp op, long long b) {
  switch (op) {
    case CompareOp::lt:
      return a < b;
    case CompareOp::le:
      return a <= b;
    case CompareOp::gt:
      return a > b;
    case CompareOp::ge:
      return a >= b;
    case CompareOp::eq:
      return a == b;
    case CompareOp::ne:
      return a != b;
  }
  return false;
}

namespace config_parse {

using config::check_keys;
using config::did_you_mean;
using config::join_names;
using config::type_name;
using nlohmann::json;

namespace {

constexpr std::string_view kConstraintKeys[] = {"require", "reason"};
// Axes a constraint may compare: the integer ones.
constexpr std::string_view kNumericAxes[] = {"batch",    "heads",   "seq_len", "seq_len_kv",
                                             "head_dim", "block_r", "block_c"};

bool parse_operand(const std::string& token, std::string& axis, long long& literal) {
  if (std::find(std::begin(kNumericAxes), std::end(kNumericAxes), token) !=
      std::end(kNumericAxes)) {
    axis = token;
    return true;
  }
  if (token.empty() || token.size() > 12) return false;
  for (char c : token)
    if (c < '0' || c > '9') return false;
  axis.clear();
  literal = std::stoll(token);
  return true;
}

Constraint parse_constraint_text(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string lhs, op, rhs, extra;
  in >> lhs >> op >> rhs;
  const std::string form =
      "expected \"AXIS OP AXIS-or-INTEGER\" with spaces, e.g. \"block_r <= seq_len\"";
  if (lhs.empty() || op.empty() || rhs.empty() || (in >> extra))
    throw ConfigError(path, form + ", got \"" + text + "\"");
  Constraint c;
  c.text = text;
  static const std::map<std::string, CompareOp> kOps = {
      {"<", CompareOp::lt},  {"<=", CompareOp::le}, {">", CompareOp::gt},
      {">=", CompareOp::ge}, {"==", CompareOp::eq}, {"!=", CompareOp::ne}};
  auto it = kOps.find(op);
  if (it == kOps.end())
    throw ConfigError(path, "unknown operator \"" + op + "\"; valid: < <= > >= == !=");
  c.op = it->second;
  for (auto [token, axis, literal] :
       {std::tie(lhs, c.lhs, c.lhs_literal), std::tie(rhs, c.rhs, c.rhs_literal)}) {
    if (!parse_operand(token, axis, literal))
      throw ConfigError(path, "\"" + token + "\" is neither an integer axis" +
                                  did_you_mean(token, kNumericAxes) +
                                  " nor a non-negative integer; axes: " + join_names(kNumericAxes));
  }
  if (c.lhs.empty() && c.rhs.empty() && !compare(c.lhs_literal, c.op, c.rhs_literal))
    throw ConfigError(path, "\"" + text + "\" is always false: it would skip every point");
  c.reason = "violates " + text;
  return c;
}

}  // namespace

std::vector<Constraint> parse_constraints(const json& root) {
  std::vector<Constraint> out;
  if (!root.contains("constraints")) return out;
  const json& list = root["constraints"];
  require_type(list, "constraints", list.is_array(), "a list of constraints");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = at("constraints", i);
    const json& c = list[i];
    if (c.is_string()) {
      out.push_back(parse_constraint_text(c.get<std::string>(), path));
      continue;
    }
    require_type(c, path, c.is_object(),
                 "a string like \"block_r <= seq_len\" or {\"require\": ..., \"reason\": ...}");
    check_keys(c, path, kConstraintKeys);
    if (!c.contains("require")) throw ConfigError(path + ".require", "missing");
    require_type(c["require"], path + ".require", c["require"].is_string(), "a string");
    Constraint parsed = parse_constraint_text(c["require"].get<std::string>(), path + ".require");
    if (c.contains("reason")) {
      require_type(c["reason"], path + ".reason", c["reason"].is_string(), "a string");
      parsed.reason = c["reason"].get<std::string>();
    }
    out.push_back(std::move(parsed));
  }
  return out;
}

}  // namespace config_parse

}  // namespace attndev::experiment
