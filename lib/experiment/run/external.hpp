// External variants: an implementation outside attndev (a PyTorch backend, cuDNN, a user's own
// kernel) joins a sweep as a command run once per point (or per input set, when it takes no tile
// size), measured exactly like an emulated variant.
//
// Protocol: attndev writes the point's Q, K, V (rounded to the variant's format) to {inputs}, a
// .safetensors file (experiment/run/tensor_io.hpp: tensors q, k, v of shape (B, H, N, d), metadata
// with every axis), runs the command through /bin/sh with the placeholders replaced (each value
// shell-quoted), and reads O from {output} (.safetensors or .npy). stdin is /dev/null; stdout and
// stderr are captured.
//
// Every way it can go wrong is a row status, and nothing else of the sweep is lost:
//   exit status 77         skipped: external command: <stderr tail>  (it cannot run here: no GPU
//                          for a CUDA backend, an unsupported dtype; as ctest's skip code)
//   exit status != 0       failed: external command exited with status 3: <stderr tail>
//   killed by a signal     failed: external command killed by signal 11 (SIGSEGV): <stderr tail>
//   past its timeout       failed: external command timed out after 5 s (killed): <stderr tail>
//   no or unreadable O     failed: external command exited 0 but ...: <what>
//   O of the wrong shape   failed: external output has shape (..), expected (..)
//   NaN/inf in O           failed: external output holds 3 NaN and 0 infinite values ...
//                          (the metrics are still recorded: nan_count, inf_count)
// The command runs in its own process group, so a timeout kills its children too.
#pragma once

#include <functional>
#include <string>

#include "attention/attention.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/run/status.hpp"
#include "experiment/run/variant_runner.hpp"

namespace attndev::experiment {

// The exit status by which a command says "I cannot run here" (row: skipped, with its stderr).
inline constexpr int kExternalSkipStatus = 77;

struct ExternalResult {
  Status status;
  attention::Output output;  // O when it was read with the right shape (ok, or non-finite values)
};

// `expected` is the shape of Q, K, V (O is (B, H, N_q, d)). Never throws for a failing command.
ExternalResult run_external(const Variant::External& external, numerics::Format format,
                            const ExternalContext& context, const attention::Shape& expected);

// The command line with every placeholder replaced; exposed for tests and `attndev plan`.
std::string expand_command(const std::string& command, numerics::Format format,
                           const ExternalContext& context);

}  // namespace attndev::experiment
