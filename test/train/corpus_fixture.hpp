// The corpus the training tests learn from.
#pragma once

#include <catch2/catch.hpp>

#include "train/corpus.hpp"

namespace attndev::test {

// The default corpus (Debian package fortunes-min, installed by scripts/setup.sh). Without it the
// license texts of base-files (Essential: always present) stand in, and the test says so.
inline train::Corpus test_corpus() {
  try {
    return train::load_corpus("");
  } catch (const train::CorpusError& e) {
    WARN("default corpus unavailable (" << e.what() << "); using /usr/share/common-licenses/GPL-3");
    return train::load_corpus("/usr/share/common-licenses/GPL-3");
  }
}

}  // namespace attndev::test
