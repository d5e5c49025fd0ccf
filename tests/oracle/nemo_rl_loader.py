"""Differential oracle: NeMo-RL's recipe loading order with the real OmegaConf and Hydra.

Reads JSON lines on stdin, one case per line:
  {"id": 7, "files": {"child.yaml": "...", "base.yaml": "..."}, "root": "child.yaml",
   "overrides": ["a.b=1"], "env": {"X": "1"}}
and writes one JSON line per case: {"id": 7, "ok": <typed value>} or
{"id": 7, "err": "<exception class>: <message>"}.

The order is NeMo-RL's (nemo_rl/utils/config.py and examples/run_grpo_math.py):
  1. load the root file with `defaults:` inheritance, where each merge step first reads
     every top-level value of the incoming config (DictConfig.__getitem__, which resolves
     interpolations and raises on `???`) to look for `_override_` markers;
  2. OmegaConf.set_struct(cfg, True);
  3. Hydra's OverridesParser + ConfigLoaderImpl._apply_overrides_to_config;
  4. OmegaConf.to_container(cfg, resolve=True).
This file is written for nrl's tests; it follows that documented order, it is not a copy.

Typed output: scalars are ["i", "12"], ["f", "1.5" | "inf" | "-inf" | "nan"], ["b", true],
["s", "text"], null; lists are {"l": [...]}, mappings {"m": [[key, value], ...]} in order
(keys typed the same way), so int/float/str/bool and key order all compare.
"""

import json
import math
import os
import sys
import tempfile
from pathlib import Path

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, ListConfig, OmegaConf


def register_resolvers():
    # NeMo-RL registers these (has_resolver-guarded) before loading.
    for name, fn in (
        ("add", lambda a, b: a + b),
        ("sub", lambda a, b: a - b),
        ("mul", lambda a, b: a * b),
        ("div", lambda a, b: a / b),
        ("max", lambda a, b: max(a, b)),
    ):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


def merge_step(base, incoming):
    # Reading incoming[key] resolves a top-level interpolation against `incoming` alone.
    for key in list(incoming.keys()):
        section = incoming[key]
        if isinstance(section, DictConfig) and section.get("_override_", False):
            section.pop("_override_")
            if key in base:
                base.pop(key)
    return OmegaConf.merge(base, incoming)


def load_inherited(path, directory):
    cfg = OmegaConf.load(path)
    if not isinstance(cfg, DictConfig):
        raise TypeError("Config must be a Dictionary Config")
    if "defaults" not in cfg:
        return cfg
    parents = cfg.pop("defaults")
    if isinstance(parents, (str, Path)):
        parents = [parents]
    elif isinstance(parents, ListConfig):
        parents = [str(p) for p in parents]
    base = OmegaConf.create({})
    for entry in parents:
        entry = str(entry)
        parent = Path(entry) if entry.startswith("/") else Path(directory) / entry
        base = merge_step(base, load_inherited(parent, parent.parent))
    return merge_step(base, cfg)


def typed(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return ["b", v]
    if isinstance(v, int):
        return ["i", str(v)]
    if isinstance(v, float):
        if math.isnan(v):
            return ["f", "nan"]
        if math.isinf(v):
            return ["f", "inf" if v > 0 else "-inf"]
        return ["f", repr(v)]
    if isinstance(v, str):
        return ["s", v]
    if isinstance(v, dict):
        return {"m": [[typed(k), typed(x)] for k, x in v.items()]}
    if isinstance(v, (list, tuple)):
        return {"l": [typed(x) for x in v]}
    return ["?", repr(v)]


PARSER = None


def run_case(case):
    with tempfile.TemporaryDirectory() as d:
        for name, text in case["files"].items():
            p = Path(d) / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(case.get("env", {}))
        try:
            root = Path(d) / case["root"]
            cfg = load_inherited(root, root.parent)
            OmegaConf.set_struct(cfg, True)
            parsed = PARSER.parse_overrides(overrides=case["overrides"])
            ConfigLoaderImpl._apply_overrides_to_config(overrides=parsed, cfg=cfg)
            return {"ok": typed(OmegaConf.to_container(cfg, resolve=True))}
        except Exception as e:  # every failure is a result to compare
            return {"err": f"{type(e).__name__}: {e}".splitlines()[0]}
        finally:
            os.environ.clear()
            os.environ.update(saved)


def main():
    global PARSER
    register_resolvers()
    PARSER = OverridesParser.create()
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        res = run_case(case)
        res["id"] = case["id"]
        out.write(json.dumps(res) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
