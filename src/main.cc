#include "cli/cli.h"

int main(int argc, char** argv) { return tx::cli::Run(argc, argv); }
