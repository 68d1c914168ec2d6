// `attndev wdist A B [--json] [--csv FILE] [--tensor REGEX]`: compares two checkpoints (files or
// folders of safetensors / .npy) tensor by tensor: Wasserstein-1 between the value
// distributions, max |b - a| and ||b - a|| / ||a|| for equal shapes, and an aggregate.
// A is the reference. docs/wdist.md describes formats, matching and the columns.

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/memory.hpp"
#include "io/tensor_file.hpp"
#include "metrics/wasserstein.hpp"

namespace attndev::app {

namespace {

struct WdistOptions {
  std::string a, b;
  bool json = false;
  std::string csv;
  std::string tensor_regex;
};

struct Row {
  std::string key;
  std::string key_b;  // differs from key only when two single files were paired
  const io::NamedTensor* a;
  const io::NamedTensor* b;
  metrics::TensorDistance d;
};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// Fixed spellings for non-finite values (printf's differ between platforms).
std::string num(double x, const char* fmt) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

nlohmann::json json_num(double x) {
  if (!std::isfinite(x)) return num(x, "%g");  // "nan" / "inf": never null (docs/results.md)
  return x;
}

std::vector<io::LoadedTensor> load_side(const std::string& path, const char* which) {
  try {
    return io::load_tensors(path);
  } catch (const io::TensorFileError& e) {
    throw UsageError(std::string("wdist: ") + which + ": " + e.what());
  }
}

void print_table(const WdistOptions& opt, const std::vector<Row>& rows,
                 const metrics::DistanceAggregate& g) {
  std::size_t w_name = 6, w_shape = 5;
  for (const Row& r : rows) {
    w_name = std::max(w_name, r.key.size());
    const std::string s = r.d.same_shape ? shape_text(r.a->shape)
                                         : shape_text(r.a->shape) + "|" + shape_text(r.b->shape);
    w_shape = std::max(w_shape, s.size());
  }
  std::printf("A: %s\nB: %s\n\n", opt.a.c_str(), opt.b.c_str());
  std::printf("%-*s  %-*s  %-11s  %-11s  %-11s  %s\n", static_cast<int>(w_name), "tensor",
              static_cast<int>(w_shape), "shape", "W1", "max|a-b|", "rel L2", "NaN a/b");
  for (const Row& r : rows) {
    const std::string s = r.d.same_shape ? shape_text(r.a->shape)
                                         : shape_text(r.a->shape) + "|" + shape_text(r.b->shape);
    const std::string max_abs = r.d.same_shape ? num(r.d.max_abs, "%.4e") : "-";
    const std::string rel = r.d.same_shape ? num(r.d.rel_l2, "%.4e") : "-";
    std::printf("%-*s  %-*s  %-11s  %-11s  %-11s  %lld/%lld\n", static_cast<int>(w_name),
                r.key.c_str(), static_cast<int>(w_shape), s.c_str(), num(r.d.w1, "%.4e").c_str(),
                max_abs.c_str(), rel.c_str(), static_cast<long long>(r.d.nan_a),
                static_cast<long long>(r.d.nan_b));
  }
  const bool elementwise = g.same_shape_tensors > 0;
  std::printf(
      "\naggregate over %lld tensors (%lld elements): W1 element-weighted mean %s, "
      "max|a-b| %s, rel L2 %s (%lld tensors of equal shape)\n",
      static_cast<long long>(g.tensors), static_cast<long long>(g.elements),
      num(g.w1_mean, "%.4e").c_str(), elementwise ? num(g.max_abs, "%.4e").c_str() : "-",
      elementwise ? num(g.rel_l2, "%.4e").c_str() : "-",
      static_cast<long long>(g.same_shape_tensors));
}

void write_csv(const std::string& path, const std::vector<Row>& rows) {
  std::string text =
      "tensor,shape_a,shape_b,dtype_a,dtype_b,count_a,count_b,w1,max_abs,rel_l2,nan_a,nan_b,"
      "inf_a,inf_b\n";
  const auto shape = [](const std::vector<std::int64_t>& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (i) out += 'x';
      out += std::to_string(s[i]);
    }
    return out.empty() ? std::string("scalar") : out;
  };
  for (const Row& r : rows) {
    // Keys are file paths and tensor names: quote them, doubling any quote.
    std::string key = "\"";
    for (char c : r.key) key += c == '"' ? std::string("\"\"") : std::string(1, c);
    key += "\"";
    text += key + "," + shape(r.a->shape) + "," + shape(r.b->shape) + "," +
            io::dtype_name(r.a->dtype) + "," + io::dtype_name(r.b->dtype) + "," +
            std::to_string(r.d.count_a) + "," + std::to_string(r.d.count_b) + "," +
            num(r.d.w1, "%.17g") + "," + (r.d.same_shape ? num(r.d.max_abs, "%.17g") : "") + "," +
            (r.d.same_shape ? num(r.d.rel_l2, "%.17g") : "") + "," + std::to_string(r.d.nan_a) +
            "," + std::to_string(r.d.nan_b) + "," + std::to_string(r.d.inf_a) + "," +
            std::to_string(r.d.inf_b) + "\n";
  }
  io::write_file_atomically(
      path, std::span(reinterpret_cast<const unsigned char*>(text.data()), text.size()));
}

nlohmann::json to_json(const WdistOptions& opt, const std::vector<Row>& rows,
                       const metrics::DistanceAggregate& g, const io::TensorPairing& m) {
  nlohmann::json j;
  j["a"] = opt.a;
  j["b"] = opt.b;
  j["tensors"] = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json t = {{"tensor", r.key},
                        {"shape_a", r.a->shape},
                        {"shape_b", r.b->shape},
                        {"dtype_a", io::dtype_name(r.a->dtype)},
                        {"dtype_b", io::dtype_name(r.b->dtype)},
                        {"count_a", r.d.count_a},
                        {"count_b", r.d.count_b},
                        {"w1", json_num(r.d.w1)},
                        {"same_shape", r.d.same_shape},
                        {"nan_a", r.d.nan_a},
                        {"nan_b", r.d.nan_b},
                        {"inf_a", r.d.inf_a},
                        {"inf_b", r.d.inf_b}};
    if (r.key_b != r.key) t["tensor_b"] = r.key_b;
    if (r.d.same_shape) {  // undefined otherwise: left out rather than written as null
      t["max_abs"] = json_num(r.d.max_abs);
      t["rel_l2"] = json_num(r.d.rel_l2);
    }
    j["tensors"].push_back(std::move(t));
  }
  j["aggregate"] = {{"tensors", g.tensors},
                    {"elements", g.elements},
                    {"w1_mean", json_num(g.w1_mean)},
                    {"same_shape_tensors", g.same_shape_tensors}};
  if (g.same_shape_tensors > 0) {
    j["aggregate"]["max_abs"] = json_num(g.max_abs);
    j["aggregate"]["rel_l2"] = json_num(g.rel_l2);
  }
  j["unmatched_a"] = m.only_a;
  j["unmatched_b"] = m.only_b;
  return j;
}

void run_wdist(const WdistOptions& opt) {
  std::regex filter;
  if (!opt.tensor_regex.empty()) {
    try {
      filter = std::regex(opt.tensor_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw UsageError("wdist: --tensor '" + opt.tensor_regex +
                       "' is not a valid regular expression (" + e.what() + ")");
    }
  }
  std::vector<io::LoadedTensor> a = load_side(opt.a, "A");
  std::vector<io::LoadedTensor> b = load_side(opt.b, "B");
  if (!opt.tensor_regex.empty()) {
    const auto drop = [&](const io::LoadedTensor& t) { return !std::regex_search(t.key, filter); };
    std::erase_if(a, drop);
    std::erase_if(b, drop);
  }
  const io::TensorPairing m = io::match_tensors(a, b);
  // W1 sorts a copy of both tensors of a pair (doubles).
  std::uint64_t pair_bytes = 0;
  for (const auto& [i, j] : m.pairs)
    pair_bytes =
        std::max(pair_bytes, io::sat_mul(8, a[i].tensor.values.size() + b[j].tensor.values.size()));
  io::require_memory(pair_bytes, "wdist: comparing the largest pair of tensors");

  std::vector<Row> rows;
  std::vector<metrics::TensorDistance> parts;
  for (const auto& [i, j] : m.pairs) {
    const io::NamedTensor& ta = a[i].tensor;
    const io::NamedTensor& tb = b[j].tensor;
    Row r{a[i].key, b[j].key, &ta, &tb,
          metrics::tensor_distance(ta.values, tb.values, /*same_shape=*/ta.shape == tb.shape)};
    parts.push_back(r.d);
    rows.push_back(std::move(r));
  }
  const metrics::DistanceAggregate g = metrics::aggregate(parts);

  if (!opt.csv.empty()) write_csv(opt.csv, rows);
  if (opt.json) {
    std::printf("%s\n", to_json(opt, rows, g, m).dump(1).c_str());
  } else if (!rows.empty()) {
    print_table(opt, rows, g);
  }
  for (const std::string& k : m.only_a)
    std::fprintf(stderr, "attndev wdist: only in A: %s\n", k.c_str());
  for (const std::string& k : m.only_b)
    std::fprintf(stderr, "attndev wdist: only in B: %s\n", k.c_str());
  // Different shapes under one name usually mean the wrong pair of checkpoints (another model
  // size, a transposed export): W1 still compares the two value distributions, silently.
  for (const Row& r : rows)
    if (!r.d.same_shape)
      std::fprintf(stderr,
                   "attndev wdist: warning: %s has shape %s in A and %s in B: W1 compares the "
                   "value distributions only (no max|a-b|, no rel L2); check that A and B are "
                   "checkpoints of the same model\n",
                   r.key.c_str(), shape_text(r.a->shape).c_str(), shape_text(r.b->shape).c_str());
  std::int64_t nan_tensors = 0;
  for (const Row& r : rows) nan_tensors += (r.d.nan_a + r.d.nan_b) > 0;
  if (nan_tensors > 0) {
    std::fprintf(stderr,
                 "attndev wdist: %lld tensor(s) hold NaN values (see the NaN column); "
                 "their W1 is nan\n",
                 static_cast<long long>(nan_tensors));
  }
  if (rows.empty()) {
    // Nothing compared is never a success (exit_codes.hpp).
    std::fprintf(stderr, "attndev wdist: no tensor of A matches one of B%s: nothing compared\n",
                 opt.tensor_regex.empty() ? "" : " (after --tensor)");
    throw CommandExit{kExitNothingCompared};
  }
}

}  // namespace

void add_wdist_command(cli::Command& app) {
  auto opt = std::make_shared<WdistOptions>();
  cli::Command* cmd = app.add_subcommand(
      "wdist",
      "Compare two checkpoints (safetensors/.npy files or folders) tensor by tensor: "
      "Wasserstein-1, max|a-b|, relative L2");
  cmd->add_option("A", opt->a, "Reference checkpoint: a .safetensors/.npy file or a folder")
      ->required();
  cmd->add_option("B", opt->b, "Checkpoint compared against A (same kind of path)")->required();
  cmd->add_flag("--json", opt->json, "Print JSON on stdout instead of the table");
  cmd->add_option("--csv", opt->csv, "Also write one CSV row per tensor to FILE (atomically)");
  cmd->add_option("--tensor", opt->tensor_regex,
                  "Only tensors whose key matches this regular expression (searched, ECMAScript)");
  cmd->callback([opt] { run_wdist(*opt); });
}

}  // namespace attndev::app
