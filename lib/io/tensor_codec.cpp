// Common tensor-file plumbing: dtype table, element codecs, whole-file reads with limits, atomic
// writes.
#include "io/tensor_codec.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <system_error>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic_file.hpp"
#include "io/memory.hpp"
#include "numerics/encode.hpp"

namespace attndev::io {

namespace fs = std::filesystem;

const char* dtype_name(DType d) {
  switch (d) {
    case DType::f64:
      return "F64";
    case DType::f32:
      return "F32";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
  }
  return "?";
}

std::size_t dtype_size(DType d) {
  switch (d) {
    case DType::f64:
      return 8;
    case DType::f32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
  }
  return 0;
}

bool parse_dtype(std::string_view text, DType& out) {
  if (text == "F64")
    out = DType::f64;
  else if (text == "F32")
    out = DType::f32;
  else if (text == "F16")
    out = DType::f16;
  else if (text == "BF16")
    out = DType::bf16;
  else
    return false;
  return true;
}

static_assert(std::endian::native == std::endian::little,
              "the codecs copy little-endian bytes straight into native integers");

namespace {

template <class U>
U load(const unsigned char* p) {
  U u;
  std::memcpy(&u, p, sizeof u);
  return u;
}

template <class U>
void append(std::vector<unsigned char>& out, U u) {
  unsigned char b[sizeof u];
  std::memcpy(b, &u, sizeof u);
  out.insert(out.end(), b, b + sizeof u);
}

}  // namespace

// fp16 and bf16 go through numerics' codec (numerics/encode.hpp), the project's one: decoding is
// exact, encoding rounds to nearest even (fp16 overflows to inf), NaNs keep their sign and the top
// bits of their payload.
void decode_le(DType d, const unsigned char* src, std::size_t count, double* dst) {
  const std::size_t size = dtype_size(d);
  for (std::size_t i = 0; i < count; ++i, src += size) {
    switch (d) {
      case DType::f64:
        dst[i] = load<double>(src);
        break;
      case DType::f32:
        dst[i] = static_cast<double>(load<float>(src));
        break;
      case DType::f16:
        dst[i] = numerics::decode_fp16(load<std::uint16_t>(src));
        break;
      case DType::bf16:
        dst[i] = numerics::decode_bf16(load<std::uint16_t>(src));
        break;
    }
  }
}

void encode_le(DType d, std::span<const double> values, std::vector<unsigned char>& out) {
  out.reserve(out.size() + values.size() * dtype_size(d));
  for (double x : values) {
    switch (d) {
      case DType::f64:
        append(out, x);
        break;
      case DType::f32:
        append(out, static_cast<float>(x));  // one RNE rounding from double
        break;
      case DType::f16:
        append(out, numerics::encode_fp16(x));  // RNE, overflow to inf
        break;
      case DType::bf16:
        append(out, numerics::encode_bf16(x));
        break;
    }
  }
}

std::int64_t NamedTensor::numel() const {
  // A zero anywhere wins even over dimensions whose product would overflow ([0, 2^62, 2^62]
  // is a valid empty tensor in a file); otherwise saturate rather than wrap.
  for (std::int64_t d : shape)
    if (d == 0) return 0;
  std::int64_t n = 1;
  for (std::int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<std::int64_t>::max();
  return n;
}

NamedTensor make_tensor(std::string name, DType dtype, std::vector<std::int64_t> shape,
                        std::span<const float> values) {
  NamedTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.values.assign(values.begin(), values.end());
  return t;
}

std::vector<unsigned char> read_file_bytes(const fs::path& path, std::uintmax_t max_bytes) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    throw TensorFileError(path.string() + ": no such file (check the path)");
  }
  if (!fs::is_regular_file(st)) {
    throw TensorFileError(path.string() + ": not a regular file");
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw TensorFileError(path.string() + ": cannot read its size: " + ec.message());
  if (size > max_bytes) {
    throw TensorFileError(path.string() + ": file of " + std::to_string(size) +
                          " bytes is larger than the limit of " + std::to_string(max_bytes) +
                          " bytes; compare smaller shards of the checkpoint");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TensorFileError(path.string() + ": cannot open for reading");
  require_memory(size, "reading " + path.string());
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  // A file that shrank between stat and read is reported, not read past its end.
  if (static_cast<std::uintmax_t>(in.gcount()) != size) {
    throw TensorFileError(path.string() + ": read " + std::to_string(in.gcount()) + " of " +
                          std::to_string(size) + " bytes (file changed while reading?)");
  }
  return bytes;
}

namespace {

// The process umask, read once while the program starts (single-threaded): umask() can only be
// read by setting it, which must not race with threads that create files.
const mode_t kProcessUmask = [] {
  const mode_t m = ::umask(0);
  ::umask(m);
  return m;
}();

}  // namespace

void write_file_atomically(const fs::path& path, std::span<const unsigned char> bytes) {
  // A device or pipe (`--csv /dev/stdout`) is written through, never replaced by a file.
  if (is_special_file(path)) {
    try {
      write_file_atomic(
          path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    } catch (const std::runtime_error& e) {
      throw TensorFileError(e.what());
    }
    return;
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  // The temporary lives in the target folder so that rename() is atomic (same file system).
  std::string base = path.filename().string();
  base.insert(base.begin(), '.');
  base += ".tmp.XXXXXX";
  const std::string templ = (dir / base).string();
  std::vector<char> name(templ.begin(), templ.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw TensorFileError(path.string() + ": cannot create a temporary file in " + dir.string() +
                          ": " + std::strerror(errno));
  }
  // mkstemp creates 0600 whatever the umask; a snapshot is an ordinary file (0644 under the
  // usual umask 022), readable by whoever may read the folder, like every other output file.
  if (::fchmod(fd, 0666 & ~kProcessUmask) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(name.data());
    throw TensorFileError(path.string() +
                          ": cannot set the permissions of the temporary file: " + why);
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(name.data());
      throw TensorFileError(path.string() + ": write failed: " + why);
    }
    done += static_cast<std::size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(name.data());
    throw TensorFileError(path.string() + ": write failed: " + why);
  }
  if (std::rename(name.data(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(name.data());
    throw TensorFileError(path.string() + ": cannot rename the temporary file into place: " + why);
  }
}

}  // namespace attndev::io
