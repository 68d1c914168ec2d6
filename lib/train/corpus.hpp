// Character-level language-modelling data: a fixed byte vocabulary and deterministic batches.
//
// Named corpora are Debian packages of English text: `fortunes-min` (fortune cookies, literature
// quotes and riddles, ~98 KB; the default and what CI trains on) and `fortunes` (the full set,
// ~2.6 MB, so a long run does not cycle over 98 KB). Any UTF-8/ASCII text file can be given
// instead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attndev::train {

// Files of the default corpus, concatenated in this order.
inline constexpr const char* kDefaultCorpusFiles[] = {"/usr/share/games/fortunes/fortunes",
                                                      "/usr/share/games/fortunes/literature",
                                                      "/usr/share/games/fortunes/riddles"};
inline constexpr const char* kDefaultCorpusPackage = "fortunes-min";

// The full `fortunes` package (1:1.99.1-7.3, Debian 12) with fortunes-min, which it depends on:
// every file, in file-name order. A fixed list rather than a directory listing, so that another
// fortune package (fortunes-off, fortunes-bofh-excuses, ...) installed beside it cannot change
// the corpus.
inline constexpr const char* kFullCorpusFiles[] = {
    "/usr/share/games/fortunes/art",           "/usr/share/games/fortunes/ascii-art",
    "/usr/share/games/fortunes/computers",     "/usr/share/games/fortunes/cookie",
    "/usr/share/games/fortunes/debian",        "/usr/share/games/fortunes/definitions",
    "/usr/share/games/fortunes/disclaimer",    "/usr/share/games/fortunes/drugs",
    "/usr/share/games/fortunes/education",     "/usr/share/games/fortunes/ethnic",
    "/usr/share/games/fortunes/food",          "/usr/share/games/fortunes/fortunes",
    "/usr/share/games/fortunes/goedel",        "/usr/share/games/fortunes/humorists",
    "/usr/share/games/fortunes/kids",          "/usr/share/games/fortunes/knghtbrd",
    "/usr/share/games/fortunes/law",           "/usr/share/games/fortunes/linux",
    "/usr/share/games/fortunes/linuxcookie",   "/usr/share/games/fortunes/literature",
    "/usr/share/games/fortunes/love",          "/usr/share/games/fortunes/magic",
    "/usr/share/games/fortunes/medicine",      "/usr/share/games/fortunes/men-women",
    "/usr/share/games/fortunes/miscellaneous", "/usr/share/games/fortunes/news",
    "/usr/share/games/fortunes/paradoxum",     "/usr/share/games/fortunes/people",
    "/usr/share/games/fortunes/perl",          "/usr/share/games/fortunes/pets",
    "/usr/share/games/fortunes/platitudes",    "/usr/share/games/fortunes/politics",
    "/usr/share/games/fortunes/pratchett",     "/usr/share/games/fortunes/riddles",
    "/usr/share/games/fortunes/science",       "/usr/share/games/fortunes/songs-poems",
    "/usr/share/games/fortunes/sports",        "/usr/share/games/fortunes/startrek",
    "/usr/share/games/fortunes/tao",           "/usr/share/games/fortunes/translate-me",
    "/usr/share/games/fortunes/wisdom",        "/usr/share/games/fortunes/work",
    "/usr/share/games/fortunes/zippy"};

// A corpus a config can name ("corpus": "fortunes").
struct NamedCorpus {
  const char* name;
  const char* package;  // the Debian package that installs the files (scripts/setup.sh)
  std::span<const char* const> files;
};
inline constexpr NamedCorpus kCorpora[] = {{"fortunes-min", "fortunes-min", kDefaultCorpusFiles},
                                           {"fortunes", "fortunes", kFullCorpusFiles}};
const NamedCorpus* find_corpus(std::string_view name);

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

// `text_file` empty: the named corpus (CorpusError naming the package to install if a file is
// missing, or the valid names for an unknown one).
Corpus load_corpus(const std::filesystem::path& text_file,
                   std::string_view corpus_name = "fortunes-min");
Corpus corpus_from_text(const std::string& text, std::string source);

struct Batch {
  std::vector<int> inputs;   // (B*T), row b*T + t
  std::vector<int> targets;  // (B*T): inputs shifted by one
};

// Windows of T+1 tokens at offsets that are a pure function of (data_seed, step, b): the same
// batches for every run with the same data seed, whatever the model, seed or thread count.
Batch make_batch(const Corpus& corpus, std::uint64_t data_seed, int step, int batch, int seq);

}  // namespace attndev::train
