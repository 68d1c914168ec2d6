// `attndev plot DIR --metric M --x X [--series S] [--row R] [--col C]
//               [--spread minmax|std|ci|none] [--logx|--linx] [--logy|--liny] [--sharey]
//               [--label NAME=TEXT]... [--title T] [--size WxH] [--font-size PT]
//               [--format png|svg|pdf] [-o FIGURE] [--no-draw]`
//
// From any results folder to a figure: the pivot of one metric (experiment/results/pivot.hpp)
// written as CSV and markdown, then drawn by scripts/draw_pivot.py with the Python of the
// plotting environment (figure_script.hpp). The tables are written before drawing is attempted,
// so a machine without matplotlib still gets the numbers.
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
  bool logx = false, linx = false, logy = false, liny = false, sharey = false;
  std::vector<std::string> labels;
  std::string xlabel, ylabel, title, size;
  double font_size = 9;
  int dpi = 150;
};

// Names of a results folder that `attndev run`, `report`, `merge` and `attribute` write: the
// figure and the tables beside it may not take one of them (plot -o DIR/results.png would have
// replaced DIR/results.csv with the pivot).
bool owned_by_the_run(const fs::path& file) {
  const std::string name = file.filename().string();
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (!fs::exists(dir / "run.json")) return false;
  return name == "run.json" || name == "summary.md" || name == "report.md" ||
         name.rfind("results", 0) == 0 || name.rfind("attribution.", 0) == 0 ||
         name.rfind(".", 0) == 0;
}

void check_arguments(const PlotArgs& a) {
  if (a.spread != "minmax" && a.spread != "std" && a.spread != "ci" && a.spread != "none")
    throw UsageError("--spread " + a.spread + ": expected minmax, std, ci or none");
  if (a.logx && a.linx) throw UsageError("--logx and --linx: choose one scale for the x axis");
  if (a.logy && a.liny) throw UsageError("--logy and --liny: choose one scale for the y axis");
  for (const std::string& l : a.labels)
    if (l.find('=') == std::string::npos || l.front() == '=')
      throw UsageError("--label " + l +
                       ": expected NAME=TEXT, e.g. --label seq_len=N or --label "
                       "flash2-bf16='FA-2, bf16'");
  if (!a.size.empty()) {
    const auto x = a.size.find('x');
    char* end = nullptr;
    const double w = x == std::string::npos ? 0 : std::strtod(a.size.c_str(), &end);
    const double h = x == std::string::npos ? 0 : std::strtod(a.size.c_str() + x + 1, &end);
    if (!(w >= 1 && w <= 50 && h >= 1 && h <= 50) || end == nullptr || *end != '\0')
      throw UsageError("--size " + a.size +
                       ": expected WIDTHxHEIGHT in inches, e.g. 7x3.5 "
                       "(each 1 to 50)");
  }
  if (!(a.font_size >= 4 && a.font_size <= 40))
    throw UsageError("--font-size must be 4 to 40 points");
  if (a.dpi < 30 || a.dpi > 1200) throw UsageError("--dpi must be 30 to 1200");
}

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
  arg("--logx", a.logx ? "on" : a.linx ? "off" : "auto");
  arg("--logy", a.logy ? "on" : a.liny ? "off" : "auto");
  if (a.sharey) args.emplace_back("--sharey");
  for (const std::string& l : a.labels) arg("--label", l);
  arg("--xlabel", a.xlabel);
  arg("--ylabel", a.ylabel);
  arg("--title", a.title);
  arg("--size", a.size);
  arg("--font-size", std::to_string(a.font_size));
  arg("--dpi", std::to_string(a.dpi));
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
                  "Error bars over trials: minmax (default), std (+-1 sample std), ci (95% "
                  "interval of the mean: Student's t below 20 trials, bootstrap from 20) or none");
  cmd->add_flag("--logx", args->logx, "Logarithmic x axis (default: when x spans 8x or more)");
  cmd->add_flag("--linx", args->linx, "Linear x axis");
  cmd->add_flag("--logy", args->logy, "Logarithmic y axis (default: when y spans 100x or more)");
  cmd->add_flag("--liny", args->liny, "Linear y axis");
  cmd->add_flag("--sharey", args->sharey, "One y scale for every panel");
  cmd->add_option("--label", args->labels,
                  "Rename a column or a value in the figure: --label seq_len=N, --label "
                  "flash2-bf16='FA-2 (bf16)' (repeatable; default labels name metrics and axes "
                  "in words)");
  cmd->add_option("--xlabel", args->xlabel, "The x axis' label");
  cmd->add_option("--ylabel", args->ylabel, "The y axis' label");
  cmd->add_option("--title", args->title, "A title over the figure");
  cmd->add_option("--size", args->size,
                  "Figure size in inches, WIDTHxHEIGHT (default: 3.6 x 2.8 per panel)");
  cmd->add_option("--font-size", args->font_size, "Font size in points (default 9)");
  cmd->add_option("--dpi", args->dpi, "Resolution of a PNG (default 150)");
  cmd->add_option("--format", args->format,
                  "png (default), svg or pdf; -o's extension sets it too");
  cmd->add_option("-o,--out", args->out,
                  "Figure file (default: DIR/plot-<metric>-by-<x>-<series>.<format>); the "
                  "tables go beside it as .csv and .md");
  cmd->add_flag("--no-draw", args->no_draw,
                "Write the pivot tables only (no Python, no matplotlib)");
  cmd->callback([args] {
    check_arguments(*args);
    args->spec.ci = args->spread == "ci";
    if (!fs::is_directory(args->dir))
      throw UsageError(args->dir + ": no such results folder; `attndev run CONFIG -o " + args->dir +
                       "` writes one");
    const fs::path figure = figure_path(*args);
    if (!figure.parent_path().empty() && !fs::is_directory(figure.parent_path()))
      throw UsageError("-o " + figure.string() + ": folder " + figure.parent_path().string() +
                       " does not exist; create it or choose another path");
    fs::path csv = figure;
    csv.replace_extension(".csv");
    fs::path md = figure;
    md.replace_extension(".md");
    for (const fs::path& file : {figure, csv, md})
      if (owned_by_the_run(file))
        throw UsageError("-o " + figure.string() + ": " + file.filename().string() + " in " +
                         file.parent_path().string() +
                         " belongs to the run (its results, summary or manifest) and would be "
                         "replaced; choose another name, e.g. -o " +
                         (file.parent_path() / ("plot-" + figure.filename().string())).string());
    if (!args->no_draw) check_figure_path(figure);
    const std::vector<io::Json> rows = load_rows(args->dir);
    experiment::Pivot pivot;
    try {
      pivot = experiment::make_pivot(rows, args->spec);
    } catch (const experiment::PivotError& e) {
      throw UsageError(args->dir + ": " + e.what());
    }
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
