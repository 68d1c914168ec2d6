#include "train/layers.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "numerics/round.hpp"

namespace attndev::train {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// (0, 1): never 0, so log() below is finite.
double unit_open(std::uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;
}

constexpr double kLayerNormEps = 1e-5;

}  // namespace

double init_normal(std::uint64_t seed, const std::string& name, std::uint64_t index) {
  const std::uint64_t key = splitmix64(splitmix64(seed) ^ fnv1a(name)) ^ index;
  const double u1 = unit_open(splitmix64(key * 2 + 0));
  const double u2 = unit_open(splitmix64(key * 2 + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);  // Box-Muller
}

void init_param(Param& p, std::uint64_t seed, double std, numerics::Format f) {
  for (Eigen::Index i = 0; i < p.value.size(); ++i)
    p.value.data()[i] = numerics::round_to(f, std * init_normal(seed, p.name, std::uint64_t(i)));
  p.grad.setZero();
}

Param make_param(std::string name, int rows, int cols, bool decay) {
  Param p;
  p.name = std::move(name);
  p.value = Mat::Zero(rows, cols);
  p.grad = Mat::Zero(rows, cols);
  p.decay = decay;
  return p;
}

// ---- Embedding -------------------------------------------------------------------------------

Embedding::Embedding(int vocab, int context, int dim)
    : tok(make_param("tok_emb", vocab, dim, /*decay=*/true)),
      pos(make_param("pos_emb", context, dim, /*decay=*/true)) {}

Mat Embedding::forward(const std::vector<int>& tokens, int seq, const Numerics& num) {
  if (seq < 1 || seq > pos.value.rows() || tokens.size() % std::size_t(seq) != 0)
    throw std::invalid_argument("Embedding: sequence length " + std::to_string(seq) +
                                " does not fit the context or the token count");
  tokens_ = tokens;
  seq_ = seq;
  Mat y(static_cast<Eigen::Index>(tokens.size()), tok.value.cols());  // (B*T, C)
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    if (tokens[r] < 0 || tokens[r] >= tok.value.rows())
      throw std::invalid_argument("Embedding: token id out of range");
    y.row(Eigen::Index(r)) = tok.value.row(tokens[r]) + pos.value.row(Eigen::Index(r % seq));
  }
  round_all(activation_format(num.precision), y);
  return y;
}

void Embedding::backward(const Mat& dy) {
  for (std::size_t r = 0; r < tokens_.size(); ++r) {  // rows in order: a fixed summation order
    tok.grad.row(tokens_[r]) += dy.row(Eigen::Index(r));
    pos.grad.row(Eigen::Index(r % seq_)) += dy.row(Eigen::Index(r));
  }
}

// ---- LayerNorm -------------------------------------------------------------------------------

LayerNorm::LayerNorm(std::string name, int dim)
    : gamma(make_param(name + ".weight", 1, dim, /*decay=*/false)),
      beta(make_param(name + ".bias", 1, dim, /*decay=*/false)) {
  gamma.value.setOnes();
}

Mat LayerNorm::forward(const Mat& x, const Numerics& num) {
  const Eigen::Index rows = x.rows(), cols = x.cols();
  xhat_.resize(rows, cols);
  rstd_.assign(std::size_t(rows), 0.0);
  Mat y(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const double mean = x.row(r).mean();
    const double var = (x.row(r).array() - mean).square().mean();
    const double rstd = 1.0 / std::sqrt(var + kLayerNormEps);
    rstd_[std::size_t(r)] = rstd;
    xhat_.row(r) = (x.row(r).array() - mean) * rstd;
    y.row(r) = xhat_.row(r).array() * gamma.value.row(0).array() + beta.value.row(0).array();
  }
  round_all(activation_format(num.precision), y);
  return y;
}

Mat LayerNorm::backward(const Mat& dy, const Numerics& num) {
  const Eigen::Index rows = dy.rows(), cols = dy.cols();
  Mat dx(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const Eigen::ArrayXd g = dy.row(r).transpose().array();
    const Eigen::ArrayXd xh = xhat_.row(r).transpose().array();
    gamma.grad.row(0).array() += (g * xh).transpose();
    beta.grad.row(0).array() += g.transpose();
    const Eigen::ArrayXd dxhat = g * gamma.value.row(0).transpose().array();
    const double mean_dxhat = dxhat.mean();
    const double mean_dxhat_xhat = (dxhat * xh).mean();
    dx.row(r) = (rstd_[std::size_t(r)] * (dxhat - mean_dxhat - xh * mean_dxhat_xhat)).transpose();
  }
  round_all(activation_format(num.precision), dx);
  return dx;
}

// ---- Linear ----------------------------------------------------------------------------------

Linear::Linear(std::string name, int in, int out, bool with_bias)
    : weight(make_param(name + ".weight", in, out, /*decay=*/true)),
      bias(with_bias ? make_param(name + ".bias", 1, out, /*decay=*/false) : Param{}),
      has_bias(with_bias) {}

Mat Linear::forward(const Mat& x, const Numerics& num) {
  x_ = x;
  Mat y = matmul(num.precision, x, /*transpose_a=*/false, weight.value, /*transpose_b=*/false);
  if (has_bias) y.rowwise() += bias.value.row(0);
  round_all(activation_format(num.precision), y);
  return y;
}

Mat Linear::backward(const Mat& dy, const Numerics& num) {
  weight.grad += matmul(num.precision, x_, /*transpose_a=*/true, dy, /*transpose_b=*/false);
  if (has_bias)
    for (Eigen::Index r = 0; r < dy.rows(); ++r) bias.grad.row(0) += dy.row(r);
  Mat dx = matmul(num.precision, dy, /*transpose_a=*/false, weight.value, /*transpose_b=*/true);
  round_all(activation_format(num.precision), dx);
  return dx;
}

// ---- MLP -------------------------------------------------------------------------------------

namespace {
constexpr double kGeluC = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluA = 0.044715;
double gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(kGeluC * (x + kGeluA * x * x * x)));
}
double gelu_grad(double x) {
  const double t = std::tanh(kGeluC * (x + kGeluA * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kGeluC * (1.0 + 3.0 * kGeluA * x * x);
}
}  // namespace

Mlp::Mlp(const std::string& name, int dim, int hidden)
    : fc(name + ".fc", dim, hidden, /*bias=*/true),
      proj(name + ".proj", hidden, dim, /*bias=*/true) {}

Mat Mlp::forward(const Mat& x, const Numerics& num) {
  pre_ = fc.forward(x, num);
  Mat h = pre_.unaryExpr([](double v) { return gelu(v); });
  round_all(activation_format(num.precision), h);
  return proj.forward(h, num);
}

Mat Mlp::backward(const Mat& dy, const Numerics& num) {
  Mat dh = proj.backward(dy, num);
  dh.array() *= pre_.unaryExpr([](double v) { return gelu_grad(v); }).array();
  round_all(activation_format(num.precision), dh);
  return fc.backward(dh, num);
}

// ---- LM head + cross entropy -------------------------------------------------------------------

LmHead::LmHead(int dim, int vocab) : out("head", dim, vocab, /*bias=*/false) {}

double LmHead::forward(const Mat& x, const std::vector<int>& targets, const Numerics& num) {
  if (targets.size() != std::size_t(x.rows()))
    throw std::invalid_argument("LmHead: one target per row expected");
  targets_ = targets;
  const Mat logits = out.forward(x, num);  // (R, V)
  probs_.resize(logits.rows(), logits.cols());
  double total = 0.0;
  for (Eigen::Index r = 0; r < logits.rows(); ++r) {
    // Max subtraction: exp never overflows, and the row's largest term is exactly 1.
    const double m = logits.row(r).maxCoeff();
    const Eigen::ArrayXd e = (logits.row(r).array() - m).exp().transpose();
    const double sum = e.sum();
    probs_.row(r) = (e / sum).transpose();
    total += std::log(sum) + m - logits(r, targets[std::size_t(r)]);
  }
  return total / static_cast<double>(logits.rows());
}

Mat LmHead::backward(double loss_scale, const Numerics& num) {
  Mat dlogits = probs_;
  for (Eigen::Index r = 0; r < dlogits.rows(); ++r) dlogits(r, targets_[std::size_t(r)]) -= 1.0;
  dlogits *= loss_scale / static_cast<double>(dlogits.rows());
  round_all(activation_format(num.precision), dlogits);
  return out.backward(dlogits, num);
}

}  // namespace attndev::train
