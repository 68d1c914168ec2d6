// Parsing a distribution from config and command-line text (the generator itself is lib/inputs,
// tested in test/inputs/test_random_inputs.cpp).
#include <catch2/catch.hpp>

#include <string>

#include "experiment/spec/inputs.hpp"

using namespace attndev;
using experiment::Distribution;

namespace {

Distribution parse_ok(const char* text) {
  Distribution d;
  std::string error;
  INFO(text);
  REQUIRE(experiment::parse_distribution(text, d, error));
  CHECK(error.empty());
  return d;
}

std::string parse_error(const char* text) {
  Distribution d;
  d.a = 123.0;  // a failed parse must leave the output untouched
  std::string error;
  INFO(text);
  CHECK_FALSE(experiment::parse_distribution(text, d, error));
  CHECK(d.a == 123.0);
  return error;
}

}  // namespace

TEST_CASE("parse_distribution accepts the documented forms and round-trips describe()",
          "[inputs][parse]") {
  Distribution d = parse_ok("normal");
  CHECK((d.kind == Distribution::Kind::normal && d.a == 0.0 && d.b == 1.0));
  d = parse_ok(" normal( -1.5 , 0.25 ) ");
  CHECK((d.a == -1.5 && d.b == 0.25));
  d = parse_ok("normal(std=3)");
  CHECK((d.a == 0.0 && d.b == 3.0));
  d = parse_ok("uniform(-1,1)");
  CHECK((d.kind == Distribution::Kind::uniform && d.a == -1.0 && d.b == 1.0));
  d = parse_ok("outlier(10,0.001)");
  CHECK(
      (d.kind == Distribution::Kind::outlier && d.outlier_std == 10.0 && d.outlier_prob == 0.001));
  CHECK(d.describe() == "outlier(std=10,p=0.001)");
  d = parse_ok("channel(1,5)");
  CHECK((d.kind == Distribution::Kind::channel && d.a == 1.0 && d.b == 5.0));
  CHECK(d.describe() == "channel(std=1,bias=5)");
  CHECK(parse_ok("channel").describe() == "channel(std=1,bias=5)");
  CHECK(parse_ok("channel(bias=0)").b == 0.0);
  CHECK(parse_ok("normal(0,1)").describe() == "normal(0,1)");
  CHECK(parse_ok("uniform(-1,1)").describe() == "uniform(-1,1)");
  for (const char* text : {"normal(0.1,0.30000000000000004)", "uniform(-1e-300,2.5)",
                           "outlier(std=7.25,p=1e-05)", "channel(std=0.5,bias=3)"}) {
    const Distribution a = parse_ok(text);
    const Distribution b = parse_ok(a.describe().c_str());
    CHECK(a.describe() == b.describe());
    CHECK((a.a == b.a && a.b == b.b && a.outlier_std == b.outlier_std &&
           a.outlier_prob == b.outlier_prob && a.kind == b.kind));
  }
}

TEST_CASE("parse_distribution gives the outlier form FA-3's defaults", "[inputs][parse]") {
  const Distribution d = parse_ok("outlier");
  CHECK(d.outlier_std == 10.0);
  CHECK(d.outlier_prob == 0.001);
}

TEST_CASE("parse_distribution explains what is wrong", "[inputs][parse]") {
  CHECK_THAT(parse_error("gaussian(0,1)"), Catch::Contains("unknown kind \"gaussian\""));
  CHECK_THAT(parse_error("normall(0,1)"), Catch::Contains("did you mean \"normal\""));
  CHECK_THAT(parse_error("normal(0,1"), Catch::Contains("expected ')'"));
  CHECK_THAT(parse_error("normal(0,1,2)"), Catch::Contains("takes 2 parameters"));
  CHECK_THAT(parse_error("normal(0,x)"), Catch::Contains("\"x\" is not a number"));
  CHECK_THAT(parse_error("normal(0,-1)"), Catch::Contains("std must be finite and > 0"));
  CHECK_THAT(parse_error("uniform(1,1)"), Catch::Contains("lo must be < hi"));
  CHECK_THAT(parse_error("outlier(10,1.5)"), Catch::Contains("p must be in [0, 1]"));
  CHECK_THAT(parse_error("outlier(sdt=10)"), Catch::Contains("did you mean \"std\""));
  CHECK_THAT(parse_error("normal(mean=0,1)"), Catch::Contains("mix of named and positional"));
  CHECK_THAT(parse_error(""), Catch::Contains("expected one of normal(mean,std)"));
  CHECK_THAT(parse_error("normal(nan,1)"), Catch::Contains("mean must be finite"));
}
