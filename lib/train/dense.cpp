#include "train/dense.hpp"

#include "numerics/round.hpp"

namespace attndev::train {

using numerics::Format;

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp64:
      return "fp64";
    case Precision::fp32:
      return "fp32";
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
  }
  return "?";
}

bool parse_precision(std::string_view text, Precision& out) {
  for (Precision p : {Precision::fp64, Precision::fp32, Precision::bf16, Precision::fp16}) {
    if (text == precision_name(p)) {
      out = p;
      return true;
    }
  }
  return false;
}

Format matmul_format(Precision p) {
  switch (p) {
    case Precision::fp64:
      return Format::fp64;
    case Precision::fp32:
      return Format::fp32;
    case Precision::bf16:
      return Format::bf16;
    case Precision::fp16:
      return Format::fp16;
  }
  return Format::fp64;
}

Format activation_format(Precision p) {
  return p == Precision::fp64 ? Format::fp64 : Format::fp32;
}

void round_all(Format f, Mat& m) {
  if (f == Format::fp64) return;
  double* x = m.data();
  for (Eigen::Index i = 0; i < m.size(); ++i) x[i] = numerics::round_to(f, x[i]);
}

namespace {
using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Operand as the matmul reads it: rounded to the operand format, then held exactly in float.
MatF operand(Format f, const Mat& m) {
  MatF r(m.rows(), m.cols());
  const double* src = m.data();
  float* dst = r.data();
  for (Eigen::Index i = 0; i < m.size(); ++i)
    dst[i] = static_cast<float>(numerics::round_to(f, src[i]));
  return r;
}
}  // namespace

Mat matmul(Precision p, const Mat& a, bool transpose_a, const Mat& b, bool transpose_b) {
  if (p == Precision::fp64) {
    if (transpose_a && transpose_b) return a.transpose() * b.transpose();
    if (transpose_a) return a.transpose() * b;
    if (transpose_b) return a * b.transpose();
    return a * b;
  }
  const Format f = matmul_format(p);
  const MatF fa = operand(f, a), fb = operand(f, b);
  MatF c;
  if (transpose_a && transpose_b)
    c = fa.transpose() * fb.transpose();
  else if (transpose_a)
    c = fa.transpose() * fb;
  else if (transpose_b)
    c = fa * fb.transpose();
  else
    c = fa * fb;
  Mat r = c.cast<double>();
  round_all(f, r);  // fp32: exact already; bf16/fp16: the output cast
  return r;
}

}  // namespace attndev::train
