"""Where the models on a host are: shared by the probe agent and the discover agent (sent after common.py).

Two layouts are recognised in every folder searched:
- a plain folder `DIR/NAME/config.json` (also one level deeper, `DIR/ORG/NAME/config.json`, the layout
  `huggingface-cli download ORG/NAME --local-dir DIR/ORG/NAME` leaves);
- the Hugging Face hub cache `DIR/models--ORG--NAME/snapshots/REV/config.json`, the revision being the commit
  that `refs/main` names (huggingface_hub's file_download.py writes refs/<revision> with the commit hash and
  the files under snapshots/<commit hash>/, each a symlink into ../../blobs/).

The hub cache searched is the one huggingface_hub itself uses, where the engine would look for ORG/NAME
(huggingface_hub src/huggingface_hub/constants.py: HF_HUB_CACHE, else the legacy HUGGINGFACE_HUB_CACHE, else
HF_HOME/hub, HF_HOME defaulting to $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface; ~ and $VARS expanded).
Its REPO_ID_SEPARATOR "--" is not allowed in repo ids, so ORG--NAME below never clashes with a real NAME.

A model is named by its folder name; a hub model by NAME (and ORG/NAME is accepted when asked for). When two
places hold the same NAME, the first folder searched keeps it and a later hub model is named ORG--NAME.
Standard library only, Python 3.6+.
"""

import os

HUB_PREFIX = "models--"


def hf_hub_dirs():
    """The hub caches to search, most specific first (duplicates removed)."""
    env = os.environ
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    dirs = [env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")]
    out = []
    for folder in dirs:
        if folder:
            folder = os.path.abspath(os.path.expandvars(os.path.expanduser(folder)))
            if folder not in out:
                out.append(folder)
    return out


def _is_model(path):
    return os.path.isfile(os.path.join(path, "config.json"))


def hub_snapshot(repo_dir):
    """(snapshot folder, revision) of one models--ORG--NAME folder: the commit refs/main names, else the only
    snapshot (or the newest one when there are several and no ref); None when nothing is complete there."""
    snapshots = os.path.join(repo_dir, "snapshots")
    try:
        with open(os.path.join(repo_dir, "refs", "main")) as handle:
            commit = handle.read().strip()
        if commit and "/" not in commit and _is_model(os.path.join(snapshots, commit)):
            return os.path.join(snapshots, commit), commit
    except OSError:
        pass
    try:
        entries = [e for e in os.scandir(snapshots) if e.is_dir() and _is_model(e.path)]
    except OSError:
        return None
    if not entries:
        return None
    newest = max(entries, key=lambda e: e.stat().st_mtime)
    return newest.path, newest.name


def _hub_entry(entry):
    org_name = entry.name[len(HUB_PREFIX):]
    if "--" not in org_name:  # models--gpt2: a repo without an organisation
        org, name = None, org_name
    else:
        org, name = org_name.split("--", 1)
    found = hub_snapshot(entry.path)
    if found is None:
        return None
    path, revision = found
    repo = "%s/%s" % (org, name) if org else name
    return {"name": name, "path": path, "source": "hf_cache", "repo": repo, "revision": revision, "org": org}


def _scan(folder):
    """The models in one folder, in a stable order."""
    out = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return out
    for entry in entries:
        try:
            if not entry.is_dir():
                continue
            if entry.name.startswith(HUB_PREFIX):
                hub = _hub_entry(entry)
                if hub is not None:
                    out.append(hub)
            elif _is_model(entry.path):
                out.append({"name": entry.name, "path": entry.path, "source": "folder"})
            elif not entry.name.startswith("."):
                for sub in sorted(os.scandir(entry.path), key=lambda e: e.name):
                    if sub.is_dir() and _is_model(sub.path):
                        out.append({"name": sub.name, "path": sub.path, "source": "folder",
                                    "repo": "%s/%s" % (entry.name, sub.name)})
        except OSError:
            continue
    return out


def find_models(folders):
    """{name: location} over the given folders then the hub caches; the first place found keeps a name."""
    found = {}
    searched = []
    for folder in list(folders) + hf_hub_dirs():
        folder = os.path.abspath(os.path.expanduser(folder))
        if folder in searched:
            continue
        searched.append(folder)
        for location in _scan(folder):
            name = location["name"]
            if name in found and location.get("org"):
                name = "%s--%s" % (location["org"], location["name"])
                location = dict(location, name=name)
            if name not in found:
                location.pop("org", None)
                found[name] = location
    return found


def locate(found, name):
    """The location of a model asked for by name, or by ORG/NAME (a hub repo id or a nested folder)."""
    if name in found:
        return found[name]
    for location in found.values():
        if location.get("repo") == name:
            return location
    return None
