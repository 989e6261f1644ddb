"""Layer kinds (issue 23 §1): one owner per kind, and no branch on a kind string outside it.

* every kind string the data, the built-in models and the loaders use has an object in
  :data:`k3lib.core.kinds.KINDS`;
* :func:`kind_string_comparisons` reads every module of ``k3lib`` with :mod:`ast` and lists each
  comparison against a layer-kind string (``g.kind == "mla"``, ``kind in ("full", "sliding")``,
  ``"mla" in kinds``, ``g.kind in LINEAR_KINDS``) outside :mod:`k3lib.core.kinds` — the issue's
  done-when check, as a test that fails naming ``file:line``;
* each kind's figures worked by hand for one model.
"""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pytest

from k3lib.core.architecture import AttentionGroup
from k3lib.core.errors import K3InputError
from k3lib.core.kinds import (
    FULL,
    GDN,
    KDA,
    KIND_NAMES,
    KINDS,
    MAMBA,
    MLA,
    RWKV,
    SHORTCONV,
    SLIDING,
    get_kind,
    kind_of,
    kinds_in,
    state_kind,
)
from k3lib.core.models import get_model, list_models

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "k3lib"
#: the kinds' own module: the one place a kind string may be compared
OWNERS = {PACKAGE / "core" / "kinds.py"}
#: names of tuples of kind strings (a membership test against one is a branch on the string)
KIND_TUPLES = {"ATTENTION_KINDS", "LINEAR_KINDS", "PERIODIC_KINDS", "KIND_NAMES", "STATE_KIND_NAMES"}


def _kind_constants(node: ast.AST) -> list[str]:
    """Kind strings a comparison operand spells out: a literal, or a tuple/list/set of literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KINDS:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _kind_constants(e)]
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("set", "frozenset", "tuple") and node.args:
        return _kind_constants(node.args[0])
    return []


def kind_string_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, text) of each comparison in ``source`` against a layer-kind string.

    A comparison counts when one side spells a kind string (``"mla"``, ``("full", "sliding")``,
    whatever the other side holds: ``g.kind``, a label, a loop variable) or is a tuple of kind
    strings by name (``LINEAR_KINDS``); ``==``, ``!=``, ``in`` and ``not in`` alike. A substring
    search in a config's text (``"sliding" in str(t)``: Hugging Face's ``layer_types``) is reading
    data, not branching on a kind, and does not count.
    """
    out = []
    lines = source.splitlines()
    with warnings.catch_warnings():  # a module's own invalid escapes are not this test's business
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(source)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        named_tuple = any(isinstance(o, ast.Name) and o.id in KIND_TUPLES for o in operands)
        spelled = [o for o in operands if _kind_constants(o)]
        substring = (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and isinstance(node.comparators[0], ast.Call)
            and getattr(node.comparators[0].func, "id", "") == "str"
        )
        if named_tuple or (spelled and not substring):
            out.append((node.lineno, lines[node.lineno - 1].strip()))
    return sorted(out)


#: modules still to move onto the kind objects (edited by other work in progress when the kinds
#: landed); the list may only shrink: a module listed here with no comparison left fails the test
PENDING: frozenset[str] = frozenset()


def offences(package: Path = PACKAGE) -> list[str]:
    """``file:line: text`` of every comparison against a layer-kind string outside the owners."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path in OWNERS:
            continue
        for line, text in kind_string_comparisons(path.read_text()):
            found.append(f"{path.relative_to(ROOT).as_posix()}:{line}: {text}")
    return found


# ---------------------------------------------------------------------------------- done-when check
def test_no_comparison_against_a_layer_kind_string_outside_the_kinds_module():
    found = offences()
    new = [f for f in found if f.partition(":")[0] not in PENDING]
    assert not new, (
        "branches on a layer-kind string outside k3lib/core/kinds.py — ask the kind object "
        "(kind_of(g) / g.kind_spec) instead:\n" + "\n".join(new)
    )
    done = PENDING - {f.partition(":")[0] for f in found}
    assert not done, f"no kind-string comparison left in {sorted(done)}: take them off PENDING"


@pytest.mark.parametrize(
    "src",
    [
        'if g.kind == "mla": pass',
        'if g.kind in ("full", "sliding"): pass',
        'if g.kind not in ("kda", "gdn"): pass',
        'x = "sliding" in kinds',
        'x = kinds & {"full"} if kind != "rwkv" else 0',
        "x = [g for g in a if g.kind in LINEAR_KINDS]",
        'x = any(k == "mla" for k, _ in hl.groups)',  # a label that is a kind string
        'x = kind_of == "shortconv"',
    ],
)
def test_checker_sees_a_kind_string_comparison(src):
    assert kind_string_comparisons(src), src


@pytest.mark.parametrize(
    "src",
    [
        'if model.kind == "profile": pass',  # a model's kind, not a layer's
        'if label == "state": pass',  # a vLLM group label
        "if kind_of(g).latent: pass",
        'x = {"full": 1}["full"]',
        'x = "sliding" in str(t)',  # a substring of a config's layer_types entry
        'x = {"full": 1}.get(name)',
    ],
)
def test_checker_leaves_other_comparisons(src):
    assert not kind_string_comparisons(src), src


# ---------------------------------------------------------------------------------- every kind owned
def _kinds_in_data() -> set[str]:
    found = set()
    for path in (ROOT / "data").rglob("*.json"):
        text = path.read_text()
        found |= set(re.findall(r'"kind"\s*:\s*"(\w+)"', text))
    return found


def _kinds_in_loaders() -> set[str]:
    """Kind strings the loaders build groups with: ``AttentionGroup("x", …)`` and ``kind="x"``."""
    found = set()
    for path in (PACKAGE / "loaders").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", "")) == "AttentionGroup"
            ):
                if node.args and isinstance(node.args[0], ast.Constant):
                    found.add(node.args[0].value)
            if isinstance(node, ast.keyword) and node.arg == "kind" and isinstance(node.value, ast.Constant):
                found.add(node.value.value)
    return found


def test_every_kind_string_in_data_and_loaders_has_an_owner():
    used = _kinds_in_data() | _kinds_in_loaders()
    used |= {g.kind for m in list_models() for g in getattr(get_model(m.id), "attention", ())}
    assert used, "found no kind strings: the scan is broken"
    assert used <= set(KINDS), f"kinds without an owner: {sorted(used - set(KINDS))}"
    assert {"full", "sliding", "mla", "kda", "gdn"} <= used


def test_every_kind_states_its_rules_and_sources():
    for name, k in KINDS.items():
        assert k.name == name and get_kind(name) is k
        assert k.label and k.short and k.tp_split and k.source
        assert k.llamacpp_cache in ("kv", "swa", "recurrent")
        assert k.vllm_spec.endswith("Spec") and k.sglang_pool
        assert k.caches_kv_per_token != k.holds_state  # each kind caches per token or holds a state
        assert (k.llamacpp_cache == "recurrent") == k.holds_state
        assert (k.llamacpp_state_copies > 0) == k.holds_state
        assert bool(k.state_dtype_bytes) == k.holds_state


def test_an_unknown_kind_is_refused_naming_the_known_ones():
    with pytest.raises(K3InputError, match="mla"):
        get_kind("linear")
    with pytest.raises(K3InputError, match="attention.kind"):
        AttentionGroup("hyena", 1, num_heads=1)


# ---------------------------------------------------------------------------------- worked by hand
def test_gqa_llama_70b():
    g = get_model("llama-3.1-70b").attention[0]
    k = kind_of(g)
    assert k is FULL and k.grouped_kv and not k.windowed and not k.latent
    assert k.kv_elements_per_token(g) == 2 * 8 * 128  # 2·K·H = 2,048
    assert k.kv_split(g, 4) == 4 and k.kv_split(g, 16) == 8  # min(TP, K)
    assert k.kv_elements_per_token_per_rank(g, 16) == 1 * 256  # one KV head per rank past K
    assert k.attention_flops_per_token(g, 1000) == 2 * 64 * 256 * 1000
    assert k.recurrent_state_elements(g) == k.conv_state_elements(g) == 0 and not k.has_state(g)
    assert k.vllm_label(g) == "full"


def test_sliding_gemma3():
    g = next(g for g in get_model("gemma-3-27b").attention if kind_of(g).windowed)
    k = kind_of(g)
    assert k is SLIDING and k.cached_tokens(g, 10**6) == g.window_tokens == 1024
    assert k.cached_tokens(g, 100) == 100
    assert k.vllm_label(g) == "sliding:1024"
    assert k.kv_elements_per_token(g) == 2 * 16 * 128  # K = 16, H = 128


def test_mla_deepseek_v3():
    g = get_model("deepseek-v3").attention[0]
    k = kind_of(g)
    assert k is MLA and k.latent
    assert k.kv_elements_per_token(g) == 512 + 64  # r_kv + d_rope
    assert k.kv_elements_per_token_per_rank(g, 8) == 576  # replicated on every rank
    assert (k.k_row_elements(g), k.v_row_elements(g)) == (576, 512)  # llama.cpp K row, V view
    assert k.transformers_cache_elements_per_token(g) == 128 * (128 + 64 + 128)  # expanded
    assert k.attention_flops_per_token(g, 10) == 2 * 128 * (2 * 512 + 64) * 10


def test_kda_kimi_k3_state_bytes():
    g = next(g for g in get_model("kimi-k3").attention if g.kind_spec is KDA)
    k = g.kind_spec
    assert (g.count, g.value_heads, g.head_dim, g.conv_kernel) == (69, 96, 128, 4)
    assert k.recurrent_state_elements(g) == 96 * 128 * 128  # 1,572,864
    assert k.conv_state_elements(g) == (2 * 96 * 128 + 96 * 128) * 3  # q, k, v convs × (k − 1) = 110,592
    # FP32: 6,733,824 B per layer and sequence; 69 layers = 464,633,856 B (443.1 MiB)
    per_layer = (k.recurrent_state_elements(g) + k.conv_state_elements(g)) * 4
    assert per_layer == 6_733_824 and g.count * per_layer == 464_633_856
    assert k.vllm_recurrent_fp32 and not GDN.vllm_recurrent_fp32
    # each engine's state dtype: vLLM keeps KDA's recurrent state FP32 and its conv state at the model dtype
    assert (k.state_dtype_bytes["vllm"], GDN.state_dtype_bytes["vllm"], k.state_dtype_bytes["llama.cpp"]) == (
        (4, 2),
        (2, 2),
        (4, 4),
    )
    assert k.kv_elements_per_token(g) == 0 and k.vllm_label(g) == "state"


def test_gdn_qwen3_next():
    g = next(g for g in get_model("qwen3-next-80b").attention if g.kind_spec is GDN)
    assert set(GDN.head_counts(g)) == {g.num_heads, g.value_heads} == {16, 32}
    assert GDN.recurrent_state_elements(g) == 32 * 128 * 128


def test_state_kinds_of_the_tier_models():
    # the tiny models of tests/test_silent_families.py, whose R/S llama.cpp printed
    mamba = AttentionGroup(
        "mamba", 4, num_heads=8, ssm_inner=512, ssm_state=64, ssm_groups=2, ssm_heads=8, conv_kernel=4
    )
    assert (MAMBA.conv_state_elements(mamba), MAMBA.recurrent_state_elements(mamba)) == (
        3 * (512 + 2 * 2 * 64),
        64 * 512,
    )
    rwkv = AttentionGroup("rwkv", 4, num_heads=4, head_dim=64)  # D = 256, head size 64
    assert (RWKV.conv_state_elements(rwkv), RWKV.recurrent_state_elements(rwkv)) == (2 * 256, 256 * 64)
    conv = AttentionGroup("shortconv", 4, num_heads=4, ssm_inner=256, conv_kernel=3)
    assert (SHORTCONV.conv_state_elements(conv), SHORTCONV.recurrent_state_elements(conv)) == (256 * 2, 0)
    # Falcon-H1: a full group with a parallel Mamba-2 mixer caches K/V and holds the Mamba state
    fh1 = AttentionGroup(
        "full",
        4,
        num_heads=4,
        kv_heads=2,
        head_dim=64,
        parallel_ssm=True,
        ssm_inner=512,
        ssm_state=64,
        ssm_groups=2,
        ssm_heads=8,
        conv_kernel=4,
    )
    assert FULL.kv_elements_per_token(fh1) == 256 and FULL.has_state(fh1) and state_kind(fh1) is MAMBA
    assert FULL.recurrent_state_elements(fh1) == 64 * 512 and FULL.runs_mamba2(fh1)
    # a KV-sharing layer caches nothing of its own
    shared = AttentionGroup("full", 2, num_heads=8, kv_heads=2, head_dim=64, kv_shared=True)
    assert FULL.kv_elements_per_token(shared) == 0


def test_flags_only_on_attention_groups():
    with pytest.raises(K3InputError, match="parallel_ssm"):
        AttentionGroup("mla", 1, num_heads=1, kv_lora_rank=8, qk_rope_head_dim=8, parallel_ssm=True)
    with pytest.raises(K3InputError, match="kv_shared"):
        AttentionGroup("kda", 1, num_heads=1, head_dim=8, conv_kernel=4, kv_shared=True)


def test_kinds_in_keeps_first_seen_order():
    assert kinds_in(get_model("kimi-k3").attention) == (MLA, KDA)
    assert tuple(KINDS) == KIND_NAMES
