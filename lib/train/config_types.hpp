// The plain configuration types of the training study (precision, model shape, optimizer), apart
// from the classes that use them: config parsing (train_config.hpp) needs these and nothing of
// Eigen, which the model and optimizer headers bring in.
#pragma once

#include <string_view>

namespace attndev::train {

// Training precision of the dense parts (dense.hpp says what each mode rounds).
enum class Precision : unsigned char { fp64, fp32, bf16, fp16 };

const char* precision_name(Precision p);
bool parse_precision(std::string_view text, Precision& out);

struct ModelConfig {
  int vocab = 97;
  int d_model = 64;
  int heads = 4;
  int layers = 2;
  int context = 64;
  int mlp_hidden = 256;
};

struct AdamWConfig {
  double lr = 3e-3;
  double min_lr_ratio = 0.1;  // cosine decays to lr * min_lr_ratio at the last step
  int warmup_steps = 20;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.01;
  double grad_clip = 1.0;  // max global L2 norm; <= 0 disables clipping
};

}  // namespace attndev::train
