"""Generate notebooks/07-guide-audit.ipynb, then execute it and keep only the checked outputs.

Usage:  .venv/bin/python scripts/notebooks/07_guide_audit.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtool import build, code, md, nav, parameters  # noqa: E402

STEM = "07-guide-audit"

cells = [
    md(f"""
# 07 · What the two guides claim, and what holds

**The question:** of the numbers in the two guides readers arrive from, which can a planner trust, which hold only under an assumption, and which are wrong?

{nav(STEM)}

Guide 000 ("Kimi K3 VRAM Requirements") and guide 004 ("How to Deploy Kimi K3 Locally") disagree by about 10× on K3's weights and KV cache.
Some of their figures do not even follow from their own formulas.
Every numeric claim of both guides is a row of `data/guide_claims.csv`; `k3lib.guides.audit` checks each one with code, on every run.
Notation as in [00](00-vram-anatomy.ipynb): $W$ weights, $T$ tokens, $kv_{{tok}}$ KV bytes per token, $A$ activation, $O$ overhead, $G$ GPUs; GiB = 2^30 bytes, GB = 10^9 bytes.
"""),
    code("""
from k3lib.guides import audit
from k3lib.views import charts_audit, notebook
notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

They choose which claims the table lists and the unit of the last table.
"""),
    parameters("""
guide: str = "all"  # claims of which guide: all, guide-000, guide-004
verdict: str = "all"  # claims with which verdict: all, reproduced, reproduced only under assumption, contradicted, not checkable
unit: str = "GB"  # unit of the "use instead" table: GB (10^9 B) or GiB (2^30 B)
"""),
    code("""
# NBVAL_CHECK_OUTPUT
cfg = audit.validate_parameters(guide=guide, verdict=verdict, unit=unit)
cfg
"""),
    md("""
## How a claim is judged

Each claim is checked against one of two references, and the verdict says which:

* **The guide's own numbers.** Guide 000 writes "GB" but divides by $1024^3$, so its figures are read as GiB (profile `kimi-k3@guide-000`). A figure that does not follow from its own guide's inputs is *contradicted*.
* **K3's real architecture** (`kimi-k3`, from its config). A number the guide asserts about K3 — parameters, a weight size, KV bytes per token — is checked against it.

There are four verdicts:

* **reproduced** — the computed value is within the stated tolerance (the digits written, or ±5 % where the guide writes "~");
* **reproduced only under assumption** — it follows, but only from an input K3 does not have or an assumption the guide does not state (the `assumption` column names it);
* **contradicted** — the computed value is outside the tolerance (the `explanation` column gives the numbers);
* **not checkable** — advice, a lost table, or a figure that needs a measurement.
"""),
    md("""
## Every claim, with its verdict

One row per claim, tinted by verdict; `computed` is what the check found, `real_k3` the same quantity for the real K3 where it differs.
"""),
    code("""
table = audit.audit_table()
audit.style_verdicts(audit.filter_claims(table, cfg.guide, cfg.verdict))
"""),
    md("""
The counts, per guide:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
counts = audit.verdict_counts(table)
counts
"""),
    code("""
charts_audit.verdict_bars(table)
"""),
    md("""
### Filter

Pick a guide and a verdict; the table updates in place (the callback is `audit.filter_claims`).
"""),
    code("""
audit.claims_explorer(table, guide=cfg.guide, verdict=cfg.verdict)
"""),
    md("""
**Takeaway:** guide 000's own arithmetic mostly holds, but almost every one of its figures rests on two inputs K3 does not have; guide 004's inputs are nearer K3, but its table contradicts itself.
"""),
    md("""
## The biggest contradictions, one by one
"""),
    code("""
# NBVAL_CHECK_OUTPUT
biggest = audit.biggest_contradictions()
biggest
"""),
    md(r"""
### 1. 256 KB of KV cache per token is 9.5× what K3 caches

Guide 000: "At BF16, each token consumes approximately 256 KB of KV cache" (262,144 B).
K3 has 93 layers: 24 use multi-head latent attention (MLA) and cache one latent per token, 69 use Kimi Delta Attention (KDA) and keep a constant state per sequence.

$$kv_{tok} = L_{MLA}·(r_{kv} + d_{rope})·b = 24·(512 + 64)·2 = 27{,}648 \text{ B}$$
"""),
    code("""
# NBVAL_CHECK_OUTPUT
kv = audit.kv_reconciliation()
kv
"""),
    md("""
At long contexts, the guide's KV cache is nearly ten times K3's; the KDA state adds a constant 0.43 GiB (116,158,464 FP32 elements):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
audit.kv_cache_at_contexts(unit="GiB")
"""),
    md(r"""
### 2. "The BF16 weights are ~594 GB" matches no BF16 figure

$$W = P·\frac{\text{bits}}{8} = 2{,}779.5\text{B}·\frac{16}{8} = 5{,}559 \text{ GB} = 5{,}177 \text{ GiB}$$

594 GiB over 2,779.5B parameters is 1.84 bits per weight.
The MXFP4 checkpoint the guide credits (routed experts at 4.25 bits, the rest BF16) is 1,453 GiB, and unpacked to BF16 it is the 5.56 TB the guide says K3 is "nowhere near".
"""),
    code("""
# NBVAL_CHECK_OUTPUT
bf16 = audit.working("g000-weights-bf16")
bf16
"""),
    md(r"""
### 3. "FP8 KV at 512K … enough to drop from 10 GPUs to 8"

On the guide's own numbers, BF16 weights with an FP8 cache at 512K still need

$$W + T·kv_{tok} + A + O = 594 + 64 + 10 + 48 = 716 \text{ GiB} > 8 × 80 = 640 \text{ GiB}.$$

Saving 64 GB frees 0.8 of one GPU, not two.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
fp8 = audit.working("g000-fp8kv-gpus-after").set_index("param")
fp8
"""),
    md("""
### 4. "Your 8x H100 cluster with 640 GB total has maybe 20 GB of headroom"

The same paragraph's 594 GB of weights and 256 GB of KV at 1M already exceed 640; even with no KV cache at all the weights, activation and overhead are 12 GiB too many.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
intro = audit.working("g000-intro-8xh100-headroom").set_index("param")
intro
"""),
    md(r"""
### 5. Guide 004's "8-bit" weights are a 4.5-bit file

Bits per weight are $\text{size}·8 / P$.
An 8-bit file of K3 (Q8_0, 8.5 bits) is 2,953 GB; the row's 1,561.2 GB is 4.49 bits — the size of K3's native MXFP4 checkpoint — and smaller than the 5-bit row above it.
The row's own 8K total (2,903.6 GB) implies 2,902.4 GB of weights: an 8-bit file after all.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
gguf = audit.gguf_matches()
gguf
"""),
    code("""
charts_audit.bits_per_weight(gguf)
"""),
    md(r"""
### 6. Guide 004's 4-bit row adds 52 GB it does not explain

The table states its rule: "Total = weights + KV cache (FP16) + 1GB runtime overhead".
The 3-bit, 5-bit and FP16 rows follow it to the printed digit with K3's real cache, 27,648 B per token counted in GiB:

$$M = W + \frac{27{,}648·T}{2^{30}} + 1$$

The 1-, 2-, 4- and 8-bit rows do not: each total counts a different weight figure from the one in its own weights column.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
rows = audit.g004_table_check()
four = rows[(rows["tier"] == "4-bit") & (rows["context (tokens)"] == 8192)].iloc[0]
rows
"""),
    md("""
### 7. Offload mode on a 128 GB unified-memory machine

Guide 004 says the cheapest device that runs K3 with experts in system RAM is a Ryzen AI Max+ 395 128GB, at about 1 token/s, with 1,531 GB of RAM.
On that machine (and on the DGX Spark and every Mac in the list) the 128 GB unified pool *is* all the RAM there is.
The split itself does reconcile with K3 at 4.5 bits per weight — but not with the guide's own 4-bit file:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
split = audit.offload_split(unit="GB")
split
"""),
    md("""
### 8. "The effective unique parameter count after MoE expert sharing is roughly one-tenth"

Experts are not shared: every one of them is stored and must be resident.
What is small is what one token touches (3.7 %) and what lies outside the routed experts (2.0 %); neither is a tenth, and neither sets the memory:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
audit.unique_params_examined()
"""),
    md("""
### 9. "Quantize to Q8: weights drop to ~56.3 GB per GPU"

Eight bits are half of sixteen: the guide's own 74.25 GiB per GPU at BF16 halves to 37.1 GiB; 56.3 GiB is 12.1 bits per weight.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
audit.working("g000-fix-q8-weights")
"""),
    md(r"""
## Reproduced only under an assumption: the 48 GB overhead

The worked example adds "overhead = 48 GB (8 GPUs × 6 GB)" and then runs on 6 and 5 GPUs.
Its "65 GB of headroom" on 6 GPUs, "15 GB over" on 5, and the "~28 GB" left on 4 GPUs at Q2 all reproduce — only if 48 GiB of overhead is kept whatever the GPU count.
With its own 6 GB per GPU the 5-GPU case fits:

$$5 × 80 - (325 + 32 + 10 + 5 × 6) = 3 \text{ GiB spare}$$
"""),
    code("""
# NBVAL_CHECK_OUTPUT
five = audit.working("g000-worked-5x-over").set_index("param")
five
"""),
    md("""
**Takeaway:** the worked example's sum, 325 + 32 + 10 + 48 = 415, is right; the conclusions drawn from it for 4, 5 and 6 GPUs hold only under an overhead the guide contradicts.
"""),
    md("""
## What a reader should use instead

K3's real sizes from its architecture, next to each guide's figure, in the unit chosen in the parameters cell (guide 000's "GB" are GiB and are converted):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
instead = audit.use_instead(unit=cfg.unit)
instead
"""),
    code("""
charts_audit.guide_vs_real(instead, unit=cfg.unit)
"""),
    md("""
And the H100 80 GB count each needs, keeping guide 000's 10 GiB of activation and 8 GiB of overhead per GPU:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
gpus = audit.real_gpu_counts()
gpus
"""),
    md("""
**Takeaway:** plan K3 with 2,779.5B parameters (1,453 GiB native, 5,177 GiB at BF16, 1,456 GiB at Q4_K), 27,648 B of KV per token at BF16 plus 0.43 GiB of KDA state per sequence — not with either guide's tables.
"""),
    md(r"""
## Summary

* Every one of the 171 claims gets a verdict from code; `data/audit_expectations.csv` pins them, so a changed verdict fails a test.
* Guide 000's two inputs are wrong: K3 caches 27,648 B per token at BF16, not 262,144, and its BF16 weights are 5,177 GiB, not 594.
* Most of guide 000's arithmetic follows from those inputs, so its derived figures are reproduced only under them; the worked example's 415 is a correct sum.
* Some of its conclusions fail even on its own numbers: FP8 KV at 512K needs 716 GiB, more than 8 × 80; the 8x H100 intro is 268 GiB short, not 20 spare; Q8 at 56.3 GiB per GPU is 12 bits.
* Guide 004's inputs are close to K3 (2,800B and 104B parameters; its KV term is K3's 27,648 B per token), but its 1-, 2-, 4- and 8-bit totals use weights other than its own weights column, its "8-bit" weights are a 4.5-bit file, and its offload table prices 128 GB machines that cannot hold 1,531 GB of RAM.
* Use `kimi-k3` in `k3lib` (or `k3plan`) for any plan.

## Exercises

1. Guide 000 says FP8 KV "cuts its memory in half". For the real K3, what fraction of the BF16 cache does FP8 leave at 8K, and why is it not one half?
2. With guide 000's own figures and its 8 GB-per-GPU rule, how many H100s do BF16 weights with an FP8 cache at 512K need?
3. Which of guide 004's weight sizes is closest to K3's native MXFP4 checkpoint, and how many bits per weight does that size imply?

<details><summary>Answers</summary>

1. At 8K the MLA cache is 27,648 × 8,192 B = 0.21 GiB at BF16 and 0.11 GiB at FP8, but the KDA state (0.43 GiB in FP32) does not shrink: (0.11 + 0.43) / (0.21 + 0.43) ≈ 0.84. `audit.audit_claim(audit.get_claim("g000-kv-halve-precision")).explanation` says so.
2. $594 + 64 + 10 + 8G \le 80G$ gives $G \ge 9.3$, so 10: `audit.working("g000-fp8kv-gpus-after")` (row `gpus_at_8_per_gpu`).
3. The "8-bit" row, 1,561.2 GB: 1,561.2 × 10^9 × 8 / 2,779.5B = 4.49 bits per weight (`audit.gguf_matches()`).

</details>
"""),
]

if __name__ == "__main__":
    build(STEM, cells)
