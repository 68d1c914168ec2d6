#include "train/corpus.hpp"

#include <fstream>
#include <sstream>

namespace attndev::train {

int token_of(unsigned char c) {
  if (c == '\n') return 0;
  if (c == '\t') c = ' ';
  if (c >= 32 && c <= 126) return 1 + (c - 32);
  return kVocabSize - 1;
}

char char_of(int token) {
  if (token == 0) return '\n';
  if (token >= 1 && token <= 95) return static_cast<char>(32 + token - 1);
  return '?';
}

Corpus corpus_from_text(const std::string& text, std::string source) {
  Corpus c;
  c.source = std::move(source);
  c.tokens.reserve(text.size());
  for (unsigned char ch : text) c.tokens.push_back(token_of(ch));
  return c;
}

namespace {
std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CorpusError("cannot read text file " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

const NamedCorpus* find_corpus(std::string_view name) {
  for (const NamedCorpus& c : kCorpora)
    if (name == c.name) return &c;
  return nullptr;
}

Corpus load_corpus(const std::filesystem::path& text_file, std::string_view corpus_name) {
  if (!text_file.empty()) {
    if (!std::filesystem::is_regular_file(text_file))
      throw CorpusError("text file " + text_file.string() +
                        " does not exist or is not a file: pass an existing text file to --text");
    return corpus_from_text(read_text(text_file), text_file.string());
  }
  const NamedCorpus* named = find_corpus(corpus_name);
  if (!named) {
    std::string valid;
    for (const NamedCorpus& c : kCorpora)
      valid += (valid.empty() ? "" : ", ") + std::string(c.name);
    throw CorpusError("unknown corpus \"" + std::string(corpus_name) + "\"; valid: " + valid +
                      " (or pass --text FILE)");
  }
  std::string text, source;
  for (const char* f : named->files) {
    if (!std::filesystem::is_regular_file(f))
      throw CorpusError("corpus " + std::string(named->name) + ": file " + f +
                        " is missing: install the Debian package " + named->package +
                        " (apt-get install " + named->package +
                        ", or scripts/setup.sh) or pass --text FILE");
    text += read_text(f);
    source += (source.empty() ? "" : ",") + std::string(f);
  }
  return corpus_from_text(text, std::string(named->name) + ":" + source);
}

Batch make_batch(const Corpus& corpus, std::uint64_t data_seed, int step, int batch, int seq) {
  const std::size_t n = corpus.tokens.size();
  if (n < std::size_t(seq) + 2)
    throw CorpusError("corpus " + corpus.source + " has " + std::to_string(n) +
                      " characters, fewer than context + 2 = " + std::to_string(seq + 2));
  Batch b;
  b.inputs.reserve(std::size_t(batch) * seq);
  b.targets.reserve(std::size_t(batch) * seq);
  const std::uint64_t windows = n - std::size_t(seq);
  for (int e = 0; e < batch; ++e) {
    // splitmix64 of (seed, step, element): independent, reproducible window starts.
    std::uint64_t x = data_seed * 0x9e3779b97f4a7c15ull +
                      std::uint64_t(step) * 0xd1b54a32d192ed03ull + std::uint64_t(e) + 1;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    const std::size_t start = std::size_t(x % windows);
    for (int t = 0; t < seq; ++t) {
      b.inputs.push_back(corpus.tokens[start + t]);
      b.targets.push_back(corpus.tokens[start + t + 1]);
    }
  }
  return b;
}

}  // namespace attndev::train
