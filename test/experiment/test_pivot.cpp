// The pivot of `attndev plot`: cell statistics on small integers (exact in double), label order,
// and the refusals that keep a figure from averaging different experiments. The same pivot on a
// real run's rows is checked end to end in test/cli/test_cli_plot.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "experiment/results/pivot.hpp"

namespace pivot_test {

using attndev::experiment::make_pivot;
using attndev::experiment::Pivot;
using attndev::experiment::PivotError;
using attndev::experiment::PivotSpec;
using attndev::io::Json;

Json row(const std::string& variant, int seq_len, int block_c, int trial, double rmse,
         const std::string& status = "ok") {
  Json r;
  r["record"] = "row";
  r["point_id"] =
      "p" + std::to_string(seq_len) + "_" + std::to_string(block_c) + "_" + std::to_string(trial);
  r["trial"] = trial;
  r["seed"] = 100 + trial;
  r["seq_len"] = seq_len;
  r["head_dim"] = 64;
  r["block_c"] = block_c;
  r["variant"] = variant;
  r["status"] = status;
  r["rmse"] = rmse;
  return r;
}

PivotSpec spec(const std::string& x, const std::string& series) {
  PivotSpec s;
  s.metric = "rmse";
  s.x = x;
  s.series = series;
  return s;
}

TEST_CASE("pivot: mean, min, max, sample std and n per cell, numeric x sorted by value",
          "[experiment][pivot]") {
  // seq_len 1024 comes first in the rows: as text "1024" < "256", by value it is last.
  std::vector<Json> rows = {
      row("flash2", 1024, 64, 0, 7),
      row("flash2", 1024, 64, 1, 9),
      row("flash2", 256, 64, 0, 1),
      row("flash2", 256, 64, 1, 2),
      row("flash2", 256, 64, 2, 3),
      row("baseline", 256, 64, 0, 4),
      row("baseline", 256, 64, 1, 0, "failed: boom"),
  };
  Json no_value = row("baseline", 1024, 64, 0, 0);
  no_value.erase("rmse");
  rows.push_back(no_value);
  Json nan_value = row("baseline", 1024, 64, 1, 0);
  nan_value["rmse"] = "nan";  // how number_json writes NaN: never averaged in
  rows.push_back(nan_value);

  const Pivot p = make_pivot(rows, spec("seq_len", "variant"));
  CHECK(p.x_numeric);
  CHECK(p.rows_used == 6);
  CHECK(p.rows_not_ok == 1);
  CHECK(p.rows_no_value == 1);
  CHECK(p.rows_non_finite == 1);
  REQUIRE(p.cells.size() == 4);
  CHECK(p.cells[0].series == "flash2");
  CHECK(p.cells[0].x == "256");
  CHECK(p.cells[0].n == 3);
  CHECK(p.cells[0].mean == 2);
  CHECK(p.cells[0].min == 1);
  CHECK(p.cells[0].max == 3);
  CHECK(p.cells[0].std == 1);  // sqrt(((1-2)^2 + 0 + (3-2)^2) / (3 - 1))
  CHECK(p.cells[1].x == "1024");
  CHECK(p.cells[1].mean == 8);
  CHECK(p.cells[1].std == Approx(std::sqrt(2.0)).epsilon(1e-15));
  CHECK(p.cells[2].series == "baseline");
  CHECK(p.cells[2].n == 1);
  CHECK(p.cells[2].std == 0);  // one trial: no spread
  // The NaN is a cell of its own with no finite value, named rather than dropped.
  CHECK(p.cells[3].n == 0);
  CHECK(p.cells[3].non_finite == 1);
  CHECK(p.cells[3].non_finite_text == "nan");

  const std::string csv = attndev::experiment::pivot_csv(p);
  CHECK(csv.rfind("variant,seq_len,mean,min,max,std,n,ci_low,ci_high,ci_method,non_finite\r\n"
                  "flash2,256,2,1,3,1,3,",
                  0) == 0);
  CHECK(csv.find("flash2,1024,8,7,9,1.4142135623730951,2,") != std::string::npos);
  CHECK(csv.find("baseline,256,4,4,4,0,1,,,none,\r\n") != std::string::npos);
  CHECK(csv.find("baseline,1024,,,,,0,,,none,1 nan\r\n") != std::string::npos);
  const std::string md = attndev::experiment::pivot_markdown(p);
  CHECK(md.find("| seq_len | variant = flash2 | variant = baseline |") != std::string::npos);
  CHECK(md.find("| 256 | 2 (1..3, sd 1, n 3) | 4 (4..4, sd 0, n 1) |") != std::string::npos);
  CHECK(md.find("| 1024 | 8 (7..9, sd 1.41, n 2) | nan (1 trial) |") != std::string::npos);
}

TEST_CASE("pivot: an inf ratio is named in its cell, not dropped or blamed on ratio_to",
          "[experiment][pivot]") {
  // A ratio is inf where the reference deviates by exactly 0 (a bit-exact baseline): the
  // variant used to vanish from the table and the figure, and with no finite value left the
  // error blamed a missing ratio_to.
  std::vector<Json> rows;
  for (int t : {0, 1}) {
    Json inf = row("flash2-fp64", 256, 64, t, 0);
    inf["rmse"] = "inf";
    rows.push_back(inf);
    rows.push_back(row("flash2-bf16", 256, 64, t, 0.5));
  }
  Json mixed = row("flash2-fp64", 512, 64, 0, 3);
  rows.push_back(mixed);
  Json mixed_inf = row("flash2-fp64", 512, 64, 1, 0);
  mixed_inf["rmse"] = "inf";
  rows.push_back(mixed_inf);
  const Pivot p = make_pivot(rows, spec("seq_len", "variant"));
  CHECK(p.rows_non_finite == 3);
  const std::string md = attndev::experiment::pivot_markdown(p);
  CHECK(md.find("| 256 | inf (2 trials) | 0.5 (0.5..0.5, sd 0, n 2) |") != std::string::npos);
  CHECK(md.find("| 512 | 3 (3..3, sd 0, n 1) + inf (1 trial, not in the mean) |  |") !=
        std::string::npos);
  CHECK(md.find("3 non-finite (named in their cells") != std::string::npos);

  std::vector<Json> only_inf(rows.begin(), rows.begin() + 1);
  try {
    (void)make_pivot(only_inf, spec("seq_len", "variant"));
    FAIL("no error");
  } catch (const PivotError& e) {
    const std::string what = e.what();
    CHECK(what.find("1 with a non-finite value") != std::string::npos);
    CHECK(what.find("ratio_to") == std::string::npos);
  }
}

TEST_CASE("pivot: the 95% interval of a cell is Student's t below 20 trials, a bootstrap above",
          "[experiment][pivot]") {
  using attndev::experiment::IntervalMethod;
  using attndev::experiment::student_t_quantile;
  // Quantiles of Student's t (scipy.stats.t.ppf(0.975, df)).
  CHECK(student_t_quantile(0.975, 1) == Approx(12.706204736174698).epsilon(1e-9));
  CHECK(student_t_quantile(0.975, 2) == Approx(4.302652729749464).epsilon(1e-9));
  CHECK(student_t_quantile(0.975, 10) == Approx(2.2281388519649385).epsilon(1e-9));
  CHECK(student_t_quantile(0.975, 30) == Approx(2.0422724563012373).epsilon(1e-9));
  CHECK(student_t_quantile(0.5, 7) == Approx(0.0).margin(1e-6));  // the CDF is flat to 1e-16 there

  std::vector<Json> rows;
  for (int t = 0; t < 3; ++t) rows.push_back(row("flash2", 256, 64, t, 1 + t));
  for (int t = 0; t < 40; ++t) rows.push_back(row("flash2", 512, 64, t, t % 2 ? 1.0 : 3.0));
  rows.push_back(row("flash2", 1024, 64, 0, 5));
  PivotSpec s = spec("seq_len", "variant");
  s.ci = true;
  const Pivot p = make_pivot(rows, s);
  REQUIRE(p.cells.size() == 3);
  // 1, 2, 3: mean 2, s = 1, half-width t(0.975, 2) / sqrt(3).
  CHECK(p.cells[0].ci.method == IntervalMethod::t);
  CHECK(p.cells[0].ci.low == Approx(2 - 4.302652729749464 / std::sqrt(3.0)).epsilon(1e-9));
  CHECK(p.cells[0].ci.high == Approx(2 + 4.302652729749464 / std::sqrt(3.0)).epsilon(1e-9));
  // 40 values, 1 and 3 alternating: mean 2, sd 1.013, standard error 0.16: the bootstrap's
  // interval is about 2 +- 0.31, and it is the same on every run.
  CHECK(p.cells[1].ci.method == IntervalMethod::bootstrap);
  CHECK(p.cells[1].ci.low == Approx(2 - 0.31).margin(0.05));
  CHECK(p.cells[1].ci.high == Approx(2 + 0.31).margin(0.05));
  CHECK(make_pivot(rows, s).cells[1].ci.low == p.cells[1].ci.low);
  CHECK(p.cells[2].ci.method == IntervalMethod::none);  // one trial
  const std::string md = attndev::experiment::pivot_markdown(p);
  CHECK(md.find("95% CI of the mean: t = Student's t interval") != std::string::npos);
  CHECK(md.find("| 256 | 2 (1..3, sd 1, n 3, 95% CI -0.484..4.48 t) |") != std::string::npos);
  CHECK(md.find(" bootstrap) |") != std::string::npos);
}

TEST_CASE("pivot markdown: a | or a newline in a name cannot break the table",
          "[experiment][pivot]") {
  const std::vector<Json> rows = {row("a|b\nc", 256, 64, 0, 1)};
  const std::string md =
      attndev::experiment::pivot_markdown(make_pivot(rows, spec("seq_len", "variant")));
  CHECK(md.find("| seq_len | variant = a\\|b c |") != std::string::npos);
}

TEST_CASE("pivot: facets split cells, a varying axis left off the figure is refused",
          "[experiment][pivot]") {
  const std::vector<Json> rows = {
      row("flash2", 256, 32, 0, 1),
      row("flash2", 256, 32, 1, 3),
      row("flash2", 256, 64, 0, 5),
      row("flash2", 256, 64, 1, 7),
  };
  // block_c varies but is on no axis of the figure: averaging 32 with 64 would pass for trials.
  try {
    (void)make_pivot(rows, spec("seq_len", "variant"));
    FAIL("no error");
  } catch (const PivotError& e) {
    CHECK(std::string(e.what()).find("block_c takes more than one value") != std::string::npos);
  }
  PivotSpec s = spec("seq_len", "variant");
  s.col = "block_c";
  const Pivot p = make_pivot(rows, s);
  REQUIRE(p.cells.size() == 2);
  CHECK(p.cells[0].col == "32");
  CHECK(p.cells[0].mean == 2);
  CHECK(p.cells[1].col == "64");
  CHECK(p.cells[1].mean == 6);
  CHECK(attndev::experiment::pivot_markdown(p).find("## block_c = 64") != std::string::npos);
  // The same cells with block_c as the series instead.
  const Pivot q = make_pivot(rows, spec("seq_len", "block_c"));
  REQUIRE(q.cells.size() == 2);
  CHECK(q.cells[1].series == "64");
  CHECK(q.cells[1].max == 7);
}

TEST_CASE("pivot: unknown columns, trial columns and empty metrics are refused with the fix",
          "[experiment][pivot]") {
  const std::vector<Json> rows = {row("flash2", 256, 64, 0, 1)};
  const auto message = [&](const PivotSpec& s) -> std::string {
    try {
      (void)make_pivot(rows, s);
    } catch (const PivotError& e) {
      return e.what();
    }
    return "";
  };
  PivotSpec s = spec("seq_len", "variant");
  s.metric = "rmsee";
  CHECK(message(s).find("--metric rmsee: no row has this column") != std::string::npos);
  CHECK(message(s).find("rmse") != std::string::npos);  // the columns there are listed
  CHECK(message(spec("seqlen", "variant")).find("--x seqlen") != std::string::npos);
  CHECK(message(spec("trial", "variant")).find("identifies a trial") != std::string::npos);
  s = spec("seq_len", "variant");
  s.metric = "status";
  CHECK(message(s).find("no ok row has a finite number") != std::string::npos);
  CHECK_THROWS_AS(make_pivot({}, spec("seq_len", "variant")), PivotError);
}

}  // namespace pivot_test
