#include "experiment/spec/inputs_file.hpp"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/tensor_file.hpp"
#include "numerics/round.hpp"

namespace attndev::experiment {

namespace {

// The names a tensor may carry for each role, compared exactly (a capture script writes them).
constexpr const char* kRoleNames[3][3] = {
    {"q", "Q", "query"}, {"k", "K", "key"}, {"v", "V", "value"}};
constexpr const char* kRoles[3] = {"Q", "K", "V"};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

// (N, d) -> (1, 1, N, d); (H, N, d) -> (1, H, N, d); (B, H, N, d) as is.
attention::Tensor to_bhnd(const io::NamedTensor& t, const std::string& where) {
  const auto& s = t.shape;
  if (s.size() < 2 || s.size() > 4)
    throw std::runtime_error(where + ": shape " + shape_text(s) + " has rank " +
                             std::to_string(s.size()) +
                             "; expected (B, H, N, d), (H, N, d) or (N, d)");
  std::int64_t dims[4] = {1, 1, 1, 1};
  for (std::size_t i = 0; i < s.size(); ++i) dims[4 - s.size() + i] = s[i];
  constexpr std::int64_t kMaxDim = std::int64_t{1} << 30;
  for (std::int64_t d : dims)
    if (d < 1 || d > kMaxDim)
      throw std::runtime_error(where + ": shape " + shape_text(s) +
                               ": every dimension must be between 1 and 2^30");
  attention::Tensor out(static_cast<int>(dims[0]), static_cast<int>(dims[1]),
                        static_cast<int>(dims[2]), static_cast<int>(dims[3]));
  if (out.data.size() != t.values.size())
    throw std::runtime_error(where + ": holds " + std::to_string(t.values.size()) +
                             " values for shape " + shape_text(s));
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    if (!std::isfinite(t.values[i]))
      throw std::runtime_error(where + ": element " + std::to_string(i) + " is " +
                               (std::isnan(t.values[i]) ? "NaN" : "infinite") +
                               "; attention inputs must be finite");
    out.data[i] = t.values[i];
  }
  return out;
}

}  // namespace

attention::Inputs read_inputs_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::vector<io::LoadedTensor> tensors;
  try {
    tensors = io::load_tensors(path);
  } catch (const io::TensorFileError& e) {
    throw std::runtime_error(std::string("inputs: ") + e.what());
  }
  if (tensors.size() == 1 && !std::filesystem::is_directory(path))
    throw std::runtime_error(file +
                             ": holds one tensor; Q, K and V are needed: give a "
                             ".safetensors file with tensors q, k, v or a folder with "
                             "q.npy, k.npy, v.npy");
  const io::NamedTensor* found[3] = {nullptr, nullptr, nullptr};
  for (const io::LoadedTensor& t : tensors) {
    for (int role = 0; role < 3; ++role) {
      for (const char* name : kRoleNames[role]) {
        if (t.tensor.name != name) continue;
        if (found[role])
          throw std::runtime_error(file + ": two tensors could be " + kRoles[role] + " ('" +
                                   found[role]->name + "' and '" + t.key +
                                   "'); keep one tensor per role");
        found[role] = &t.tensor;
      }
    }
  }
  for (int role = 0; role < 3; ++role) {
    if (found[role]) continue;
    std::string names;
    for (const io::LoadedTensor& t : tensors) names += (names.empty() ? "" : ", ") + t.key;
    throw std::runtime_error(file + ": no tensor named " + kRoleNames[role][0] + " (or " +
                             kRoleNames[role][1] + ", " + kRoleNames[role][2] + ") for " +
                             kRoles[role] + "; found: " + (names.empty() ? "none" : names));
  }
  if (found[0]->shape.size() != found[1]->shape.size() ||
      found[1]->shape.size() != found[2]->shape.size())
    throw std::runtime_error(file + ": Q " + shape_text(found[0]->shape) + ", K " +
                             shape_text(found[1]->shape) + " and V " + shape_text(found[2]->shape) +
                             " must have the same rank");
  attention::Inputs in;
  in.q = to_bhnd(*found[0], file + ": Q ('" + found[0]->name + "')");
  in.k = to_bhnd(*found[1], file + ": K ('" + found[1]->name + "')");
  in.v = to_bhnd(*found[2], file + ": V ('" + found[2]->name + "')");
  const bool same_kv = in.k.batch == in.v.batch && in.k.heads == in.v.heads &&
                       in.k.rows == in.v.rows && in.k.cols == in.v.cols;
  if (!same_kv)
    throw std::runtime_error(file + ": K " + shape_text(found[1]->shape) + " and V " +
                             shape_text(found[2]->shape) + " must have the same shape");
  if (in.q.batch != in.k.batch || in.q.heads != in.k.heads || in.q.cols != in.k.cols)
    throw std::runtime_error(file + ": Q " + shape_text(found[0]->shape) + " and K " +
                             shape_text(found[1]->shape) +
                             " must agree in batch, heads and head dimension (only N may differ)");
  return in;
}

attention::Shape inputs_file_shape(const std::filesystem::path& path) {
  return read_inputs_file(path).shape();
}

}  // namespace attndev::experiment
