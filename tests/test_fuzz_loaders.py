"""Hostile and careless model files (issue 14): every case ends in a LoadedModel or one
K3InputError naming the field, within 1 s and 100 MB, and a 152k-vocabulary GGUF header
loads in < 0.5 s and < 50 MB (tracemalloc peak).

Files are generated at test time in ``tmp_path``: well-formed ones with the ``gguf``
package's writer, malformed ones by mutating their bytes (hypothesis) or writing
hostile headers by hand.
"""

from __future__ import annotations

import json
import struct
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3lib.core.errors import K3InputError
from k3lib.loaders import load_gguf, load_safetensors, read_safetensors_header

MB = 10**6
FAST = settings(
    max_examples=40, deadline=1000, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True
)


def write_qwen_like_gguf(path: Path, *, vocab: int, block_count: int = 2, extra: dict | None = None) -> Path:
    """A small qwen2-style GGUF whose tokenizer has ``vocab`` tokens (tokens, scores and
    types arrays, as llama.cpp's converter writes them) and 2 layers of tiny F32 tensors."""
    import gguf

    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_block_count(block_count)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_context_length(32768)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok{i}".encode() for i in range(vocab)])
    w.add_token_scores([0.0] * vocab)
    w.add_token_types([1] * vocab)
    for key, value in (extra or {}).items():
        w.add_uint32(key, value)
    w.add_tensor("token_embd.weight", np.zeros((vocab if vocab <= 4096 else 32, 64), dtype=np.float32))
    for i in range(2):
        w.add_tensor(f"blk.{i}.attn_q.weight", np.zeros((64, 64), dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_up.weight", np.zeros((128, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def measure(fn):
    """(result or exception, seconds, tracemalloc peak bytes) of ``fn``: timed in one call and
    traced in a second one, because tracing every allocation slows Python several-fold."""

    def call():
        try:
            return fn()
        except Exception as exc:  # any error: the caller inspects it
            return exc

    t0 = time.perf_counter()
    out = call()
    seconds = time.perf_counter() - t0
    tracemalloc.start()
    try:
        call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, seconds, peak


@pytest.fixture(scope="module")
def gguf_152k(tmp_path_factory) -> Path:
    return write_qwen_like_gguf(tmp_path_factory.mktemp("g") / "v152k.gguf", vocab=152_064)


def test_152k_vocab_gguf_header_loads_in_half_a_second_and_50_mb(gguf_152k):
    load_gguf(write_qwen_like_gguf(gguf_152k.parent / "warm.gguf", vocab=8))  # imports, not the measure
    m, seconds, peak = measure(lambda: load_gguf(gguf_152k))
    assert not isinstance(m, Exception), m
    assert m.architecture.vocab_size == 32  # token_embd's second dimension (the tensor here is 32 rows)
    assert m.metadata["tokenizer.ggml.tokens"] == 152_064  # the length, not 152k strings
    assert seconds < 0.5, f"{seconds:.2f} s"
    assert peak < 50 * MB, f"{peak / MB:.0f} MB"


def test_block_count_of_a_billion_fails_fast_without_a_list_that_long(tmp_path):
    path = write_qwen_like_gguf(tmp_path / "deep.gguf", vocab=8, block_count=10**9)
    err, seconds, peak = measure(lambda: load_gguf(path))
    assert isinstance(err, K3InputError) and err.field == "gguf.qwen2.block_count", err
    assert seconds < 1 and peak < 10 * MB, (seconds, peak)


def _gguf_bytes(tmp_path: Path) -> bytes:
    return write_qwen_like_gguf(tmp_path / "seed.gguf", vocab=16).read_bytes()


@FAST
@given(data=st.data())
def test_mutated_gguf_gives_a_model_or_a_named_error(tmp_path, data):
    seed = _SEED_GGUF.setdefault("bytes", _gguf_bytes(tmp_path))
    buf = bytearray(seed)
    header_end = min(len(buf), 1200)  # the metadata and tensor table live here
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, header_end - 8))
        width = data.draw(st.sampled_from([1, 4, 8]))
        value = data.draw(st.sampled_from([0, 1, 0xFF, 2**31 - 1, 2**32 - 1, 2**63, 2**64 - 1]))
        buf[at : at + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
    if data.draw(st.booleans()):
        buf = buf[: data.draw(st.integers(0, len(buf)))]
    path = tmp_path / "m.gguf"
    path.write_bytes(bytes(buf))
    out, seconds, peak = measure(lambda: load_gguf(path))
    assert not isinstance(out, Exception) or isinstance(out, K3InputError), repr(out)
    assert seconds < 1 and peak < 100 * MB, (seconds, peak)


_SEED_GGUF: dict = {}


# --- safetensors -------------------------------------------------------------------------------------------


def _safetensors_bytes(header: dict | bytes, data: bytes = b"") -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


@pytest.mark.parametrize(
    "blob, field_part",
    [
        (struct.pack("<Q", 2**63) + b"{}", "header length"),
        (struct.pack("<Q", 200 * 2**20) + b"{}", "header length"),
        (_safetensors_bytes(b"[" * 100_000 + b"]" * 100_000), "JSON"),
        (_safetensors_bytes({"w": {"dtype": "F16", "shape": [2**62, 2**62], "data_offsets": [0, 8]}}), "w"),
        (_safetensors_bytes({"w": {"dtype": "F16", "shape": "x", "data_offsets": [0, 8]}}), "w"),
        (_safetensors_bytes({"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 2**70]}}), "w"),
    ],
)
def test_hostile_safetensors_headers_give_a_named_error(tmp_path, blob, field_part):
    path = tmp_path / "model.safetensors"
    path.write_bytes(blob)
    err, seconds, peak = measure(lambda: read_safetensors_header(path))
    assert isinstance(err, K3InputError), repr(err)
    assert field_part in str(err)
    assert seconds < 1 and peak < 100 * MB, (seconds, peak)


@FAST
@given(
    header=st.recursive(
        st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
        max_leaves=12,
    )
)
def test_random_json_safetensors_headers(tmp_path, header):
    path = tmp_path / "model.safetensors"
    path.write_bytes(_safetensors_bytes(json.dumps({"w": header}).encode(), b"\0" * 16))
    out, seconds, peak = measure(lambda: read_safetensors_header(path))
    assert not isinstance(out, Exception) or isinstance(out, K3InputError), repr(out)
    assert seconds < 1 and peak < 100 * MB


# --- GGUF metadata of the wrong type, and hand-written hostile headers ---------------------------------------

ARCH_KEYS = [
    "block_count",
    "embedding_length",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "context_length",
    "attention.key_length",
    "attention.value_length",
    "expert_count",
    "expert_used_count",
    "attention.sliding_window",
    "attention.kv_lora_rank",
    "rope.dimension_count",
    "nextn_predict_layers",
]


def _write_with_value(path: Path, key: str, kind: str, value) -> Path:
    """The tiny qwen2 GGUF with ``qwen2.<key>`` written as ``kind`` (the writer's own encoders)."""
    import gguf

    w = gguf.GGUFWriter(str(path), "qwen2")
    base = {
        "block_count": 2,
        "embedding_length": 64,
        "feed_forward_length": 128,
        "attention.head_count": 4,
        "attention.head_count_kv": 2,
        "context_length": 4096,
    }
    for k, v in base.items():
        if k != key:
            w.add_uint32(f"qwen2.{k}", v)
    full = f"qwen2.{key}"
    {
        "string": w.add_string,
        "float": w.add_float32,
        "bool": w.add_bool,
        "uint64": w.add_uint64,
        "int32": w.add_int32,
        "array": w.add_array,
    }[kind](full, value)
    w.add_token_list([b"a", b"b"])
    w.add_tensor("token_embd.weight", np.zeros((2, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@settings(max_examples=40, deadline=1000, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(ARCH_KEYS),
    kind_value=st.one_of(
        st.tuples(st.just("string"), st.text(max_size=5)),
        st.tuples(st.just("float"), st.floats(width=32)),
        st.tuples(st.just("bool"), st.booleans()),
        st.tuples(st.just("uint64"), st.integers(0, 2**64 - 1)),
        st.tuples(st.just("int32"), st.integers(-(2**31), 2**31 - 1)),
        st.tuples(st.just("array"), st.lists(st.integers(0, 2**31 - 1), max_size=6)),
    ),
)
def test_gguf_metadata_of_any_type_gives_a_model_or_a_named_error(tmp_path, key, kind_value):
    kind, value = kind_value
    path = _write_with_value(tmp_path / "t.gguf", key, kind, value)
    out, seconds, peak = measure(lambda: load_gguf(path))
    if isinstance(out, Exception):
        assert isinstance(out, K3InputError) and out.field.startswith("gguf"), repr(out)
    assert seconds < 1 and peak < 100 * MB, (seconds, peak)


@pytest.mark.parametrize(
    "kind, value", [("int32", 0), ("uint64", 0), ("array", [0, 0]), ("bool", False), ("bool", True)]
)
def test_gguf_context_length_zero_or_boolean_names_the_key(tmp_path, kind, value):
    # issue 21: a context_length of 0 was read as a silent 4,096 (True as a 1-token model)
    path = _write_with_value(tmp_path / "t.gguf", "context_length", kind, value)
    with pytest.raises(K3InputError) as err:
        load_gguf(path)
    assert err.value.field == "gguf.qwen2.context_length", str(err.value)


def _raw_gguf(n_tensors: int, kvs: bytes, n_kv: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + kvs


def _key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


@pytest.mark.parametrize(
    "blob, part",
    [
        (_raw_gguf(2**40, b"", 0), "tensor count"),
        (_raw_gguf(0, b"", 2**60), "metadata count"),
        (_raw_gguf(0, _key("a") + struct.pack("<IQ", 8, 2**63) + b"x" * 64, 1), "truncated"),  # string 2^63 long
        (_raw_gguf(0, _key("a") + struct.pack("<IIQ", 9, 8, 2**62) + b"x" * 64, 1), "truncated"),  # 2^62 strings
        (_raw_gguf(0, _key("a") + struct.pack("<IIQ", 9, 6, 2**61) + b"x" * 64, 1), "truncated"),  # 2^61 floats
        (_raw_gguf(0, _key("a") + struct.pack("<I", 99) + b"x" * 64, 1), "unknown metadata value type"),
        (_raw_gguf(0, _key("a") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 6 + b"x" * 64, 1), "nested deeper"),
        (b"GGUF" + struct.pack("<I", 7) + b"\0" * 32, "version 7"),
    ],
)
def test_hand_written_hostile_gguf_headers(tmp_path, blob, part):
    path = tmp_path / "h.gguf"
    path.write_bytes(blob)
    err, seconds, peak = measure(lambda: load_gguf(path))
    assert isinstance(err, K3InputError) and part in str(err), repr(err)
    assert seconds < 1 and peak < 10 * MB, (seconds, peak)


@pytest.mark.parametrize(
    "make, part",
    [
        (lambda p: p.write_text('{"weight_map":' * 100_000 + "1" + "}" * 100_000), "nested too deep"),
        (lambda p: p.write_text('{"weight_map": {"w": "../escape.safetensors"}}'), "not a file in the folder"),
        (lambda p: p.write_text('{"weight_map": []}'), "weight_map"),
        (lambda p: (p.write_bytes(b"{"), __import__("os").truncate(p, 65 * 2**20)), "too large"),  # sparse 65 MiB
    ],
)
def test_hostile_safetensors_index(tmp_path, make, part):
    (tmp_path / "model-00001.safetensors").write_bytes(_safetensors_bytes({}))
    make(tmp_path / "model.safetensors.index.json")
    err, seconds, peak = measure(lambda: load_safetensors(tmp_path))
    assert isinstance(err, K3InputError) and part in str(err), repr(err)
    assert seconds < 1 and peak < 100 * MB, (seconds, peak)
