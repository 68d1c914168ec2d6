// main() of every Catch2 test executable; Catch2's implementation is in catch_session.cpp.
#include "catch_run.hpp"

int main(int argc, char* argv[]) {
  return attndev::test::run_catch_session(argc, argv);
}
