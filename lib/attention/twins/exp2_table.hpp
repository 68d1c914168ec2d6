// A measured exp2 table (the device's ex2.approx.ftz.f32, scripts/gpu-check/exp2-table.sh): its
// file, its loader, the Exp2 the twins use when one is present, and the fitting that chooses its
// stored form from the measured values (exp2_table_model.hpp has the forms).
//
// File: a text header of key=value lines between "attndev-exp2-table 1" and "end" (the GPU,
// driver and instruction it was measured with, the hypothesis, counts), then little-endian
// binary: int8 delta[2^fraction_bits], uint32 exception x bits[n], uint32 exception y bits[n].
//
// Where the twins look (find_exp2_table): $ATTNDEV_EXP2_TABLE when set, else
// data/exp2/ex2.approx.ftz.f32.table in the source tree; without either, the project's exp2.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attention/twins/exp2_table_model.hpp"
#include "attention/twins/steps.hpp"

namespace attndev::attention::twins {

inline constexpr const char* kExp2TableFileName = "ex2.approx.ftz.f32.table";
inline constexpr std::uint64_t kExp2TableMaxBytes = 16ull << 20;

struct Exp2Table {
  // Provenance: the header's key=value pairs in file order (gpu, driver, instruction, ...).
  std::vector<std::pair<std::string, std::string>> meta;
  int fraction_bits = 0;
  Exp2Quant quant = Exp2Quant::floor;
  std::vector<std::int8_t> delta;    // (2^fraction_bits)
  std::vector<std::uint32_t> exc_x;  // (n) increasing
  std::vector<std::uint32_t> exc_y;  // (n)

  Exp2TableView view() const;
  std::string meta_value(const std::string& key) const;  // "" when absent
  std::string hypothesis() const;                        // "reference" or "fraction(Q, mode)"
  std::uint64_t file_bytes() const;                      // the binary part
};

// Throws std::runtime_error naming the file and what is wrong with it.
Exp2Table read_exp2_table(const std::string& path);
// Writes through a temporary file and a rename; throws std::runtime_error.
void write_exp2_table(const std::string& path, const Exp2Table& table);

// $ATTNDEV_EXP2_TABLE when set and non-empty, else the source tree's table when it exists, else "".
std::string find_exp2_table();

// The exp2 of a loaded table (an Exp2 when copied into one): the stored value inside the measured
// domain, +0 below it (the flush-to-zero limit), the reference above it (x >= 1: a softmax never
// gets there).
struct TableExp2 {
  explicit TableExp2(std::shared_ptr<const Exp2Table> t) : table(std::move(t)), v(table->view()) {}
  float operator()(float x) const;
  std::string name() const;
  std::shared_ptr<const Exp2Table> table;
  Exp2TableView v;
};

// The fitting. `measured(index)` is the device's result at exp2_domain_bits(index); `ranges`
// (half-open index ranges) are the values it must reproduce (the whole domain on a device; small
// slices in the tests, which must include the grid points, x in [-1, 0)).
struct Exp2FitOptions {
  std::vector<int> fraction_bits = {16, 20, 21, 22, 23};
  std::uint64_t max_bytes = kExp2TableMaxBytes;
  int threads = 0;  // 0: all hardware threads
};

struct Exp2Hypothesis {
  std::string name;
  bool feasible = true;          // false: a grid value is more than 127 ulps from the reference
  std::uint64_t exceptions = 0;  // over the ranges (an estimate from a sample when !full_count)
  bool full_count = false;
};

struct Exp2Fit {
  bool ok = false;  // a form within max_bytes reproduces every value
  std::string why;  // when !ok
  Exp2Table table;
  std::vector<Exp2Hypothesis> hypotheses;  // every candidate, the chosen first
  std::uint64_t checked = 0;               // values compared in the final check
  std::uint64_t mismatches = 0;            // of them, values the stored form does not reproduce
};

Exp2Fit fit_exp2_table(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges,
                       const std::function<float(std::uint64_t)>& measured,
                       const Exp2FitOptions& options = {});

}  // namespace attndev::attention::twins
