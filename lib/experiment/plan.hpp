// Plan: a Config expanded into the ordered list of points to run.
//
// A point is one value of every axis plus one trial seed. Its id is a hash of exactly those
// values in canonical form, so it does not change when axes are reordered in the file, when the
// plan is sharded, or when a run resumes; the variants run at each point are not part of the id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "experiment/config.hpp"
#include "experiment/inputs.hpp"

namespace attndev::experiment {

struct Point {
  std::size_t index = 0;  // position in plan order
  std::string id;         // 16 hex digits
  std::size_t trial = 0;  // index into Config::seeds
  std::uint64_t seed = 0;
  attention::Shape shape;
  Distribution distribution;
  attention::Options options;  // causal, scale placement, tiles (threads left at 0)
  // Canonical axis values (seq_len_kv resolved) as compact JSON with sorted keys: the text the id
  // hashes. Held as text, not as a JSON object: a plan of 10^6 points would otherwise hold 10^7
  // small allocations.
  std::string axes_text;
  // Same for points that share Q, K, V and hence the golden and tile-independent variants:
  // everything but the tile sizes.
  std::string input_key;

  nlohmann::json axes() const;   // axes_text parsed
  std::string describe() const;  // "seq_len=512 head_dim=64 block_c=64 ... seed=0"
};

struct SkippedPoint {
  std::string axes_text;  // as Point::axes_text
  std::string reason;
  nlohmann::json axes() const;
};

struct Plan {
  std::vector<Point> points;
  std::vector<SkippedPoint> skipped;      // one entry per axis combination (not per trial)
  std::vector<std::string> varying_axes;  // axes with more than one value, in canonical order
};

// Points a plan may hold before expansion is refused as a mistake (a sweep this size would take
// years on the emulator, and expanding it would exhaust memory first).
inline constexpr double kMaxPlanPoints = 1e7;

// Axis combinations x trials before constraints, in double (it can exceed any integer type).
double plan_size_bound(const Config& config);

// Throws ConfigError("constraints", ...) when the constraints exclude every point, and
// ConfigError("axes", ...) when plan_size_bound exceeds kMaxPlanPoints.
Plan make_plan(const Config& config);

// Which of `count` shards a point belongs to: its id modulo count, so membership is a property of
// the point alone and does not depend on the plan's order or size.
std::size_t shard_of(const Point& point, std::size_t count);

// FLOPs of one variant at the point (attention::forward_flops).
double point_flops(const Point& point);

}  // namespace attndev::experiment
