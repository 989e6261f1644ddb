"""Issue 23 §7: ``--model org/name`` (and the notebooks' ``model``) resolves a Hugging Face repository
id from the local hub cache, laid out here as the hub client lays it out
(``models--org--name/refs/main`` → ``snapshots/<commit>/…``, the files symlinks into ``blobs/``).
The network is never touched: the two network primitives are replaced by fakes that fail, or that
serve a local folder (the range-read path), and ``HF_HUB_OFFLINE=1`` where the cache is missing.
"""

import hashlib
import json
import os
from pathlib import Path

import pytest

from k3lib.cli import main
from k3lib.core.errors import K3InputError
from k3lib.loaders import hub, load_gguf, load_hub, load_safetensors
from tests.test_loaders import EMBD, TOTAL, _moe_shards, write_llama_gguf, write_safetensors

pytest.importorskip("huggingface_hub")

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TINY = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 100,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
TINY_TENSORS = {
    "model.embed_tokens.weight": ("BF16", [100, 64]),
    "lm_head.weight": ("BF16", [100, 64]),
    "model.norm.weight": ("BF16", [64]),
}
for _i in range(2):
    TINY_TENSORS.update(
        {f"model.layers.{_i}.self_attn.{p}.weight": ("BF16", [64 if p in "qo" else 32, 64]) for p in "qkvo"}
    )
    TINY_TENSORS.update(
        {
            f"model.layers.{_i}.mlp.{p}_proj.weight": ("BF16", [128, 64] if p != "down" else [64, 128])
            for p in ("gate", "up", "down")
        }
    )
    TINY_TENSORS.update(
        {f"model.layers.{_i}.{n}.weight": ("BF16", [64]) for n in ("input_layernorm", "post_attention_layernorm")}
    )
TINY_BYTES = 2 * (2 * 100 * 64 + 64 + 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 128 * 64 + 2 * 64))


class NetworkTouched(AssertionError):
    pass


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any call of a network primitive fails the test; the cache is empty unless a test fills it."""

    def boom(*a, **k):
        raise NetworkTouched(f"network primitive called with {a}")

    monkeypatch.setattr(hub, "_remote_files", boom)
    monkeypatch.setattr(hub, "_remote_bytes", boom)
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def cache_repo(cache: Path, repo_id: str, files: dict[str, Path], *, commit: str = COMMIT, ref: bool = True) -> Path:
    """Lay ``files`` (path in the repo → local file) out as the hub client does; the snapshot folder."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / commit
    for name, src in files.items():
        data = Path(src).read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snap / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if ref:
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(commit)
    return snap


def tiny_safetensors_repo(tmp_path: Path, cache: Path, repo_id: str = "acme/tiny-llama") -> Path:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "config.json").write_text(json.dumps(TINY))
    write_safetensors(src / "model.safetensors", TINY_TENSORS)
    return cache_repo(
        cache, repo_id, {"config.json": src / "config.json", "model.safetensors": src / "model.safetensors"}
    )


def estimate(capsys, *argv: str, context: str = "8K") -> dict:
    assert main(["estimate", *argv, "--gpus", "1", "--context", context, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_estimate_plans_a_cached_safetensors_repository_with_its_exact_bytes(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "hub"
    snap = tiny_safetensors_repo(tmp_path, cache)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    loaded = load_hub("acme/tiny-llama")
    assert loaded.file_format == "safetensors" and sum(loaded.bytes_by_dtype.values()) == TINY_BYTES
    assert loaded.architecture.id == "acme/tiny-llama"
    assert any(str(snap) in n for n in loaded.notes)
    out = estimate(capsys, "--model", "acme/tiny-llama", "--engine", "generic")
    assert out["weights_bytes"] == TINY_BYTES
    # the same as naming the snapshot folder with --safetensors
    direct = estimate(capsys, "--safetensors", str(snap), "--engine", "generic")
    assert {k: v for k, v in out.items() if k not in ("model", "notes")} == {
        k: v for k, v in direct.items() if k not in ("model", "notes")
    }
    assert out["model"] == "acme/tiny-llama"


def test_the_cache_is_found_under_hf_home_and_the_default_folder(tmp_path, monkeypatch):
    tiny_safetensors_repo(tmp_path, tmp_path / "home" / "hub")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub.hub_cache_dir() == tmp_path / "home" / "hub"
    assert sum(load_hub("acme/tiny-llama").bytes_by_dtype.values()) == TINY_BYTES
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.hub_cache_dir() == tmp_path / "xdg" / "huggingface" / "hub"


def test_sharded_checkpoint_reads_the_index_and_every_shard(tmp_path, monkeypatch, capsys):
    _moe_shards(tmp_path / "m")
    cache = tmp_path / "hub"
    cache_repo(cache, "acme/tiny-moe", {p.name: p for p in (tmp_path / "m").iterdir()})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    out = estimate(capsys, "--model", "acme/tiny-moe", context="1K")
    assert out["engine"] == "vllm" and out["core_per_gpu"]["weights_bytes"] == 87_428 - 8_192
    assert load_hub("acme/tiny-moe").tensors == load_safetensors(tmp_path / "m", id="acme/tiny-moe").tensors


def test_a_gguf_repository_with_its_file_name(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "hub"
    a = write_llama_gguf(tmp_path / "tiny-Q4_K_M.gguf")
    b = write_llama_gguf(tmp_path / "tiny-tied.gguf", tie=True)
    cache_repo(cache, "acme/tiny-GGUF", {"tiny-Q4_K_M.gguf": a, "sub/tiny-tied.gguf": b})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    out = estimate(capsys, "--model", "acme/tiny-GGUF/tiny-Q4_K_M.gguf")
    assert out["engine"] == "llama.cpp"
    assert out["weights_bytes"] == TOTAL - EMBD and out["core_per_gpu"]["weights_bytes"] == TOTAL
    tied = load_hub("acme/tiny-GGUF/sub/tiny-tied.gguf")
    assert tied.tensors == load_gguf(b, id="acme/tiny-GGUF").tensors
    # two GGUF files and none named: one error listing them
    assert main(["estimate", "--model", "acme/tiny-GGUF", "--gpus", "1", "--json"]) == 2
    err = capsys.readouterr().err
    assert "2 GGUF files" in err and "acme/tiny-GGUF/tiny-Q4_K_M.gguf" in err and err.count("\n") == 1


def test_a_repository_with_one_gguf_file_needs_no_file_name(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "hub"
    cache_repo(cache, "acme/one-GGUF", {"tiny.gguf": write_llama_gguf(tmp_path / "tiny.gguf")})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert estimate(capsys, "--model", "acme/one-GGUF", "--engine", "generic")["weights_bytes"] == TOTAL


def test_missing_repository_and_missing_file_say_what_was_looked_for_where(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert main(["estimate", "--model", "acme/nowhere", "--gpus", "1", "--context", "8K", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "model: acme/nowhere: not in the Hugging Face cache" in err
    assert "config.json" in err and str(cache / "models--acme--nowhere") in err and "HF_HUB_OFFLINE" in err
    cache_repo(cache, "acme/tiny-GGUF", {"tiny.gguf": write_llama_gguf(tmp_path / "tiny.gguf")})
    assert main(["estimate", "--model", "acme/tiny-GGUF/other-Q8_0.gguf", "--gpus", "1", "--json"]) == 2
    err = capsys.readouterr().err
    assert "looked for other-Q8_0.gguf in " + str(cache / "models--acme--tiny-GGUF" / "snapshots" / COMMIT) in err
    with pytest.raises(K3InputError) as exc:
        load_hub("acme/nowhere")
    assert exc.value.field == "model"


def test_built_in_ids_keep_precedence_and_bad_ids_are_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert not hub.is_repo_spec("llama-3.1-8b") and hub.is_repo_spec("meta-llama/Llama-3.1-8B")
    assert estimate(capsys, "--model", "llama-3.1-8b")["model"] == estimate(capsys, "--model", "Llama-3.1-8B")["model"]
    for bad in ("/abs/config.json", "acme/../x", "acme/x/weights.bin", "a--b/c"):
        with pytest.raises(K3InputError) as exc:
            hub.parse_repo_spec(bad)
        assert exc.value.field == "model"
    assert hub.parse_repo_spec("org/name/Q4_K_M/f.gguf") == ("org/name", "Q4_K_M/f.gguf")


def test_a_cache_with_config_json_only_plans_the_architecture(tmp_path, monkeypatch, capsys):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    cache = tmp_path / "hub"
    cache_repo(cache, "acme/config-only", {"config.json": tmp_path / "config.json"})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    loaded = load_hub("acme/config-only")
    assert loaded.file_format == "config" and not loaded.weights_bytes_by_group
    assert "not in the cache" in loaded.notes[0]
    assert estimate(capsys, "--model", "acme/config-only", "--weights", "bf16")["weights_bytes"] > 0


def test_notebook_model_source_resolves_a_repository_id(tmp_path, monkeypatch):
    from k3lib.views.params import ParameterError, model_source

    cache = tmp_path / "hub"
    tiny_safetensors_repo(tmp_path, cache)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert model_source("kimi-k3", "") == "kimi-k3"
    arch = model_source("acme/tiny-llama", "")
    assert arch.id == "acme/tiny-llama" and arch.num_layers == 2
    with pytest.raises(ParameterError, match=r"^parameter model: acme/absent: not in the Hugging Face cache"):
        model_source("acme/absent", None)


# ------------------------------------------------------------------ the network path, with fake primitives
def serve_folder(monkeypatch, folder: Path, calls: list) -> None:
    """The network primitives answer from a local folder, recording every range read."""

    def files(repo_id, revision):
        calls.append(("files", repo_id))
        return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())

    def read(repo_id, filename, revision, start, end):
        data = (folder / filename).read_bytes()
        calls.append((filename, start, end))
        return data[start : end + 1], len(data)

    monkeypatch.setattr(hub, "_remote_files", files)
    monkeypatch.setattr(hub, "_remote_bytes", read)


def test_network_reads_only_config_index_and_headers(tmp_path, monkeypatch, capsys):
    _moe_shards(tmp_path / "m")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.delenv("HF_HUB_OFFLINE")
    calls: list = []
    serve_folder(monkeypatch, tmp_path / "m", calls)
    loaded = load_hub("acme/tiny-moe")
    assert loaded.tensors == load_safetensors(tmp_path / "m", id="acme/tiny-moe").tensors
    assert loaded.source == "hf://acme/tiny-moe@main" and "no weights downloaded" in loaded.notes[0]
    shards = sorted(p.name for p in (tmp_path / "m").glob("*.safetensors"))
    read = {c[0] for c in calls if c[0] != "files"}
    assert read == {"config.json", "model.safetensors.index.json", *shards}
    for shard in shards:  # two range reads: the length, then the header
        size = (tmp_path / "m" / shard).stat().st_size
        spans = [(s, e) for f, s, e in (c for c in calls if c[0] == shard)]
        assert spans[0] == (0, 7) and len(spans) == 2 and spans[1][1] < size - 4096
    assert estimate(capsys, "--model", "acme/tiny-moe", context="1K")["core_per_gpu"]["weights_bytes"] == 87_428 - 8_192


def test_network_gguf_reads_the_header_only(tmp_path, monkeypatch):
    src = tmp_path / "repo"
    src.mkdir()
    write_llama_gguf(src / "tiny-Q4_K_M.gguf")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.delenv("HF_HUB_OFFLINE")
    calls: list = []
    serve_folder(monkeypatch, src, calls)
    loaded = load_hub("acme/tiny-GGUF/tiny-Q4_K_M.gguf")
    assert loaded.tensors == load_gguf(src / "tiny-Q4_K_M.gguf", id="acme/tiny-GGUF").tensors
    with pytest.raises(K3InputError, match="no file 'nope.gguf' in the repository"):
        load_hub("acme/tiny-GGUF/nope.gguf")


def test_a_complete_cache_never_calls_the_network_even_online(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "hub"
    tiny_safetensors_repo(tmp_path, cache)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE")  # the autouse fakes raise if a primitive is called
    assert estimate(capsys, "--model", "acme/tiny-llama", "--engine", "generic")["weights_bytes"] == TINY_BYTES


def test_an_unreachable_hub_falls_back_to_the_cache_message(tmp_path, monkeypatch, capsys):
    def offline(*a, **k):
        raise OSError("network is unreachable")

    monkeypatch.setattr(hub, "_remote_files", offline)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert main(["estimate", "--model", "acme/nowhere", "--gpus", "1", "--json"]) == 2
    err = capsys.readouterr().err
    assert "not in the Hugging Face cache" in err and "network is unreachable" in err and err.count("\n") == 1
