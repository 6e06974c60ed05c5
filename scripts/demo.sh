#!/usr/bin/env bash
# Former name of scripts/chat.sh (the README's main command); kept as an alias.
exec "$(dirname "$0")/chat.sh" "$@"
