#pragma once
// PgQueue's statements (queue.cpp), SQL text only: the two claims (the first claimable head, a
// running head whose lease expired), each writing its agent.started; the lease's renewal; the
// endings (done, retried, failed, released, requeued); a turn's completion in one statement.

#include <string>

namespace autonous::queue::pg_statements {

extern const std::string kClaimHead;
extern const std::string kClaimExpired;
extern const std::string kRenew;
extern const std::string kComplete;
extern const std::string kHistoryRow;
extern const std::string kRetry;
extern const std::string kFail;
extern const std::string kRelease;
extern const std::string kRequeue;
// A worker's completion notifies after its commit (migrations/postgres/0023): the expression
// that tells the ending trigger so, for the transaction; then, once committed, the
// notifications of the tasks ($1 ids, $2 chats, as arrays) when reply_delivery says to notify.
extern const std::string kNotifyAfterCommit;
extern const std::string kEndedNotify;

// A turn's completion without tool steps in one statement: the task done, then only if it was
// (the lease held), its events ($1..$6) and its two history rows, user first; the statement's
// one value is 1, or 0 when the lease was lost (nothing written; a reply already stored by the
// new holder, or by this slot's own try before a lost connection, is not touched). Parameters:
// $7 reply, $8 task id, $9 lease token, $10 chat, $11 user text, $12 and $13 the user text's and
// the reply's token counts, $14 their counter. Sets kNotifyAfterCommit; its second value is
// reply_delivery.notify ("t": the worker sends the notification after the commit).
const std::string& complete_turn();

}  // namespace autonous::queue::pg_statements
