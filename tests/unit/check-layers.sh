#!/usr/bin/env bash
# Fails if a file in src/ includes a layer that is not to its left (ARCHITECTURE.md §9):
#   base <- {topo, mem} <- channel/<name> <- sched <- {engine, coll} <- interpose
# Siblings ({topo, mem}, {engine, coll}) and two different channels may not include each other.
set -u
src=${1:?usage: check-layers.sh SRC_DIR}
rank() {
  case $1 in
    base) echo 0 ;; topo|mem) echo 1 ;; channel) echo 2 ;; sched) echo 3 ;;
    engine|coll) echo 4 ;; interpose) echo 5 ;; *) echo -1 ;;
  esac
}
bad=0
while IFS= read -r f; do
  rel=${f#"$src"/}
  layer=${rel%%/*}
  chan=""
  [ "$layer" = channel ] && { chan=${rel#channel/}; chan=${chan%%/*}; }
  while IFS= read -r inc; do
    target=${inc%%/*}
    [ "$target" = "$inc" ] && continue
    r=$(rank "$target"); mine=$(rank "$layer")
    [ "$r" -lt 0 ] && continue
    if [ "$target" = "$layer" ]; then
      if [ "$layer" = channel ]; then
        other=${inc#channel/}; other=${other%%/*}
        if [ "$other" != "$chan" ]; then echo "$rel includes another channel: $inc"; bad=1; fi
      fi
      continue
    fi
    if [ "$r" -ge "$mine" ]; then echo "$rel ($layer) includes $inc ($target): not to its left"; bad=1; fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done < <(find "$src" -name '*.cc' -o -name '*.hpp' -o -name '*.h')
[ $bad -eq 0 ] && echo "layers OK"
exit $bad
