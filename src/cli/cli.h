#pragma once
// The tx command line: parses argv against the command table, runs the command, prints tables
// for people or JSON for machines, and maps errors to the exit codes of design.md §5.

namespace tx::cli {

int Run(int argc, char** argv);

}  // namespace tx::cli
