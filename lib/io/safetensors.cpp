// safetensors reader and writer. Every length and offset from the file is validated against the
// bytes present before any data is touched; see safetensors.hpp for the rules.
#include "io/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "io/json_strict.hpp"
#include "io/memory.hpp"

namespace attndev::io {

namespace {

constexpr std::size_t kLengthBytes = 8;

std::string tensor_label(const std::string& name) {
  return "tensor '" + name + "'";
}

// A JSON number that is a non-negative integer; false for -1, 2.5, "3", true, ...
bool as_u64(const nlohmann::json& j, std::uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<std::uint64_t>();
    return true;
  }
  if (j.is_number_integer() && j.get<std::int64_t>() >= 0) {
    out = static_cast<std::uint64_t>(j.get<std::int64_t>());
    return true;
  }
  return false;
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin, end;
};

Entry parse_entry(const std::string& source, const std::string& name, const nlohmann::json& j,
                  std::uint64_t buffer_size) {
  const std::string where = tensor_label(name);
  if (!j.is_object()) fail_tensor_file(source, where + ": header entry is not a JSON object");
  const auto dt = j.find("dtype");
  if (dt == j.end() || !dt->is_string())
    fail_tensor_file(source, where + ": missing string \"dtype\"");
  Entry e{name, DType::f32, {}, 0, 0};
  const std::string dtype = dt->get<std::string>();
  if (!parse_dtype(dtype, e.dtype)) {
    fail_tensor_file(source,
                     where + " has dtype " + dtype +
                         ", which attndev does not compare (supported: F64, F32, F16, BF16); "
                         "convert the checkpoint to a float dtype or leave this tensor out");
  }
  const auto sh = j.find("shape");
  if (sh == j.end() || !sh->is_array())
    fail_tensor_file(source, where + ": missing array \"shape\"");
  // The product is kept below 2^64 / 8 so that numel * dtype size cannot wrap; any real shape
  // that large fails the size check against data_offsets below anyway.
  const std::uint64_t max_elems = std::numeric_limits<std::uint64_t>::max() / 8;
  std::uint64_t numel = 1;
  bool zero = false;
  for (const nlohmann::json& d : *sh) {
    std::uint64_t v = 0;
    if (!as_u64(d, v)) {
      fail_tensor_file(
          source, where + ": shape " + sh->dump() + " has a non-integer or negative dimension");
    }
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail_tensor_file(source, where + ": shape dimension " + std::to_string(v) + " is too large");
    }
    e.shape.push_back(static_cast<std::int64_t>(v));
    if (v == 0)
      zero = true;
    else if (numel > max_elems / v)
      numel = max_elems;  // saturate: cannot match any offsets
    else
      numel *= v;
  }
  if (zero) numel = 0;
  const auto off = j.find("data_offsets");
  if (off == j.end() || !off->is_array() || off->size() != 2 || !as_u64((*off)[0], e.begin) ||
      !as_u64((*off)[1], e.end)) {
    fail_tensor_file(source,
                     where + ": \"data_offsets\" must be [begin, end] with non-negative integers");
  }
  if (e.begin > e.end) {
    fail_tensor_file(source, where + ": data_offsets [" + std::to_string(e.begin) + ", " +
                                 std::to_string(e.end) + "] has begin > end: corrupt header");
  }
  if (e.end > buffer_size) {
    fail_tensor_file(source, where + ": data_offsets end " + std::to_string(e.end) +
                                 " is past the end of the data buffer (" +
                                 std::to_string(buffer_size) +
                                 " bytes): the file is truncated or its header is corrupt");
  }
  const std::uint64_t want = numel * dtype_size(e.dtype);
  if (e.end - e.begin != want) {
    fail_tensor_file(source, where + ": shape " + sh->dump() + " of " + dtype + " needs " +
                                 std::to_string(want) + " bytes but data_offsets span " +
                                 std::to_string(e.end - e.begin) + ": corrupt header");
  }
  return e;
}

}  // namespace

SafetensorsContents parse_safetensors(std::span<const unsigned char> bytes,
                                      const std::string& source) {
  if (bytes.size() < kLengthBytes) {
    fail_tensor_file(source,
                     "file of " + std::to_string(bytes.size()) +
                         " bytes is too short for a safetensors file (8-byte header length first); "
                         "truncated, or not a safetensors file");
  }
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), sizeof n);  // little-endian host (static_assert in tensor_file.cpp)
  if (n > kMaxSafetensorsHeader) {
    fail_tensor_file(source, "header length " + std::to_string(n) + " exceeds the limit of " +
                                 std::to_string(kMaxSafetensorsHeader) +
                                 " bytes: not a safetensors file, or a corrupt one");
  }
  if (n > bytes.size() - kLengthBytes) {
    fail_tensor_file(source, "header length " + std::to_string(n) +
                                 " runs past the end of the file (" + std::to_string(bytes.size()) +
                                 " bytes): the file is truncated");
  }
  const unsigned char* header = bytes.data() + kLengthBytes;
  if (const auto deep = json_text_error(std::string_view(reinterpret_cast<const char*>(header), n)))
    fail_tensor_file(source, "header is " + *deep + ": corrupt file");
  // No exceptions from the parser: malformed JSON becomes a discarded value and our message.
  const nlohmann::json root = nlohmann::json::parse(header, header + n, nullptr,
                                                    /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    fail_tensor_file(source,
                     "header (" + std::to_string(n) + " bytes) is not valid JSON: corrupt file");
  }
  if (!root.is_object()) fail_tensor_file(source, "header is JSON but not an object: corrupt file");

  const std::uint64_t buffer_size = bytes.size() - kLengthBytes - n;
  const unsigned char* buffer = header + n;
  SafetensorsContents out;
  std::vector<Entry> entries;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail_tensor_file(source, "\"__metadata__\" is not a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          fail_tensor_file(source, "\"__metadata__\" value of '" + mk + "' is not a string");
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(source, key, value, buffer_size));
  }
  // The format has no holes: sorted by offset, each tensor starts where the previous ended and
  // the last one ends at the end of the file. This also rules out overlapping (aliased) data.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t pos = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.begin < pos) {
      fail_tensor_file(source, tensor_label(e.name) + " (bytes " + std::to_string(e.begin) + ".." +
                                   std::to_string(e.end) + ") overlaps " +
                                   tensor_label(entries[i - 1].name) + ": corrupt header");
    }
    if (e.begin > pos) {
      fail_tensor_file(source, "data bytes " + std::to_string(pos) + ".." +
                                   std::to_string(e.begin) + " belong to no tensor (before " +
                                   tensor_label(e.name) + "): corrupt header");
    }
    pos = e.end;
  }
  if (pos != buffer_size) {
    fail_tensor_file(source,
                     std::to_string(buffer_size - pos) +
                         " bytes after the last tensor's data belong to no tensor: the file is "
                         "corrupt or was appended to");
  }
  std::uint64_t value_bytes = 0;  // every tensor's values as doubles
  for (const Entry& e : entries)
    value_bytes = sat_add(value_bytes, sat_mul(8, (e.end - e.begin) / dtype_size(e.dtype)));
  require_memory(value_bytes, source + ": its values");
  for (const Entry& e : entries) {
    NamedTensor t;
    t.name = e.name;
    t.dtype = e.dtype;
    t.shape = e.shape;
    const std::size_t count = (e.end - e.begin) / dtype_size(e.dtype);
    t.values.resize(count);
    decode_le(e.dtype, buffer + e.begin, count, t.values.data());
    out.tensors.push_back(std::move(t));
  }
  return out;
}

SafetensorsContents read_safetensors(const std::filesystem::path& path) {
  return parse_safetensors(read_file_bytes(path), path.string());
}

std::vector<unsigned char> encode_safetensors(std::span<const NamedTensor> tensors,
                                              const TensorMetadata& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") {
      throw TensorFileError("write_safetensors: invalid tensor name '" + t.name + "'");
    }
    if (!names.insert(t.name).second) {
      throw TensorFileError("write_safetensors: tensor name '" + t.name + "' given twice");
    }
    for (std::int64_t d : t.shape) {
      if (d < 0)
        throw TensorFileError("write_safetensors: " + tensor_label(t.name) +
                              " has a negative dimension");
    }
    if (static_cast<std::int64_t>(t.values.size()) != t.numel()) {
      throw TensorFileError("write_safetensors: " + tensor_label(t.name) + " has " +
                            std::to_string(t.values.size()) + " values but its shape holds " +
                            std::to_string(t.numel()));
    }
    const std::uint64_t size = t.values.size() * dtype_size(t.dtype);
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  const std::uint64_t n = text.size();
  std::vector<unsigned char> out(kLengthBytes + text.size());
  out.reserve(out.size() + offset);
  std::memcpy(out.data(), &n, sizeof n);
  std::memcpy(out.data() + kLengthBytes, text.data(), text.size());
  for (const NamedTensor& t : tensors) encode_le(t.dtype, t.values, out);
  return out;
}

void write_safetensors(const std::filesystem::path& path, std::span<const NamedTensor> tensors,
                       const TensorMetadata& metadata) {
  write_file_atomically(path, encode_safetensors(tensors, metadata));
}

}  // namespace attndev::io
