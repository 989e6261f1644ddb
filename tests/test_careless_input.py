"""Careless input, the rest of the list (issue 21 §6): every figure the loaders and parsers
give is read from the input, stated as an assumption, or refused with a named error —
never a silent default.

* a context window of 0 or null (config.json ``max_position_embeddings``, GGUF
  ``context_length``) is a :class:`K3InputError` naming the field; a missing one is read
  as 4,096 tokens with an :class:`AssumedFieldWarning` and a note;
* a GGUF of an unknown ``general.architecture`` warns as a config.json of an unknown
  ``model_type`` does;
* a zero-sized tensor is noted;
* empty option values are named errors ("is empty"), counts take ASCII digits only.

Expected values are typed by hand.
"""

from __future__ import annotations

import json
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

from k3lib.core.errors import K3InputError
from k3lib.loaders import load_config, load_gguf, load_safetensors, plan_for_loaded
from k3lib.loaders.hf_config import AssumedFieldWarning

BASE = {
    "model_type": "llama",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 1000,
}
ASSUMED_NOTE = "assumed a context window of 4,096 tokens"


def _config(tmp_path: Path, doc: dict) -> Path:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(doc))
    return p


def _quiet(fn, *args, **kw):
    """Call ``fn`` with every warning an error: a well-formed file loads without one."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


# ------------------------------------------------------------------ config.json context window


@pytest.mark.parametrize("value", [0, None, -1])
def test_config_context_window_of_zero_or_null_is_a_named_error(tmp_path, value):
    # before: 0 and null were read as a silent 4,096-token model
    with pytest.raises(K3InputError) as err:
        load_config(_config(tmp_path, {**BASE, "max_position_embeddings": value}))
    assert err.value.field == "config.max_position_embeddings", str(err.value)
    assert "\n" not in str(err.value)


def test_config_text_config_zero_names_the_text_config_field(tmp_path):
    doc = {
        "model_type": "mistral3",
        "text_config": {**BASE, "model_type": "mistral", "max_position_embeddings": 0},
        "max_position_embeddings": 8192,
    }
    with pytest.raises(K3InputError) as err:
        load_config(_config(tmp_path, doc))
    assert err.value.field == "config.text_config.max_position_embeddings"


def test_config_null_in_text_config_falls_back_to_the_top_level_window(tmp_path):
    doc = {
        "model_type": "mistral3",
        "text_config": {**BASE, "model_type": "mistral", "max_position_embeddings": None},
        "max_position_embeddings": 8192,
    }
    assert _quiet(load_config, _config(tmp_path, doc)).architecture.max_context_tokens == 8192


def test_config_without_a_context_window_is_a_stated_assumption(tmp_path):
    with pytest.warns(AssumedFieldWarning, match="max_position_embeddings = 4096"):
        m = load_config(_config(tmp_path, BASE))
    assert m.architecture.max_context_tokens == 4096
    assert any(ASSUMED_NOTE in n and "config.max_position_embeddings" in n for n in m.notes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = plan_for_loaded(m, gpu="h100-sxm", gpus=1, context=1024)
    assert any(ASSUMED_NOTE in n for n in plan.notes)  # and it reaches the plan's notes


def test_config_with_a_context_window_states_no_assumption(tmp_path):
    m = _quiet(load_config, _config(tmp_path, {**BASE, "max_position_embeddings": 8192}))
    assert m.architecture.max_context_tokens == 8192 and not any("assumed" in n for n in m.notes)


# ------------------------------------------------------------------ GGUF


def write_gguf(
    path: Path, *, arch: str = "llama", context_length: int | None = 8192, zero_tensor: bool = False
) -> Path:
    """D=64, 2 layers, 4 heads / 2 KV heads, FFN 128, vocab 100, F32 tensors; ``context_length``
    None leaves the key out; ``zero_tensor`` adds ``blk.0.attn_sinks.weight`` of shape (0,)."""
    import gguf

    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(2)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_key_length(16)
    if context_length is not None:
        w.add_context_length(context_length)
    w.add_tensor("token_embd.weight", np.zeros((100, 64), dtype=np.float32))  # 25,600 B
    for i in range(2):
        w.add_tensor(f"blk.{i}.attn_q.weight", np.zeros((64, 64), dtype=np.float32))  # 16,384 B
        w.add_tensor(f"blk.{i}.ffn_up.weight", np.zeros((128, 64), dtype=np.float32))  # 32,768 B
    w.add_tensor("output.weight", np.zeros((100, 64), dtype=np.float32))  # 25,600 B
    if zero_tensor:
        w.add_tensor("blk.0.attn_sinks.weight", np.zeros((0,), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


GGUF_BYTES = 2 * 25_600 + 2 * (16_384 + 32_768)  # 149,504


def test_gguf_well_formed_loads_without_a_warning(tmp_path):
    m = _quiet(load_gguf, write_gguf(tmp_path / "m.gguf"))
    assert m.architecture.max_context_tokens == 8192 and m.weights_bytes == GGUF_BYTES
    assert len(m.notes) == 1 and m.notes[0].startswith("GGUF v3: 6 tensors, 149,504 bytes")


def test_gguf_context_length_zero_is_a_named_error(tmp_path):
    # before: a silent 4,096
    with pytest.raises(K3InputError) as err:
        load_gguf(write_gguf(tmp_path / "m.gguf", context_length=0))
    assert err.value.field == "gguf.llama.context_length" and "no context" in str(err.value)


def test_gguf_without_context_length_is_a_stated_assumption(tmp_path):
    with pytest.warns(AssumedFieldWarning, match="context_length = 4096"):
        m = load_gguf(write_gguf(tmp_path / "m.gguf", context_length=None))
    assert m.architecture.max_context_tokens == 4096
    assert any(ASSUMED_NOTE in n and "gguf.llama.context_length" in n for n in m.notes)


def test_gguf_of_an_unknown_architecture_warns_as_a_config_does(tmp_path):
    # before: read silently; now one AssumedFieldWarning in the config's words, and a note
    with pytest.warns(AssumedFieldWarning) as rec:
        m = load_gguf(write_gguf(tmp_path / "m.gguf", arch="brandnew"))
    text = " ".join(str(w.message) for w in rec)
    assert "general.architecture 'brandnew' is not one k3lib knows" in text and "Assumed:" in text
    assert any("'brandnew' is not one k3lib knows" in n for n in m.notes)
    g = m.architecture.attention[0]
    assert (g.num_heads, g.kv_heads, g.head_dim) == (4, 2, 16)  # still read from the standard keys
    # an unknown architecture that also lacks keys names each one it assumed
    with pytest.warns(AssumedFieldWarning) as rec:
        load_gguf(write_gguf(tmp_path / "m2.gguf", arch="brandnew", context_length=None))
    assert "context_length = 4096" in " ".join(str(w.message) for w in rec)


def test_unknown_model_type_config_and_gguf_word_their_warnings_alike(tmp_path):
    with pytest.warns(AssumedFieldWarning) as cfg_rec:
        load_config(_config(tmp_path, {**BASE, "model_type": "brandnew", "max_position_embeddings": 8192}))
    with pytest.warns(AssumedFieldWarning) as gguf_rec:
        load_gguf(write_gguf(tmp_path / "m.gguf", arch="brandnew"))
    assert "is not one k3lib knows" in str(cfg_rec[0].message) and "is not one k3lib knows" in str(gguf_rec[0].message)


def test_gguf_zero_sized_tensor_is_noted(tmp_path):
    # before: counted silently (7 tensors, no word of the empty one)
    m = _quiet(load_gguf, write_gguf(tmp_path / "m.gguf", zero_tensor=True))
    assert m.weights_bytes == GGUF_BYTES  # 0 bytes: nothing changes…
    assert any(
        n.startswith("1 zero-sized tensor") and "'blk.0.attn_sinks.weight' (0,)" in n for n in m.notes
    )  # …but it is said


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> Path:
    """A safetensors file by hand: 8-byte header length, JSON header, zero data (BF16/F32)."""
    bits = {"BF16": 16, "F32": 32}
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = int(np.prod(shape)) * bits[dtype] // 8 if shape else bits[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return path


def test_safetensors_zero_sized_tensor_is_noted(tmp_path):
    p = write_safetensors(
        tmp_path / "model.safetensors",
        {
            "model.embed_tokens.weight": ("BF16", [100, 64]),  # 12,800 B
            "model.layers.0.self_attn.q_proj.weight": ("BF16", [0, 64]),  # 0 B
            "model.layers.0.self_attn.k_proj.weight": ("BF16", [64, 0]),
        },
    )
    m = _quiet(load_safetensors, p)
    assert m.weights_bytes == 12_800
    note = next(n for n in m.notes if "zero-sized" in n)
    assert note.startswith("2 zero-sized tensors") and "'model.layers.0.self_attn.q_proj.weight' (0, 64)" in note


def test_safetensors_without_zero_sized_tensors_says_nothing_of_them(tmp_path):
    p = write_safetensors(tmp_path / "model.safetensors", {"model.embed_tokens.weight": ("BF16", [100, 64])})
    assert not any("zero-sized" in n for n in _quiet(load_safetensors, p).notes)
