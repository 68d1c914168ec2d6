#include "experiment/run/tensor_io.hpp"

#include "io/memory.hpp"
#include "io/npy.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace attndev::experiment {

namespace {

io::NamedTensor named(std::string name, const attention::Tensor& t, io::DType dtype) {
  io::NamedTensor n;
  n.name = std::move(name);
  n.dtype = dtype;
  n.shape = {t.batch, t.heads, t.rows, t.cols};
  n.values = t.data;
  return n;
}

std::string dims_text(const std::vector<std::int64_t>& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

constexpr const char* kOutputNames[] = {"o", "O", "out", "output"};

}  // namespace

std::string shape_text(const attention::Tensor& t) {
  return dims_text({t.batch, t.heads, t.rows, t.cols});
}

io::DType storage_dtype(numerics::Format format) {
  switch (format) {
    case numerics::Format::fp64:
      return io::DType::f64;
    case numerics::Format::fp16:
      return io::DType::f16;
    case numerics::Format::bf16:
      return io::DType::bf16;
    case numerics::Format::fp32:
    case numerics::Format::tf32:
    case numerics::Format::fp8_e4m3:
    case numerics::Format::fp8_e5m2:
    case numerics::Format::fp6_e2m3:
    case numerics::Format::fp6_e3m2:
    case numerics::Format::fp4_e2m1:
    case numerics::Format::e8m0:
    case numerics::Format::ue4m3:
    case numerics::Format::int8:
    case numerics::Format::int4:
      break;
  }
  return io::DType::f32;  // tf32, fp8 and the quantization formats' values are exact in fp32
}

void write_inputs_file(const std::filesystem::path& path, const attention::Inputs& inputs,
                       numerics::Format format, const io::TensorMetadata& metadata) {
  const io::DType dtype = storage_dtype(format);
  const std::vector<io::NamedTensor> tensors = {
      named("q", inputs.q, dtype), named("k", inputs.k, dtype), named("v", inputs.v, dtype)};
  io::TensorMetadata m = metadata;
  m["format"] = numerics::format_name(format);
  io::write_safetensors(path, tensors, m);
}

void write_output_file(const std::filesystem::path& path, const attention::Tensor& o,
                       numerics::Format format, const io::TensorMetadata& metadata) {
  const std::vector<io::NamedTensor> tensors = {named("o", o, storage_dtype(format))};
  io::TensorMetadata m = metadata;
  m["format"] = numerics::format_name(format);
  io::write_safetensors(path, tensors, m);
}

namespace {

// Room for a safetensors header (names, shapes, offsets, metadata) or an .npy header.
constexpr std::uint64_t kOutputHeaderAllowance = std::uint64_t{1} << 20;

}  // namespace

attention::Tensor read_output_file(const std::filesystem::path& path,
                                   const attention::Shape& expected) {
  std::filesystem::path actual = path;
  std::error_code ec;
  // np.save("x.safetensors", a) writes x.safetensors.npy: accept that too.
  if (!std::filesystem::exists(actual, ec) && std::filesystem::exists(path.string() + ".npy", ec))
    actual = path.string() + ".npy";
  const std::string file = actual.string();
  if (!std::filesystem::exists(actual, ec))
    throw std::runtime_error(path.string() + ": no such file");
  // Bounded before a byte of data is read: an output of the expected shape, in F64 with its lse
  // beside it and a header, takes at most this much. A larger file (a sparse 7 GB file of another
  // shape) is refused from its size alone instead of being read and decoded whole.
  const std::uint64_t elements =
      io::sat_mul(io::sat_mul(static_cast<std::uint64_t>(expected.batch),
                              static_cast<std::uint64_t>(expected.heads)),
                  io::sat_mul(static_cast<std::uint64_t>(expected.seq_q),
                              static_cast<std::uint64_t>(expected.head_dim) + 1));
  const std::uint64_t limit = io::sat_add(io::sat_mul(8, elements), kOutputHeaderAllowance);
  if (const std::uintmax_t size = std::filesystem::file_size(actual, ec); !ec && size > limit)
    throw std::runtime_error(
        "output: " + file + " is " + io::format_bytes(size) + ", more than an output of shape " +
        dims_text({expected.batch, expected.heads, expected.seq_q, expected.head_dim}) +
        " can take (" + io::format_bytes(limit) +
        " in F64 with lse and a header): not read; write only o (B, H, N_q, d)");
  std::vector<io::NamedTensor> tensors;
  try {
    // By content, not by name: {output} ends in .safetensors, and .npy bytes are welcome there.
    const std::vector<unsigned char> bytes = io::read_file_bytes(actual, limit);
    static constexpr unsigned char kNpyMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (bytes.size() >= 6 && std::equal(kNpyMagic, kNpyMagic + 6, bytes.begin()))
      tensors.push_back(io::parse_npy(bytes, file, "o"));
    else
      tensors = io::parse_safetensors(bytes, file).tensors;
  } catch (const io::TensorFileError& e) {
    throw std::runtime_error(std::string("output: ") + e.what());
  }
  const io::NamedTensor* o = tensors.size() == 1 ? &tensors.front() : nullptr;
  for (const io::NamedTensor& t : tensors)
    for (const char* name : kOutputNames)
      if (t.name == name) o = &t;
  if (!o) {
    std::string names;
    for (const io::NamedTensor& t : tensors) names += (names.empty() ? "" : ", ") + t.name;
    throw std::runtime_error(file + ": no tensor named o (or O, out, output) among " +
                             (names.empty() ? "none" : names));
  }
  const std::vector<std::int64_t> want = {expected.batch, expected.heads, expected.seq_q,
                                          expected.head_dim};
  // Leading dimensions of 1 may be left out: (N, d) is (1, 1, N, d).
  std::vector<std::int64_t> got = o->shape;
  while (got.size() < 4) got.insert(got.begin(), 1);
  if (got != want)
    throw std::runtime_error("output has shape " + dims_text(o->shape) +
                             ", expected (B, H, N_q, d) = " + dims_text(want));
  attention::Tensor t(expected.batch, expected.heads, expected.seq_q, expected.head_dim);
  t.data = o->values;
  return t;
}

}  // namespace attndev::experiment
