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

**The question:** of the numbers in the two guides readers arrive from, which follow from the guide's own inputs, and which hold for the real K3 — its real architecture and the files you can actually download?

{nav(STEM)}

Guide 000 ("Kimi K3 VRAM Requirements") and guide 004 ("How to Deploy Kimi K3 Locally") disagree by about 10× on K3's weights and KV cache.
Every numeric claim of both guides is a row of `data/guide_claims.csv`; `k3lib.guides.audit` checks each one with code, on every run, and asks **two questions** of it:

* **own inputs** — does the figure follow from what the guide itself states? (`stated input` where the figure *is* one of those inputs);
* **real K3** — does it hold for the real architecture (`kimi-k3`), the published checkpoint and GGUF files (`data/measured/kimi-k3-published.csv`), and GPU counts in whole 8-GPU nodes?

Each answer is a comparison with a stated tolerance (the digits written, ±5 % where the guide writes "~", exact for counts): **holds** or **contradicted**; **not checkable** where only a measurement could settle it.
Notation as in [00](00-vram-anatomy.ipynb): $W$ weights, $T$ tokens, $kv_{{tok}}$ KV bytes per token, $A$ activation, $O$ overhead, $G$ GPUs; GiB = 2^30 bytes, GB = 10^9 bytes.
"""),
    code("""
from k3lib.views import guide_audit as audit
from k3lib.views import charts_audit, notebook
from k3lib.views.table_format import shown  # tables for a reader: separators, "—", no NaN or e+
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
cfg
"""),
    md("""
## The summary: two questions, two columns

Claims per verdict, for each guide and in all — against the guide's own inputs, and for the real K3:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
table = audit.audit_table()
counts = audit.verdict_counts(table)
counts
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
shown(deployer.drop(columns=["quote"]))
"""),
    md("""
Real K3 needs whole 8-GPU nodes (tensor parallelism inside a node, pipeline stages across nodes), from the shared planner `k3lib.studies.parallel.min_gpus`.
Compare the published deployments: vLLM's K3 recipe (vllm-project/recipes `models/moonshotai/Kimi-K3.yaml` @8959cf64) serves the native checkpoint on 16× H200 as TP8 × PP2 — the planner's count below — and asks for 32× H100, one node more than the planner's memory floor of 24; on H200 a plain TP8 runs out of memory (vllm-project/recipes #698).
The guide's own counts assume one pool of GPUs and its own inputs:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
gpus = audit.real_gpu_counts()
shown(gpus)
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
audit.kv_reconciliation()
"""),
    code("""
# NBVAL_CHECK_OUTPUT
audit.kv_cache_at_contexts(unit="GiB")
"""),
    md("""
The guide is right that naive attention would cost several MB per token (93 layers × 96 heads × (192 + 128) × 2 B = 5.71 MB), and wrong that each GPU holds only its heads' share of the cache: the MLA latent has no head dimension, so under TP = 8 every GPU keeps all of it.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
shown(audit.working("g000-extra-tp-kv-shard"), decimals=3)
"""),
    md(r"""
### 2. "The BF16 weights are ~594 GB" is a 1-bit file

$$W = P·\frac{\text{bits}}{8} = 2{,}779.5\text{B}·\frac{16}{8} = 5{,}559 \text{ GB} = 5{,}177 \text{ GiB}$$

594 GB in decimal GB is exactly unsloth's 1-bit UD-IQ1_S GGUF (594,040,923,616 B). The native checkpoint (MXFP4 routed experts, BF16 rest) is 1,453.7 GiB, and vLLM keeps the experts in MXFP4: nothing "unpacks to BF16 at load time".
"""),
    code("""
# NBVAL_CHECK_OUTPUT
shown(audit.working("g000-weights-bf16"), decimals=3)
"""),
    md("""
The published K3 files (`data/measured/kimi-k3-published.csv`, each with its Hugging Face or GitHub source):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
audit.published_table(unit="GB")
"""),
    md(r"""
### 3. "FP8 KV at 512K … enough to drop from 10 GPUs to 8"

On the guide's own numbers (6 GB of overhead per GPU, as in its worked example), BF16 weights need $594 + 128 + 10 + 6G \le 80G$, so 10 GPUs with a BF16 cache, and $594 + 64 + 10 + 6G \le 80G$, so still 10 with FP8: 64 GB is 0.8 of one GPU. With its 8 GB-per-GPU rule the count goes from 11 to 10.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
shown(audit.working("g000-fp8kv-gpus-after"), decimals=3)
"""),
    md(r"""
### 4. Guide 004's weights column is the published GGUF files; its totals are not

The 1-, 2-, 4- and 8-bit weights cells are unsloth's UD-IQ1_M, UD-Q2_K_XL, UD-Q4_K_XL and UD-Q8_K_XL to the printed digit. The "8-bit" file is 4.49 bits per weight because the "lossless" UD-Q8_K_XL keeps the MXFP4 experts as they are. No Q4_K_M file of K3 exists, though the guide's `llama-server` line asks for one.
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
The table states its rule, "Total = weights + KV cache (FP16) + 1GB runtime overhead":

$$M = W + \frac{27{,}648·T}{2^{30}} + 1$$

The estimated rows follow it; the 1-, 2-, 4- and 8-bit totals count an estimated rate × 2,738.1B parameters instead of their own weights cell:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
audit.g004_table_check()
"""),
    md("""
### 5. Offload mode on a unified-memory machine

Guide 004 prices 128 GB machines (Ryzen AI Max+ 395, DGX Spark, Macs) for an offload mode that needs 1,531 GB of system RAM; on those machines the unified pool *is* all the RAM there is, so the experts that do not fit stream from the SSD at every token: the Mac Studio 512 GB makes about 0.3 tokens/s, as [04](04-offload.ipynb) computes with the same function (`offload.unified_memory_estimate`).
The split itself is K3's routed experts at a uniform 4.5 bits, more than the whole published 4-bit file:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
audit.offload_split(unit="GB")
"""),
    md("""
### 6. "Each GPU needs at least 8 GB of overhead"

Checked against measurements, not a rule: in the vLLM 0.19 H100 runs of `data/measured/vllm-0.19-h100-sweep.csv`, the memory outside weights and KV per GPU (capacity − weights − KV, the unused reserve included) spans this range, and 8 GB lies inside it:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
shown(audit.working("g000-summary-overhead"), decimals=3)
"""),
    md("""
## What a reader should use instead

K3's real sizes next to each guide's figure, in the unit chosen in the parameters cell (guide 000's "GB" are GiB and are converted):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
instead = audit.use_instead(unit=cfg.unit)
shown(instead)
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
* Use `kimi-k3` in `k3lib` (or `k3plan`) for any plan.

## Exercises

1. Guide 000 says FP8 KV "cuts its memory in half". For the real K3, what fraction of the BF16 cache does FP8 leave at 8K, and why is it not one half?
2. With guide 000's own figures and its 8 GB-per-GPU rule, how many H100s do BF16 weights with an FP8 cache at 512K need?
3. Which published K3 file is guide 000's "594 GB", and how many bits per weight is it?

<details><summary>Answers</summary>

1. At 8K the MLA cache is 27,648 × 8,192 B = 0.21 GiB at BF16 and 0.11 GiB at FP8, but the KDA state (0.43 GiB in FP32) does not shrink: (0.11 + 0.43) / (0.21 + 0.43) ≈ 0.84.
2. $594 + 64 + 10 + 8G \le 80G$ gives $G \ge 9.3$, so 10: `audit.working("g000-fp8kv-gpus-after")` (row `gpus_at_8_per_gpu`).
3. UD-IQ1_S, 594,040,923,616 B: × 8 / 2,779.5B = 1.71 bits per weight (`audit.published_table()`).

</details>
"""),
]

if __name__ == "__main__":
    build(STEM, cells)
