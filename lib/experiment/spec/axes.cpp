#include "experiment/spec/axes.hpp"

#include <stdexcept>

namespace attndev::experiment {

namespace {
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;
}  // namespace

const char* scale_placement_name(attention::ScalePlacement placement) {
  return placement == attention::ScalePlacement::query ? "query" : "scores";
}

nlohmann::json axis_value_json(const AxisValue& value) {
  return std::visit(
      Overloaded{
          [](long long x) { return nlohmann::json(x); }, [](bool x) { return nlohmann::json(x); },
          [](const Distribution& d) { return nlohmann::json(d.describe()); },
          [](attention::ScalePlacement p) { return nlohmann::json(scale_placement_name(p)); },
          [](SameAsSeqLen) { return nlohmann::json("seq_len"); },
          [](const InputsFile& f) { return nlohmann::json(f.path); }},
      value);
}

std::string axis_value_text(const AxisValue& value) {
  const nlohmann::json j = axis_value_json(value);
  return j.is_string() ? j.get<std::string>() : j.dump();
}

long long PointAxes::integer(std::string_view axis) const {
  if (axis == "batch") return batch;
  if (axis == "heads") return heads;
  if (axis == "seq_len") return seq_len;
  if (axis == "seq_len_kv") return seq_len_kv;
  if (axis == "head_dim") return head_dim;
  if (axis == "block_r") return block_r;
  if (axis == "block_c") return block_c;
  throw std::logic_error("not an integer axis: " + std::string(axis));
}

nlohmann::json PointAxes::to_json() const {
  // nlohmann::json keeps keys sorted, which makes this canonical whatever the insertion order.
  nlohmann::json j = {{"batch", batch},
                      {"heads", heads},
                      {"seq_len", seq_len},
                      {"seq_len_kv", seq_len_kv},
                      {"head_dim", head_dim},
                      {"causal", causal},
                      {"scale_placement", scale_placement_name(scale_placement)},
                      {"block_r", block_r},
                      {"block_c", block_c}};
  if (from_file()) {
    j["inputs"] = inputs.path;
  } else {
    j["distribution"] = distribution.describe();
  }
  return j;
}

std::string PointAxes::canonical_text(bool tiles) const {
  // Keys in sorted order, as nlohmann::json (a std::map) writes them; integers and booleans as
  // json::dump writes them; strings escaped by nlohmann itself (a path may hold any byte).
  std::string out = "{\"batch\":";
  out += std::to_string(batch);
  if (tiles) {
    out += ",\"block_c\":";
    out += std::to_string(block_c);
    out += ",\"block_r\":";
    out += std::to_string(block_r);
  }
  out += causal ? ",\"causal\":true" : ",\"causal\":false";
  if (!from_file()) {
    out += ",\"distribution\":";
    out += nlohmann::json(distribution.describe()).dump();
  }
  out += ",\"head_dim\":";
  out += std::to_string(head_dim);
  out += ",\"heads\":";
  out += std::to_string(heads);
  if (from_file()) {
    out += ",\"inputs\":";
    out += nlohmann::json(inputs.path).dump();
  }
  out += ",\"scale_placement\":\"";
  out += scale_placement_name(scale_placement);
  out += "\",\"seq_len\":";
  out += std::to_string(seq_len);
  out += ",\"seq_len_kv\":";
  out += std::to_string(seq_len_kv);
  out += '}';
  return out;
}

std::string PointAxes::text(std::string_view axis) const {
  const nlohmann::json j = to_json();
  const auto it = j.find(std::string(axis));
  if (it == j.end()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

void set_axis(PointAxes& axes, std::string_view axis, const AxisValue& value) {
  const auto integer = [&] { return static_cast<int>(std::get<long long>(value)); };
  if (axis == "inputs") {
    axes.inputs = std::get<InputsFile>(value);
  } else if (axis == "batch") {
    axes.batch = integer();
  } else if (axis == "heads") {
    axes.heads = integer();
  } else if (axis == "seq_len") {
    axes.seq_len = integer();
  } else if (axis == "seq_len_kv") {
    axes.seq_len_kv = std::holds_alternative<SameAsSeqLen>(value) ? 0 : integer();
  } else if (axis == "head_dim") {
    axes.head_dim = integer();
  } else if (axis == "distribution") {
    axes.distribution = std::get<Distribution>(value);
  } else if (axis == "causal") {
    axes.causal = std::get<bool>(value);
  } else if (axis == "scale_placement") {
    axes.scale_placement = std::get<attention::ScalePlacement>(value);
  } else if (axis == "block_r") {
    axes.block_r = integer();
  } else if (axis == "block_c") {
    axes.block_c = integer();
  } else {
    throw std::logic_error("unknown axis " + std::string(axis));
  }
}

void resolve_axes(PointAxes& axes) {
  if (axes.seq_len_kv == 0) axes.seq_len_kv = axes.seq_len;
}

}  // namespace attndev::experiment
