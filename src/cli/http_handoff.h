#pragma once
// tx carries no HTTP library (http_api.h, worker/remote.h): every local worker and every CLI call
// would otherwise map cpp-httplib and the OpenSSL it brings (3.4 MB of Rss each, and OpenSSL's
// initialisation). A command line that may need HTTP — `tx serve`, `--http`, `--server`, or an
// agent's `tx task ...` with $TX_SERVER — is run by tx-http instead: the same CLI with the HTTP
// API and client, built beside tx. The test is generous (a task titled "serve" goes to tx-http
// too), which costs nothing: tx-http runs every command as tx does.

#include <string>

#include "core/error.h"

namespace tx::cli {

// Whether this command line may need HTTP. `tx mcp` never does: it stays in tx, and its tools'
// commands are handed over one by one.
bool MayNeedHttp(int argc, char** argv);

// This executable's path (/proc/self/exe); empty when it cannot be read.
std::string ThisExe();

// The binary of the given name beside this one ("tx-http", "tx"); empty when this one's path
// cannot be read.
std::string SiblingExe(const std::string& name);

// Replaces this process with tx-http and the same arguments. Returns only on failure, with the
// exit code, after printing why in one line.
int RunHttpBinary(char** argv);

// The same for a command that learns only from its config that it needs HTTP (an orchestrator
// or `tx notify test` with a webhook sink): its arguments read back from /proc/self/cmdline.
// Call before any thread starts. Returns only on failure: unavailable, saying why.
Status RerunAsHttpBinary();

}  // namespace tx::cli
