// attndev._core.mma: the tensor-core model (numerics/mma.hpp) on matrices, D = A B + C through an
// architecture's instructions in increasing k, each D fed to the next as C. Arguments are checked
// here, with short messages naming the argument (attndev.Error); python/attndev/__init__.py has
// made every array float64 and C-contiguous.
#include "mma.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "numerics/format.hpp"
#include "numerics/mma.hpp"
#include "numerics/round.hpp"

namespace nb = nanobind;

namespace attndev::python {

namespace {

namespace mma = numerics::mma;

using Matrix = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using OutMatrix = nb::ndarray<nb::numpy, double, nb::ndim<2>>;

// A bad argument, raised in Python as attndev.Error (register_mma translates it).
class MmaArgumentError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

[[noreturn]] void bad(const std::string& message) {
  throw MmaArgumentError(message);
}

std::string shape_text(const Matrix& m) {
  return "(" + std::to_string(m.shape(0)) + ", " + std::to_string(m.shape(1)) + ")";
}

// The input formats the profiles take, by the names the argument accepts.
numerics::Format parse_input(const std::string& text) {
  struct Name {
    const char* name;
    numerics::Format format;
  };
  static constexpr Name kNames[] = {
      {"fp16", numerics::Format::fp16},     {"bf16", numerics::Format::bf16},
      {"tf32", numerics::Format::tf32},     {"e4m3", numerics::Format::fp8_e4m3},
      {"e5m2", numerics::Format::fp8_e5m2},
  };
  for (const Name& n : kNames)
    if (text == n.name) return n.format;
  bad("input: unknown input type \"" + text + "\"; valid: fp16, bf16, tf32, e4m3, e5m2");
}

// Every finite element of m a value of f (inf and NaN pass: the model's special-value rules
// apply). tf32 operands are fp32 values: the tensor core truncates them to tf32 itself.
void check_values(const Matrix& m, numerics::Format f, const char* name) {
  const numerics::Format holds = f == numerics::Format::tf32 ? numerics::Format::fp32 : f;
  const std::string type = numerics::format_name(holds);
  const std::string article = type[0] == 'f' || type[0] == 'e' ? "an " : "a ";
  const std::size_t cols = m.shape(1);
  for (std::size_t i = 0; i < m.size(); ++i) {
    const double x = m.data()[i];
    if (std::isfinite(x) && !numerics::representable(holds, x))
      bad(std::string(name) + "[" + std::to_string(i / cols) + ", " + std::to_string(i % cols) +
          "] = " + std::to_string(x) + " is not " + article + type + " value; round it to " + type +
          " first");
  }
}

OutMatrix mma_call(const Matrix& a, const Matrix& b, const Matrix& c, const std::string& arch_text,
                   const std::string& input_text, const std::string& instruction_text,
                   const std::string& output_text) {
  mma::Arch arch;
  if (!mma::parse_arch(arch_text, arch) || arch == mma::Arch::none)
    bad("arch: unknown architecture \"" + arch_text + "\"; valid: sm80, sm89, sm90, sm100");
  mma::Instruction instruction;
  if (!mma::parse_instruction(instruction_text, instruction))
    bad("instruction: unknown instruction \"" + instruction_text +
        "\"; valid: mma, wgmma (sm90), tcgen05 (sm100)");
  const numerics::Format input = parse_input(input_text);
  if (output_text != "fp32" && output_text != "fp16")
    bad("output: must be \"fp32\" or \"fp16\", got \"" + output_text + "\"");
  const mma::Output output = output_text == "fp16" ? mma::Output::fp16 : mma::Output::fp32;
  mma::Kind kind{};
  mma::kind_of(input, kind);
  const mma::DotFunction dot = mma::dot_function(arch, instruction, kind);
  if (!dot) bad("arch: " + mma::profile_error(arch, instruction, kind));
  // An fp16 D exists for fp16 and fp8 operands only (mma ... .f16.f16.f16.f16, .f16.e4m3...).
  if (output == mma::Output::fp16 && input != numerics::Format::fp16 && kind != mma::Kind::f8)
    bad("output: an fp16 D exists for fp16 and fp8 inputs only, not " + input_text);
  const std::size_t m = a.shape(0), k = a.shape(1), n = b.shape(1);
  if (b.shape(0) != k)
    bad("b: shape " + shape_text(b) + " does not follow a's " + shape_text(a) + ": expected (" +
        std::to_string(k) + ", N)");
  if (c.shape(0) != m || c.shape(1) != n)
    bad("c: shape " + shape_text(c) + ", expected (" + std::to_string(m) + ", " +
        std::to_string(n) + ")");
  if (k > 1u << 30) bad("a: K = " + std::to_string(k) + " is too large");
  check_values(a, input, "a");
  check_values(b, input, "b");
  check_values(c, output == mma::Output::fp16 ? numerics::Format::fp16 : numerics::Format::fp32,
               "c");
  const mma::Operands op = mma::operands(input, input);
  double* d = new double[m * n];  // (M, N)
  {
    nb::gil_scoped_release release;
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j)
        d[i * n + j] = dot(op, a.data() + i * k, 1, b.data() + j, static_cast<std::ptrdiff_t>(n),
                           static_cast<int>(k), c.data()[i * n + j], output);
  }
  nb::capsule owner(d, [](void* p) noexcept { delete[] static_cast<double*>(p); });
  return OutMatrix(d, {m, n}, owner);
}

}  // namespace

void register_mma(nb::module_& m) {
  // attndev.Error, which module.cpp registered before calling here; the module keeps it alive.
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* error_type) {
        try {
          std::rethrow_exception(p);
        } catch (const MmaArgumentError& e) {
          PyErr_SetString(static_cast<PyObject*>(error_type), e.what());
        }
      },
      m.attr("Error").ptr());
  m.def("mma", &mma_call, nb::arg("a"), nb::arg("b"), nb::arg("c"), nb::arg("arch"),
        nb::arg("input"), nb::arg("instruction"), nb::arg("output"));
}

}  // namespace attndev::python
