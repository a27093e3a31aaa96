#pragma once
// Recall: the evidence gatherers. Before each turn, the chat's history that is no longer verbatim
// in the prompt (older than the first kept message, newer than the clear point) and the
// operator's documents are searched for the user's message (BM25 over search terms); the chosen
// hits (recall_select.h) are sent with their neighbour turns (an answer usually sits next to its
// question) as marked data blocks — <recalled_messages> with each message's date and speaker,
// <documents> — that follow the user's text in the last message: after the stable history, in
// the one message that changes every turn, so the cacheable prefix survives and the roles still
// alternate as strict chat templates require. Each gatherer runs under its own deadline; one that
// fails or runs late contributes nothing and says so, it never fails the turn. Packing never
// exceeds the room it is given.

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "internal/common/message.h"
#include "internal/recall/recall_select.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::recall {

// The search seam each backend's engine storage implements (backend/sqlite/search_index.h on
// SQLite FTS5, backend/postgres/search.h on PostgreSQL).
class Searcher {
 public:
  virtual ~Searcher() = default;
  // Indexes what was written since (the chat's queued rows, queued documents).
  virtual void catch_up(const std::string& chat_id) = 0;
  // `chat_id`'s messages with ids in (after_id, before_id) that match any of `terms`, best BM25
  // first, at most `limit`.
  virtual SearchResult search_history(const std::string& chat_id,
                                      const std::vector<std::string>& terms, int64_t after_id,
                                      int64_t before_id, int limit) = 0;
  // Documents for every chat or for `chat_id` that match any of `terms`, best first.
  virtual SearchResult search_documents(const std::string& chat_id,
                                        const std::vector<std::string>& terms, int limit) = 0;
  // Up to `count` messages of `chat_id` on each side of `id`, within (after_id, before_id),
  // oldest first, `id` itself left out.
  virtual std::vector<common::Message> neighbours(const std::string& chat_id, int64_t id, int count,
                                                  int64_t after_id, int64_t before_id) = 0;
  // Calls after this throw once `deadline` passed (nullopt: no deadline).
  virtual void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) = 0;

  // Embeddings (EMBEDDING_MODEL). Up to `limit` of `chat_id`'s messages without a current vector
  // of `model` (edited since, then new), oldest first.
  virtual std::vector<common::Message> unembedded(const std::string& chat_id,
                                                  const std::string& model, int limit) {
    (void)chat_id, (void)model, (void)limit;
    return {};
  }
  // Stores unit-length vectors of `model` for `chat_id`'s messages (id, vector).
  virtual void store_vectors(const std::string& chat_id, const std::string& model,
                             const std::vector<std::pair<int64_t, std::vector<float>>>& vectors) {
    (void)chat_id, (void)model, (void)vectors;
  }
  // `chat_id`'s messages in (after_id, before_id) most similar to the unit-length `query`
  // (Candidate::cosine), best first, at most `limit`.
  virtual SearchResult search_vectors(const std::string& chat_id, const std::string& model,
                                      const std::vector<float>& query, int64_t after_id,
                                      int64_t before_id, int limit) {
    (void)chat_id, (void)model, (void)query, (void)after_id, (void)before_id, (void)limit;
    return {};
  }
};

// The server refused the input itself (too long for the model, …): sending it again fails again.
class EmbeddingRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The embeddings seam (worker/llm_embedder.h calls the endpoint's /v1/embeddings).
class Embedder {
 public:
  virtual ~Embedder() = default;
  virtual const std::string& model() const = 0;
  // A turn's embeddings step starts: every embed() call of the turn shares one time limit (a
  // step may split a refused batch into many calls; a rebuild after an overflow runs it again).
  virtual void begin_step() {}
  // One vector per text, in order. Throws EmbeddingRefused when the server refuses the input,
  // another exception on any other failure (the step's time being up among them).
  virtual std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) = 0;
};

// One message or document in the evidence.
struct RecallItem {
  common::Message message;
  bool document = false;
  bool hit = false;          // chosen by the search; otherwise a neighbour of `neighbour_of`
  int64_t neighbour_of = 0;  // the hit's id
  double score = 0;
  double relevance = 0;
  double recency = 0;
  std::string title;   // documents
  std::string source;  // documents
  bool cut = false;    // shortened to RecallSettings::message_tokens
  // With embeddings: the hit's similarity and its ranks in the BM25 and vector lists (0: absent).
  std::optional<double> cosine;
  int lexical_rank = 0;
  int semantic_rank = 0;
};

// What one gatherer did.
struct GathererRun {
  std::string name;  // recall | documents | embeddings
  std::chrono::microseconds time{0};
  int64_t candidates = 0;
  std::optional<std::string> error;  // failed or ran late: it contributed nothing
};

struct Evidence {
  std::string text;  // the blocks that lead the user's message; "" when nothing was found
  int64_t tokens = 0;
  std::vector<RecallItem> items;            // what the blocks hold, in block order
  std::vector<std::string> terms;           // the history search's query terms
  std::vector<std::string> document_terms;  // the documents search's
  std::vector<GathererRun> runs;
};

// What to search: the user's text; the chat's rows in (after_id, before_id) are out of the prompt.
struct RecallQuery {
  std::string chat_id;
  std::string text;
  int64_t after_id = 0;
  int64_t before_id = 0;
  std::optional<double> reference;  // "now" for recency, seconds since the epoch
  int64_t room = 0;                 // tokens the evidence may cost
  // With embeddings: the question's unit-length vector of `model` (empty: BM25 alone).
  std::vector<float> vector;
  std::string model;
};

// `text` with every line after the first indented (CR counts as a line break), so data quoted
// in a block cannot forge a line of its own ("[date] user: …", a section head).
std::string indented(std::string text);

// Scales `v` to unit length (all zeros stays as it is).
void normalize(std::vector<float>& v);

// Runs the recall and documents gatherers and packs what they chose into `query.room`.
Evidence gather_evidence(Searcher& searcher, const RecallQuery& query,
                         const RecallSettings& settings, const tokens::TokenCounter& counter);

}  // namespace autonous::recall
