// .npy reader and writer. The header is a Python dict literal; it is parsed by a small strict
// parser here (not a Python evaluator) that accepts only what numpy writes: quoted strings,
// True/False and tuples of integers.
#include "io/npy.hpp"

#include <cstring>
#include <limits>
#include <optional>

#include "io/memory.hpp"

namespace attndev::io {

namespace {

constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// numpy itself refuses headers above 10000 bytes by default; allow more, but bounded.
constexpr std::size_t kMaxHeaderBytes = 1u << 20;

struct HeaderValue {
  enum class Kind { string, boolean, tuple } kind;
  std::string text;
  bool flag = false;
  std::vector<std::uint64_t> dims;
};

// Cursor over the header text; every read is bounds-checked against `end`.
class DictParser {
 public:
  DictParser(const char* begin, const char* end, const std::string& source)
      : p_(begin), end_(end), source_(source) {}

  std::vector<std::pair<std::string, HeaderValue>> parse() {
    std::vector<std::pair<std::string, HeaderValue>> items;
    skip_space();
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') {
        ++p_;
        break;
      }
      std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      HeaderValue v = parse_value(key);
      items.emplace_back(std::move(key), std::move(v));
      skip_space();
      if (peek() == ',') {
        ++p_;
        continue;
      }
      expect('}');
      break;
    }
    skip_space();
    if (p_ != end_) bad("unexpected text after the header dictionary");
    return items;
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    fail_tensor_file(source_, "malformed .npy header (" + what + "): the file is corrupt");
  }
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\t' || *p_ == '\r')) ++p_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++p_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted key or string");
    ++p_;
    std::string s;
    while (p_ < end_ && *p_ != q) {
      if (*p_ == '\\') bad("escape sequences are not expected in a header");
      s.push_back(*p_++);
    }
    expect(q);
    return s;
  }
  HeaderValue parse_value(const std::string& key) {
    HeaderValue v{HeaderValue::Kind::string, {}, false, {}};
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.text = parse_string();
    } else if (match_word("True")) {
      v.kind = HeaderValue::Kind::boolean;
      v.flag = true;
    } else if (match_word("False")) {
      v.kind = HeaderValue::Kind::boolean;
    } else if (c == '(') {
      v.kind = HeaderValue::Kind::tuple;
      ++p_;
      for (;;) {
        skip_space();
        if (peek() == ')') {
          ++p_;
          break;
        }
        v.dims.push_back(parse_uint(key));
        skip_space();
        if (peek() == 'L') ++p_;  // Python 2 long suffix, written by old numpy
        skip_space();
        if (peek() == ',') {
          ++p_;
          continue;
        }
        expect(')');
        break;
      }
    } else if (c == '[') {
      bad("'" + key + "' is a list: structured dtypes are not supported, only plain float arrays");
    } else {
      bad("unexpected value for '" + key + "'");
    }
    return v;
  }
  bool match_word(const char* w) {
    const std::size_t n = std::strlen(w);
    if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, w, n) != 0) return false;
    p_ += n;
    return true;
  }
  std::uint64_t parse_uint(const std::string& key) {
    if (peek() < '0' || peek() > '9')
      bad("'" + key + "' holds a non-integer or negative dimension");
    std::uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      const std::uint64_t digit = static_cast<std::uint64_t>(*p_++ - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) bad("dimension too large");
      v = v * 10 + digit;
    }
    return v;
  }

  const char* p_;
  const char* end_;
  const std::string& source_;
};

std::optional<DType> dtype_from_descr(const std::string& source, const std::string& descr) {
  if (descr == "<f8") return DType::f64;
  if (descr == "<f4") return DType::f32;
  if (descr == "<f2") return DType::f16;
  if (!descr.empty() && descr[0] == '>') {
    fail_tensor_file(source,
                     "dtype '" + descr +
                         "' is big-endian; attndev reads little-endian floats only: save it with "
                         "arr.astype('<f4') (or '<f8', '<f2')");
  }
  fail_tensor_file(
      source, "dtype '" + descr +
                  "' is not supported (only little-endian floats '<f8', '<f4', '<f2'): convert "
                  "with arr.astype('<f4')");
}

// Fortran (column-major) data -> C (row-major) order. Walks the C index as an odometer and keeps
// the matching Fortran offset in step, so it costs O(numel) with no division per element.
std::vector<double> fortran_to_c(const std::vector<double>& f,
                                 const std::vector<std::int64_t>& shape) {
  // Rank 0 and 1: Fortran and C order are the same.
  const std::size_t rank = shape.size();
  if (rank <= 1 || f.empty()) return f;
  std::vector<double> c(f.size());
  // One allocation for both index vectors: with two, GCC 12 reports a -Wfree-nonheap-object
  // false positive on the second one's destructor once this is inlined into parse_npy.
  std::vector<std::int64_t> state(2 * rank, 0);
  const std::span<std::int64_t> stride(state.data(), rank);      // Fortran strides
  const std::span<std::int64_t> idx(state.data() + rank, rank);  // the C index
  stride[0] = 1;
  for (std::size_t k = 1; k < rank; ++k) stride[k] = stride[k - 1] * shape[k - 1];
  std::int64_t off = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    c[i] = f[static_cast<std::size_t>(off)];
    for (std::size_t k = rank; k-- > 0;) {  // the last C index moves fastest
      if (++idx[k] < shape[k]) {
        off += stride[k];
        break;
      }
      off -= stride[k] * (shape[k] - 1);
      idx[k] = 0;
    }
  }
  return c;
}

}  // namespace

NamedTensor parse_npy(std::span<const unsigned char> bytes, const std::string& source,
                      std::string name) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    fail_tensor_file(source, "not a .npy file (it does not start with \\x93NUMPY); check the file");
  }
  if (bytes.size() < 10) fail_tensor_file(source, "file ends inside the .npy preamble: truncated");
  const int major = bytes[6];
  const int minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail_tensor_file(source, ".npy format version " + std::to_string(major) + "." +
                                 std::to_string(minor) + " is not supported (1.0, 2.0, 3.0 are)");
  }
  std::size_t header_len = 0;
  std::size_t header_start = 0;
  if (major == 1) {
    header_len = bytes[8] | (std::size_t{bytes[9]} << 8);
    header_start = 10;
  } else {
    if (bytes.size() < 12)
      fail_tensor_file(source, "file ends inside the .npy preamble: truncated");
    header_len = bytes[8] | (std::size_t{bytes[9]} << 8) | (std::size_t{bytes[10]} << 16) |
                 (std::size_t{bytes[11]} << 24);
    header_start = 12;
  }
  if (header_len > kMaxHeaderBytes) {
    fail_tensor_file(source, ".npy header length " + std::to_string(header_len) +
                                 " exceeds the limit of " + std::to_string(kMaxHeaderBytes) +
                                 " bytes: corrupt file");
  }
  if (header_len > bytes.size() - header_start) {
    fail_tensor_file(source, ".npy header length " + std::to_string(header_len) +
                                 " runs past the end of the file (" + std::to_string(bytes.size()) +
                                 " bytes): the file is truncated");
  }
  const char* h = reinterpret_cast<const char*>(bytes.data() + header_start);
  const auto items = DictParser(h, h + header_len, source).parse();

  const HeaderValue* descr = nullptr;
  const HeaderValue* fortran = nullptr;
  const HeaderValue* shape = nullptr;
  for (const auto& [key, value] : items) {
    const HeaderValue** slot = key == "descr"           ? &descr
                               : key == "fortran_order" ? &fortran
                               : key == "shape"         ? &shape
                                                        : nullptr;
    if (!slot)
      fail_tensor_file(source, "unexpected key '" + key + "' in the .npy header: corrupt file");
    if (*slot)
      fail_tensor_file(source, "key '" + key + "' occurs twice in the .npy header: corrupt file");
    *slot = &value;
  }
  if (!descr || descr->kind != HeaderValue::Kind::string) {
    fail_tensor_file(source, ".npy header lacks a string 'descr': corrupt file");
  }
  if (!fortran || fortran->kind != HeaderValue::Kind::boolean) {
    fail_tensor_file(source, ".npy header lacks a boolean 'fortran_order': corrupt file");
  }
  if (!shape || shape->kind != HeaderValue::Kind::tuple) {
    fail_tensor_file(source, ".npy header lacks a tuple 'shape': corrupt file");
  }
  const DType dtype = *dtype_from_descr(source, descr->text);

  const std::size_t data_start = header_start + header_len;
  const std::uint64_t data_bytes = bytes.size() - data_start;
  const std::uint64_t max_elems = data_bytes / dtype_size(dtype);
  NamedTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  std::uint64_t numel = 1;
  bool zero = false;
  for (std::uint64_t d : shape->dims) {
    if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail_tensor_file(source,
                       "shape dimension " + std::to_string(d) + " is too large: corrupt file");
    }
    t.shape.push_back(static_cast<std::int64_t>(d));
    if (d == 0) {
      zero = true;
    } else if (!zero) {
      // Bounded by the data present, so the product cannot overflow.
      if (numel > max_elems / d) {
        fail_tensor_file(source, "shape needs more data than the file holds (" +
                                     std::to_string(data_bytes) +
                                     " bytes after the header): the file is truncated");
      }
      numel *= d;
    }
  }
  if (zero) numel = 0;
  const std::uint64_t want = numel * dtype_size(dtype);
  if (data_bytes != want) {
    fail_tensor_file(source, "the shape needs " + std::to_string(want) +
                                 " data bytes but the file holds " + std::to_string(data_bytes) +
                                 (data_bytes < want ? ": truncated" : ": corrupt"));
  }
  // As doubles, and a second copy when the data is in Fortran order.
  require_memory(sat_mul(fortran->flag ? 16 : 8, numel), source + ": its values");
  t.values.resize(static_cast<std::size_t>(numel));
  decode_le(dtype, bytes.data() + data_start, t.values.size(), t.values.data());
  if (fortran->flag && t.shape.size() > 1) t.values = fortran_to_c(t.values, t.shape);
  return t;
}

NamedTensor read_npy(const std::filesystem::path& path) {
  return parse_npy(read_file_bytes(path), path.string(), path.stem().string());
}

std::vector<unsigned char> encode_npy(const NamedTensor& tensor) {
  const char* descr = nullptr;
  switch (tensor.dtype) {
    case DType::f64:
      descr = "<f8";
      break;
    case DType::f32:
      descr = "<f4";
      break;
    case DType::f16:
      descr = "<f2";
      break;
    case DType::bf16:
      throw TensorFileError("write_npy: tensor '" + tensor.name +
                            "' is BF16, which .npy cannot store; write safetensors or use F32");
  }
  for (std::int64_t d : tensor.shape) {
    if (d < 0)
      throw TensorFileError("write_npy: tensor '" + tensor.name + "' has a negative dimension");
  }
  if (static_cast<std::int64_t>(tensor.values.size()) != tensor.numel()) {
    throw TensorFileError("write_npy: tensor '" + tensor.name + "' has " +
                          std::to_string(tensor.values.size()) + " values but its shape holds " +
                          std::to_string(tensor.numel()));
  }
  std::string shape = "(";
  for (std::int64_t d : tensor.shape) shape += std::to_string(d) + ", ";
  if (tensor.shape.size() == 1)
    shape.resize(shape.size() - 1);  // "(3,)"
  else if (!tensor.shape.empty())
    shape.resize(shape.size() - 2);
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // numpy pads with spaces and a final '\n' so that the data starts 64-byte aligned.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 0xffff) {
    throw TensorFileError("write_npy: tensor '" + tensor.name + "' has too many dimensions");
  }
  std::vector<unsigned char> out(kMagic, kMagic + sizeof kMagic);
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<unsigned char>(header.size() & 0xff));
  out.push_back(static_cast<unsigned char>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  encode_le(tensor.dtype, tensor.values, out);
  return out;
}

void write_npy(const std::filesystem::path& path, const NamedTensor& tensor) {
  write_file_atomically(path, encode_npy(tensor));
}

}  // namespace attndev::io
