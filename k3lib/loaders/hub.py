"""A Hugging Face repository id (``org/name``) → :class:`~k3lib.loaders.LoadedModel`.

Resolution, in order:

1. **The local Hugging Face cache**, offline, in the layout the hub client writes
   (``models--org--name/refs/main`` holds a commit; ``models--org--name/snapshots/<commit>/…``
   holds the files), found at ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
   ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``. Files are looked up
   with ``huggingface_hub.try_to_load_from_cache``. A snapshot with ``config.json`` and every
   safetensors shard (the index's, or ``*.safetensors``) is read by
   :func:`~k3lib.loaders.load_safetensors` — the exact bytes of every tensor; a GGUF file by
   :func:`~k3lib.loaders.load_gguf`.
2. **The network**, unless ``HF_HUB_OFFLINE`` is set: only ``config.json``, the safetensors
   index and each shard's header (two HTTP range reads per shard; a GGUF file's header and
   tensor table by growing range reads) — never the weights. ``HF_TOKEN`` authorises gated
   repositories. The two network primitives are :func:`_remote_files` and
   :func:`_remote_bytes`; nothing else here opens a connection.
3. **A cache holding config.json only** (no shards): the architecture, weights from ``--weights``.

A GGUF repository names its file after the repository id: ``org/name/FILE.gguf`` (the file's
path in the repository, sub-folders included: ``org/name/Q4_K_M/FILE.gguf``). Without a file
name, a repository whose only weights are one ``.gguf`` file uses it.

A model found nowhere is one :class:`~k3lib.core.errors.K3InputError` naming ``model`` that says
which file was looked for where.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import struct
import tempfile
from pathlib import Path, PurePosixPath

from k3lib.core.errors import K3InputError
from k3lib.loaders._common import LoadedModel

#: one part of a repository id, as the hub allows it (letters, digits, ``-``, ``_``, ``.``; ≤ 96 characters)
_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?")
INDEX = "model.safetensors.index.json"
REVISION = "main"
#: the largest GGUF header (metadata + tensor table) read over the network
MAX_REMOTE_GGUF_HEADER = 512 * 2**20
#: the largest config.json / index read over the network
MAX_REMOTE_JSON = 64 * 2**20
_HELP = "a built-in id (`k3plan models`), a Hugging Face repository id org/name, or org/name/FILE.gguf"


def hub_cache_dir() -> Path:
    """The hub cache folder, from the environment as the hub client reads it (at each call)."""
    env = os.environ
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HUGGINGFACE_HUB_CACHE"):
        return Path(env["HUGGINGFACE_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    xdg = env.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(xdg).expanduser() / "huggingface" / "hub"


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` set to a true value: the cache only."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def parse_repo_spec(text: str) -> tuple[str, str | None]:
    """``org/name`` → (``org/name``, None); ``org/name/path/FILE.gguf`` → (``org/name``, ``path/FILE.gguf``)."""
    s = str(text).strip()
    parts = s.split("/")
    if (
        len(parts) < 2
        or not all(_PART.fullmatch(p) for p in parts[:2])
        or ".." in parts[0] + parts[1]
        or "--" in parts[0] + parts[1]
    ):
        raise K3InputError(
            "model",
            f"{s!r} is not a Hugging Face repository id",
            _HELP + "; a local file goes to --config, --gguf or --safetensors",
        )
    filename = "/".join(parts[2:]) or None
    if filename is not None:
        if any(p in ("", ".", "..") for p in parts[2:]):
            raise K3InputError("model", f"{s!r}: {filename!r} is not a file path in the repository", _HELP)
        if not filename.lower().endswith(".gguf"):
            raise K3InputError("model", f"{s!r}: a file after the repository id must be a .gguf file", _HELP)
    return f"{parts[0]}/{parts[1]}", filename


def is_repo_spec(model: object) -> bool:
    """True for a string with a ``/`` that is not a built-in model id (built-in ids keep precedence)."""
    if not isinstance(model, str) or "/" not in model:
        return False
    from k3lib.core.models import get_model

    try:
        get_model(model)
    except K3InputError:
        return True
    return False


# ---------------------------------------------------------------------------
# the cache
# ---------------------------------------------------------------------------
def _repo_folder(cache: Path, repo_id: str) -> Path:
    from huggingface_hub.file_download import repo_folder_name

    return cache / repo_folder_name(repo_id=repo_id, repo_type="model")


def _cached(cache: Path, repo_id: str, filename: str, revision: str) -> Path | None:
    """The cached file (``snapshots/<commit>/filename``), or None."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, cache_dir=str(cache), revision=revision, repo_type="model")
    return Path(found) if isinstance(found, str) and Path(found).is_file() else None


def _snapshot(cache: Path, repo_id: str, revision: str) -> Path | None:
    """``snapshots/<commit>`` for ``refs/<revision>`` (or ``revision`` itself when it is a commit)."""
    folder = _repo_folder(cache, repo_id)
    ref = folder / "refs" / revision
    commit = ref.read_text(encoding="utf-8").strip() if ref.is_file() else revision
    snap = folder / "snapshots" / commit
    return snap if commit and snap.is_dir() else None


def _weights_in(snapshot: Path) -> tuple[list[str], list[str]]:
    """(safetensors, gguf) files in a snapshot, as paths relative to it."""
    st, gg = [], []
    for p in sorted(snapshot.rglob("*")):
        rel = p.relative_to(snapshot).as_posix()
        if rel.endswith(".safetensors") and "/" not in rel:
            st.append(rel)
        elif rel.lower().endswith(".gguf"):
            gg.append(rel)
    return st, gg


def _only_gguf(repo_id: str, ggufs: list[str], where: str) -> str:
    if len(ggufs) == 1:
        return ggufs[0]
    shown = ", ".join(f"{repo_id}/{g}" for g in ggufs[:8]) + (" …" if len(ggufs) > 8 else "")
    raise K3InputError("model", f"{repo_id}: {len(ggufs)} GGUF files {where}; name one", shown)


def _from_cache(cache: Path, repo_id: str, filename: str | None, revision: str) -> LoadedModel | None:
    """The model from the cache when its weights (or the named GGUF file) are all there, else None."""
    from k3lib.loaders.gguf_file import load_gguf
    from k3lib.loaders.safetensors_file import load_safetensors

    if filename is not None:
        path = _cached(cache, repo_id, filename, revision)
        return _sourced(load_gguf(path, id=repo_id), path, repo_id, filename) if path else None
    snap = _snapshot(cache, repo_id, revision)
    if snap is None:
        return None
    index = _cached(cache, repo_id, INDEX, revision)
    if index is not None:
        try:
            doc = json.loads(index.read_text(encoding="utf-8"))
            shards = sorted({str(v) for v in doc["weight_map"].values()})
        except (ValueError, KeyError, TypeError, AttributeError):
            shards = []  # load_safetensors states what is wrong with it
        if all(_cached(cache, repo_id, s, revision) for s in shards):
            return _sourced(load_safetensors(snap, id=repo_id), snap, repo_id, None)
        return None
    safetensors, ggufs = _weights_in(snap)
    if safetensors:
        return _sourced(load_safetensors(snap, id=repo_id), snap, repo_id, None)
    if ggufs:
        name = _only_gguf(repo_id, ggufs, f"in {snap}")
        return _sourced(load_gguf(snap / name, id=repo_id), snap / name, repo_id, name)
    return None


def _sourced(loaded: LoadedModel, path: Path, repo_id: str, filename: str | None) -> LoadedModel:
    what = f"{repo_id}/{filename}" if filename else repo_id
    return dataclasses.replace(loaded, notes=(f"Hugging Face {what}: read from the cache at {path}",) + loaded.notes)


# ---------------------------------------------------------------------------
# the network: the two primitives (tests replace them) and what is built from them
# ---------------------------------------------------------------------------
def _token() -> str | None:
    return os.environ.get("HF_TOKEN") or None


def _remote_files(repo_id: str, revision: str) -> list[str]:
    """The repository's file names (one API call; ``HF_TOKEN`` for gated repositories)."""
    from huggingface_hub import list_repo_files

    return list(list_repo_files(repo_id, revision=revision, repo_type="model", token=_token()))


def _remote_bytes(repo_id: str, filename: str, revision: str, start: int, end: int) -> tuple[bytes, int]:
    """Bytes ``start … end`` (inclusive) of a file in the repository by one HTTP range read, and the
    file's total size (from ``Content-Range``)."""
    from huggingface_hub import get_session, hf_hub_url
    from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

    url = hf_hub_url(repo_id, filename, revision=revision, repo_type="model")
    headers = build_hf_headers(token=_token())
    headers["Range"] = f"bytes={start}-{end}"
    resp = get_session().get(url, headers=headers, follow_redirects=True, timeout=30)
    hf_raise_for_status(resp)
    body = bytes(resp.content)
    rng = resp.headers.get("Content-Range", "")
    total = int(rng.rsplit("/", 1)[1]) if "/" in rng and rng.rsplit("/", 1)[1].isdigit() else len(body)
    if resp.status_code == 200:  # the server ignored the range: it sent the whole file
        body = body[start : end + 1]
    return body, total


def _fetch_small(repo_id: str, filename: str, revision: str, dest: Path) -> None:
    body, total = _remote_bytes(repo_id, filename, revision, 0, MAX_REMOTE_JSON - 1)
    if total > MAX_REMOTE_JSON:
        raise K3InputError("model", f"{repo_id}/{filename}: {total:,} bytes is too large", f"≤ {MAX_REMOTE_JSON:,}")
    (dest / filename).write_bytes(body)


def _sparse(path: Path, head: bytes, total: int) -> None:
    """A file of ``total`` bytes whose first bytes are ``head`` and the rest a hole (no disk used)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(max(total, len(head)))


def _from_network(repo_id: str, filename: str | None, revision: str) -> LoadedModel:
    """config.json, the index and each shard's header only (or a GGUF header), into a temporary
    folder of sparse files that the local loaders read as they read a download; the loaders'
    warnings name the repository, not the temporary folder."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tempfile.TemporaryDirectory(prefix="k3-hub-") as tmp:
            loaded = _read_remote(repo_id, filename, revision, Path(tmp))
    hf = f"hf://{repo_id}@{revision}"
    for w in caught:
        warnings.warn_explicit(str(w.message).replace(tmp, hf), w.category, w.filename, w.lineno)
    arch = loaded.architecture
    if arch is not None and dataclasses.is_dataclass(arch) and isinstance(getattr(arch, "source", None), str):
        arch = dataclasses.replace(arch, source=arch.source.replace(tmp, hf))
    return dataclasses.replace(loaded, architecture=arch, notes=tuple(n.replace(tmp, hf) for n in loaded.notes))


def _read_remote(repo_id: str, filename: str | None, revision: str, dest: Path) -> LoadedModel:
    from k3lib.loaders.gguf_file import load_gguf, scan_gguf_header
    from k3lib.loaders.safetensors_file import MAX_HEADER_BYTES, load_safetensors

    files = _remote_files(repo_id, revision)
    if filename is None:
        st = sorted(f for f in files if f.endswith(".safetensors") and "/" not in f)
        if INDEX in files or st:
            if "config.json" in files:
                _fetch_small(repo_id, "config.json", revision, dest)
            if INDEX in files:
                _fetch_small(repo_id, INDEX, revision, dest)
                doc = json.loads((dest / INDEX).read_text(encoding="utf-8"))
                st = sorted({str(v) for v in (doc.get("weight_map") or {}).values()})
            read = 0
            for shard in st:
                head, total = _remote_bytes(repo_id, shard, revision, 0, 7)
                (n,) = struct.unpack("<Q", head[:8].ljust(8, b"\0"))
                if n > MAX_HEADER_BYTES or 8 + n > total:
                    raise K3InputError(
                        "model", f"{repo_id}/{shard}: header length {n:,} does not fit the {total:,}-byte file"
                    )
                body, _ = _remote_bytes(repo_id, shard, revision, 8, 7 + n)
                _sparse(dest / shard, head[:8] + body, total)
                read += 8 + n
            loaded = load_safetensors(dest, id=repo_id)
            note = (
                f"Hugging Face {repo_id}@{revision}: read over the network — config.json, the index and "
                f"{len(st)} safetensors header(s), {read:,} bytes; no weights downloaded"
            )
            return dataclasses.replace(loaded, source=f"hf://{repo_id}@{revision}", notes=(note,) + loaded.notes)
        ggufs = sorted(f for f in files if f.lower().endswith(".gguf"))
        if not ggufs:
            if "config.json" not in files:
                raise K3InputError(
                    "model", f"{repo_id}: the repository has no config.json, safetensors or GGUF file", _HELP
                )
            from k3lib.loaders.config import load_config

            _fetch_small(repo_id, "config.json", revision, dest)
            loaded = load_config(dest / "config.json", id=repo_id)
            return dataclasses.replace(loaded, source=f"hf://{repo_id}@{revision}/config.json")
        filename = _only_gguf(repo_id, ggufs, "in the repository")
    elif filename not in files:
        raise K3InputError(
            "model",
            f"{repo_id}: no file {filename!r} in the repository",
            ", ".join(f for f in files if f.lower().endswith(".gguf"))[:400] or "no .gguf files",
        )
    path = dest / PurePosixPath(filename).name
    want = 4 * 2**20
    while True:
        head, total = _remote_bytes(repo_id, filename, revision, 0, want - 1)
        _sparse(path, head, total)
        try:
            scan = scan_gguf_header(path)
            if scan["data_offset"] <= len(head):
                break
        except K3InputError:
            if len(head) >= total:
                raise
        if want >= MAX_REMOTE_GGUF_HEADER or len(head) >= total:
            raise K3InputError(
                "model", f"{repo_id}/{filename}: no complete GGUF header in its first {len(head):,} bytes"
            )
        want *= 4
    loaded = load_gguf(path, id=repo_id)
    note = (
        f"Hugging Face {repo_id}/{filename}@{revision}: read over the network — its GGUF header, "
        f"{len(head):,} bytes; no weights downloaded"
    )
    return dataclasses.replace(loaded, source=f"hf://{repo_id}@{revision}/{filename}", notes=(note,) + loaded.notes)


# ---------------------------------------------------------------------------
# the entry point
# ---------------------------------------------------------------------------
def load_hub(spec: str, *, revision: str = REVISION) -> LoadedModel:
    """Load ``org/name`` (or ``org/name/FILE.gguf``): the cache first, then (unless
    ``HF_HUB_OFFLINE``) the network, then a cached config.json alone; else one K3InputError
    naming ``model`` that says which file was looked for where."""
    repo_id, filename = parse_repo_spec(spec)
    cache = hub_cache_dir()
    found = _from_cache(cache, repo_id, filename, revision)
    if found is not None:
        return found
    network_error = ""
    if not hub_offline():
        try:
            return _from_network(repo_id, filename, revision)
        except K3InputError:
            raise
        except Exception as exc:  # no network, 401/404 …: the cache's story is the one to tell
            network_error = f"; the hub could not be reached or refused ({type(exc).__name__}: {str(exc)[:200]})"
    if filename is None:
        config = _cached(cache, repo_id, "config.json", revision)
        if config is not None:
            from k3lib.loaders.config import load_config

            loaded = load_config(config, id=repo_id)
            return dataclasses.replace(
                loaded,
                notes=(
                    f"Hugging Face {repo_id}: config.json from the cache at "
                    f"{config}; its weights are not in the cache, so they are "
                    f"computed from --weights",
                )
                + loaded.notes,
            )
    folder = _repo_folder(cache, repo_id)
    snap = _snapshot(cache, repo_id, revision)
    where = snap if snap is not None else folder / "snapshots" / f"<{folder / 'refs' / revision}>"
    looked = filename or "config.json and model.safetensors.index.json / *.safetensors / *.gguf"
    why = "" if folder.is_dir() else f" ({folder} does not exist)"
    offline = " (HF_HUB_OFFLINE is set)" if hub_offline() else network_error
    raise K3InputError(
        "model", f"{repo_id}: not in the Hugging Face cache: looked for {looked} in {where}{why}{offline}", _HELP
    )


__all__ = ["load_hub", "parse_repo_spec", "is_repo_spec", "hub_cache_dir", "hub_offline"]
