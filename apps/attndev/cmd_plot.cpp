// `attndev plot DIR --metric M --x X [--series S] [--row R] [--col C] [--spread minmax|std|none]
//               [--format png|svg|pdf] [-o FIGURE] [--no-draw]`
//
// From any results folder to a figure: the pivot of one metric (experiment/results/pivot.hpp)
// written as CSV and markdown, then drawn by scripts/draw_pivot.py with the Python of
// build/venv-plot (scripts/plot-venv.sh creates it on first use). The tables are written
// before drawing is attempted, so a machine without matplotlib still gets the numbers.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/cluster/slurm_script.hpp"
#include "experiment/results/pivot.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment_cli.hpp"
#include "figure_script.hpp"
#include "io/atomic_file.hpp"
#include "io/log.hpp"

namespace attndev::app {
namespace {

namespace fs = std::filesystem;

struct PlotArgs {
  std::string dir;
  experiment::PivotSpec spec;
  std::string spread = "minmax";
  std::string format;
  std::string out;
  bool no_draw = false;
};

// A file-name part from a column name: letters, digits, '-', '_' kept, anything else '_'.
std::string name_part(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

// The figure's path: -o as given (its extension picks the format unless --format does), or
// DIR/plot-<metric>-by-<x>-<series>[-<row>][-<col>].<format>.
fs::path figure_path(PlotArgs& a) {
  static const std::vector<std::string> kFormats = {"png", "svg", "pdf"};
  const auto known = [&](const std::string& f) {
    return std::find(kFormats.begin(), kFormats.end(), f) != kFormats.end();
  };
  if (!a.format.empty() && !known(a.format))
    throw UsageError("--format " + a.format + ": expected png, svg or pdf");
  if (!a.out.empty()) {
    fs::path out(a.out);
    std::string ext = out.extension().string();
    if (!ext.empty()) ext.erase(0, 1);
    if (known(ext)) {
      if (!a.format.empty() && a.format != ext)
        throw UsageError("-o " + a.out + " ends in ." + ext + " but --format is " + a.format +
                         ": drop one of them or make them agree");
      a.format = ext;
      return out;
    }
    if (a.format.empty()) a.format = "png";
    out += "." + a.format;
    return out;
  }
  if (a.format.empty()) a.format = "png";
  std::string stem = "plot";
  for (const std::string* part :
       {&a.spec.metric, &a.spec.x, &a.spec.series, &a.spec.row, &a.spec.col}) {
    if (part->empty()) continue;
    stem += part == &a.spec.x ? "-by-" : "-";
    stem += name_part(*part);
  }
  return fs::path(a.dir) / (stem + "." + a.format);
}

std::vector<io::Json> load_rows(const std::string& dir) {
  try {
    const experiment::Config config = experiment::read_manifest_config(dir);
    const experiment::Plan plan = experiment::make_plan(config);
    experiment::StoredResults stored = experiment::load_results(dir, config, plan);
    for (const std::string& problem : stored.malformed_rows)
      log::warn("{}/{}: row dropped (rerun the same `attndev run` to recompute its point)", dir,
                problem);
    return std::move(stored.rows);
  } catch (const experiment::OutputDirError& e) {
    throw UsageError(e.what());
  } catch (const experiment::ConfigError& e) {
    throw UsageError(dir + "/run.json: " + e.what());
  }
}

void draw(const PlotArgs& a, const fs::path& csv, const fs::path& figure) {
  std::vector<std::string> args = {csv.string()};
  const auto arg = [&args](const std::string& flag, const std::string& value) {
    if (value.empty()) return;
    args.push_back(flag);
    args.push_back(value);
  };
  arg("--metric", a.spec.metric);
  arg("--x", a.spec.x);
  arg("--series", a.spec.series);
  arg("--row", a.spec.row);
  arg("--col", a.spec.col);
  arg("--spread", a.spread);
  draw_figure("draw_pivot.py", args, figure, csv);
}

}  // namespace

void add_plot_command(cli::Command& app) {
  auto args = std::make_shared<PlotArgs>();
  args->spec.series = "variant";
  cli::Command* cmd = app.add_subcommand(
      "plot",
      "Pivot one metric of a results folder (mean, min, max, std, n over trials per cell) into "
      "CSV and markdown, and draw it with error bars (PNG/SVG/PDF)");
  cmd->add_option("dir", args->dir, "Results folder of `attndev run` (or a merged sweep)")
      ->required();
  cmd->add_option("--metric", args->spec.metric,
                  "Column to plot: rmse, max_abs, rel_l2, ratio_max_abs, ratio_rmse, ...")
      ->required();
  cmd->add_option("--x", args->spec.x, "Column on the x axis: seq_len, block_c, head_dim, ...")
      ->required();
  cmd->add_option("--series", args->spec.series,
                  "Column that makes one line per value (default: variant)");
  cmd->add_option("--row", args->spec.row, "Column that makes a row of panels per value");
  cmd->add_option("--col", args->spec.col, "Column that makes a column of panels per value");
  cmd->add_option("--spread", args->spread,
                  "Error bars over trials: minmax (default), std (+-1 sample std) or none");
  cmd->add_option("--format", args->format,
                  "png (default), svg or pdf; -o's extension sets it too");
  cmd->add_option("-o,--out", args->out,
                  "Figure file (default: DIR/plot-<metric>-by-<x>-<series>.<format>); the "
                  "tables go beside it as .csv and .md");
  cmd->add_flag("--no-draw", args->no_draw,
                "Write the pivot tables only (no Python, no matplotlib)");
  cmd->callback([args] {
    if (args->spread != "minmax" && args->spread != "std" && args->spread != "none")
      throw UsageError("--spread " + args->spread + ": expected minmax, std or none");
    if (!fs::is_directory(args->dir))
      throw UsageError(args->dir + ": no such results folder; `attndev run CONFIG -o " + args->dir +
                       "` writes one");
    const fs::path figure = figure_path(*args);
    if (!figure.parent_path().empty() && !fs::is_directory(figure.parent_path()))
      throw UsageError("-o " + figure.string() + ": folder " + figure.parent_path().string() +
                       " does not exist; create it or choose another path");
    const std::vector<io::Json> rows = load_rows(args->dir);
    experiment::Pivot pivot;
    try {
      pivot = experiment::make_pivot(rows, args->spec);
    } catch (const experiment::PivotError& e) {
      throw UsageError(args->dir + ": " + e.what());
    }
    fs::path csv = figure;
    csv.replace_extension(".csv");
    fs::path md = figure;
    md.replace_extension(".md");
    io::write_file_atomic(csv, experiment::pivot_csv(pivot));
    io::write_file_atomic(md, experiment::pivot_markdown(pivot));
    std::fputs(experiment::pivot_markdown(pivot).c_str(), stdout);
    log::info("wrote {} and {} ({} cells from {} rows)", csv.string(), md.string(),
              pivot.cells.size(), pivot.rows_used);
    if (args->no_draw) return;
    draw(*args, csv, figure);
    std::fflush(stdout);
    std::fprintf(stderr, "wrote %s\n", figure.c_str());
  });
}

}  // namespace attndev::app
