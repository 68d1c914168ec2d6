// attndev._core.quantize: one named quantization scheme (attention/quant_schemes.hpp) applied to
// an array, for users who check their own quantizer against attndev's bit for bit. The Python
// package (attndev.quantize in python/attndev/__init__.py) reads the array as matrices (M, N, d)
// and shapes the results; this file only converts.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attention/quant_schemes.hpp"
#include "attention/quantize.hpp"
#include "config/suggest.hpp"

namespace nb = nanobind;

namespace attndev::python {

namespace {

using Array3 = nb::ndarray<const double, nb::ndim<3>, nb::c_contig, nb::device::cpu>;
using Out3 = nb::ndarray<nb::numpy, double, nb::ndim<3>>;
using Out1 = nb::ndarray<nb::numpy, double, nb::ndim<1>>;

nb::handle g_error;  // attndev.Error, registered by module.cpp before register_quantize runs

[[noreturn]] void raise(const std::string& message) {
  PyErr_SetString(g_error.ptr(), message.c_str());
  throw nb::python_error();
}

template <class Out>
Out owned_array(std::vector<double>&& v, std::initializer_list<std::size_t> shape) {
  auto* owned = new std::vector<double>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return Out(owned->data(), shape.size(), shape.begin(), owner);
}

// x: (M, N, d). Returns (dequantized (M, N, d), scales (flat, groups of each matrix in order),
// info: the scheme's facts and the stage's statistics).
nb::tuple quantize_call(const Array3& x, const std::string& scheme) {
  const attention::quant::NamedScheme* s = attention::quant::find_scheme(scheme);
  if (!s) {
    std::vector<std::string_view> names;
    for (const auto& n : attention::quant::named_schemes()) names.push_back(n.name);
    raise("quantize: unknown scheme \"" + scheme + "\"" + config::did_you_mean(scheme, names) +
          "; schemes: " + config::join_names(names));
  }
  for (std::size_t i = 0; i < 3; ++i)
    if (x.shape(i) > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      raise("quantize: an extent of " + std::to_string(x.shape(i)) + " is too large");
  attention::Tensor t;
  t.batch = 1;
  t.heads = static_cast<int>(x.shape(0));
  t.rows = static_cast<int>(x.shape(1));
  t.cols = static_cast<int>(x.shape(2));
  t.data.assign(x.data(), x.data() + x.size());
  if (const std::string e = attention::quant::tiling_error(s->spec, t.rows, t.cols); !e.empty())
    raise("quantize: scheme \"" + scheme + "\": " + e);
  attention::quant::Quantized q;
  {
    nb::gil_scoped_release release;
    q = attention::quant::quantize(t, s->spec);
  }
  std::vector<double> scales = q.scales;
  for (double& v : scales) v *= q.tensor_scale;  // exact: e4m3 x fp32
  const std::size_t n_scales = scales.size();
  nb::dict info;
  info["groups_per_matrix"] = q.groups_per_head;
  info["granularity"] = attention::quant::granularity_name(s->spec.granularity);
  info["scale_rule"] = attention::quant::scale_rule_name(s->spec.rule);
  info["element"] = numerics::format_name(s->spec.element);
  info["rounding"] = numerics::quant::elem_rounding_name(s->spec.rounding);
  info["tensor_scale"] = q.tensor_scale;
  info["elements"] = q.stats.elements;
  info["saturated"] = q.stats.saturated;
  info["zero_scales"] = q.stats.zero_scales;
  info["nonfinite_scales"] = q.stats.nonfinite_scales;
  info["rel_rmse"] = q.stats.rel_rmse();
  Out3 deq = owned_array<Out3>(q.dequantized().data, {x.shape(0), x.shape(1), x.shape(2)});
  Out1 sc = owned_array<Out1>(std::move(scales), {n_scales});
  return nb::make_tuple(deq, sc, info);
}

nb::list schemes_list() {
  nb::list out;
  for (const attention::quant::NamedScheme& s : attention::quant::named_schemes()) {
    nb::dict d;
    d["name"] = std::string(s.name);
    d["description"] = std::string(s.description);
    d["tokens"] = s.tokens;
    d["block"] = s.spec.granularity == attention::quant::Granularity::row_groups ? s.spec.cols : 0;
    out.append(d);
  }
  return out;
}

}  // namespace

void register_quantize(nb::module_& m) {
  g_error = m.attr("Error");
  m.def("quantize", &quantize_call, nb::arg("x"), nb::arg("scheme"));
  m.def("quant_schemes", &schemes_list);
}

}  // namespace attndev::python
