"""Generate notebooks/07-guide-audit.ipynb, then execute it and keep only the checked outputs.

Usage:  .venv/bin/python scripts/notebooks/07_guide_audit.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtool import build, code, exercise, md, nav, objectives, parameters

from k3lib.studies import parallel
from k3lib.views import tables
from k3lib.views.citations import guide_quote, guide_source

STEM = "07-guide-audit"


def quote(*claim_ids: str) -> str:
    """A guide's words with its title and section (the audit link is this notebook itself)."""
    return guide_quote(*claim_ids).rsplit("\nWhat holds", 1)[0]


# ---- the figures the prose and the exercises state, computed by the functions the cells call
LADDER = tables.precision_ladder_table("kimi-k3@guide-000").set_index("precision")
LADDER_REAL = tables.precision_ladder_table("kimi-k3").set_index("precision")
WEIGHTS = tables.guide_weights_comparison()
G000_BF16 = WEIGHTS.iloc[0]  # guide 000: "BF16 weights ~594 GB"
G004_FP16 = WEIGHTS.iloc[2]  # guide 004: the FP16 row
REAL_BF16 = WEIGHTS.iloc[4]  # the real config, all BF16
REFERENCE = tables.reference_table().set_index("weights")
IMPLIED = parallel.guide000_implied_table().set_index("case")
LEFT = "left for activation + overhead (GiB)"
CASE1_LEFT = float(IMPLIED.loc["fix 2: Q8 weights", LEFT])  # 78.8 − 56.3 − 16 = 6.5
CASE2_LEFT = float(IMPLIED.loc["5× H100, Q4, 128K, FP8 KV", LEFT])  # 77.2 − 65 − 3.2 = 9.0
ACT_GIB, OVH_GIB = parallel.solve_activation_overhead([(8, CASE1_LEFT), (5, CASE2_LEFT)])
ROWS_512K = [("bf16", "bf16"), ("bf16", "fp8")]
COUNTS_512K = parallel.gpu_count_table(
    model="kimi-k3@guide-000", gpu="h100", context="512K", whole_nodes=False, rows=ROWS_512K
)
GPUS_512K = [int(n) for n in COUNTS_512K["minimum GPUs"]]

cells = [
    md(f"""
# 07 · What the two guides claim, and what holds

**The question:** of the numbers in the two guides readers arrive from, which follow from the guide's own inputs, and which hold for the real K3 — its real architecture and the files you can actually download?

{nav(STEM)}

Guide 000 ("Kimi K3 VRAM Requirements") and guide 004 ("How to Deploy Kimi K3 Locally") disagree by about 10× on K3's weights and KV cache.
Every numeric claim of both guides is a row of `data/guide_claims.csv`; `k3lib.guides.audit` checks each one with code, on every run, and asks **two questions** of it:

* **own inputs** — does the figure follow from what the guide itself states? (`stated input` where the figure *is* one of those inputs);
* **real K3** — does it hold for the real architecture (`kimi-k3`), the published checkpoint and GGUF files (`data/measured/kimi-k3-published.csv`), and GPU counts in whole 8-GPU nodes?

Each answer is a comparison with a stated tolerance (the digits written, ±5 % where the guide writes "~", exact for counts): **holds** or **contradicted**; **not checkable** where only a measurement could settle it.
Notation as in [00](00-vram-anatomy.ipynb): $W$ weights, $T$ tokens, $kv_{{tok}}$ KV bytes per token, $A$ activation, $O$ overhead, $G$ GPUs; GiB = 2^30 bytes, GB = 10^9 bytes.

The lessons 00–05 teach on real models and only quote the guides; the arithmetic about the guides — their hidden inputs, their lost tables — lives here.
The two texts: {guide_source("guide-000")}, and {guide_source("guide-004")}.
"""),
    objectives(
        [
            "Read each claim's two verdicts — against the guide's own inputs, and for the real K3 — and the tolerance behind each.",
            "Recover a guide's hidden inputs from its published figures: the bits per weight its sizes imply, the activation and overhead its per-GPU totals need.",
            "Rebuild guide 000's lost tables (the precision budget, the reference table, the GPU counts) from the rules its text keeps.",
            "Replace each contradicted figure with the real K3 value to plan with.",
        ],
        minutes=45,
    ),
    code("""
from k3lib.views import guide_audit as audit
from k3lib.views import charts_audit, notebook
from k3lib.views import charts, tables
from k3lib.studies import parallel
from k3lib.views.table_format import reader_table  # tables for a reader: no index, separators, "—", no e+
notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

They set where the claims filter starts and the unit of the "use instead" table.
"""),
    parameters("""
guide: str = "all"  # claims of which guide: all, guide-000, guide-004
verdict: str = "contradicted"  # the filter's verdict: all, holds, contradicted, stated input, not checkable
column: str = "either"  # which question the filter reads: either, own, real
unit: str = "GB"  # unit of the "use instead" table: GB (10^9 B) or GiB (2^30 B)
"""),
    code("""
# NBVAL_CHECK_OUTPUT
cfg = audit.validate_parameters(guide=guide, verdict=verdict, column=column, unit=unit)
reader_table({"guide": cfg.guide, "verdict": cfg.verdict, "column": cfg.column, "unit": cfg.unit},
             columns=("parameter", "value"))
"""),
    md("""
## The summary: two questions, two columns

Claims per verdict, for each guide and in all — against the guide's own inputs, and for the real K3:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
table = audit.audit_table()
counts = audit.verdict_counts(table)
reader_table(counts)
"""),
    code("""
charts_audit.verdict_bars(table)
"""),
    md("""
**Takeaway:** most of guide 000's arithmetic follows from its own inputs, but those inputs are not K3's, so most of its figures fail for the real model; guide 004's inputs are near K3 (its weights cells are the published GGUF files), but its totals do not follow from its own weights column.
"""),
    md("""
## The contradictions that matter to a deployer

These change what you buy or what you load: weights, KV per token, GPU counts, and the totals that size a machine.
`own_value` follows from the guide's inputs; `real_value` is the same quantity for the real K3.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
deployer = audit.biggest_contradictions()
reader_table(deployer.drop(columns=["quote"]))
"""),
    md("""
Real K3 needs whole 8-GPU nodes (tensor parallelism inside a node, pipeline stages across nodes), from the shared planner `k3lib.studies.parallel.min_gpus`.
Compare the published deployments: vLLM's K3 recipe (vllm-project/recipes `models/moonshotai/Kimi-K3.yaml` @8959cf64) serves the native checkpoint on 16× H200 as TP8 × PP2 — the planner's count below — and asks for 32× H100, one node more than the planner's memory floor of 24; on H200 a plain TP8 runs out of memory (vllm-project/recipes #698).
The guide's own counts assume one pool of GPUs and its own inputs:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
gpus = audit.real_gpu_counts()
reader_table(gpus)
"""),
    md("""
## Every claim, behind a filter

The full table, once. It starts on the claims **contradicted** in either column; pick another guide, verdict or question and it updates in place (the callback is `audit.filter_claims`).
"""),
    code("""
audit.claims_explorer(table, guide=cfg.guide, verdict=cfg.verdict, column=cfg.column)
"""),
    md("""
How many rows the filter starts with:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
len(audit.filter_claims(table, cfg.guide, cfg.verdict, cfg.column))
"""),
    md(r"""
## The inputs behind the contradictions

### 1. 256 KB of KV cache per token is 9.5× what K3 caches

Guide 000: "At BF16, each token consumes approximately 256 KB of KV cache" (262,144 B).
K3 has 93 layers: 24 use multi-head latent attention (MLA) and cache one latent per token, 69 use Kimi Delta Attention (KDA) and keep a constant state per sequence.

$$kv_{tok} = L_{MLA}·(r_{kv} + d_{rope})·b = 24·(512 + 64)·2 = 27{,}648 \text{ B}$$
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(audit.kv_reconciliation())
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(audit.kv_cache_at_contexts(unit="GiB"))
"""),
    md("""
The guide is right that naive attention would cost several MB per token (93 layers × 96 heads × (192 + 128) × 2 B = 5.71 MB), and wrong that each GPU holds only its heads' share of the cache: the MLA latent has no head dimension, so under TP = 8 every GPU keeps all of it.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(audit.working("g000-extra-tp-kv-shard"), decimals=3)
"""),
    md(r"""
### 2. "The BF16 weights are ~594 GB" is a 1-bit file

$$W = P·\frac{\text{bits}}{8} = 2{,}779.5\text{B}·\frac{16}{8} = 5{,}559 \text{ GB} = 5{,}177 \text{ GiB}$$

594 GB in decimal GB is exactly unsloth's 1-bit UD-IQ1_S GGUF (594,040,923,616 B). The native checkpoint (MXFP4 routed experts, BF16 rest) is 1,453.7 GiB, and vLLM keeps the experts in MXFP4: nothing "unpacks to BF16 at load time".
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(audit.working("g000-weights-bf16"), decimals=3)
"""),
    md("""
The published K3 files (`data/measured/kimi-k3-published.csv`, each with its Hugging Face or GitHub source):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(audit.published_table(unit="GB").rename_axis("file"))
"""),
    md(r"""
### 3. "FP8 KV at 512K … enough to drop from 10 GPUs to 8"

On the guide's own numbers (6 GB of overhead per GPU, as in its worked example), BF16 weights need $594 + 128 + 10 + 6G \le 80G$, so 10 GPUs with a BF16 cache, and $594 + 64 + 10 + 6G \le 80G$, so still 10 with FP8: 64 GB is 0.8 of one GPU. With its 8 GB-per-GPU rule the count goes from 11 to 10.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(audit.working("g000-fp8kv-gpus-after"), decimals=3)
"""),
    md(r"""
### 4. Guide 004's weights column is the published GGUF files; its totals are not

The 1-, 2-, 4- and 8-bit weights cells are unsloth's UD-IQ1_M, UD-Q2_K_XL, UD-Q4_K_XL and UD-Q8_K_XL to the printed digit. The "8-bit" file is 4.49 bits per weight because the "lossless" UD-Q8_K_XL keeps the MXFP4 experts as they are. No Q4_K_M file of K3 exists, though the guide's `llama-server` line asks for one.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
gguf = audit.gguf_matches()
reader_table(gguf)
"""),
    code("""
charts_audit.bits_per_weight(gguf)
"""),
    md(r"""
The table states its rule, "Total = weights + KV cache (FP16) + 1GB runtime overhead":

$$M = W + \frac{27{,}648·T}{2^{30}} + 1$$

The estimated rows follow it; the 1-, 2-, 4- and 8-bit totals count an estimated rate × 2,738.1B parameters instead of their own weights cell:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(audit.g004_table_check())
"""),
    md("""
### 5. Offload mode on a unified-memory machine

Guide 004 prices 128 GB machines (Ryzen AI Max+ 395, DGX Spark, Macs) for an offload mode that needs 1,531 GB of system RAM; on those machines the unified pool *is* all the RAM there is, so the experts that do not fit stream from the SSD at every token: the Mac Studio 512 GB makes about 0.3 tokens/s, as [04](04-offload.ipynb) computes with the same function (`offload.unified_memory_estimate`).
The split itself is K3's routed experts at a uniform 4.5 bits, more than the whole published 4-bit file:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(audit.offload_split(unit="GB"))
"""),
    md("""
### 6. "Each GPU needs at least 8 GB of overhead"

Checked against measurements, not a rule: in the vLLM 0.19 H100 runs of `data/measured/vllm-0.19-h100-sweep.csv`, the memory outside weights and KV per GPU (capacity − weights − KV, the unused reserve included) spans this range, and 8 GB lies inside it:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(audit.working("g000-summary-overhead"), decimals=3)
"""),
    md("""
## Guide 000's arithmetic, rebuilt

The lessons quote guide 000 where it illustrates a point; this part works out what its figures assume.
Each section takes one passage, rebuilds the number from the guide's own inputs with the same `k3lib` functions the lessons use, and says which hidden input makes it come out.
All sizes here are the guide's, read as GiB (its KV formula divides by 1024^3).

### 7. The worked example: 415 GiB on 6 H100s
"""),
    md(quote("g000-worked-activation", "g000-worked-overhead")),
    md("""
Its sum is $M = W + KV + A + O$ = 325 + 32 + 10 + 48 with Q4 weights and an FP8 cache at 256K, term by term:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.worked_example_table(tables.guide_000_plan(gpus=6)))
"""),
    md("""
The 48 is "8 GPUs × 6 GB" although the example runs on 5 or 6 GPUs; the guide's own rule elsewhere, "subtract at least 8 GB per GPU", makes the overhead grow with $G$.
Either way 6 GPUs fit and 5 do not:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.gpu_count_table(gpus=(4, 5, 6, 7, 8), assumptions=None))
"""),
    md(f"""
### 8. The precision ladder: percentages that hold, figures that are not bits

{quote("g000-precision-step-saving")}

Each step is $1 - W_p / W_{{p-1}}$, on the guide's four figures (594, 450.4, 325 and 225):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
ladder = tables.precision_ladder_comparison(["kimi-k3@guide-000", "kimi-k3"])
reader_table(ladder)
"""),
    code("""
charts.precision_ladder_chart(ladder)
"""),
    md(f"""
The steps ({LADDER.loc["Q8", "saved_vs_previous_pct"]:.1f} %, {LADDER.loc["Q4", "saved_vs_previous_pct"]:.1f} %, {LADDER.loc["Q2", "saved_vs_previous_pct"]:.1f} %) follow from the guide's figures, but the figures are not parameters × bits: its "BF16" is {LADDER.loc["BF16", "bits_per_param"]:.2f} bits per parameter of its own 2.8T.
For the real K3 every step is bits × parameters, so Q4 saves {LADDER_REAL.loc["Q4", "saved_vs_bf16_pct"]:.1f} % against BF16, not {LADDER.loc["Q4", "saved_vs_bf16_pct"]:.1f} %.

### 9. Two guides almost 10× apart on the same weights

Guide 000 says the BF16 weights are ~594 GB; guide 004's FP16 row lists 5,476.2 GB.
In one unit (GB: guide 004's figures are decimal file sizes), with what each assumes:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.guide_weights_comparison())
"""),
    md(f"""
Guide 004's FP16 row is {G004_FP16["bits_per_param"]:.2f} bits per parameter of 2.8T: parameters × 2 bytes, what BF16 means (the real config gives {REAL_BF16["weights_GB"]:,.0f} GB), {G004_FP16["ratio_to_guide_000"]:.2f}× guide 000's figure.
Guide 000's 594 GiB ({G000_BF16["weights_GB"]:.1f} GB) is {G000_BF16["bits_per_param"]:.2f} bits per parameter, and its reason — an "effective unique parameter count … roughly one-tenth of the headline 2.8T" — does not describe a MoE model: experts are not shared, each is its own weights (section 2 finds the 1-bit file it matches).

### 10. The lost tables

Guide 000 announces three tables its text lost: a "precision-by-precision VRAM budget", "the full reference table", and "Optimal GPU Counts by Precision".
What survives of each is a rule, and each rule rebuilds a table.

**The budget**, from its note (KV cache BF16 for the first two rows, FP8 for the next two, INT4 for the last two, at 256K), activation 10 GiB, 8 GiB of overhead per GPU, each row on the fewest H100 80 GB:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.precision_budget_table())
"""),
    md(f"""
**The reference table**, from its summary's two ends: "~291 GB (Q2, 64K) to ~908 GB (BF16, 1M)".
With the worked example's activation (10 GiB) and overhead (48 GiB in total), a BF16 cache for BF16 weights and FP8 for the quantised tiers, both ends come out exactly ({REFERENCE.loc["Q2", "total_GiB_64K"]:.0f} and {REFERENCE.loc["BF16", "total_GiB_1M"]:.0f} GiB):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.reference_table())
"""),
    md("""
**The GPU counts**, from the sentence that survives: "These numbers assume 8 GB per GPU for overhead and reserve. For production reliability, add one more GPU to each row." — at 256K, GPUs counted one at a time as the guide does:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(parallel.gpu_count_table(model="kimi-k3@guide-000", gpu="h100", context="256K", whole_nodes=False,
                                      rows=[("bf16", "bf16"), ("bf16", "fp8"), ("q8", "fp8"), ("q4", "fp8"),
                                            ("q4", "int4"), ("q2", "int4")]))
"""),
    md(f"""
At 512K the same rule gives {GPUS_512K[0]} GPUs for BF16 weights with a BF16 cache and {GPUS_512K[1]} with FP8 — not the FAQ's "at least 10" and "drop from 10 GPUs to 8" (section 3):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(parallel.gpu_count_table(model="kimi-k3@guide-000", gpu="h100", context="512K", whole_nodes=False,
                                      rows=[("bf16", "bf16"), ("bf16", "fp8")]))
"""),
    md(r"""
### 11. The hidden activation and overhead

Two per-GPU cases in the guide print totals without the table behind them.
"""),
    md(quote("g000-8xh100-bf16-512k-over", "g000-fix-q8-total")),
    md(quote("g000-5xh100-q4-128k-headroom")),
    md(r"""
Take away the weights ($W/G$) and the KV cache ($KV/G$) the guide states, and each printed total leaves a remainder $X$ that must be activation + overhead per GPU:

$$X = m_{gpu} - \frac{W}{G} - \frac{KV}{G}$$
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(parallel.guide000_implied_table())
"""),
    md("""
The four case-1 figures all leave about 6.5 GiB per GPU; case 2 (with FP8 KV, its "sweet spot") leaves 9.0.
Which reading of its activation (8–15 GB at batch 1) and overhead (5–10 GB per GPU, "at least 8") gives those?
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(parallel.guide000_case1_table())
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(parallel.guide000_case2_table())
"""),
    md(r"""
One pair — activation $A$ in total, overhead $O$ per GPU — fits both cases when

$$\frac{A}{8} + O = X_1, \qquad \frac{A}{5} + O = X_2$$
"""),
    code("""
# NBVAL_CHECK_OUTPUT
activation_gib, overhead_gib = parallel.solve_activation_overhead([(8, 6.5), (5, 9.0)])
reader_table({"activation A, in total (GiB)": activation_gib, "overhead O, per GPU (GiB)": overhead_gib})
"""),
    md(f"""
That pair is {ACT_GIB:.2f} GiB of activation — the guide's batch-4 figure, not its batch 1 — with {OVH_GIB:.2f} GiB of overhead per GPU, far below its own "at least 8 GB per GPU".
The fix-2 weights, 56.3 GiB per GPU, follow no bits-per-weight rule either: they are where the guide's Q8 figure comes from (56.3 × 8 = 450.4 GiB):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(parallel.guide000_tier_check())
"""),
    md("""
**Takeaway:** guide 000's printed totals come from hidden inputs — 6.5 GiB per GPU of activation + overhead in case 1, 9.0 in case 2, a Q8 figure that is not 8.5 bits — that no single reading of its own ranges gives.
"""),
    md("""
## What a reader should use instead

K3's real sizes next to each guide's figure, in the unit chosen in the parameters cell (guide 000's "GB" are GiB and are converted):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
instead = audit.use_instead(unit=cfg.unit)
reader_table(instead)
"""),
    code("""
charts_audit.guide_vs_real(instead, unit=cfg.unit)
"""),
    md("""
**Takeaway:** plan K3 with 2,779.5B parameters, the published files (1,453.7 GiB native; 1,508.67 GB for the 4-bit GGUF), 27,648 B of KV per token at BF16 plus 0.43 GiB of KDA state per sequence, and whole 8-GPU nodes — not with either guide's tables.
"""),
    md(r"""
## Summary

* Every claim gets two verdicts from code, each a comparison with a stated tolerance; `tests/test_audit_mutation.py` moves every claimed value ×3 and ×1/3 and checks the verdict flips, and `data/audit_expectations.csv` holds values worked by hand.
* Guide 000's inputs are wrong for K3: 262,144 B of KV per token (K3: 27,648) and 594 GB of BF16 weights (K3: 5,177 GiB; 594 GB is the 1-bit GGUF). Most of its arithmetic follows from those inputs, so it holds against its own inputs and fails for the real K3.
* Some of its conclusions fail even on its own numbers: FP8 KV does not take 10 GPUs to 8; the 8x H100 intro is 268 GiB short, not 20 spare; Q8 at 56.3 GiB per GPU is 12 bits.
* Guide 004's weights cells are the published GGUF files, but its 1-, 2-, 4- and 8-bit totals use other weights, it asks for a Q4_K_M file that does not exist, and its offload table prices machines that cannot hold 1,531 GB of RAM.
* Guide 000's own arithmetic is rebuilt in sections 7–11: the worked example's 415 GiB, a precision ladder whose figures are not bits × parameters, three lost tables regenerated from the rules its text keeps, and the hidden activation + overhead behind its per-GPU cases.
* Use `kimi-k3` in `k3lib` (or `k3plan`) for any plan.
"""),
    md("""
## Exercises
"""),
    *exercise(
        "07-1",
        "Guide 000's FAQ says FP8 KV at 512K is enough to drop BF16 weights from 10 GPUs to 8. "
        "With its own figures (594 GiB of weights, 64 GiB of FP8 cache at 512K, 10 GiB of activation) and its rule of 8 GiB of overhead per 80 GiB H100, how many GPUs does it need?",
        f"""$594 + 64 + 10 \\le (80 - 8)·G$ gives $G \\ge {(594 + 64 + 10) / (80 - 8):.1f}$, so **{GPUS_512K[1]} GPUs** (with a BF16 cache, {GPUS_512K[0]}): `parallel.gpu_count_table(model="kimi-k3@guide-000", gpu="h100", context="512K", whole_nodes=False, rows=[("bf16", "fp8")])`.
FP8 saves 64 GiB, less than one card.""",
        value=GPUS_512K[1],
        unit="GPUs",
    ),
    *exercise(
        "07-2",
        "Guide 000 calls 594 GB (read as GiB) the BF16 weights of a 2.8T-parameter model. How many bits per parameter is that?",
        f"""$594 · 2^{{30}} · 8 / (2.8·10^{{12}})$ = **{LADDER.loc["BF16", "bits_per_param"]:.2f} bits** (`tables.precision_ladder_table("kimi-k3@guide-000")`), not 16: the figure is no precision at all (section 2 finds the 1-bit file it matches).""",
        value=float(G000_BF16["bits_per_param"]),
        unit="bits",
    ),
    *exercise(
        "07-3",
        "Guide 004's FP16 row lists 5,476.2 GB of weights for its 2.8T parameters. How many bits per parameter, and how many times guide 000's BF16 figure?",
        f"""$5{{,}}476.2·10^9 · 8 / (2.8·10^{{12}})$ = **{G004_FP16["bits_per_param"]:.2f} bits**, about 2 bytes per parameter as FP16 means; {G004_FP16["ratio_to_guide_000"]:.2f}× guide 000's {G000_BF16["weights_GB"]:.1f} GB (`tables.guide_weights_comparison()`).""",
        value=float(G004_FP16["bits_per_param"]),
        unit="bits",
    ),
    *exercise(
        "07-4",
        f"Guide 000's case 1 leaves {CASE1_LEFT:.1f} GiB per GPU for activation + overhead on 8 GPUs, its case 2 {CASE2_LEFT:.1f} GiB on 5. "
        "If the activation $A$ is split over the GPUs and the overhead $O$ is per GPU, what $A$ fits both?",
        f"""$A/8 + O = {CASE1_LEFT:.1f}$ and $A/5 + O = {CASE2_LEFT:.1f}$: subtracting, $A·(1/5 - 1/8) = {CASE2_LEFT - CASE1_LEFT:.1f}$, so **$A$ = {ACT_GIB:.2f} GiB** and $O$ = {OVH_GIB:.2f} GiB per GPU (`parallel.solve_activation_overhead([(8, {CASE1_LEFT:.1f}), (5, {CASE2_LEFT:.1f})])`) — the guide's batch-4 activation with an overhead below its own 8 GB rule.""",
        value=ACT_GIB,
        unit="GiB",
    ),
    *exercise(
        "07-5",
        "Rebuild the low end of guide 000's lost reference table: Q2 weights (225 GiB), an FP8 cache (131,072 B per token) at 64K, activation 10 GiB and overhead 48 GiB. What total does it give?",
        f"""$225 + 131{{,}}072 · 65{{,}}536 / 2^{{30}} + 10 + 48 = 225 + 8 + 10 + 48$ = **{REFERENCE.loc["Q2", "total_GiB_64K"]:.0f} GiB**, the guide's "~291 GB (Q2, 64K)" (`tables.reference_table()`).""",
        value=float(REFERENCE.loc["Q2", "total_GiB_64K"]),
        unit="GiB",
    ),
]

if __name__ == "__main__":
    build(STEM, cells)
