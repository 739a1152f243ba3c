#!/bin/sh
# scripts/fit-layers-model.sh: fits the layers-and-gradients model of
# communication time that ddlprof-recommend(1) uses (MODEL and THE LAYERS
# AND GRADIENTS MODEL there) from a sweep of examples/ddlsynth on the CPU
# emulation, profiled by ddlprof:
#
#     t_comm = alpha * sum(steps) + beta * sum(factor * bytes / bandwidth)
#
# per iteration, where every gradient bucket (one per layer here) is one
# collective: a ring all-reduce of n ranks costs 2(n-1) steps and moves
# 2(n-1)/n of its bytes; reduce-scatter and all-gather cost n-1 steps and
# (n-1)/n each. The first sum is alpha's feature (latency: layers x steps),
# the second beta's (the ideal transfer time, which ddlsynth's --plan-json
# gives as transfer_s). t_comm is what ddlprof-report measured: the
# interconnect and network stall per iteration, with overlap off.
#
# The sweep: layers x parameters per layer x placements (one host, two
# hosts flat and hierarchical, four hosts) x network bandwidths. Alpha and
# beta come from least squares without intercept; the script prints every
# run, the coefficients, the fit's RMSE and relative errors, and writes
# $OUT/fit.json: {"model": {"alpha_s", "beta", ...}}, which can be pasted
# into a catalog as its "model" or given as --alpha/--beta.
#
#   scripts/fit-layers-model.sh             the sweep (about 48 runs)
#   QUICK=1 scripts/fit-layers-model.sh     a smaller sweep (12 runs)
#   scripts/fit-layers-model.sh --self-test the fit on synthetic data with
#                                           known coefficients
# B=DIR picks the build directory (build), OUT=DIR the output (B/fit-layers).
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
OUT=${OUT:-$B/fit-layers}
QUICK=${QUICK:-0}

command -v python3 >/dev/null || { echo "fit-layers-model: needs python3" >&2; exit 2; }

# The fit, shared by the sweep and the self-test: fit OUT.json RUNS, where
# RUNS lists one DIR a line, each DIR.plan.json and DIR.report.json of one
# run; or fit --synthetic, which makes its own runs from known
# coefficients and checks they come back.
fit() {
python3 - "$@" <<'EOF'
import json, math, random, sys

def steps_and_ideal(plan):
    """alpha's and beta's features of one iteration, from ddlsynth's plan."""
    it = plan["per_iteration"]
    steps = 0.0
    for c in it["collectives"]:
        n = c["comm_size"]
        if n > 1:
            steps += 2 * (n - 1) if c["op"] == "all_reduce" else (n - 1)
    return steps, it["intra_s"] + it["inter_s"]

def measured_comm(rep):
    """Interconnect and network stall per iteration, as the report measured it."""
    job = rep["job"]
    per = job.get("per_iteration")
    if isinstance(per, dict) and "interconnect_stall_s" in per:
        return per["interconnect_stall_s"] + per["network_stall_s"] + (per.get("overlap_s") or 0)
    parts = [r["breakdown_s"] for r in rep.get("ranks", []) if isinstance(r.get("breakdown_s"), dict)]
    if parts:
        return sum(p["interconnect_stall"] + p["network_stall"] for p in parts) / len(parts)
    pct = job["breakdown_pct"]
    return (pct["interconnect_stall"] + pct["network_stall"]) / 100 * job["iteration_mean_s"]

def lstsq(rows):
    """y = a*x1 + b*x2 by least squares, no intercept."""
    s11 = sum(x1 * x1 for x1, x2, y in rows)
    s12 = sum(x1 * x2 for x1, x2, y in rows)
    s22 = sum(x2 * x2 for x1, x2, y in rows)
    s1y = sum(x1 * y for x1, x2, y in rows)
    s2y = sum(x2 * y for x1, x2, y in rows)
    det = s11 * s22 - s12 * s12
    if abs(det) < 1e-30:
        sys.exit("fit-layers-model: the sweep cannot separate alpha from beta")
    return (s1y * s22 - s2y * s12) / det, (s2y * s11 - s1y * s12) / det

def report(rows, labels):
    a, b = lstsq(rows)
    res = [y - (a * x1 + b * x2) for x1, x2, y in rows]
    rmse = math.sqrt(sum(r * r for r in res) / len(res))
    rel = [abs(r) / y for r, (x1, x2, y) in zip(res, rows) if y > 0]
    ybar = sum(y for _, _, y in rows) / len(rows)
    sst = sum((y - ybar) ** 2 for _, _, y in rows)
    r2 = 1 - sum(r * r for r in res) / sst if sst > 0 else 1.0
    print("%-44s %10s %10s %10s %8s" % ("run", "steps", "ideal_s", "comm_s", "err%"))
    for (x1, x2, y), l in zip(rows, labels):
        p = a * x1 + b * x2
        print("%-44s %10.0f %10.5f %10.5f %8.1f" % (l, x1, x2, y, 100 * (p - y) / y if y > 0 else 0))
    out = {"alpha_s": a, "beta": b, "runs": len(rows), "rmse_s": rmse, "r2": r2,
           "mean_abs_rel_error": sum(rel) / len(rel) if rel else 0,
           "max_abs_rel_error": max(rel) if rel else 0,
           "form": "t_comm = alpha * steps + beta * ideal transfer time"}
    print("alpha = %.4g s per collective per ring step, beta = %.4f" % (a, b))
    print("RMSE %.4g s, R^2 %.4f, mean |error| %.1f%%, max |error| %.1f%% over %d runs" %
          (rmse, r2, 100 * out["mean_abs_rel_error"], 100 * out["max_abs_rel_error"], len(rows)))
    print("use: ddlprof-recommend --alpha %.4g --beta %.4f ..." % (a, b))
    return out

if sys.argv[1:] == ["--synthetic"]:
    rng = random.Random(7)
    rows, labels = [], []
    for layers in (2, 8, 32):
        for params in (16384, 131072):
            for n, per_host in ((4, 4), (4, 2), (4, 1)):
                for gbps in (1.0, 4.0):
                    s = layers * params * 4
                    steps = layers * 2 * (n - 1)
                    ideal = 2 * (n - 1) / n * s / (gbps * 1e9 / 8)
                    y = (2e-4 * steps + 1.25 * ideal) * (1 + rng.uniform(-0.03, 0.03))
                    rows.append((steps, ideal, y))
                    labels.append("L%d P%d n%d/%d %gG" % (layers, params, n, per_host, gbps))
    out = report(rows, labels)
    ok = abs(out["alpha_s"] - 2e-4) < 0.1 * 2e-4 and abs(out["beta"] - 1.25) < 0.05
    print("self-test:", "coefficients recovered" if ok else "FAILED")
    sys.exit(0 if ok else 1)

rows, labels = [], []
for line in open(sys.argv[2]):
    d = line.strip()
    if not d:
        continue
    plan = json.load(open(d + ".plan.json"))
    rep = json.load(open(d + ".report.json"))
    x1, x2 = steps_and_ideal(plan)
    rows.append((x1, x2, measured_comm(rep)))
    c = plan["config"]
    labels.append("L%d P%d n%d/%d %s %gG" % (c["layers"], c["params_per_layer"], c["ranks"],
                                             c["ranks_per_host"], c["allreduce"][:4], c["net_gbps"]))
if len(rows) < 3:
    sys.exit("fit-layers-model: fewer than 3 runs to fit")
out = report(rows, labels)
out["fitted_from"] = "scripts/fit-layers-model.sh: ddlsynth on the CPU emulation"
json.dump({"model": out}, open(sys.argv[1], "w"), indent=2)
print("wrote", sys.argv[1])
EOF
}

if [ "${1:-}" = "--self-test" ]; then
	fit --synthetic
	exit
fi

for f in "$B/bin/ddlprof" "$B/bin/ddlprof-report" "$B/examples/ddlsynth"; do
	[ -x "$f" ] || { echo "fit-layers-model: $f is not built (make B=$B)" >&2; exit 2; }
done
rm -rf "$OUT"
mkdir -p "$OUT"

if [ "$QUICK" = 1 ]; then
	LAYERS="2 16"; PARAMS="16384 131072"; NETS="2"
	PLACES="4:4:flat 4:2:flat 4:2:hierarchical"
else
	LAYERS="2 8 32"; PARAMS="16384 131072"; NETS="1 4"
	PLACES="4:4:flat 4:2:flat 4:2:hierarchical 4:1:flat"
fi
i=0
: >"$OUT/runs"
for place in $PLACES; do
	ranks=${place%%:*}; rest=${place#*:}; rph=${rest%%:*}; algo=${rest#*:}
	for layers in $LAYERS; do
		for params in $PARAMS; do
			for net in $NETS; do
				i=$((i + 1))
				d="$OUT/r$i"
				printf 'run %d: %s ranks, %s per host, %s, %s layers of %s, %s Gbit/s\n' \
					"$i" "$ranks" "$rph" "$algo" "$layers" "$params" "$net"
				# one bucket per layer (a bucket smaller than any layer), no overlap
				"$B/bin/ddlprof" -q -o "$d" -- "$B/examples/ddlsynth" -q --ranks "$ranks" \
					--ranks-per-host "$rph" --allreduce "$algo" --layers "$layers" \
					--params-per-layer "$params" --compute-ms 1 --bucket-mb 0.000001 \
					--overlap off --iterations 10 --warmup 3 --markers --intra-gbps 8 \
					--net-gbps "$net" --plan-json "$d.plan.json"
				"$B/bin/ddlprof-report" --json "$d" >"$d.report.json"
				echo "$d" >>"$OUT/runs"
			done
		done
	done
done
fit "$OUT/fit.json" "$OUT/runs"
