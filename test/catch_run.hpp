// Runs the Catch2 session (Catch2's implementation is compiled once, in test/catch_session.cpp;
// Catch::Session itself is visible only there). For tests with a main() of their own.
#pragma once

namespace attndev::test {
int run_catch_session(int argc, char** argv);
}
