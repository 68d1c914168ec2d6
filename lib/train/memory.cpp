#include "train/memory.hpp"

#include <algorithm>

#include "io/memory.hpp"

namespace attndev::train {

using io::sat_add;
using io::sat_mul;

std::uint64_t training_memory_bytes(const TrainConfig& config, int threads) {
  const ModelConfig& m = config.model;
  const std::uint64_t d = static_cast<std::uint64_t>(m.d_model);
  const std::uint64_t vocab = static_cast<std::uint64_t>(m.vocab);
  const std::uint64_t layers = static_cast<std::uint64_t>(m.layers);
  const std::uint64_t hidden = static_cast<std::uint64_t>(m.mlp_hidden);
  const std::uint64_t t = static_cast<std::uint64_t>(m.context);
  const std::uint64_t tokens = sat_mul(static_cast<std::uint64_t>(config.batch), t);  // B*T
  const std::uint64_t workers = static_cast<std::uint64_t>(std::max(threads, 1));

  // Parameters: embeddings and LM head (vocab x d each, plus positions T x d), per layer the four
  // attention projections, the MLP and the norms (biases and norms counted generously).
  std::uint64_t params = sat_add(sat_mul(2 * vocab, d), sat_mul(t, d));
  const std::uint64_t per_layer =
      sat_add(sat_mul(4, sat_mul(d, d)), sat_add(sat_mul(2, sat_mul(d, hidden)), 16 * d + hidden));
  params = sat_add(params, sat_mul(layers, per_layer));
  // Value, gradient, two AdamW moments, a snapshot's copy.
  const std::uint64_t parameter_bytes = sat_mul(8 * 5, params);

  // Kept for the backward pass per layer: the block's inputs, norms, Q/K/V/O, the MLP's hidden
  // activations (and gradients flowing through them).
  const std::uint64_t per_layer_activations = sat_mul(tokens, sat_add(12 * d, 3 * hidden));
  const std::uint64_t activations = sat_mul(8, sat_mul(layers, per_layer_activations));
  // One attention call: Q, K, V, O copies of the input stage and the outputs (B*T*d each), and
  // per thread the backward's score, probability and gradient matrices (T x T each).
  const std::uint64_t attention = sat_mul(
      8, sat_add(sat_mul(8, sat_mul(tokens, d)), sat_mul(workers, sat_mul(3, sat_mul(t, t)))));
  // Logits, probabilities and their gradient.
  const std::uint64_t logits = sat_mul(8, sat_mul(3, sat_mul(tokens, vocab)));
  // Shadow variants: each an extra forward and its golden on the layer's Q, K, V.
  const std::uint64_t shadows = sat_mul(static_cast<std::uint64_t>(config.shadows.size()),
                                        sat_mul(8, sat_mul(4, sat_mul(tokens, d))));

  return sat_add(sat_add(parameter_bytes, activations),
                 sat_add(sat_add(attention, logits), shadows));
}

}  // namespace attndev::train
