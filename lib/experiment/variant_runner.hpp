// The one place that turns a Variant's backend into a call (STYLE.md #5): `cpu` is the emulator,
// `cuda` is the seam where the CUDA backend hooks in.
#pragma once

#include <string>

#include "attention/attention.hpp"
#include "experiment/config.hpp"

namespace attndev::experiment {

struct VariantOutcome {
  // "ok", "skipped: <reason>" (nothing was compared) or "failed: <reason>" (an exception).
  std::string status = "ok";
  attention::Output output;  // meaningful only when status == "ok"
  double runtime_ms = 0;     // wall time of the backend call alone
};

// Never throws for a failing variant: an exception becomes status "failed: <what>" so the sweep
// goes on and the failure is recorded in its row.
VariantOutcome run_variant(const Variant& variant, const attention::Inputs& inputs,
                           const attention::Options& options);

// True when the variant's result does not depend on block_r/block_c, so one computation serves
// every point of an input set (baseline attention materializes S; it has no tiles).
bool tile_independent(const Variant& variant);

}  // namespace attndev::experiment
