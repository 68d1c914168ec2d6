// What every binding of attndev._core shares: the argument error, arrays in and out, the CLI's
// parsers with the Python keyword in place of the flag, masks, short messages, and running C++
// work with the GIL released while Ctrl-C still works. Included by module.cpp (one translation
// unit: the extension is built from it alone).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "attention/mask.hpp"
#include "attention/parallel.hpp"
#include "config/policy_json.hpp"
#include "config/suggest.hpp"
#include "io/json_strict.hpp"
#include "numerics/format.hpp"
#include "numerics/policy.hpp"

namespace nb = nanobind;

namespace attndev::python {

// A bad argument: raised in Python as attndev.Error (a ValueError), the CLI's exit 2.
class ArgumentError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The first `n` bytes of `text`, shortened so as not to end inside a UTF-8 character (Python
// decodes the message as UTF-8).
inline std::string_view utf8_prefix(std::string_view text, std::size_t n) {
  if (n >= text.size()) return text;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

// A message as it reaches Python: text between quotes longer than kLongQuote bytes (a 100 KB
// policy string echoed back by "unknown preset \"...\"") is cut to its start and its length,
// and the whole message to kLongMessage bytes, so that an error stays readable whatever the
// input was.
inline std::string short_message(std::string_view text) {
  constexpr std::size_t kLongQuote = 80, kKeep = 40, kLongMessage = 2000;
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    const std::size_t close =
        (c == '"' || c == '\'') ? text.find(c, i + 1) : std::string_view::npos;
    if (close != std::string_view::npos && close - i - 1 > kLongQuote) {
      out += c;
      out += utf8_prefix(text.substr(i + 1), kKeep);
      out += "... (" + std::to_string(close - i - 1) + " characters)";
      out += c;
      i = close + 1;
      continue;
    }
    out += c;
    ++i;
  }
  if (out.size() > kLongMessage)
    out = std::string(utf8_prefix(out, kLongMessage)) + "... (" + std::to_string(out.size()) +
          " characters in all)";
  return out;
}

// (B, H, N, d), float64, C order: what the package hands in.
using Array4 = nb::ndarray<const double, nb::ndim<4>, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy, double, nb::ndim<4>>;
using Flat = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using FlatOut = nb::ndarray<nb::numpy, double, nb::ndim<1>>;

inline int checked_extent(std::size_t extent) {
  if (extent > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw ArgumentError("an extent of " + std::to_string(extent) +
                        " is larger than the emulator's tensors hold (int)");
  return static_cast<int>(extent);
}

inline attention::Tensor to_tensor(const Array4& a) {
  // The emulator's tensors own their storage (std::vector<double>): one O(N d) copy, against
  // O(N^2 d) for the attention itself. Filled by assign (one pass), not sized then copied (two:
  // the sized constructor zero-fills), as memory bandwidth is this call's whole cost.
  attention::Tensor t;
  t.batch = checked_extent(a.shape(0));
  t.heads = checked_extent(a.shape(1));
  t.rows = checked_extent(a.shape(2));
  t.cols = checked_extent(a.shape(3));
  t.data.assign(a.data(), a.data() + a.size());
  return t;
}

// A vector handed to numpy without a copy: it moves into the capsule that owns it and frees it
// when the array dies.
template <std::size_t kDims>
nb::ndarray<nb::numpy, double, nb::ndim<kDims>> owned_array(std::vector<double>&& values,
                                                            const std::size_t (&shape)[kDims]) {
  auto* owned = new std::vector<double>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return nb::ndarray<nb::numpy, double, nb::ndim<kDims>>(owned->data(), kDims, shape, owner);
}

inline OutArray to_array(attention::Tensor&& t) {
  const std::size_t shape[4] = {static_cast<std::size_t>(t.batch),
                                static_cast<std::size_t>(t.heads), static_cast<std::size_t>(t.rows),
                                static_cast<std::size_t>(t.cols)};
  return owned_array(std::move(t.data), shape);
}

inline attention::Inputs to_inputs(const Array4& q, const Array4& k, const Array4& v) {
  return {to_tensor(q), to_tensor(k), to_tensor(v)};
}

// A mask as the package hands it: an additive bias (boolean masks already 0 / -inf), float64,
// (batch, heads, rows, cols) with extents of 1 where it broadcasts (attention/mask.hpp). Checked
// against the inputs with the emulator's own rules (attention::validate).
inline std::shared_ptr<const attention::Mask> to_mask(const std::optional<Array4>& m) {
  if (!m) return nullptr;
  auto mask = std::make_shared<attention::Mask>();
  mask->batch = checked_extent(m->shape(0));
  mask->heads = checked_extent(m->shape(1));
  mask->rows = checked_extent(m->shape(2));
  mask->cols = checked_extent(m->shape(3));
  mask->bias.assign(m->data(), m->data() + m->size());
  return mask;
}

// A preset name or a JSON object text, as `attndev point --policy` reads it.
inline numerics::PrecisionPolicy parse_policy(const std::string& text, const char* keyword) {
  nlohmann::json value;
  const std::size_t first = text.find_first_not_of(' ');
  if (first != std::string::npos && text[first] == '{') {
    if (const auto deep = io::json_text_error(text))
      throw ArgumentError(std::string(keyword) + ": the JSON is " + *deep);
    try {
      value = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e999
      throw ArgumentError(std::string(keyword) + ": not valid JSON (" + e.what() + ")");
    }
  } else {
    value = text;
  }
  numerics::PrecisionPolicy policy;
  std::string error;
  if (!config::parse_policy(value, policy, error))
    throw ArgumentError(std::string(keyword) + ": " + error);
  return policy;
}

inline numerics::Format parse_format(const std::string& text, const char* keyword) {
  numerics::Format f;
  if (numerics::parse_format(text, f)) return f;
  std::vector<std::string_view> names;
  for (numerics::Format g : numerics::kAllFormats) names.push_back(numerics::format_name(g));
  throw ArgumentError(std::string(keyword) + ": unknown format \"" + text + "\"" +
                      config::did_you_mean(text, names) + "; valid: " + config::join_names(names));
}

inline attention::ScalePlacement parse_scale_on(const std::string& text) {
  if (text == "scores") return attention::ScalePlacement::scores;
  if (text == "query") return attention::ScalePlacement::query;
  constexpr std::string_view kPlacements[] = {"scores", "query"};
  throw ArgumentError("scale_on: unknown placement \"" + text + "\"" +
                      config::did_you_mean(text, kPlacements) + "; valid: scores, query");
}

inline void require_at_least(long long value, long long minimum, const char* keyword) {
  if (value < minimum)
    throw ArgumentError(std::string(keyword) + " must be >= " + std::to_string(minimum) + ", got " +
                        std::to_string(value));
}

// `attndev match --algo`'s parse and message.
inline attention::Algorithm parse_algorithm(const std::string& text, const char* keyword) {
  attention::Algorithm a;
  if (attention::parse_algorithm(text, a)) return a;
  std::vector<std::string_view> names;
  for (attention::Algorithm b : attention::kEveryAlgorithm)
    names.push_back(attention::algorithm_name(b));
  throw ArgumentError(std::string(keyword) + ": unknown algorithm \"" + text + "\"" +
                      config::did_you_mean(text, names) + "; valid: " + config::join_names(names));
}

inline attention::Options make_options(bool causal, const std::string& scale_on,
                                       std::optional<double> scale, int block_r, int block_c,
                                       int threads) {
  require_at_least(block_r, 1, "block[0] (Br)");
  require_at_least(block_c, 1, "block[1] (Bc)");
  require_at_least(threads, 0, "threads");
  attention::Options o;
  o.causal = causal;
  o.scale_placement = parse_scale_on(scale_on);
  o.scale = scale;
  o.block_r = block_r;
  o.block_c = block_c;
  o.threads = threads;
  return o;
}

// The emulator's checks (shapes, tiles, a non-finite scale, the mask) before anything runs: they
// name the field, and coming from arguments they are argument errors, as in `attndev point`.
inline void check_arguments(const attention::Inputs& inputs, const attention::Options& options) {
  try {
    attention::validate(inputs, options);
  } catch (const std::invalid_argument& e) {
    throw ArgumentError(e.what());
  }
}

// Runs work() (C++ only, never Python) on a thread of its own with the GIL released, while the
// calling thread looks at Python's signals every 50 ms: a KeyboardInterrupt (Ctrl-C) or any
// signal handler that raises stops the emulator's thread pool between two work items
// (attention::CancelScope) and is raised here as soon as the running items have finished,
// instead of when a call of minutes returns. work()'s own exception is rethrown as is.
template <class Work>
auto interruptible(Work&& work) -> decltype(work()) {
  using Result = decltype(work());
  std::atomic<bool> cancel{false};
  std::packaged_task<Result()> task([&]() -> Result {
    const attention::CancelScope scope(cancel);
    return work();
  });
  std::future<Result> done = task.get_future();
  std::thread worker(std::move(task));
  for (;;) {
    bool finished;
    {
      nb::gil_scoped_release release;
      finished = done.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready;
    }
    if (finished) break;
    if (PyErr_CheckSignals() != 0) {
      cancel = true;
      {
        nb::gil_scoped_release release;
        worker.join();
      }
      throw nb::python_error();  // the pending KeyboardInterrupt (or the handler's exception)
    }
  }
  worker.join();
  return done.get();
}

}  // namespace attndev::python
