#include "experiment/run/dump.hpp"

#include <cmath>

#include "config/policy_json.hpp"
#include "experiment/run/tensor_io.hpp"
#include "io/safe_open.hpp"
#include "io/text_escape.hpp"
#include "numerics/round.hpp"

namespace attndev::experiment {

std::string dump_file_stem(const std::string& name) {
  std::string out = io::file_name_encode(name);
  // Never the name of an inputs or golden file of the same folder: the first letter encoded
  // ("%69nputs-fp32") keeps the name reversible and apart from every other variant's.
  if (out.rfind("inputs-", 0) == 0 || out.rfind("golden-", 0) == 0)
    out = (out[0] == 'i' ? "%69" : "%67") + out.substr(1);
  return out;
}

std::filesystem::path DumpWriter::file(const std::string& stem) const {
  if (owned_from.empty()) {
    std::filesystem::create_directories(dir);
  } else {
    // Each folder below the output folder made here or found as a real folder, never followed
    // through a link planted in its place.
    std::filesystem::path at = owned_from;
    for (const auto& part : dir.lexically_relative(owned_from))
      io::create_owned_directory(at /= part);
  }
  const std::filesystem::path path = dir / (stem + ".safetensors");
  io::require_regular_or_absent(path);
  return path;
}

void DumpWriter::inputs(const attention::Inputs& in, numerics::Format format) const {
  write_inputs_file(file("inputs-" + std::string(numerics::format_name(format))), in, format, base);
}

void DumpWriter::golden(const attention::Tensor& o, numerics::Format input_format) const {
  io::TensorMetadata m = base;
  m["variant"] = "golden";
  m["policy"] = config::policy_stages_json(numerics::kGoldenPolicy).dump();
  m["inputs_format"] = numerics::format_name(input_format);
  write_output_file(file("golden-" + std::string(numerics::format_name(input_format))), o,
                    numerics::Format::fp64, m);
}

void DumpWriter::variant(const Variant& v, const Status& status, const attention::Tensor& o) const {
  io::TensorMetadata m = base;
  m["variant"] = v.name;
  m["algorithm"] = variant_algorithm_name(v);
  m["backend"] = backend_name(v.backend);
  m["policy"] = config::policy_stages_json(v.policy).dump();
  m["policy_label"] = v.policy_label;
  m["status"] = status.text();
  if (v.external) m["command"] = v.external->command;
  // An output holds values of its policy's output format; one that does not (an external
  // command writing fp32 for a bf16 variant) is kept exact in F64 rather than rounded here.
  numerics::Format format = v.policy.output;
  for (double x : o.data)
    if (std::isfinite(x) && numerics::round_to(format, x) != x) {
      format = numerics::Format::fp64;
      break;
    }
  write_output_file(file(dump_file_stem(v.name)), o, format, m);
}

}  // namespace attndev::experiment
