#!/bin/bash
# print_env.sh [NAME...]
# Test agent: prints "NAME=value" for each NAME given ("NAME" alone when it is unset), then
# "cwd=" and the physical working directory, then exits 0.
for name in "$@"; do
  if [[ -v "$name" ]]; then
    echo "$name=${!name}"
  else
    echo "$name"
  fi
done
echo "cwd=$(pwd -P)"
