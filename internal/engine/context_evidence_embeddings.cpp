// The evidence step's optional embeddings (EMBEDDING_MODEL, context_evidence.h): the question
// and the chat's messages without a vector, embedded in one call before the gatherers run.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "internal/engine/context_evidence.h"
#include "internal/tokens/truncate.h"

namespace autonous::engine {
namespace {

// Messages embedded a turn at most (with the question, one call), and an input's tokens at most
// (OpenAI's embedding models take 8 192, BERT-style ones 512, llama.cpp's server its batch).
constexpr int kEmbedBatch = 31;  // 32 inputs a call with the question (TEI's default cap)
constexpr int64_t kEmbedInputTokens = 400;

std::string embedding_input(const std::string& text, const tokens::TokenCounter& counter) {
  // Within the models' limits (BERT-style models take 512 tokens of their own tokenizer); an
  // empty input is refused by some servers.
  std::string clipped = tokens::cut_to_tokens(text, kEmbedInputTokens, counter);
  return clipped.empty() ? std::string("(empty)") : clipped;
}

// Embeds texts[from, to) in halves after a refusal; `state` marks each text got (1) or refused
// on its own (2); a failure that is not a refusal (the step's time is up) sets `stopped` and
// leaves the rest untried (0), for a later turn. Returns how many were refused.
int64_t embed_halves(recall::Embedder& embedder, const std::vector<std::string>& texts, size_t from,
                     size_t to, std::vector<std::vector<float>>& vectors, std::vector<char>& state,
                     bool& stopped) {
  if (stopped) return 0;
  try {
    std::vector<std::vector<float>> got = embedder.embed(std::vector<std::string>(
        texts.begin() + static_cast<ptrdiff_t>(from), texts.begin() + static_cast<ptrdiff_t>(to)));
    if (got.size() != to - from) throw std::runtime_error("wrong number of vectors");
    for (size_t i = from; i < to; ++i) {
      vectors[i] = std::move(got[i - from]);
      state[i] = 1;
    }
    return 0;
  } catch (const recall::EmbeddingRefused&) {
    if (to - from == 1) {
      state[from] = 2;
      return 1;
    }
    const size_t mid = from + (to - from) / 2;
    return embed_halves(embedder, texts, from, mid, vectors, state, stopped) +
           embed_halves(embedder, texts, mid, to, vectors, state, stopped);
  } catch (const std::exception&) {
    stopped = true;  // out of time, or the server failed: the rest wait for a later turn
    return 0;
  }
}

}  // namespace

recall::GathererRun embed_question(const EvidenceSeams& seams, recall::RecallQuery& q,
                                   std::vector<ContextWarning>& warnings) {
  recall::Embedder* const embedder = seams.embedder;
  recall::Searcher* const searcher = seams.searcher;
  recall::GathererRun run;
  run.name = "embeddings";
  const auto started = std::chrono::steady_clock::now();
  try {
    embedder->begin_step();  // one time limit for the turn's calls, however many
    const std::string& model = embedder->model();
    const std::vector<common::Message> rows = searcher->unembedded(q.chat_id, model, kEmbedBatch);
    std::vector<std::string> texts{embedding_input(q.text, seams.counter)};
    for (const common::Message& m : rows)
      texts.push_back(embedding_input(m.content, seams.counter));
    std::vector<std::vector<float>> vectors;
    std::vector<char> state(texts.size(), 1);  // 1 got, 2 refused on its own, 0 not tried
    int64_t refused = 0;
    bool stopped = false;
    try {
      vectors = embedder->embed(texts);
      if (vectors.size() != texts.size()) throw std::runtime_error("wrong number of vectors");
    } catch (const recall::EmbeddingRefused&) {
      if (rows.empty()) throw;
      // The question alone (refused too: no vector search this turn, the rows wait), then the
      // messages in halves: only a message refused on its own is passed over for good (an
      // empty vector, never compared), so one message cannot block the chat. When the step's
      // time runs out on the way, what was got is kept and the untried rows wait for a later
      // turn (they come first again, so each turn gets further).
      vectors = embedder->embed({texts.front()});
      if (vectors.size() != 1) throw std::runtime_error("wrong number of vectors");
      vectors.resize(texts.size());
      std::fill(state.begin() + 1, state.end(), 0);
      refused = embed_halves(*embedder, texts, 1, texts.size(), vectors, state, stopped);
    }
    std::vector<std::pair<int64_t, std::vector<float>>> stored;
    int64_t untried = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (state[i + 1] == 0) {
        ++untried;
        continue;
      }
      recall::normalize(vectors[i + 1]);
      stored.emplace_back(rows[i].history_id, std::move(vectors[i + 1]));
    }
    searcher->store_vectors(q.chat_id, model, stored);
    if (refused > 0)
      warnings.push_back(
          {"gatherer_failed",
           fmt::format("embeddings: {} message(s) refused by the model, left without a vector",
                       refused)});
    if (stopped)
      warnings.push_back(
          {"gatherer_failed",
           fmt::format("embeddings: stopped at EMBEDDING_TIMEOUT_MS; {} message(s) wait for a "
                       "later turn",
                       untried)});
    recall::normalize(vectors[0]);
    q.vector = std::move(vectors[0]);
    q.model = model;
    run.candidates = static_cast<int64_t>(rows.size());
  } catch (const std::exception& e) {
    run.error = e.what();
    warnings.push_back(
        {"gatherer_failed", fmt::format("embeddings: {} (recall used BM25 alone)", e.what())});
  }
  run.time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  return run;
}

}  // namespace autonous::engine
