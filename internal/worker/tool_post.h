#pragma once
// A tool's HTTP POST (an HTTP tool, an MCP server over Streamable HTTP) through an OpenAI
// transport (curl lives in internal/openai): the answer with its headers, or
// tools::HttpCallError saying why none came (timeout, too large, aborted, failed).

#include "internal/openai/http_transport.h"
#include "internal/tools/http_tool.h"

namespace autonous::worker {

tools::HttpAnswer post_tool(openai::HttpTransport& transport, const tools::HttpCall& call);

}  // namespace autonous::worker
