#!/usr/bin/env bash
# Integration test of `thinwire report`: two short runs (DDP and DiLoCo variants of one micro
# layout, so they share a group), then the report by ids and by group: report.md names both runs and
# the setting that differs, both PNGs hold each run's series colour (Tableau blue 31,119,180 and
# orange 255,127,14, read by the independent decoder png_colour.py) and a one-run report has no
# orange; an unknown id and an empty group fail naming them; an existing report.md is refused
# unless --force. Usage: report_test.sh PATH_TO_THINWIRE png|nopng
# ("nopng": a build without ImGui, where the report says the plots need it).
here="$(dirname "$0")"
source "$here/harness.sh"
plots="${2:-png}"

micro_corpus "$work/corpus"
{ printf '[run]\nname = "rep"\n'
  micro_tables "" "data.corpus=\"$work/corpus\"" "data.cache_dir=\"$work/cache\"" train.eval_every=5
  cat <<TOML
[outer]
replicas = 2
inner_steps = 5
[network]
profile = "home-20m"
[variants]
ddp = ["outer.algorithm=ddp"]
diloco = ["outer.algorithm=diloco"]
TOML
} > "$work/micro.toml"
"$tw" --db "$db" run "$work/micro.toml" --data-root "$work" >/dev/null || fail "the two runs did not finish"
list="$("$tw" --db "$db" runs list)"
ddp="$(awk '$2 ~ /ddp/ {print $1}' <<<"$list")"
diloco="$(awk '$2 ~ /diloco/ {print $1}' <<<"$list")"
group="$(awk -v id="$ddp" '$1 == id {print $(NF-1)}' <<<"$list")"
[ -n "$ddp" ] && [ -n "$diloco" ] || fail "runs not found: $list"
[ -n "$group" ] && [ "$group" != "-" ] || fail "the variants have no group: $list"

# By ids.
out="$work/rep"
"$tw" --db "$db" report "$ddp" "$diloco" --out "$out" >"$work/report.log" || fail "report failed: $(cat "$work/report.log")"
md="$out/report.md"
[ -s "$md" ] || fail "no report.md"
grep -q "run $ddp " "$md" && grep -q "run $diloco " "$md" || fail "report.md does not name both runs"
grep -q '^| `outer.algorithm` | ddp | diloco |$' "$md" || fail "no settings row for outer.algorithm: $(grep -n algorithm "$md")"
grep -q '^| id | '"$ddp"' | '"$diloco"' |$' "$md" || fail "no id row"
# The summary has a finite final val loss and non-zero bytes for both runs.
[ "$(grep -cE '^\| run [0-9]+ rep[^|]*\| [0-9]+\.[0-9]{4} \(step 20\) \| [1-9][0-9,]* \|' "$md")" -eq 2 ] \
  || fail "summary rows lack val loss or bytes: $(grep -n '^| run' "$md")"

colour_left() {  # colour_left PNG R G B: pixels of that colour left of the legend (x < 600)
  $py "$here/png_colour.py" "$1" 0 0 600 540 "$2" "$3" "$4"
}
if [ "$plots" = png ]; then
  for png in loss_vs_bytes.png loss_vs_sim_time.png; do
    [ -s "$out/$png" ] || fail "no $png"
    grep -q "]($png)" "$md" || fail "report.md does not embed $png"
    blue="$(colour_left "$out/$png" 31 119 180)"
    orange="$(colour_left "$out/$png" 255 127 14)"
    [ "$blue" -ge 20 ] || fail "$png: only $blue pixels of the DDP run's colour"
    [ "$orange" -ge 20 ] || fail "$png: only $orange pixels of the DiLoCo run's colour"
  done
else
  grep -q "without ImGui" "$md" || fail "a build without ImGui must say why there are no plots"
fi

# By group: the same two runs; a report of one run has no second colour.
"$tw" --db "$db" report --group "$group" --out "$work/grp" >/dev/null || fail "report --group failed"
grep -q "run $ddp " "$work/grp/report.md" && grep -q "run $diloco " "$work/grp/report.md" \
  || fail "the group's report does not name both runs"
"$tw" --db "$db" report "$ddp" --out "$work/one" >/dev/null || fail "a one-run report failed"
if [ "$plots" = png ]; then
  [ "$(colour_left "$work/one/loss_vs_bytes.png" 255 127 14)" -lt 5 ] || fail "a one-run report has a second run's colour"
  [ "$(colour_left "$work/one/loss_vs_bytes.png" 31 119 180)" -ge 20 ] || fail "a one-run report lacks its run's colour"
fi

# Bad input: named in the error, non-zero exit, nothing written.
if err="$("$tw" --db "$db" report 98765 --out "$work/bad" 2>&1)"; then fail "an unknown id succeeded"; fi
grep -q 98765 <<<"$err" || fail "the error does not name the unknown id: $err"
[ ! -e "$work/bad" ] || fail "an unknown id still wrote $work/bad"
if err="$("$tw" --db "$db" report --group no-such-group 2>&1)"; then fail "an empty group succeeded"; fi
grep -q no-such-group <<<"$err" || fail "the error does not name the group: $err"

# An existing report.md is refused (and kept), unless --force.
before="$(md5sum < "$md")"
if err="$("$tw" --db "$db" report "$ddp" "$diloco" --out "$out" 2>&1)"; then fail "an existing report.md was overwritten"; fi
grep -q "$md" <<<"$err" && grep -q -- --force <<<"$err" || fail "the refusal does not name the file and --force: $err"
[ "$(md5sum < "$md")" = "$before" ] || fail "the refused report changed report.md"
"$tw" --db "$db" report "$diloco" --out "$out" --force >/dev/null || fail "--force did not overwrite"
grep -q "run $ddp " "$md" && fail "--force left the old report.md"
echo "report_test: ok (runs $ddp and $diloco, group $group)"
