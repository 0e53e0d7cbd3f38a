# Sourced by the tests that read from CGDR_STATS=1 output which channels carried which sizes
# (per power-of-two size class, "stats: sizes LO..HI: CHANNEL[,CHANNEL...]", one line per rank).

# The channels that carried the size class starting at LO, over both ranks' lines, sorted.
stats_class() {  # OUTPUT LO
  grep -o "stats: sizes $2\.\.[0-9]*: [a-z,-]*" <<<"$1" | sed 's/^.*: //' | tr ',' '\n' | sort -u | paste -sd, -
}

# Calls the caller's fail() for each LO=CHANNELS whose class took other channels; where all held,
# prints "ok: LABEL: " and every class seen. Returns 1 where one did not hold.
stats_expect() {  # OUTPUT LABEL LO=CHANNELS...
  local out=$1 label=$2 want lo ch got ok=0
  shift 2
  for want in "$@"; do
    lo=${want%%=*} ch=${want#*=}
    got=$(stats_class "$out" "$lo")
    [ "$got" = "$ch" ] || { fail "$label: messages of $lo.. bytes took '${got:-nothing}', expected '$ch'"; ok=1; }
  done
  [ $ok -eq 0 ] && echo "ok: $label: $(grep -o 'stats: sizes [0-9]*\.\.[0-9]*: [a-z,-]*' <<<"$out" | sort -u |
    sed 's/stats: sizes //' | paste -sd';' -)"
  return $ok
}
