#include "experiment/run/dump.hpp"

#include <cmath>

#include "config/policy_json.hpp"
#include "experiment/run/tensor_io.hpp"
#include "numerics/round.hpp"

namespace attndev::experiment {

std::string dump_file_stem(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (out.empty() || out.front() == '.') out.insert(out.begin(), '_');
  // Never the name of an inputs or golden file of the same folder.
  if (out.rfind("inputs-", 0) == 0 || out.rfind("golden-", 0) == 0) out = "variant-" + out;
  return out;
}

void DumpWriter::inputs(const attention::Inputs& in, numerics::Format format) const {
  std::filesystem::create_directories(dir);
  write_inputs_file(dir / ("inputs-" + std::string(numerics::format_name(format)) + ".safetensors"),
                    in, format, base);
}

void DumpWriter::golden(const attention::Tensor& o, numerics::Format input_format) const {
  std::filesystem::create_directories(dir);
  io::TensorMetadata m = base;
  m["variant"] = "golden";
  m["policy"] = config::policy_stages_json(numerics::kGoldenPolicy).dump();
  m["inputs_format"] = numerics::format_name(input_format);
  write_output_file(
      dir / ("golden-" + std::string(numerics::format_name(input_format)) + ".safetensors"), o,
      numerics::Format::fp64, m);
}

void DumpWriter::variant(const Variant& v, const Status& status, const attention::Tensor& o) const {
  std::filesystem::create_directories(dir);
  io::TensorMetadata m = base;
  m["variant"] = v.name;
  m["algorithm"] = variant_algorithm_name(v);
  m["backend"] = backend_name(v.backend);
  if (v.external) {
    // An external's arithmetic is its own: attndev knows only the format Q, K, V and O are
    // exchanged in (its `format`), and records that rather than a policy it never ran.
    m["exchange_format"] = numerics::format_name(v.policy.output);
    m["command"] = v.external->command;
  } else {
    m["policy"] = config::policy_stages_json(v.policy).dump();
    m["policy_label"] = v.policy_label;
    if (v.stage) {
      m["stage"] = v.stage->text();
      m["base_policy_label"] = v.base_policy_label;
    }
  }
  m["status"] = status.text();
  // An output holds values of its policy's output format; one that does not (an external
  // command writing fp32 for a bf16 variant) is kept exact in F64 rather than rounded here.
  numerics::Format format = v.policy.output;
  for (double x : o.data)
    if (std::isfinite(x) && numerics::round_to(format, x) != x) {
      format = numerics::Format::fp64;
      break;
    }
  write_output_file(dir / (dump_file_stem(v.name) + ".safetensors"), o, format, m);
}

}  // namespace attndev::experiment
