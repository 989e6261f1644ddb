"""Benchmark: llama.cpp decode and prefill on this machine's CPU against the bandwidth model.

    .venv/bin/python benchmarks/bench_llamacpp_cpu.py                 # build (or reuse) and measure
    .venv/bin/python benchmarks/bench_llamacpp_cpu.py --llama-cpp-dir /tmp/k3-llamacpp-o3 --write
                                                      # the optimized build; write data/measured/llamacpp-cpu-*.csv

**Which llama.cpp.** The tier's build in .venv (scripts/install-llamacpp.sh) is compiled at -O0
without OpenMP or native CPU variants: right for buffer sizes, ~10x too slow for speed (the F16
model below decodes at 4.1 tokens/s on 1 thread there). Speed is measured with the same
llama-cpp-python 0.3.36 (llama.cpp 0c1e57098) built as llama.cpp builds by default, Release (-O3),
GGML_NATIVE (-march=native) and OpenMP, into a directory of its own (about 15 minutes on 2 cores;
the .venv is left alone):

    CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_SERVER=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 .venv/bin/python -m pip install --no-cache-dir \
        --no-binary llama-cpp-python --no-deps --target /tmp/k3-llamacpp-o3 llama-cpp-python==0.3.36

The models are built and quantized with the .venv's build (the files do not depend on it).

What it does (issue 22 §2: "time decode and prefill of its tiny models on the CPU backend"):

1. **Models.** A llama-family model built the way the real-llama.cpp tier builds its tiny models
   (tests/llamacpp: the metadata written with ``gguf``, the tensors created and saved by llama.cpp
   itself through ``llama_model_init_from_user``/``llama_model_save_to_file``, optional tensors
   stripped), but large enough that one decode step reads far more weight bytes than the 32 MiB L3
   cache holds: hidden 2048, 8 layers, 16 heads, 4 KV heads, FFN 5632 (~363 M parameters), then
   quantized by llama.cpp's ``llama_model_quantize`` to F16, Q8_0, Q4_0 and Q4_K_M
   (``--quants``). The weights are all zero (as in the tier); a CPU kernel reads and multiplies
   them the same way whatever their values. Files are kept in ``--models-dir`` and reused.
2. **llama.cpp.** Each model is loaded (no mmap: the weights live in an anonymous buffer) in a child
   process; at 1 and 2 threads it times, after a warm-up, ``--repeats`` times each:
   *decode*: a 16-token prompt, then ``--decode-tokens`` single-token ``llama_decode`` calls
   (the sampled token does not matter: the compute is the same), tokens ÷ wall time;
   *prefill*: a 512-token prompt in one ``llama_decode`` call (n_batch = n_ubatch = 512) on an
   empty cache, 512 ÷ wall time. Medians are reported (and the min–max spread).
3. **Memory bandwidth.** numpy over a 1 GiB array (32× the L3): *read* = ``np.add.reduce`` of
   float64 (bytes read ÷ time), *copy* = ``np.copyto`` (bytes read + bytes written ÷ time, the
   write-allocate read not counted); 1 thread, and 2 threads each on one half (numpy releases the
   GIL in both loops). The prediction uses the *paired* read bandwidth: measured in the llama.cpp
   child process (same 1 GiB read, median of 3) right before each decode repeat at the same thread
   count, median over the repeats, so that load from other processes hits both alike. The same
   read and copy are also measured in this process before and after all llama.cpp runs
   (``read_bandwidth_global``, ``copy``: median of 2 × ``--repeats``), for reference.
4. **Compute ceiling.** numpy float32 matmul (OpenBLAS sgemm, 2048³) at 1 and 2 threads, each in a
   child process with OPENBLAS_NUM_THREADS set: a *measured* reference, not the core's peak
   (this llama.cpp build uses AVX2 kernels, its prefill runs F16/int8 dot products, not sgemm).
5. **Comparison.** bytes per decoded token = the weight bytes of the GGUF as
   ``k3lib.loaders.load_gguf`` reads them, less the token-embedding table (a decode reads one
   row of it) plus that one row, plus the KV read at the mean context of the timed tokens
   (``Architecture.kv_bytes_per_token`` at F16). predicted decode tokens/s = read bandwidth (at
   the same thread count) ÷ bytes per token; ratio = measured ÷ predicted. Prefill: FLOPs =
   2 · parameters · tokens (the attention term, 2·2·L·ctx·d per token, is added; it is < 1 % here);
   ratio = achieved FLOP/s ÷ the sgemm reference.

The machine is shared (2 cores, other agents run on it): every figure is a median, the load
average is printed beside it, and **the ratios, not the absolute times, are the result**.
Speed claims live here, never in timed tests (tests/test_llamacpp_cpu_speed_data.py checks only
the written tables' consistency).
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve()

ENGINE_VERSION = "0c1e57098 (llama-cpp-python 0.3.36)"
SOURCE = "benchmarks/bench_llamacpp_cpu.py on the CI machine (2 cores)"
SPEED_CSV = ROOT / "data" / "measured" / "llamacpp-cpu-speed.csv"
BW_CSV = ROOT / "data" / "measured" / "llamacpp-cpu-bandwidth.csv"
SPEED_COLUMNS = ("id", "engine", "engine_version", "model", "weights", "kv_dtype", "gpu", "gpus", "tp", "pp", "ep",
                 "host", "concurrency", "input_tokens", "output_tokens", "quantity", "value", "unit", "split",
                 "evidence", "source", "date")
BW_COLUMNS = ("model", "weights", "threads", "decode_tokens_per_s", "prefill_tokens_per_s", "weight_bytes_read",
              "kv_bytes_read", "bytes_per_token", "read_bandwidth_bytes_per_s", "read_bandwidth_global_bytes_per_s",
              "copy_bandwidth_bytes_per_s",
              "predicted_decode_tokens_per_s", "decode_ratio", "params", "prefill_flops",
              "sgemm_flops_per_s", "prefill_flops_per_s", "prefill_ratio", "loadavg", "llama_cpp_build", "date")

PROMPT = 16          #: tokens before the timed decode steps
PREFILL = 512        #: tokens of the timed prefill (one batch)


# ---------------------------------------------------------------- models (the tier's builders)

def model_spec(hidden: int, layers: int, heads: int, kv_heads: int, ff: int):
    sys.path.insert(0, str(ROOT / "tests"))
    from llamacpp.families import Family, _base

    name = f"tiny-llama-d{hidden}-l{layers}"
    return Family(name, "llama", _base(hidden, layers, heads, kv_heads, ff),
                  "a llama-family model large enough that decode is bandwidth-bound on a CPU")


def build_models(fam, quants: list[str], directory: Path) -> dict[str, Path]:
    """The F32 model (llama.cpp creates and saves it, as the tier does) and llama.cpp's quantizations;
    existing files are reused."""
    sys.path.insert(0, str(ROOT / "tests"))
    from llamacpp.engine import run
    from llamacpp.families import strip_optional, write_metadata

    directory.mkdir(parents=True, exist_ok=True)
    f32 = directory / f"{fam.name}.F32.gguf"
    out: dict[str, Path] = {}
    todo = [q for q in quants if not (directory / f"{fam.name}.{q}.gguf").exists()]
    if todo and not f32.exists():
        meta, raw = directory / f"{fam.name}.meta.gguf", directory / f"{fam.name}.raw.gguf"
        t0 = time.perf_counter()
        write_metadata(fam, meta)
        run("build", str(meta), str(raw), timeout=900)
        strip_optional(raw, f32, meta)
        raw.unlink()
        print(f"built {f32.name} ({f32.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t0:.0f} s", flush=True)
    for q in quants:
        path = directory / f"{fam.name}.{q}.gguf"
        if not path.exists():
            t0 = time.perf_counter()
            run("quantize", str(f32), str(path), q, timeout=900)
            print(f"quantized {path.name} ({path.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t0:.0f} s",
                  flush=True)
        out[q] = path
    return out


# ---------------------------------------------------------------- llama.cpp timing (child process)

def _child_measure(model_path: str, cfg_json: str) -> None:
    """Load ``model_path`` and time decode and prefill at each thread count; print one JSON line."""
    import ctypes

    import llama_cpp as L

    cfg = json.loads(cfg_json)

    @L.llama_log_callback
    def _quiet(level, text, user_data):
        pass

    L.llama_log_set(_quiet, ctypes.c_void_p(0))
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    if hasattr(mp, "load_mode"):
        mp.load_mode = 0                      # no mmap: the weights in an anonymous buffer
    else:
        mp.use_mmap = False
    model = L.llama_model_load_from_file(model_path.encode(), mp)
    if not model:
        raise SystemExit(f"cannot load {model_path}")
    cp = L.llama_context_default_params()
    cp.n_ctx = 1024
    cp.n_batch = cp.n_ubatch = PREFILL
    cp.n_seq_max = 1
    cp.n_threads = cp.n_threads_batch = max(cfg["threads"])
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        raise SystemExit("cannot create a context")
    mem = L.llama_get_memory(ctx)
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))

    def tokens(n: int, seed: int):
        return (L.llama_token * n)(*[(seed * 131 + 7 * i + 1) % n_vocab for i in range(n)])

    def decode_batch(toks, n: int) -> None:
        rc = L.llama_decode(ctx, L.llama_batch_get_one(toks, n))
        if rc != 0:
            raise SystemExit(f"llama_decode returned {rc}")

    def decode_run(seed: int) -> float:
        L.llama_memory_clear(mem, True)
        decode_batch(tokens(PROMPT, seed), PROMPT)
        L.llama_synchronize(ctx)
        one = [tokens(1, seed + i) for i in range(cfg["decode_tokens"])]
        t0 = time.perf_counter()
        for t in one:
            decode_batch(t, 1)
        L.llama_synchronize(ctx)
        return cfg["decode_tokens"] / (time.perf_counter() - t0)

    def prefill_run(seed: int) -> float:
        L.llama_memory_clear(mem, True)
        toks = tokens(PREFILL, seed)
        t0 = time.perf_counter()
        decode_batch(toks, PREFILL)
        L.llama_synchronize(ctx)
        return PREFILL / (time.perf_counter() - t0)

    import numpy as np

    stream = np.ones(2**27)                                  # 1 GiB of float64: 32x the L3

    def read_bw(n: int) -> float:
        """Streaming-read bandwidth at ``n`` threads, right beside a decode run (median of 3)."""
        parts = [stream[i * stream.size // n:(i + 1) * stream.size // n] for i in range(n)]
        rates = []
        for _ in range(3):
            ts = [threading.Thread(target=np.add.reduce, args=(part,)) for part in parts]
            t0 = time.perf_counter()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            rates.append(stream.nbytes / (time.perf_counter() - t0))
        return statistics.median(rates)

    result: dict = {"model_size": int(L.llama_model_size(model)), "n_params": int(L.llama_model_n_params(model)),
                    "system_info": L.llama_print_system_info().decode().strip(), "library": L.__file__,
                    "threads": {}}
    for n in cfg["threads"]:
        L.llama_set_n_threads(ctx, n, n)
        decode_run(0)                                        # warm-up (first touches, repack caches)
        prefill_run(0)
        read_bw(n)
        dec, pre, loads, bws = [], [], [], []
        for r in range(cfg["repeats"]):                      # alternate, so drift hits all alike
            bws.append(read_bw(n))                           # the bandwidth paired with this decode run
            dec.append(decode_run(r + 1))
            pre.append(prefill_run(r + 1))
            loads.append(os.getloadavg()[0])
        result["threads"][str(n)] = {"decode": dec, "prefill": pre, "loadavg": loads, "read_bw": bws}
    L.llama_free(ctx)
    L.llama_model_free(model)
    print("K3_BENCH " + json.dumps(result), flush=True)


def time_llamacpp(path: Path, threads: list[int], repeats: int, decode_tokens: int, build_dir: str = "") -> dict:
    cfg = json.dumps({"threads": threads, "repeats": repeats, "decode_tokens": decode_tokens})
    env = {**os.environ, "OMP_NUM_THREADS": str(max(threads))}
    if build_dir:                      # an optimized llama-cpp-python build (pip --target DIR) first on the path
        env["PYTHONPATH"] = os.pathsep.join([build_dir, *filter(None, [os.environ.get("PYTHONPATH")])])
    p = subprocess.run([sys.executable, str(HERE), "_child_llamacpp", str(path), cfg], capture_output=True,
                       text=True, env=env, timeout=1200)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("K3_BENCH ")), None)
    if p.returncode or line is None:
        raise SystemExit(f"llama.cpp timing failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return json.loads(line[len("K3_BENCH "):])


# ---------------------------------------------------------------- machine: bandwidth and sgemm

def memory_bandwidth(threads: int, repeats: int, gib: float = 1.0) -> dict[str, list[float]]:
    """Streaming read (np.add.reduce of float64) and copy (np.copyto) over ``gib`` GiB, split over
    ``threads`` Python threads (numpy releases the GIL in both); bytes per second per repeat."""
    import numpy as np

    n = int(gib * 2**30) // 8
    a = np.ones(n)
    b = np.empty_like(a)
    parts = [slice(i * n // threads, (i + 1) * n // threads) for i in range(threads)]

    def timed(fn) -> float:
        ts = [threading.Thread(target=fn, args=(s,)) for s in parts]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return time.perf_counter() - t0

    read = lambda s: np.add.reduce(a[s])                  # noqa: E731
    copy = lambda s: np.copyto(b[s], a[s])                # noqa: E731
    timed(read), timed(copy)                               # warm-up (pages faulted in)
    out: dict[str, list[float]] = {"read": [], "copy": []}
    for _ in range(repeats):
        out["read"].append(a.nbytes / timed(read))
        out["copy"].append(2 * a.nbytes / timed(copy))
    return out


def _child_sgemm(size: str, repeats: str) -> None:
    import numpy as np

    n = int(size)
    x = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    y = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    x @ y
    rates = []
    for _ in range(int(repeats)):
        t0 = time.perf_counter()
        x @ y
        rates.append(2 * n**3 / (time.perf_counter() - t0))
    print("K3_BENCH " + json.dumps(rates), flush=True)


def sgemm_rate(threads: int, repeats: int, size: int = 2048) -> list[float]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    p = subprocess.run([sys.executable, str(HERE), "_child_sgemm", str(size), str(repeats)], capture_output=True,
                       text=True, env=env, timeout=600)
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("K3_BENCH "))
    return json.loads(line[len("K3_BENCH "):])


# ---------------------------------------------------------------- the model's figures

def bytes_per_token(path: Path, context: float) -> tuple[int, int, int]:
    """(weight bytes read per decoded token, KV bytes read at ``context``, parameters) from k3lib's
    GGUF reader: every tensor but the token embedding, plus one row of it."""
    from k3lib.loaders import load_gguf

    loaded = load_gguf(path)
    hidden = loaded.architecture.hidden_size
    weights = 0
    for t in loaded.tensors:
        if t.name == "token_embd.weight":                  # one row (hidden elements) of vocab rows
            weights += t.n_bytes // (math.prod(t.shape) // hidden)
        else:
            weights += t.n_bytes
    params = sum(math.prod(t.shape) for t in loaded.tensors)
    kv = int(loaded.architecture.kv_bytes_per_token(2) * context)      # F16 K and V
    return weights, kv, params


def _med(xs: list[float]) -> float:
    return statistics.median(xs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", default=os.environ.get("K3_BENCH_MODELS", "/tmp/k3-bench-llamacpp"),
                    help="where the GGUF files are built and reused (default /tmp/k3-bench-llamacpp)")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=5632)
    ap.add_argument("--quants", default="F16,Q8_0,Q4_0,Q4_K_M", help="comma-separated llama.cpp file types")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--llama-cpp-dir", default=os.environ.get("K3_BENCH_LLAMACPP", ""),
                    help="a directory holding an optimized llama-cpp-python 0.3.36 build (pip install --target DIR, "
                         "see the module docstring); default: the .venv's build, which the tier compiles at -O0")
    ap.add_argument("--write", action="store_true", help="write data/measured/llamacpp-cpu-speed.csv and "
                                                         "llamacpp-cpu-bandwidth.csv")
    args = ap.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    quants = args.quants.split(",")
    t_start = time.perf_counter()
    date = _dt.date.today().isoformat()

    fam = model_spec(args.hidden, args.layers, args.heads, args.kv_heads, args.ff)
    paths = build_models(fam, quants, Path(args.models_dir))

    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores; other agents share them)", flush=True)
    bw_before = {n: memory_bandwidth(n, args.repeats) for n in threads}
    sgemm = {n: sgemm_rate(n, args.repeats) for n in threads}
    timings = {}
    for q in quants:
        t0 = time.perf_counter()
        timings[q] = time_llamacpp(paths[q], threads, args.repeats, args.decode_tokens, args.llama_cpp_dir)
        print(f"timed {fam.name} {q} in {time.perf_counter() - t0:.0f} s", flush=True)
    info = timings[quants[0]]["system_info"]
    build = ("optimized build (" + args.llama_cpp_dir + ")") if args.llama_cpp_dir else \
        "the .venv's build (scripts/install-llamacpp.sh compiles it at -O0: NOT a speed reference)"
    build_label = ("llama.cpp built Release -O3 -march=native with OpenMP" if args.llama_cpp_dir else
                   "llama.cpp built -O0 by scripts/install-llamacpp.sh (not a speed reference)")
    print(f"llama.cpp: {timings[quants[0]]['library']}, {build}; {info}", flush=True)
    bw_after = {n: memory_bandwidth(n, args.repeats) for n in threads}
    bw = {n: {k: bw_before[n][k] + bw_after[n][k] for k in ("read", "copy")} for n in threads}

    print()
    print(f"machine: memory bandwidth (numpy, 1 GiB, median of {2 * args.repeats}: {args.repeats} before and "
          f"{args.repeats} after the llama.cpp runs); sgemm 2048³ float32 (median of {args.repeats})")
    for n in threads:
        print(f"  {n} thread(s): read {_med(bw[n]['read']) / 1e9:6.1f} GB/s (before {_med(bw_before[n]['read']) / 1e9:.1f}, "
              f"after {_med(bw_after[n]['read']) / 1e9:.1f}), copy {_med(bw[n]['copy']) / 1e9:6.1f} GB/s, "
              f"sgemm {_med(sgemm[n]) / 1e9:6.1f} GFLOP/s")

    context = PROMPT + (args.decode_tokens - 1) / 2            # mean cache length over the timed steps
    speed_rows, bw_rows, n_id = [], [], 0
    print()
    hdr = (f"{'model':<22}{'quant':<7}{'thr':>4}{'decode t/s':>11}{'prefill t/s':>12}{'MB/token':>10}"
           f"{'read GB/s':>10}{'predicted':>10}{'ratio':>7}{'prefill/sgemm':>14}{'load':>6}")
    print(hdr)
    print("-" * len(hdr))
    for q in quants:
        w, kv, params = bytes_per_token(paths[q], context)
        per_tok = w + kv
        tm = timings[q]
        flops_tok = 2 * params + 2 * 2 * args.layers * args.hidden * (PREFILL / 2)   # + causal attention, mean ctx
        for n in threads:
            r = tm["threads"][str(n)]
            dec, pre, load = _med(r["decode"]), _med(r["prefill"]), _med(r["loadavg"])
            read, copy, peak = _med(r["read_bw"]), _med(bw[n]["copy"]), _med(sgemm[n])
            read_global = _med(bw[n]["read"])
            pred = read / per_tok
            ratio = dec / pred
            pre_flops = pre * flops_tok
            pre_ratio = pre_flops / peak
            print(f"{fam.name:<22}{q:<7}{n:>4}{dec:>11.2f}{pre:>12.1f}{per_tok / 1e6:>10.1f}{read / 1e9:>10.1f}"
                  f"{pred:>10.2f}{ratio:>7.2f}{pre_ratio:>14.2f}{load:>6.2f}")
            bw_rows.append({"model": fam.name, "weights": q, "threads": n, "decode_tokens_per_s": f"{dec:.3f}",
                            "prefill_tokens_per_s": f"{pre:.2f}", "weight_bytes_read": w, "kv_bytes_read": kv,
                            "bytes_per_token": per_tok, "read_bandwidth_bytes_per_s": f"{read:.4g}",
                            "read_bandwidth_global_bytes_per_s": f"{read_global:.4g}",
                            "copy_bandwidth_bytes_per_s": f"{copy:.4g}",
                            "predicted_decode_tokens_per_s": f"{pred:.3f}", "decode_ratio": f"{ratio:.3f}",
                            "params": params, "prefill_flops": f"{flops_tok * PREFILL:.4g}",
                            "sgemm_flops_per_s": f"{peak:.4g}", "prefill_flops_per_s": f"{pre_flops:.4g}",
                            "prefill_ratio": f"{pre_ratio:.3f}", "loadavg": f"{load:.2f}",
                            "llama_cpp_build": build_label, "date": date})
            for quantity, value, runs, inp, outp, unit in (
                    ("decode_tokens_per_s_per_sequence", dec, r["decode"], PROMPT, args.decode_tokens, "tokens/s"),
                    ("prefill_tokens_per_s", pre, r["prefill"], PREFILL, 0, "tokens/s")):
                n_id += 1
                what = "decode" if quantity.startswith("decode") else "prefill"
                evidence = (f"{fam.name} {q} {what} {n} thread(s): median {value:.2f} tokens/s of {len(runs)} "
                            f"(min {min(runs):.2f}, max {max(runs):.2f}); loadavg {load:.2f}")
                speed_rows.append({
                    "id": f"llamacpp-cpu-{fam.name}-{q.lower()}-t{n}-{what}", "engine": "llama.cpp",
                    "engine_version": ENGINE_VERSION, "model": fam.name, "weights": q, "kv_dtype": "f16",
                    "gpu": "cpu", "gpus": 0, "tp": 1, "pp": 1, "ep": 1, "host": "this-machine",
                    "concurrency": 1, "input_tokens": inp, "output_tokens": outp, "quantity": quantity,
                    "value": f"{value:.3f}" if what == "decode" else f"{value:.2f}", "unit": unit,
                    "split": "holdout", "evidence": evidence, "source": f"{SOURCE}; {build_label}; threads={n}", "date": date})
    print()
    for n in threads:
        rs = [float(r["decode_ratio"]) for r in bw_rows if r["threads"] == n]
        print(f"decode at {n} thread(s) reaches {min(rs):.0%}–{max(rs):.0%} of the bandwidth prediction "
              f"(measured ÷ read-bandwidth ceiling)")
    print("Ratios, not absolute timings, are the result: the machine is shared and noisy.")
    print(f"total benchmark time: {time.perf_counter() - t_start:.0f} s")

    if args.write:
        for path, cols, rows in ((SPEED_CSV, SPEED_COLUMNS, speed_rows), (BW_CSV, BW_COLUMNS, bw_rows)):
            with open(path, "w", newline="", encoding="utf-8") as f:
                wr = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
                wr.writeheader()
                wr.writerows(rows)
            print(f"wrote {path.relative_to(ROOT)} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_child_llamacpp":
        _child_measure(*sys.argv[2:4])
    elif len(sys.argv) > 1 and sys.argv[1] == "_child_sgemm":
        _child_sgemm(*sys.argv[2:4])
    else:
        raise SystemExit(main())
