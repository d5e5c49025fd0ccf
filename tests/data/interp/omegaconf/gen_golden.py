"""Generate tests/data/interp/omegaconf/golden.json from OmegaConf 2.3.0.

Each case is a config (JSON-able dict) resolved key by key; each result is the
resolved value, or the nrl error code the OmegaConf exception maps to.
"""
import json, os, sys, warnings
warnings.simplefilter("ignore")
from omegaconf import OmegaConf, DictConfig, ListConfig
from omegaconf.errors import (GrammarParseError, InterpolationKeyError,
    InterpolationToMissingValueError, UnsupportedInterpolationType,
    InterpolationResolutionError, MissingMandatoryValue)

ENV = {"NRL_K8S_USER": "Al_b.c", "NRL_TEST_PORT": "3308", "NRL_TEST_RES": "${b}",
       "NRL_TEST_EMPTY": "", "NRL_TEST_LIST": "[1, 2]"}
for k in list(os.environ):
    if k.startswith("NRL_"):
        del os.environ[k]
os.environ.update(ENV)

def user():
    return os.environ["NRL_K8S_USER"].lower().replace("_", "-").replace(".", "-")
OmegaConf.register_new_resolver("user", user)
OmegaConf.register_new_resolver("mul", lambda a, b: a * b)
OmegaConf.register_new_resolver("div", lambda a, b: a / b)
OmegaConf.register_new_resolver("max", lambda a, b: max(a, b))
OmegaConf.register_new_resolver("add", lambda a, b: a + b)
OmegaConf.register_new_resolver("sub", lambda a, b: a - b)
# A test-only resolver would not exist in nrl, so arguments are observed through
# oc.decode / add / mul instead.

def code(e):
    msg = str(e)
    if isinstance(e, GrammarParseError) or "GrammarParseError" in msg:
        return "nrl::interp::syntax"
    if isinstance(e, InterpolationToMissingValueError):
        return "nrl::interp::missing_value"
    if isinstance(e, InterpolationKeyError):
        return "nrl::interp::missing_key"
    if isinstance(e, UnsupportedInterpolationType):
        return "nrl::interp::resolver"
    if isinstance(e, MissingMandatoryValue):
        return "missing_mandatory"
    if isinstance(e, InterpolationResolutionError):
        if "Recursive interpolation" in msg or "parent node" in msg:
            return "nrl::interp::cycle"
        if "ConfigTypeError" in msg or "is not an int" in msg:
            return "nrl::interp::missing_key"
        if "should return a string" in msg or "name of a resolver must be a string" in msg:
            return "nrl::interp::type"
        return "nrl::interp::resolver"
    return "unexpected " + type(e).__name__ + ": " + msg

def enc(v):
    """JSON cannot carry inf/nan: encode them as {"$float": "inf"}."""
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return {"$float": repr(v)}
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, dict):
        return {str(k) if not isinstance(k, bool) else str(k): enc(x) for k, x in v.items()}
    return v

def one(cfg, k):
    try:
        v = cfg[k]
        if isinstance(v, (DictConfig, ListConfig)):
            v = OmegaConf.to_container(v, resolve=True)
        return {"ok": enc(v)}
    except Exception as e:
        return {"err": code(e)}

cases = json.load(open(sys.argv[1]))
out = []
for name, conf in cases:
    try:
        cfg = OmegaConf.create(conf)
    except Exception as e:
        out.append({"name": name, "config": conf, "load_err": code(e)})
        continue
    out.append({"name": name, "config": conf,
                "results": {k: one(cfg, k) for k in conf}})
json.dump({"omegaconf": "2.3.0", "env": ENV, "cases": out}, sys.stdout, indent=1, ensure_ascii=False)
print()
