"""The serving model (k3lib.serving): hand-derived figures, the fit's split discipline, refusals."""

from __future__ import annotations

import math

import pytest

from k3lib.core.memory import weights_bytes_by_group
from k3lib.core.models import get_model
from k3lib.engines.deployment import plan_for_engine
from k3lib.serving import FIGURES, PlanDoesNotLoad, serving_estimate
from k3lib.serving.calibration import calibration, parse_speed_csv
from k3lib.serving.comm import allreduce_seconds, tp_allreduce_bytes_per_layer, tp_comm_seconds
from k3lib.serving.concurrency import max_concurrency, throughput_curve
from k3lib.serving.cost import usd_per_hour, usd_per_million_output_tokens
from k3lib.serving.experts import expected_distinct_experts
from k3lib.serving.roofline import CEILING, decode_terms, inputs_from_plan

FIXTURE = "tests/fixtures/speed_fixture.csv"


def _plan(**kw):
    args = dict(model="llama-3.1-8b", gpu="h100", gpus=1, weights="bf16", context=2048, with_limits=False)
    args.update(kw)
    return plan_for_engine(**args)


def test_distinct_experts_hand_derived():
    assert expected_distinct_experts(n_experts=256, experts_per_token=8, tokens=1) == pytest.approx(8)
    assert expected_distinct_experts(n_experts=256, experts_per_token=8, tokens=64) == pytest.approx(
        256 * (1 - (1 - 8 / 256) ** 64)
    )
    assert expected_distinct_experts(n_experts=256, experts_per_token=8, tokens=10_000) == pytest.approx(256)


def test_llama8b_bf16_h100_ceiling_is_weights_over_bandwidth():
    groups = weights_bytes_by_group(get_model("llama-3.1-8b"), "bf16")
    read = sum(groups.values()) - groups["embedding"]  # the embedding is a lookup of one row
    t = decode_terms(inputs_from_plan(_plan()), concurrency=1, context_tokens=0)
    assert t.bytes_read == pytest.approx(read, rel=1e-6)
    assert t.seconds(CEILING) == pytest.approx(read / 3.35e12, rel=1e-6)


def test_tp_allreduce_bytes_and_time():
    assert tp_allreduce_bytes_per_layer(tokens=4, hidden_size=8192) == 2 * 4 * 8192 * 2
    one = allreduce_seconds(message_bytes=8192 * 2, group=8, link_bytes_per_s=450e9, latency_s=0)
    assert one == pytest.approx(2 * 7 / 8 * 8192 * 2 / 450e9)
    assert tp_comm_seconds(
        tokens=1, hidden_size=8192, layers=80, tp=8, link_bytes_per_s=450e9, latency_s=0
    ) == pytest.approx(160 * one)
    assert allreduce_seconds(message_bytes=1e6, group=1, link_bytes_per_s=1e9) == 0


def test_throughput_monotonic_in_concurrency():
    inp = inputs_from_plan(_plan(model="qwen3-30b-a3b", weights="native"))
    pts = throughput_curve(inp, concurrencies=(1, 2, 4, 8, 16, 32, 64, 128, 256))
    totals = [p.output_tokens_per_s_total for p in pts]
    assert totals == sorted(totals)
    tpots = [p.tpot_s for p in pts]
    assert tpots == sorted(tpots)


def test_max_concurrency_and_cost():
    assert max_concurrency(kv_capacity_tokens=10_000, input_tokens=900, output_tokens=100) == 10
    assert max_concurrency(kv_capacity_tokens=10**7, input_tokens=900, output_tokens=100, max_num_seqs=256) == 256
    assert usd_per_hour(gpus=8, price_per_gpu_hour=None) is None
    assert usd_per_million_output_tokens(usd_per_hour_=36.0, output_tokens_per_s=10_000) == pytest.approx(1.0)


def test_fit_never_reads_holdout(tmp_path):
    base = calibration(FIXTURE)
    text = open(FIXTURE, encoding="utf-8").read()
    rows = parse_speed_csv(text)
    hold = next(r for r in rows if r.split == "holdout" and r.gpu == "dgx-spark")
    changed = tmp_path / "speed.csv"
    changed.write_text(text.replace(f",{hold.value:g},", f",{hold.value * 7:g},", 1), encoding="utf-8")
    mutated = calibration(changed)
    assert mutated.rows != base.rows
    assert mutated.constants == base.constants
    assert mutated.holdout != base.holdout


def test_skipped_rows_are_counted():
    cal = calibration(FIXTURE)
    assert {i for i, _ in cal.skipped} >= {"fx-l20-r1-vllm-total", "fx-l20-r1-vllm-tpot"}


def test_plan_that_does_not_fit_has_no_speed():
    p = _plan(model="llama-3.1-70b", context=8192)
    assert not p.fits
    with pytest.raises(PlanDoesNotLoad):
        serving_estimate(p)


def test_estimate_labels_every_figure():
    e = serving_estimate(_plan(), concurrency=4, price_per_gpu_hour=2.0, speed_csv=FIXTURE)
    d = e.to_dict()
    assert tuple(d) == FIGURES
    for k, f in d.items():
        assert set(f) == {"value", "unit", "basis", "expected_error_pct"}
        assert f["basis"] in (
            ("price",) if k == "usd_per_hour" else ("measured", "fitted model", "theoretical ceiling")
        )
    assert d["usd_per_hour"]["value"] == 2.0 * e.details().get("gpus", 1) or d["usd_per_hour"]["value"] == 2.0
    ceiling = serving_estimate(_plan(), concurrency=4, mode="ceiling")
    assert ceiling.tpot_s.basis == "theoretical ceiling" and ceiling.tpot_s.expected_error_pct is None
    assert ceiling.usd_per_million_output_tokens.value is None
    assert e.tpot_s.value >= ceiling.tpot_s.value


def test_aliases_have_the_shapes_they_claim():
    from k3lib.loaders.config import load_config
    from k3lib.serving.speed_rows import MODEL_ALIASES, resolve_model

    a = load_config("data/measured/configs/RedHatAI--Llama-3.3-70B-Instruct-fp8-dynamic.json").architecture
    b = get_model(resolve_model("meta-llama/Llama-3.3-70B-Instruct"))
    assert (a.attention, a.mlp, a.hidden_size, a.vocab_size) == (b.attention, b.mlp, b.hidden_size, b.vocab_size)
    m = get_model(resolve_model("MiniMaxAI/MiniMax-M2.7"))  # figures of amd/MiniMax-M2.7-BF16 config.json
    assert (
        m.hidden_size,
        m.num_layers,
        m.vocab_size,
        m.mlp.n_routed_experts,
        m.mlp.experts_per_token,
        m.mlp.moe_intermediate,
        m.attention[0].num_heads,
        m.attention[0].kv_heads,
    ) == (3072, 62, 200064, 256, 8, 1536, 48, 8)
    q = get_model(resolve_model("Qwen/Qwen3-Coder-30B-A3B-Instruct"))  # fastllm@f8f04c33 copy of its config
    assert (
        q.hidden_size,
        q.num_layers,
        q.vocab_size,
        q.mlp.n_routed_experts,
        q.mlp.experts_per_token,
        q.mlp.moe_intermediate,
        q.attention[0].num_heads,
        q.attention[0].kv_heads,
    ) == (2048, 48, 151936, 128, 8, 768, 32, 4)
    assert all(v.source for v in MODEL_ALIASES.values())
    assert resolve_model("deepseek-r1") == "deepseek-r1"


def test_served_concurrency_is_capped_and_rendered():
    from k3lib.serving import render_text

    e = serving_estimate(_plan(), concurrency=100_000, mode="ceiling")
    assert e.concurrency == e.max_concurrency.value < 100_000 and e.concurrency_asked == 100_000
    text = render_text(e)
    for word in ("time per output token", "theoretical ceiling", "concurrency served", "vllm", "datacenter GPU"):
        assert word in text
    assert e.loads and PlanDoesNotLoad.exit_code == 3


def test_offload_estimate_has_the_same_keys_and_refuses_what_does_not_load():
    from k3lib.serving import offload_serving_estimate

    kw = dict(
        model="qwen3-30b-a3b",
        engine="llama.cpp",
        gpu="rtx-4090",
        gpus=1,
        weights="q4_k_m",
        kv_dtype="bf16",
        input_tokens=512,
        output_tokens=128,
        concurrency=1,
        host="desktop-ddr5-5600",
        ram=None,
        ram_bandwidth=None,
        price_per_gpu_hour=0.5,
    )
    e = offload_serving_estimate(**kw, expert_layers_on_gpu=0, speed_csv=FIXTURE)
    assert tuple(e.to_dict()) == FIGURES and e.hardware_class == "consumer GPU"
    full = offload_serving_estimate(**kw, expert_layers_on_gpu=None, speed_csv=FIXTURE)
    assert full.decode_tokens_per_s_per_sequence.value >= e.decode_tokens_per_s_per_sequence.value
    cpu = offload_serving_estimate(**{**kw, "gpu": None, "gpus": 0}, expert_layers_on_gpu=None, speed_csv=FIXTURE)
    assert cpu.hardware_class == "CPU" and tuple(cpu.to_dict()) == FIGURES
    with pytest.raises(PlanDoesNotLoad):
        offload_serving_estimate(**{**kw, "model": "deepseek-v3", "ram": "64GB"}, expert_layers_on_gpu=0)


def test_holdout_table_is_a_frame():
    from k3lib.serving import holdout_table

    t = holdout_table(calibration(FIXTURE))
    assert {"engine", "quantity", "rows", "median_ratio", "within_30_pct", "worst_ratio"} <= set(t.columns)
    assert (t["rows"] > 0).all()


def test_steady_state_ttft_is_one_prompt_and_burst_grows_with_concurrency():
    from k3lib.serving.concurrency import predict
    from k3lib.serving.roofline import prefill_terms

    inp = inputs_from_plan(_plan(context=4096))
    one = prefill_terms(inp, input_tokens=2000).seconds(CEILING)
    steady = [predict(inp, "ttft_s", concurrency=c, input_tokens=2000, output_tokens=500) for c in (1, 8, 32)]
    burst = [
        predict(inp, "ttft_s", concurrency=c, input_tokens=2000, output_tokens=500, arrivals="burst")
        for c in (1, 8, 32)
    ]
    assert steady[0] == pytest.approx(one * 1.5, rel=0.05)  # own prefill + half a step (one step here)
    assert steady[2] < 4 * one  # no (c+1)/2 queue in the steady state
    assert burst[2] > 10 * one and burst == sorted(burst)


def test_queue_past_capacity_serves_capacity_and_adds_littles_law_wait():
    from k3lib.serving.concurrency import predict, queue_wait_s

    inp = inputs_from_plan(_plan())
    kw = dict(input_tokens=1024, output_tokens=256)
    served = {q: predict(inp, q, concurrency=8, **kw) for q in ("ttft_s", "tpot_s", "output_tokens_per_s_total")}
    asked = {q: predict(inp, q, concurrency=24, capacity=8, **kw) for q in served}
    assert asked["tpot_s"] == pytest.approx(served["tpot_s"])
    assert asked["output_tokens_per_s_total"] == pytest.approx(served["output_tokens_per_s_total"])
    t_sys = served["ttft_s"] + 256 * served["tpot_s"]
    assert asked["ttft_s"] == pytest.approx(served["ttft_s"] + 2 * t_sys)
    assert queue_wait_s(asked=8, capacity=8, time_in_system_s=t_sys) == 0
    assert predict(inp, "ttft_s", concurrency=8, capacity=8, **kw) == pytest.approx(served["ttft_s"])


def test_trtllm_burst_packs_whole_prompts():
    import dataclasses

    from k3lib.serving.concurrency import _packed

    inp = dataclasses.replace(inputs_from_plan(_plan()), engine="trtllm")
    assert _packed(inp, 3200).prefill_chunk_tokens == (inp.prefill_chunk_tokens // 3200) * 3200
    assert _packed(inp, 20000).prefill_chunk_tokens == 20000
    assert _packed(dataclasses.replace(inp, engine="vllm"), 3200).prefill_chunk_tokens == inp.prefill_chunk_tokens


def test_first_burst_mixes_one_burst_wave_with_the_steady_state():
    """A decode-first engine staggers a wave: only the first c of N requests see the burst."""
    import dataclasses

    from k3lib.core.errors import K3InputError
    from k3lib.serving.concurrency import predict

    inp = dataclasses.replace(inputs_from_plan(_plan(context=4096)), engine="trtllm")
    kw = dict(input_tokens=2000, output_tokens=500)
    burst = predict(inp, "ttft_s", concurrency=50, arrivals="burst", **kw)
    steady = predict(inp, "ttft_s", concurrency=50, arrivals="steady", **kw)
    mixed = predict(inp, "ttft_s", concurrency=50, arrivals="first_burst", prompts=500, **kw)
    assert mixed == pytest.approx(0.1 * burst + 0.9 * steady)  # c/N = 50/500 of the requests
    assert predict(inp, "ttft_s", concurrency=50, arrivals="first_burst", prompts=50, **kw) == pytest.approx(burst)
    with pytest.raises(K3InputError, match="prompts"):
        predict(inp, "ttft_s", concurrency=50, arrivals="first_burst", **kw)


def test_which_engines_keep_waves_in_lock_step():
    import dataclasses

    from k3lib.serving.speed_rows import SpeedRow, keeps_waves, row_arrivals

    assert keeps_waves("sglang", "")  # prefill first
    assert keeps_waves("vllm", "0.7.4.dev181")  # V0: prefills first without chunked prefill
    assert not keeps_waves("vllm", "0.8.0")  # V1: running decodes first
    assert not keeps_waves("TensorRT-LLM", "0.17")  # decodes first, contexts packed
    row = SpeedRow(
        *(
            [
                "x",
                "trtllm",
                "0.17",
                "deepseek-r1",
                "fp8-block",
                "bf16",
                "h200-sxm",
                8,
                8,
                1,
                4,
                "",
                4,
                3200,
                800,
                "ttft_s",
                1.0,
                "s",
                "fit",
                "",
                "https://github.com/dstackai/benchmarks/blob/x/y.csv",
                "",
            ]
        )
    )
    assert row_arrivals(row) == ("first_burst", 500)
    assert row_arrivals(dataclasses.replace(row, source="https://example.org")) == ("steady", None)


def test_huber_loss_is_squared_inside_the_band_and_linear_beyond():
    import numpy as np

    from k3lib.serving.calibration import huber

    d = math.log(1.3)
    assert float(huber(np.array(0.2))) == pytest.approx(0.04)
    assert float(huber(np.array(-2.0))) == pytest.approx(2 * d * 2.0 - d * d)  # 2δ|x| − δ²
    # continuous at the band's edge
    assert float(huber(np.array(d + 1e-9))) == pytest.approx(d * d, rel=1e-6)


def test_ktransformers_gpu_prefill_leaves_out_the_cpu_experts_flops():
    """KTransformers multiplies its CPU-resident experts on the host: the GPU's prefill FLOPs drop
    by their share of the active bytes (llama.cpp's do not: it copies them to the GPU)."""
    import dataclasses

    from k3lib.serving.roofline import _host_compute_share, prefill_terms

    base = inputs_from_plan(
        plan_for_engine(
            model="qwen3-30b-a3b",
            engine="llama.cpp",
            gpu="rtx-5090",
            gpus=1,
            weights="bf16",
            context=4096,
            with_limits=False,
        )
    )
    st = base.stages[0]
    routed = st.routed_bytes
    kt = dataclasses.replace(
        base,
        engine="ktransformers",
        host_routed_bytes=routed,
        host_bw_bytes_per_s=400e9,
        host_flops=5e12,
        stages=(dataclasses.replace(st, routed_bytes=0.0),),
    )
    m = base.model.mlp
    act_routed = routed * m.experts_per_token / m.n_routed_experts  # 8 of 128 experts' bytes
    share = act_routed / (act_routed + st.dense_bytes)
    assert _host_compute_share(kt) == pytest.approx(share)
    llama = dataclasses.replace(kt, engine="llama.cpp")
    assert _host_compute_share(llama) == 0.0
    f_kt = prefill_terms(kt, input_tokens=512).flops
    f_llama = prefill_terms(llama, input_tokens=512).flops
    linear = 2 * base.model.params_active * 512
    assert f_llama - f_kt == pytest.approx(linear * share, rel=1e-9)


def test_decode_step_adds_each_further_sequence_at_the_decode_compute_efficiency():
    """t = max(t_mem, F1/(η_c F)) + (b − 1)·F1/(η_cd F), by hand on a made-up step."""
    from k3lib.serving.roofline import Efficiency, StepTerms

    step = StepTerms(
        bytes_read=10e9,
        flops=8 * 2e9,
        comm_s=0.0,
        layers=10,
        passes=1,
        handoff_s=0.0,
        memory_bw_bytes_per_s=1e12,
        peak_flops=100e12,
        decode_batch=8,
    )
    eff = Efficiency(0.5, 0.4, 1e-5, communication=False, eta_decode_compute=0.05)
    t_mem = 10e9 / (0.5 * 1e12)  # 20 ms
    f1 = 2e9  # FLOPs of one sequence
    expect = max(t_mem, f1 / (0.4 * 100e12)) + 7 * f1 / (0.05 * 100e12) + 10 * 1e-5
    assert step.seconds(eff) == pytest.approx(expect)
    one = StepTerms(10e9, 2e9, 0.0, 10, 1, 0.0, 1e12, 100e12, decode_batch=1)
    # a single stream does not depend on η_cd
    assert one.seconds(eff) == pytest.approx(
        one.seconds(Efficiency(0.5, 0.4, 1e-5, communication=False, eta_decode_compute=0.9))
    )


def test_identical_sequences_touch_one_tokens_experts():
    """llama-batched-bench feeds the same token to every sequence: B sequences read k of E experts."""
    from k3lib.serving.experts import fraction_of_experts_touched
    from k3lib.serving.speed_rows import SpeedRow, row_identical_sequences

    inp = inputs_from_plan(
        plan_for_engine(
            model="gpt-oss-120b",
            engine="llama.cpp",
            gpu="dgx-spark",
            gpus=1,
            weights="mxfp4",
            context=2048,
            with_limits=False,
        )
    )
    st = inp.stages[0]
    same = decode_terms(inp, concurrency=32, context_tokens=0, identical_sequences=True)
    mixed = decode_terms(inp, concurrency=32, context_tokens=0)
    m = inp.model.mlp
    k_over_e = m.experts_per_token / m.n_routed_experts  # 4 / 128
    assert same.bytes_read - st.dense_bytes == pytest.approx(st.routed_bytes * k_over_e, rel=1e-6)
    assert mixed.bytes_read - st.dense_bytes == pytest.approx(
        st.routed_bytes * (1 - (1 - k_over_e) ** 32), rel=1e-6
    )  # 1 − (1 − k/E)^B
    assert fraction_of_experts_touched(n_experts=128, experts_per_token=4, tokens=1) == pytest.approx(k_over_e)
    row = SpeedRow(
        "x",
        "llama.cpp",
        "",
        "gpt-oss-120b",
        "mxfp4",
        "bf16",
        "dgx-spark",
        1,
        0,
        0,
        1,
        "",
        32,
        512,
        32,
        "output_tokens_per_s_total",
        1.0,
        "tokens/s",
        "fit",
        "",
        "",
        "",
    )
    assert row_identical_sequences(row)
    import dataclasses

    assert not row_identical_sequences(dataclasses.replace(row, quantity="decode_tokens_per_s_per_sequence"))
    assert not row_identical_sequences(dataclasses.replace(row, engine="vllm"))


def test_constants_are_fitted_per_model_kind_and_vllm_generation():
    from k3lib.core.models import get_model
    from k3lib.serving.calibration import FittedConstants, model_kind, most_specific_constants

    assert model_kind(get_model("deepseek-r1")) == "MoE" and model_kind(get_model("llama-3.1-8b")) == "dense"
    c = {
        key: FittedConstants(str(key), 0.5, 0.5, 0.0, 3, 0.1)
        for key in [("vllm", "datacenter GPU", "MoE"), ("vllm", "datacenter GPU"), ("*", "*")]
    }
    assert most_specific_constants(c, "vllm", "datacenter GPU", "MoE").group == str(("vllm", "datacenter GPU", "MoE"))
    assert most_specific_constants(c, "vllm", "datacenter GPU", "dense").group == str(("vllm", "datacenter GPU"))
    assert most_specific_constants(c, "sglang", "CPU").group == str(("*", "*"))
    cal = calibration()
    assert ("vllm-v0", "datacenter GPU") in cal.constants  # dstack's vLLM 0.7 rows
    assert all(k[0] != "vllm-v0" for k in [(h.engine,) for h in cal.holdout if h.engine == "vllm"])


def test_expected_error_needs_three_held_aside_rows():
    """A figure's expected error is a group median over ≥ 3 held-aside rows, never one row's miss."""
    from k3lib.serving.calibration import MIN_ERROR_ROWS, HoldoutError

    cal = calibration()
    one = HoldoutError("vllm", "datacenter GPU", "decode_tokens_per_s_per_sequence", 1, 2.0, 0.0, 2.0, 100.0)
    pooled = HoldoutError("vllm", "datacenter GPU", "*", 9, 1.1, 0.6, 1.5, 20.0)
    import dataclasses

    c = dataclasses.replace(cal, holdout_by_class=(one, pooled))
    assert MIN_ERROR_ROWS == 3
    assert c.expected_error_pct("vllm", "datacenter GPU", "decode_tokens_per_s_per_sequence") == 20.0
    c2 = dataclasses.replace(cal, holdout_by_class=(dataclasses.replace(one, rows=3), pooled))
    assert c2.expected_error_pct("vllm", "datacenter GPU", "decode_tokens_per_s_per_sequence") == 100.0
