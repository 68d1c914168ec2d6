// attndev._core's tensor-core model binding (mma.cpp): registered by module.cpp's one call.
#pragma once

#include <nanobind/nanobind.h>

namespace attndev::python {

// Adds attndev._core.mma; call after attndev._core.Error exists.
void register_mma(nanobind::module_& m);

}  // namespace attndev::python
