#pragma once
// Hostile replies, for the hardening tests: faults whose answer is a body a careless client would
// crash or bloat on. KIND (in a [[stub:KIND[:ARG][*N]]] directive, faults.h):
//   deep[:LEVELS]   200 whose content is LEVELS nested arrays (default 100 000)
//   huge:BYTES      200 with a valid reply whose content is BYTES long (Content-Length set)
//   endless         200, chunked, a body that never ends (until the client hangs up)
//   gzipbomb:BYTES  200 with Content-Encoding: gzip, BYTES of zeros compressed (~1000:1)
//   hugeerror:BYTES 502 with an HTML page BYTES long (an error over MAX_RESPONSE_BYTES)
//   echokey         401 whose message echoes the request's Authorization header (some gateways do)
//   down:SECONDS    503 for every request of this message during SECONDS from its first one
//                   (an outage window; *N is ignored)

#include <optional>

#include "cmd/autonous-stub/faults.h"
#include "cmd/autonous-stub/http.h"

namespace autonous::stub {

// Answers `req` on fd when `fault` is a hostile one: whether the connection stays open.
// nullopt for any other fault.
std::optional<bool> answer_hostile(int fd, const Fault& fault, const Request& req);

}  // namespace autonous::stub
