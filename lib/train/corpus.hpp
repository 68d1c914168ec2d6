// Character-level language-modelling data: a fixed byte vocabulary and deterministic batches.
//
// The default corpus is the English text of Debian's `fortunes-min` package (fortune cookies,
// literature quotes and riddles, ~98 KB). Any UTF-8/ASCII text file can be given instead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace attndev::train {

// Files of the default corpus, concatenated in this order.
inline constexpr const char* kDefaultCorpusFiles[] = {"/usr/share/games/fortunes/fortunes",
                                                      "/usr/share/games/fortunes/literature",
                                                      "/usr/share/games/fortunes/riddles"};
inline constexpr const char* kDefaultCorpusPackage = "fortunes-min";

// Vocabulary: '\n', the 95 printable ASCII characters, and one id for everything else (tabs map
// to space). Fixed, so token ids never depend on which text is loaded.
inline constexpr int kVocabSize = 97;
int token_of(unsigned char c);
char char_of(int token);

// A missing or unusable corpus: the message says which file and what to do.
struct CorpusError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Corpus {
  std::vector<int> tokens;
  std::string source;  // file names, for provenance
};

// `text_file` empty: the default corpus (CorpusError naming the package to install if missing).
Corpus load_corpus(const std::filesystem::path& text_file);
Corpus corpus_from_text(const std::string& text, std::string source);

struct Batch {
  std::vector<int> inputs;   // (B*T), row b*T + t
  std::vector<int> targets;  // (B*T): inputs shifted by one
};

// Windows of T+1 tokens at offsets that are a pure function of (data_seed, step, b): the same
// batches for every run with the same data seed, whatever the model, seed or thread count.
Batch make_batch(const Corpus& corpus, std::uint64_t data_seed, int step, int batch, int seq);

}  // namespace attndev::train
