"""Drive the real llama.cpp (through llama-cpp-python's ctypes bindings) in a child process.

    python runner.py build META.gguf OUT.gguf        llama.cpp creates the tensors from the
                                                      metadata and saves a complete F32 GGUF
    python runner.py quantize IN.gguf OUT.gguf FTYPE  llama-quantize's recipe (e.g. Q4_K_M)
    python runner.py load MODEL.gguf '{"n_ctx": …}'   load and create a context; print
                                                      llama.cpp's log, then one JSON line of
                                                      exact figures (llama_model_size, n_params)

A child process, because llama.cpp aborts the process on some errors.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys


def _lib():
    import llama_cpp

    @llama_cpp.llama_log_callback
    def _collect(level, text, user_data):  # every line llama.cpp logs, at once (an abort loses none)
        sys.stdout.write(text.decode("utf-8", "replace"))
        sys.stdout.flush()

    llama_cpp.llama_log_set(_collect, ctypes.c_void_p(0))
    _lib.keep = _collect  # the callback must outlive this call
    return llama_cpp


def _ggml_base(llama_cpp):
    libdir = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
    name = next(n for n in os.listdir(libdir) if n.startswith("libggml-base"))
    lib = ctypes.CDLL(os.path.join(libdir, name))

    class GGUFInitParams(ctypes.Structure):
        _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]

    lib.gguf_init_from_file.argtypes = [ctypes.c_char_p, GGUFInitParams]
    lib.gguf_init_from_file.restype = ctypes.c_void_p
    lib.ggml_nbytes.argtypes = [ctypes.c_void_p]
    lib.ggml_nbytes.restype = ctypes.c_size_t
    lib.ggml_backend_tensor_memset.argtypes = [ctypes.c_void_p, ctypes.c_uint8, ctypes.c_size_t, ctypes.c_size_t]
    lib.ggml_backend_tensor_memset.restype = None
    return lib, GGUFInitParams


def build(meta: str, out: str) -> None:
    llama_cpp = _lib()
    ggml, params_t = _ggml_base(llama_cpp)
    gctx = ggml.gguf_init_from_file(meta.encode(), params_t(True, None))
    if not gctx:
        raise SystemExit(f"gguf_init_from_file failed for {meta}")

    @llama_cpp.llama_model_set_tensor_data_t
    def _zero(tensor, user_data):  # deterministic weights: all zero
        ggml.ggml_backend_tensor_memset(tensor, 0, 0, ggml.ggml_nbytes(tensor))

    mp = llama_cpp.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = llama_cpp.llama_model_init_from_user(gctx, _zero, None, mp)
    if not model:
        raise SystemExit(f"llama_model_init_from_user failed for {meta}")
    llama_cpp.llama_model_save_to_file(model, out.encode())
    llama_cpp.llama_model_free(model)


def quantize(src: str, out: str, ftype: str) -> None:
    llama_cpp = _lib()
    qp = llama_cpp.llama_model_quantize_default_params()
    qp.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype.upper()}")
    qp.nthread = 2
    rc = llama_cpp.llama_model_quantize(src.encode(), out.encode(), ctypes.byref(qp))
    if rc != 0:
        raise SystemExit(f"llama_model_quantize returned {rc}")


_CACHE_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "bf16": 30}


def load(model_path: str, settings: str) -> None:
    llama_cpp = _lib()
    s = json.loads(settings)
    mp = llama_cpp.llama_model_default_params()
    mp.n_gpu_layers = 0
    mp.load_mode = 1 if s.get("use_mmap", False) else 0  # LLAMA_LOAD_MODE_MMAP / _NONE
    model = llama_cpp.llama_model_load_from_file(model_path.encode(), mp)
    if not model:
        raise SystemExit(f"llama_model_load_from_file failed for {model_path}")
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = int(s["n_ctx"])
    cp.n_batch = int(s.get("n_batch", max(int(s.get("n_ubatch", 512)), 512)))
    cp.n_ubatch = int(s.get("n_ubatch", 512))
    cp.n_seq_max = int(s.get("n_seq", 1))
    cp.n_rs_seq = int(s.get("n_rs_seq", 0))
    cp.n_threads = cp.n_threads_batch = 2
    cp.type_k = _CACHE_TYPES[s.get("type_k", "f16")]
    cp.type_v = _CACHE_TYPES[s.get("type_v", "f16")]
    fa = s.get("flash_attn", True)
    cp.flash_attn_type = -1 if fa == "auto" else 1 if fa else 0  # LLAMA_FLASH_ATTN_TYPE_AUTO = -1
    cp.swa_full = bool(s.get("swa_full", False))
    cp.kv_unified = bool(s.get("kv_unified", False))
    ctx = llama_cpp.llama_init_from_model(model, cp)
    ok = bool(ctx)
    exact = {
        "ok": ok,
        "model_size": int(llama_cpp.llama_model_size(model)),
        "n_params": int(llama_cpp.llama_model_n_params(model)),
    }
    if ctx:
        exact["n_ctx"] = int(llama_cpp.llama_n_ctx(ctx))
        llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    sys.stdout.write("\nK3_EXACT " + json.dumps(exact) + "\n")


if __name__ == "__main__":
    cmd, *rest = sys.argv[1:]
    {"build": build, "quantize": quantize, "load": load}[cmd](*rest)
