// The one place that turns a Variant into a call (docs/CONTRIBUTING.md #6): `cpu` is the emulator,
// `cuda` lib/cuda (the kernel named by Variant::kernel, or the algorithm's own), `external` a
// command (experiment/run/external.hpp). `attndev run`, `attndev point` and `attndev match` all come
// here.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/run/status.hpp"

namespace attndev::experiment {

struct VariantOutcome {
  Status status;             // ok / skipped: reason (nothing compared) / failed: reason
  attention::Output output;  // meaningful only when status is ok
  double runtime_ms = 0;     // wall time of the backend call alone
};

// What only an external variant needs: where its files go and what its placeholders say.
struct ExternalContext {
  std::filesystem::path work_dir;     // private to this call; created and removed by the caller
  std::filesystem::path inputs_file;  // Q, K, V already written there (write_inputs_file)
  nlohmann::json axes;                // the point's canonical axes, for {<axis>} placeholders
  // Polled while the command runs: true kills it (SIGINT/SIGTERM of attndev; the row is not
  // written, so a rerun redoes the point).
  std::function<bool()> stop_requested;
};

// Never throws for a failing variant: an exception becomes status "failed: <what>" so the sweep
// goes on and the failure is recorded in its row. `external` may be null for cpu/cuda variants.
VariantOutcome run_variant(const Variant& variant, const attention::Inputs& inputs,
                           const attention::Options& options,
                           const ExternalContext* external = nullptr);

// True when the variant's result does not depend on block_r/block_c, so one computation serves
// every point of an input set (baseline attention materializes S; it has no tiles; a variant
// with its own block_r and block_c; an external command that does not take {block_r}/{block_c}).
bool tile_independent(const Variant& variant);

}  // namespace attndev::experiment
