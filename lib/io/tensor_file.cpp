// Loading a checkpoint file or a folder of them (safetensors or .npy by extension or magic
// bytes), and matching two loaded sets by key.
#include "io/tensor_file.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <system_error>

#include "io/npy.hpp"
#include "io/safetensors.hpp"

namespace attndev::io {

namespace fs = std::filesystem;

namespace {

bool has_magic_npy(const std::vector<unsigned char>& bytes) {
  static constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

enum class Kind { safetensors, npy, other };

Kind kind_by_extension(const fs::path& p) {
  const std::string ext = p.extension().string();
  if (ext == ".safetensors") return Kind::safetensors;
  if (ext == ".npy") return Kind::npy;
  return Kind::other;
}

}  // namespace

std::vector<NamedTensor> read_tensor_file(const fs::path& path) {
  const Kind kind = kind_by_extension(path);
  const std::vector<unsigned char> bytes = read_file_bytes(path);
  if (kind == Kind::npy || (kind == Kind::other && has_magic_npy(bytes))) {
    std::vector<NamedTensor> out;
    out.push_back(parse_npy(bytes, path.string(), path.stem().string()));
    return out;
  }
  return parse_safetensors(bytes, path.string()).tensors;
}

std::vector<LoadedTensor> load_tensors(const fs::path& path) {
  std::error_code ec;
  std::vector<LoadedTensor> out;
  if (!fs::is_directory(path, ec)) {
    for (NamedTensor& t : read_tensor_file(path)) {
      LoadedTensor lt;
      lt.key = t.name;
      lt.tensor = std::move(t);
      out.push_back(std::move(lt));
    }
    return out;
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec) && kind_by_extension(it->path()) != Kind::other) {
      files.push_back(it->path());
    }
  }
  if (ec) throw TensorFileError(path.string() + ": cannot list the folder: " + ec.message());
  if (files.empty()) {
    throw TensorFileError(path.string() +
                          ": folder holds no *.safetensors or *.npy file (check the path)");
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, std::string> seen;  // key -> file, to report duplicates
  for (const fs::path& f : files) {
    const std::string rel = f.lexically_relative(path).generic_string();
    const bool npy = kind_by_extension(f) == Kind::npy;
    for (NamedTensor& t : read_tensor_file(f)) {
      LoadedTensor lt;
      lt.file = rel;
      lt.key = npy ? rel : rel + ":" + t.name;
      lt.tensor = std::move(t);
      if (!seen.emplace(lt.key, rel).second) {
        throw TensorFileError(path.string() + ": tensor key '" + lt.key + "' occurs twice");
      }
      out.push_back(std::move(lt));
    }
  }
  return out;
}

TensorPairing match_tensors(const std::vector<LoadedTensor>& a,
                            const std::vector<LoadedTensor>& b) {
  TensorPairing p;
  const auto single = [](const std::vector<LoadedTensor>& s) {
    return s.size() == 1 && s[0].file.empty();
  };
  if (single(a) && single(b)) {
    p.pairs.emplace_back(0, 0);
    return p;
  }
  std::map<std::string, std::size_t> in_b;
  for (std::size_t j = 0; j < b.size(); ++j) in_b.emplace(b[j].key, j);
  std::map<std::string, std::size_t> in_a;
  for (std::size_t i = 0; i < a.size(); ++i) in_a.emplace(a[i].key, i);
  for (const auto& [key, i] : in_a) {
    const auto it = in_b.find(key);
    if (it == in_b.end())
      p.only_a.push_back(key);
    else
      p.pairs.emplace_back(i, it->second);
  }
  for (const auto& [key, j] : in_b) {
    if (!in_a.count(key)) p.only_b.push_back(key);
  }
  return p;
}

}  // namespace attndev::io
