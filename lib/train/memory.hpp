// The memory one training run needs at its peak, estimated from its config before anything is
// allocated (io/memory.hpp says why): `attndev train` refuses a run that cannot fit (exit 2).
#pragma once

#include <cstdint>

#include "train/train_config.hpp"

namespace attndev::train {

// An upper estimate, in bytes, saturating at io::kBytesOverflow: parameters with their gradients,
// AdamW moments and a snapshot copy; the activations every layer keeps for the backward pass; the
// attention forward and backward of one layer (the backward holds N x N score matrices per
// thread); the logits and their gradients; the shadow variants' extra attention calls.
std::uint64_t training_memory_bytes(const TrainConfig& config, int threads);

}  // namespace attndev::train
