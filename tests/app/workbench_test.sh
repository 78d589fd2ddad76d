#!/usr/bin/env bash
# Integration test of the workbench's headless screenshot mode against a database written by a
# real short run: the picture is not blank, and the plot area holds the first run's curve colour
# (Tableau blue 31,119,180), which it does not without the run. A second run with a scheduled kill
# (docs/faults.md): with the mouse on the kill's step its marker and hover text show in the fault
# red (214,39,40), which the run without faults does not have there. The PNG is read by an
# independent decoder (png_colour.py). Seven runs of three replicas plot as seven lines with seven
# legend rows, and History sorts them by final loss. Every experiment file opens in the layout editor.
# Usage: workbench_test.sh PATH_TO_THINWIRE PATH_TO_WORKBENCH [CASE...] (curve, faults, seven,
# editor; all of them when none is named)
here="$(dirname "$0")"
source "$here/harness.sh"
wb="$2"
shift 2
command -v xvfb-run >/dev/null || fail "xvfb-run is missing (Debian package xvfb; scripts/setup.sh installs it)"

micro_corpus "$work/corpus"
# Run 1 (DDP, 2 replicas), which the screenshots of the curve, the faults and the editor open; made once.
first_run() {
  [ -z "${first_run_done:-}" ] || return 0
  "$tw" --db "$work/runs.db" run /dev/null --data-root "$work" --set data.corpus="$work/corpus" --set data.cache_dir="$work/cache" \
    --set data.vocab_size=200 --set model.d_model=32 --set model.n_layer=2 --set model.n_head=2 \
    --set model.seq_len=32 --set train.batch_size=4 --set train.warmup_steps=2 --set train.steps=40 \
    --set train.eval_every=10 --set outer.algorithm=ddp --set outer.replicas=2 >/dev/null
  first_run_done=1
}

shot() {  # shot OUT.png [--open 1]: prints "x0 y0 x1 y1" of the plot area (1.5 s lets the background run cache load on a busy machine)
  xvfb-run -a -s "-screen 0 1280x800x24" "$wb" --db "$work/runs.db" --screenshot "$1" --frames 5 --wait-s 1.5 \
    --width 1280 --height 800 "${@:2}" | awk '$1 == "screenshot" {print $5, $6, $7, $8}'
}

case_curve() {
first_run
rect="$(shot "$work/with.png" --open 1)"
[ -n "$rect" ] || fail "no screenshot line"
[ -s "$work/with.png" ] || fail "no PNG written"
blue="$($py "$here/png_colour.py" "$work/with.png" $rect 31 119 180)"
[ "$blue" -ge 100 ] || fail "the plot area has only $blue pixels of the run's colour"
rect0="$(shot "$work/without.png")"
blue0="$($py "$here/png_colour.py" "$work/without.png" $rect0 31 119 180)"
[ "$blue0" -lt 10 ] || fail "without the run the plot area still has $blue0 pixels of its colour"
echo "$blue curve pixels with the run, $blue0 without"
}

case_faults() {
first_run
# Run 2: DiLoCo on 3 replicas, replica 1 killed after step 15 and back after the round at 30. On the
# step axis steps 1..40 span 39 steps and auto-fit pads 3% of that on each side (ui/logic/plot_fit.h):
# the axis runs from 1 - 1.17 to 40 + 1.17, so step 15 is at the fraction (14 + 1.17) / 41.34 = 0.367.
"$tw" --db "$work/runs.db" run /dev/null --data-root "$work" --set data.corpus="$work/corpus" --set data.cache_dir="$work/cache" \
  --set data.vocab_size=200 --set model.d_model=32 --set model.n_layer=2 --set model.n_head=2 \
  --set model.seq_len=32 --set train.batch_size=4 --set train.warmup_steps=2 --set train.steps=40 \
  --set train.eval_every=10 --set outer.algorithm=diloco --set outer.replicas=3 --set outer.inner_steps=10 \
  --set 'faults.events=["kill 1 at 15 rejoin 25"]' >/dev/null
rect2="$(shot "$work/faults.png" --open 2 --hover 0.367,0.5)"
red="$($py "$here/png_colour.py" "$work/faults.png" $rect2 214 39 40)"
[ "$red" -ge 100 ] || fail "the kill's marker has only $red pixels of the fault red"
rect1="$(shot "$work/nofaults.png" --open 1 --hover 0.367,0.5)"
red1="$($py "$here/png_colour.py" "$work/nofaults.png" $rect1 214 39 40)"
[ "$red1" -lt 10 ] || fail "the run without faults has $red1 pixels of the fault red"
echo "$red fault-marker pixels, $red1 without faults"
}

case_seven() {
# Seven runs compared: one legend row per run (not one per replica), each run's line in
# its palette colour, and History sorted by final validation loss in the order the store gives.
db7="$work/seven.db"
for i in 1 2 3 4 5 6 7; do
  "$tw" --db "$db7" run /dev/null --data-root "$work" --set data.corpus="$work/corpus" --set data.cache_dir="$work/cache" \
    --set data.vocab_size=200 --set model.d_model=32 --set model.n_layer=2 --set model.n_head=2 \
    --set model.seq_len=32 --set train.batch_size=4 --set train.warmup_steps=2 --set train.steps=30 \
    --set train.eval_every=10 --set outer.algorithm=diloco --set outer.inner_steps=5 --set outer.replicas=3 \
    --set train.lr="0.00$i" --set run.name="seven-$i" >/dev/null || fail "run $i of seven failed"
done
out="$(xvfb-run -a -s "-screen 0 1280x800x24" "$wb" --db "$db7" --screenshot "$work/seven.png" --frames 5 --wait-s 1.5 \
         --width 1280 --height 800 --open 1 --open 2 --open 3 --open 4 --open 5 --open 6 --open 7)"
rect7="$(awk '$1 == "screenshot" {print $5, $6, $7, $8}' <<<"$out")"
grep -q "legend rows 7$" <<<"$out" || fail "seven runs of three replicas: not one legend row per run: $out"
palette=("31 119 180" "255 127 14" "44 160 44" "214 39 40" "148 103 189" "140 86 75" "227 119 194")
for c in "${palette[@]}"; do
  n="$($py "$here/png_colour.py" "$work/seven.png" $rect7 $c 40)"
  [ "$n" -ge 100 ] || fail "the run coloured ($c) has only $n pixels in the plot"
done
out="$(xvfb-run -a -s "-screen 0 1280x800x24" "$wb" --db "$db7" --screenshot "$work/table.png" --frames 5 --wait-s 1.5 \
         --width 1280 --height 800 --tab History --history-sort "val loss")"
order="$(awk '$1 == "history" {$1 = $2 = ""; print}' <<<"$out" | xargs)"
want="$("$tw" --db "$db7" runs list | awk '$1 ~ /^[0-9]+$/ {print $7, $1}' | sort -g | awk '{print $2}' | xargs)"
[ -n "$order" ] && [ "$order" = "$want" ] || fail "History sorted by val loss shows '$order', the store's order is '$want'"
}

case_editor() {
first_run
# Every experiment file opens in the layout editor (variants, sweeps, reports, SkipPipe, HDEE):
# the workbench refuses to start on a layout it cannot load, naming the file and the key.
n=0
for f in "$here"/../../experiments/*.toml; do
  out="$(xvfb-run -a -s "-screen 0 1280x800x24" "$wb" --db "$work/runs.db" --layout "$f" --screenshot "$work/layout.png" \
           --frames 2 --width 1280 --height 800 2>&1)" || fail "the editor did not open $f: $out"
  n=$((n + 1))
done
[ "$n" -ge 10 ] || fail "only $n experiment files found"
echo "$n experiment files open in the editor"
}

run_cases "$@"
echo "workbench_test: ok (${ran_cases[*]})"
