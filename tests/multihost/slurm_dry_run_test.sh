#!/usr/bin/env bash
# scripts/launch/slurm_nodes.sbatch without Slurm: --dry-run prints the job's commands (the
# coordinator's keys, the srun node step, each task's keys and node, the layout's [cluster] table,
# thinwire run with the options after --) and starts nothing; bad arguments are clear errors, and
# outside a job without --dry-run the script refuses to run. Needs no root and no Slurm.
# Usage: slurm_dry_run_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/../app/harness.sh"
script="$(cd "$(dirname "$0")/../../scripts/launch" && pwd)/slurm_nodes.sbatch"
cd "$work"
printf '[train]\nsteps = 20\n[cluster]\nmode = "threads"\n[variants]\na = ["train.steps=10"]\n' > exp.toml

env -u SLURM_JOB_ID "$script" --dry-run --nodes 3 --thinwire "$tw" --port 7000 --data-root data exp.toml \
  -- --set run.name=dry > out.txt 2> err.txt || fail "dry run failed: $(cat err.txt)"
grep -q "^srun --ntasks=3 .* --node-task $work/thinwire-job-JOBID $tw 7000 $work/data " out.txt \
  || fail "no srun node step with 3 tasks: $(cat out.txt)"
[ "$(grep -c "keys new \"\$KEYS/node\"" out.txt)" -eq 3 ] || fail "not three tasks making their keys: $(cat out.txt)"
grep -q "$tw keys new \"\$COORD_TMP/coord\"" out.txt || fail "no coordinator key pair: $(cat out.txt)"
grep -q "^#   mode = \"remote\"" out.txt && grep -q "PUBLIC_KEY_OF_TASK_2" out.txt || fail "no [cluster] table: $(cat out.txt)"
grep -q "^$tw --db $work/thinwire.db run $work/thinwire-job-JOBID/layout.toml --data-root $work/data --set run.name=dry$" out.txt \
  || fail "no thinwire run line: $(cat out.txt)"
[ ! -e thinwire-job-JOBID ] && [ ! -e data ] || fail "the dry run made files"

# With an existing coordinator key pair only its public key is copied.
"$tw" keys new keys/coord > /dev/null
"$script" --dry-run --coord-keys keys/coord exp.toml > out2.txt || fail "dry run with --coord-keys failed"
grep -q "^cp $work/keys/coord/public.key $work/thinwire-job-JOBID/coord.pub$" out2.txt || fail "the public key is not copied: $(cat out2.txt)"
grep -q "coordinator_key = \"$work/keys/coord/secret.key\"" out2.txt || fail "the layout does not name the secret key: $(cat out2.txt)"
! grep -q "keys new \"\$COORD_TMP" out2.txt || fail "a fresh coordinator key despite --coord-keys"

expect_error() {  # $1 = message part; the rest: arguments
  local want="$1" rc; shift
  set +e; env -u SLURM_JOB_ID "$script" "$@" > /dev/null 2> err.txt; rc=$?; set -e
  [ "$rc" -eq 1 ] || fail "'$*' exited $rc, not 1"
  grep -qF -- "$want" err.txt || fail "'$*' did not say '$want': $(cat err.txt)"
}
expect_error "not inside a Slurm job" exp.toml
expect_error "no LAYOUT given" --dry-run
expect_error "cannot read layout 'nope.toml'" --dry-run nope.toml
expect_error "one LAYOUT only" --dry-run exp.toml other.toml
expect_error "--nodes: '0' is not a positive number" --dry-run --nodes 0 exp.toml
expect_error "--port: '70000' is not a port" --dry-run --port 70000 exp.toml
expect_error "--coord-keys: no secret.key and public.key" --dry-run --coord-keys nokeys exp.toml
expect_error "unknown option '--bogus'" --dry-run --bogus exp.toml
expect_error "--wait needs a value" --dry-run exp.toml --wait
echo "slurm_dry_run_test: OK"
