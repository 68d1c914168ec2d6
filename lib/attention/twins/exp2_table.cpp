// The measured exp2 table: file, loader, and the fitting of its stored form (exp2_table.hpp).
#include "attention/twins/exp2_table.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "attention/parallel.hpp"

namespace attndev::attention::twins {

namespace exp2_impl {

constexpr const char* kMagic = "attndev-exp2-table 1";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("exp2 table " + path + ": " + what);
}

bool parse_quant(const std::string& s, Exp2Quant& q) {
  for (Exp2Quant m : {Exp2Quant::floor, Exp2Quant::toward_zero, Exp2Quant::nearest})
    if (s == exp2_quant_name(m)) {
      q = m;
      return true;
    }
  return false;
}

std::string candidate_name(int q, Exp2Quant m) {
  return q == 0 ? "reference" : "fraction(" + std::to_string(q) + ", " + exp2_quant_name(m) + ")";
}

// Chunks of the ranges for parallel_for: (begin, end) index pairs of at most 2^22 values.
std::vector<std::pair<std::uint64_t, std::uint64_t>> chunks_of(
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges) {
  constexpr std::uint64_t kChunk = 1u << 22;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const auto& [b, e] : ranges)
    for (std::uint64_t s = b; s < e; s += kChunk) out.emplace_back(s, std::min(e, s + kChunk));
  return out;
}

struct Candidate {
  int q = 0;
  Exp2Quant quant = Exp2Quant::floor;
  std::vector<std::int8_t> delta;
  bool feasible = true;
};

// The grid's measured values as int8 ulp differences from the reference.
Candidate make_candidate(int q, Exp2Quant quant,
                         const std::function<float(std::uint64_t)>& measured) {
  Candidate c;
  c.q = q;
  c.quant = quant;
  if (q == 0) return c;
  c.delta.resize(std::size_t{1} << q);
  for (std::uint32_t k = 0; k < (1u << q); ++k) {
    const float x = exp2_grid_x(q, k);
    const std::int64_t diff = static_cast<std::int64_t>(numerics::bits_of(
                                  measured(exp2_domain_index(numerics::bits_of(x))))) -
                              static_cast<std::int64_t>(numerics::bits_of(exp2_reference(x)));
    if (diff < -127 || diff > 127) {
      c.feasible = false;
      return c;
    }
    c.delta[k] = static_cast<std::int8_t>(diff);
  }
  return c;
}

Exp2TableView view_of(const Candidate& c) {
  Exp2TableView v;
  v.fraction_bits = c.q;
  v.quant = c.quant;
  v.delta = c.delta.data();
  return v;
}

// Values over `ranges` (every stride-th one) the candidate's hypothesis misses.
std::uint64_t count_misses(const Candidate& c,
                           const std::vector<std::pair<std::uint64_t, std::uint64_t>>& chunks,
                           const std::function<float(std::uint64_t)>& measured,
                           std::uint64_t stride, int threads) {
  const Exp2TableView v = view_of(c);
  std::atomic<std::uint64_t> misses{0};
  parallel_for(chunks.size(), threads, 0, [&](std::size_t i) {
    std::uint64_t n = 0;
    for (std::uint64_t idx = chunks[i].first; idx < chunks[i].second; idx += stride) {
      const float x = numerics::float_from_bits(exp2_domain_bits(idx));
      n += numerics::bits_of(exp2_table_base(v, x)) != numerics::bits_of(measured(idx));
    }
    misses += n;
  });
  return misses.load();
}

}  // namespace exp2_impl

using namespace exp2_impl;

Exp2TableView Exp2Table::view() const {
  Exp2TableView v;
  v.fraction_bits = fraction_bits;
  v.quant = quant;
  v.delta = delta.data();
  v.exc_x = exc_x.data();
  v.exc_y = exc_y.data();
  v.n_exc = exc_x.size();
  return v;
}

std::string Exp2Table::meta_value(const std::string& key) const {
  for (const auto& [k, v] : meta)
    if (k == key) return v;
  return "";
}

std::string Exp2Table::hypothesis() const {
  return candidate_name(fraction_bits, quant);
}

std::uint64_t Exp2Table::file_bytes() const {
  return delta.size() + 8 * exc_x.size();
}

Exp2Table read_exp2_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::string line;
  if (!std::getline(in, line) || line != kMagic)
    fail(path, "not an exp2 table (its first line is not \"" + std::string(kMagic) + "\")");
  Exp2Table t;
  std::uint64_t n_exc = 0;
  bool ended = false, have_bits = false, have_n = false;
  while (std::getline(in, line)) {
    if (line == "end") {
      ended = true;
      break;
    }
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) fail(path, "header line \"" + line + "\" is not key=value");
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    t.meta.emplace_back(key, value);
    try {
      if (key == "fraction_bits") {
        t.fraction_bits = std::stoi(value);
        have_bits = true;
      } else if (key == "exceptions") {
        n_exc = std::stoull(value);
        have_n = true;
      } else if (key == "quant" && !parse_quant(value, t.quant)) {
        fail(path, "unknown quant \"" + value + "\"");
      }
    } catch (const std::logic_error&) {
      fail(path, "header value of " + key + " is not a number: \"" + value + "\"");
    }
  }
  if (!ended || !have_bits || !have_n)
    fail(path, "header incomplete (needs fraction_bits, exceptions and a final \"end\" line)");
  if (t.fraction_bits < 0 || t.fraction_bits > 23)
    fail(path, "fraction_bits " + std::to_string(t.fraction_bits) + " outside 0..23");
  if (n_exc > kExp2TableMaxBytes / 8)
    fail(path, "exception count " + std::to_string(n_exc) + " too large");
  t.delta.resize(t.fraction_bits == 0 ? 0 : std::size_t{1} << t.fraction_bits);
  t.exc_x.resize(n_exc);
  t.exc_y.resize(n_exc);
  in.read(reinterpret_cast<char*>(t.delta.data()), static_cast<std::streamsize>(t.delta.size()));
  in.read(reinterpret_cast<char*>(t.exc_x.data()), static_cast<std::streamsize>(4 * n_exc));
  in.read(reinterpret_cast<char*>(t.exc_y.data()), static_cast<std::streamsize>(4 * n_exc));
  if (!in)
    fail(path,
         "truncated: the header promises " + std::to_string(t.file_bytes()) + " bytes of data");
  if (in.peek() != std::char_traits<char>::eof()) fail(path, "trailing bytes after the data");
  for (std::size_t i = 0; i < n_exc; ++i)
    if ((i > 0 && t.exc_x[i] <= t.exc_x[i - 1]) || !exp2_in_domain(t.exc_x[i]))
      fail(path, "exception " + std::to_string(i) + " out of order or outside the domain");
  return t;
}

void write_exp2_table(const std::string& path, const Exp2Table& t) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(tmp, std::string("cannot create: ") + std::strerror(errno));
    out << kMagic << "\n";
    for (const auto& [k, v] : t.meta)
      if (k != "fraction_bits" && k != "quant" && k != "exceptions") out << k << "=" << v << "\n";
    out << "fraction_bits=" << t.fraction_bits << "\nquant=" << exp2_quant_name(t.quant)
        << "\nexceptions=" << t.exc_x.size() << "\nend\n";
    out.write(reinterpret_cast<const char*>(t.delta.data()),
              static_cast<std::streamsize>(t.delta.size()));
    out.write(reinterpret_cast<const char*>(t.exc_x.data()),
              static_cast<std::streamsize>(4 * t.exc_x.size()));
    out.write(reinterpret_cast<const char*>(t.exc_y.data()),
              static_cast<std::streamsize>(4 * t.exc_y.size()));
    if (!out) fail(tmp, "write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail(path, std::string("rename: ") + std::strerror(errno));
}

float TableExp2::operator()(float x) const {
  if (x != x) return x;
  const std::uint32_t b = numerics::bits_of(x);
  if (exp2_in_domain(b)) return exp2_table_value(v, x);
  return x < 0.f ? 0.f : exp2_reference(x);  // below -127: flushed; x >= 1: never a softmax's
}

std::string TableExp2::name() const {
  return "measured table (" + table->meta_value("gpu") + ", driver " + table->meta_value("driver") +
         ", " + table->hypothesis() + ")";
}

Exp2Fit fit_exp2_table(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges,
                       const std::function<float(std::uint64_t)>& measured,
                       const Exp2FitOptions& options) {
  Exp2Fit fit;
  const auto chunks = chunks_of(ranges);
  std::uint64_t total = 0;
  for (const auto& [b, e] : ranges) total += e - b;
  std::vector<Candidate> cands;
  cands.push_back(make_candidate(0, Exp2Quant::floor, measured));
  for (int q : options.fraction_bits)
    for (Exp2Quant m : {Exp2Quant::floor, Exp2Quant::toward_zero, Exp2Quant::nearest})
      cands.push_back(make_candidate(q, m, measured));
  // A sample of about 2^22 values ranks the candidates; the best three are counted in full.
  const std::uint64_t stride = std::max<std::uint64_t>(1, total >> 22) | 1;
  for (const Candidate& c : cands) {
    Exp2Hypothesis h{candidate_name(c.q, c.quant), c.feasible, 0, stride == 1};
    if (c.feasible)
      h.exceptions = count_misses(c, chunks, measured, stride, options.threads) * stride;
    fit.hypotheses.push_back(h);
  }
  std::vector<std::size_t> order(cands.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto size_of = [&](std::size_t i) {
    return cands[i].delta.size() + 8 * fit.hypotheses[i].exceptions;
  };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const bool fa = cands[a].feasible, fb = cands[b].feasible;
    return fa != fb ? fa : size_of(a) < size_of(b);
  });
  for (std::size_t r = 0; r < std::min<std::size_t>(3, order.size()) && stride > 1; ++r) {
    const std::size_t i = order[r];
    if (!cands[i].feasible) continue;
    fit.hypotheses[i].exceptions = count_misses(cands[i], chunks, measured, 1, options.threads);
    fit.hypotheses[i].full_count = true;
  }
  // (std::sort with the index as the last key: std::stable_sort instantiates libstdc++ 12's
  // deprecated get_temporary_buffer, which clang 19 reports.)
  std::sort(order.begin(), order.begin() + std::min<std::size_t>(3, order.size()),
            [&](std::size_t a, std::size_t b) {
              const bool fa = cands[a].feasible, fb = cands[b].feasible;
              if (fa != fb) return fa;
              return size_of(a) != size_of(b) ? size_of(a) < size_of(b) : a < b;
            });
  const std::size_t best = order[0];
  std::vector<Exp2Hypothesis> ranked;
  for (std::size_t i : order) ranked.push_back(fit.hypotheses[i]);
  fit.hypotheses = ranked;
  if (!cands[best].feasible || size_of(best) > options.max_bytes) {
    fit.why = "no hypothesis fits in " + std::to_string(options.max_bytes) +
              " bytes (best: " + fit.hypotheses[0].name + ", " + std::to_string(size_of(best)) +
              " bytes)";
    return fit;
  }
  // The chosen form's exceptions, then the check that the stored form reproduces every value.
  Candidate& c = cands[best];
  const Exp2TableView base = view_of(c);
  std::mutex mu;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> exc;
  parallel_for(chunks.size(), options.threads, 0, [&](std::size_t i) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> local;
    for (std::uint64_t idx = chunks[i].first; idx < chunks[i].second; ++idx) {
      const std::uint32_t xb = exp2_domain_bits(idx);
      const std::uint32_t y = numerics::bits_of(measured(idx));
      if (numerics::bits_of(exp2_table_base(base, numerics::float_from_bits(xb))) != y)
        local.emplace_back(xb, y);
    }
    std::lock_guard<std::mutex> lock(mu);
    exc.insert(exc.end(), local.begin(), local.end());
  });
  std::sort(exc.begin(), exc.end());
  fit.table.fraction_bits = c.q;
  fit.table.quant = c.quant;
  fit.table.delta = std::move(c.delta);
  for (const auto& [x, y] : exc) {
    fit.table.exc_x.push_back(x);
    fit.table.exc_y.push_back(y);
  }
  const Exp2TableView v = fit.table.view();
  std::atomic<std::uint64_t> bad{0};
  parallel_for(chunks.size(), options.threads, 0, [&](std::size_t i) {
    std::uint64_t n = 0;
    for (std::uint64_t idx = chunks[i].first; idx < chunks[i].second; ++idx)
      n += numerics::bits_of(
               exp2_table_value(v, numerics::float_from_bits(exp2_domain_bits(idx)))) !=
           numerics::bits_of(measured(idx));
    bad += n;
  });
  fit.checked = total;
  fit.mismatches = bad.load();
  fit.ok = fit.mismatches == 0 && fit.table.file_bytes() <= options.max_bytes;
  if (!fit.ok) fit.why = std::to_string(fit.mismatches) + " values not reproduced";
  return fit;
}

}  // namespace attndev::attention::twins
