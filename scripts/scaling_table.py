#!/usr/bin/python3
"""The DiLoCo scaling table in small (experiments/diloco_scaling.toml, issue 18) from a run store.

Usage: /usr/bin/python3 scripts/scaling_table.py RUNS.db [GROUP]

GROUP is the layout's name (default "diloco_scaling"), meaning its latest launch, or a stored group
("diloco_scaling@1795463535"). Every point (a variant: data parallel, or DiLoCo with M replicas at
one outer learning rate) is summarised over its seeds: the final validation loss (each run's last
val.loss) as mean ± sample standard deviation, and its range. Per M the outer learning rate with the
lowest mean is chosen, as the paper tunes per setting. A gap to data parallel counts only when it is
larger than the two standard deviations together."""
import re
import sqlite3
import statistics as st
import sys

PAPER = {"dp": 3.485, 1: 3.482, 2: 3.508, 4: 3.554, 8: 3.621}  # arXiv 2503.09799, Table 4, 35M, 20N tokens


def main():
    db = sqlite3.connect(sys.argv[1])
    group = sys.argv[2] if len(sys.argv) > 2 else "diloco_scaling"
    groups = [g for (g,) in db.execute("select group_name from runs order by id")]
    if group not in groups:
        launches = [g for g in groups if g.startswith(group + "@")]
        if not launches:
            sys.exit(f"no runs in group {group}")
        group = launches[-1]
    points = {}  # variant name → [(seed, last val loss, steps)]
    for rid, name, seed, status in db.execute(
            "select id, name, seed, status from runs where group_name = ? order by id", (group,)):
        if status != "finished":
            print(f"note: run {rid} {name} seed {seed} is {status}, left out", file=sys.stderr)
            continue
        val = db.execute("select value from metrics where run_id = ? and name = 'val.loss' "
                         "order by step desc limit 1", (rid,)).fetchone()
        steps = db.execute("select max(step) from metrics where run_id = ? and name = 'train.loss'", (rid,)).fetchone()
        if val:
            points.setdefault(name.split("-", 1)[-1], []).append((seed, val[0], steps[0]))

    def summary(rows):
        v = [r[1] for r in rows]
        sd = st.stdev(v) if len(v) > 1 else 0.0
        return st.mean(v), sd, min(v), max(v), len(v)

    print(f"group {group}\n")
    print("| point | seeds | steps | final val loss (mean ± sd) | min – max |")
    print("|---|---|---:|---:|---:|")
    for name in sorted(points):
        m, sd, lo, hi, n = summary(points[name])
        seeds = ", ".join(str(r[0]) for r in points[name])
        print(f"| {name} | {seeds} | {points[name][0][2]} | {m:.4f} ± {sd:.4f} | {lo:.4f} – {hi:.4f} |")

    dp = next((summary(rows) for name, rows in points.items() if name.endswith("dp")), None)
    best = {}  # M → (mean, sd, n, lr)
    for name, rows in points.items():
        match = re.search(r"_m(\d+)_lr([0-9.]+)$", name)
        if not match:
            continue
        m_rep, lr = int(match.group(1)), match.group(2)
        mean, sd, _, _, n = summary(rows)
        if m_rep not in best or mean < best[m_rep][0]:
            best[m_rep] = (mean, sd, n, lr)
    print("\n| setting | paper (35M, 20N tokens) | here (micro, 0.28M, 20N tokens): mean ± sd (n) | outer lr chosen "
          "| against data parallel, here | paper |")
    print("|---|---:|---:|---:|---:|---:|")
    if dp:
        print(f"| data parallel | {PAPER['dp']:.3f} | {dp[0]:.4f} ± {dp[1]:.4f} ({dp[4]}) | — | — | — |")
    for m_rep in sorted(best):
        mean, sd, n, lr = best[m_rep]
        against = "—"
        if dp:
            verdict = "beyond the spread" if abs(mean - dp[0]) > sd + dp[1] else "within the spread"
            against = f"{mean - dp[0]:+.4f} ({verdict})"
        paper = PAPER.get(m_rep)
        paper_gap = f"{paper - PAPER['dp']:+.3f}" if paper else "—"
        print(f"| DiLoCo M = {m_rep} | {paper:.3f} | {mean:.4f} ± {sd:.4f} ({n}) | {lr} | {against} | {paper_gap} |")


if __name__ == "__main__":
    main()
