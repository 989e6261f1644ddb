"""A tiny Mixtral-style GGUF (2.5 MB) that notebook ``06-any-model`` writes and reads back."""

from __future__ import annotations

import os
from pathlib import Path

#: the demo GGUF's shapes: D = 256, 2 layers, 4 query heads and 2 KV heads of 64, 8 experts (2 active)
#: of width 256, vocabulary 512; tensor types as a Q4_K_M file mixes them
DEMO_GGUF = {
    "hidden": 256,
    "layers": 2,
    "heads": 4,
    "kv_heads": 2,
    "experts": 8,
    "experts_used": 2,
    "expert_ffn": 256,
    "vocab": 512,
    "context": 32768,
}


def write_demo_gguf(directory: str | os.PathLike[str], *, name: str = "tiny-moe.gguf") -> Path:
    """Write a tiny Mixtral-style GGUF (:data:`DEMO_GGUF`; zero-filled tensors, 2,546,176
    bytes of tensor data) into ``directory`` and return its path.

    Tensor types: token_embd Q8_0 (34 B per 32), attention Q4_K (144 B per 256) except
    attn_v Q6_K (210 B per 256), experts gate/up Q4_K and down Q6_K, norms and router F32,
    output Q6_K.
    """
    import gguf
    import numpy as np
    from gguf import GGMLQuantizationType as Q

    c = DEMO_GGUF
    d, e, ie, vocab = c["hidden"], c["experts"], c["expert_ffn"], c["vocab"]
    hd = d // c["heads"]
    path = Path(directory) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-moe (demo)")
    w.add_block_count(c["layers"])
    w.add_embedding_length(d)
    w.add_feed_forward_length(ie)
    w.add_head_count(c["heads"])
    w.add_head_count_kv(c["kv_heads"])
    w.add_context_length(c["context"])
    w.add_expert_count(e)
    w.add_expert_used_count(c["experts_used"])
    w.add_token_list([f"t{i}".encode() for i in range(vocab)])

    def tensor(tname: str, ne: tuple[int, ...], qtype) -> None:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        shape = tuple(reversed(ne))
        if qtype == Q.F32:
            w.add_tensor(tname, np.zeros(shape, dtype=np.float32))
        else:
            w.add_tensor(tname, np.zeros(shape[:-1] + (shape[-1] // block * size,), dtype=np.uint8), raw_dtype=qtype)

    tensor("token_embd.weight", (d, vocab), Q.Q8_0)
    for i in range(c["layers"]):
        tensor(f"blk.{i}.attn_norm.weight", (d,), Q.F32)
        tensor(f"blk.{i}.attn_q.weight", (d, c["heads"] * hd), Q.Q4_K)
        tensor(f"blk.{i}.attn_k.weight", (d, c["kv_heads"] * hd), Q.Q4_K)
        tensor(f"blk.{i}.attn_v.weight", (d, c["kv_heads"] * hd), Q.Q6_K)
        tensor(f"blk.{i}.attn_output.weight", (c["heads"] * hd, d), Q.Q4_K)
        tensor(f"blk.{i}.ffn_norm.weight", (d,), Q.F32)
        tensor(f"blk.{i}.ffn_gate_inp.weight", (d, e), Q.F32)
        tensor(f"blk.{i}.ffn_gate_exps.weight", (d, ie, e), Q.Q4_K)
        tensor(f"blk.{i}.ffn_up_exps.weight", (d, ie, e), Q.Q4_K)
        tensor(f"blk.{i}.ffn_down_exps.weight", (ie, d, e), Q.Q6_K)
    tensor("output_norm.weight", (d,), Q.F32)
    tensor("output.weight", (d, vocab), Q.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
