"""A model in the Hugging Face hub cache layout on the simulated host, as huggingface_hub's downloads leave it:

    HUB/models--ORG--NAME/refs/main                      the commit hash of the revision `main` points at
    HUB/models--ORG--NAME/snapshots/COMMIT/FILE -> ../../blobs/HASH
    HUB/models--ORG--NAME/blobs/HASH                     the file's content (shards sparse: apparent size only)

(huggingface_hub file_download.py: `_create_symlink(blob_path, pointer_path)`, refs written by `_cache_commit_hash_
for_specific_revision`.) Older snapshots may be laid beside it, so that a test sees the one refs/main picks.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from bot.simhost.modelfiles import available_models, write_model_folder


def repo_folder(hub: Path, repo_id: str) -> Path:
    return hub / ("models--" + repo_id.replace("/", "--"))


def _commit(repo_id: str, revision: int) -> str:
    return hashlib.sha1(f"{repo_id}@{revision}".encode()).hexdigest()


def write_hf_cache_model(hub: Path, repo_id: str, *, config: str | None = None, old_revisions: int = 0) -> Path:
    """Lay out repo_id (ORG/NAME) under the hub cache `hub`; `config` names the shipped config.json to use
    (default: NAME). Returns the snapshot folder refs/main points at."""
    name = repo_id.rsplit("/", 1)[-1]
    config = config or name
    if config not in available_models():
        raise ValueError(f"no shipped config.json for {config!r}; models available: {available_models()}")
    repo = repo_folder(hub, repo_id)
    blobs = repo / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=hub) as staging:
        files = write_model_folder(Path(staging), config)
        snapshot = repo / "snapshots"
        for revision in range(old_revisions + 1):
            commit = _commit(repo_id, revision)
            target = snapshot / commit
            target.mkdir(parents=True, exist_ok=True)
            for item in sorted(files.iterdir()):
                size = item.stat().st_size
                blob = blobs / hashlib.sha256(f"{repo_id}/{item.name}/{size}/{revision}".encode()).hexdigest()
                if not blob.exists():
                    shutil.copyfile(item, blob) if size < 1 << 20 else _sparse(blob, size)
                link = target / item.name
                link.unlink(missing_ok=True)
                link.symlink_to(os.path.relpath(blob, target))
    newest = _commit(repo_id, old_revisions)
    # The older snapshots are touched later, so that "newest by time" would pick the wrong one: refs/main decides.
    for revision in range(old_revisions):
        os.utime(snapshot / _commit(repo_id, revision))
    (repo / "refs" / "main").write_text(newest)
    return snapshot / newest


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)
