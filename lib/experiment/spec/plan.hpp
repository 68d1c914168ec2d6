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
#include "experiment/spec/config.hpp"
#include "experiment/spec/axes.hpp"

namespace attndev::experiment {

struct Point {
  std::size_t index = 0;  // position in plan order
  std::string id;         // 16 hex digits
  std::size_t trial = 0;  // index into Config::seeds
  std::uint64_t seed = 0;
  PointAxes axes;  // typed, seq_len_kv resolved, shapes of an inputs file filled in
  // Same for points that share Q, K, V and hence the golden and tile-independent variants:
  // everything but the tile sizes.
  std::string input_key;

  attention::Shape shape() const { return axes.shape(); }
  attention::Options options() const;  // causal, scale placement, tiles (threads left at 0)
  std::string describe() const;        // "batch=1 block_c=64 ... seed=0"
};

struct SkippedPoint {
  PointAxes axes;
  std::string reason;
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

// Throws ConfigError("constraints", ...) when the constraints exclude every point,
// ConfigError("axes", ...) when plan_size_bound exceeds kMaxPlanPoints, and
// ConfigError("axes.inputs...", ...) when an inputs file cannot be read (its shapes are read here,
// so that constraints and FLOP counts see them).
Plan make_plan(const Config& config);

// FLOPs of one variant at the point (attention::forward_flops).
double point_flops(const Point& point);

// The shard of every point (indexed by Point::index) when the plan is split into `count` shards,
// balanced by cost: points in decreasing order of point_flops (ties by id) each go to the shard
// with the least cost so far (ties: the lowest index). The largest shard is then within a point's
// cost of the mean, so within 10% of it for any sweep of many points, and no larger than the
// largest point where one point outweighs the rest of its share. Deterministic from the plan
// alone: every task of a job array computes the same split. The split changes when points are
// added; nothing is lost then, since a run skips every point done in any results file of its
// folder.
std::vector<std::uint32_t> assign_shards(const Plan& plan, std::size_t count);

}  // namespace attndev::experiment
