"""Regenerate pyyaml_corpus.json: PyYAML 6.0.3 safe_dump / json.dumps outputs for many
inputs. nrl's emitter tests compare against this file; Python is not needed at test time.

Run: python3 gen_pyyaml_corpus.py > pyyaml_corpus.json

Input encoding (plain JSON plus two tagged forms):
  {"$float": "nan" | "inf" | "-inf"}     a non-finite float
  {"$items": [[key, value], ...]}         a mapping with non-string keys (int/float/bool/null)
Each case has "yaml" (safe_dump), "yaml_nrl" where nrl deliberately differs (see
NrlDumper), and, where Python can sort the keys, "json_sorted"; "json_unsorted" is
present only when it differs from "json_sorted".
"""
import json
import math
import random
import re

import yaml

assert yaml.__version__ == "6.0.3", yaml.__version__


def decode(v):
    if isinstance(v, dict):
        if set(v) == {"$float"}:
            return float(v["$float"])
        if set(v) == {"$items"}:
            return {k: decode(x) for k, x in v["$items"]}
        return {k: decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v


def nonstr_keys(v):
    if isinstance(v, dict):
        return any(not isinstance(k, str) for k in v) or any(nonstr_keys(x) for x in v.values())
    if isinstance(v, list):
        return any(nonstr_keys(x) for x in v)
    return False


class NrlDumper(yaml.SafeDumper):
    """safe_dump plus OmegaConf's float resolver: nrl quotes strings such as `1e3` that
    PyYAML writes plain but nrl's OmegaConf-dialect loader would read back as floats."""


NrlDumper.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)

cases = []


def add(doc):
    py = decode(doc)
    case = {"input": doc, "yaml": yaml.safe_dump(py, sort_keys=False)}
    nrl = yaml.dump(py, Dumper=NrlDumper, sort_keys=False)
    if nrl != case["yaml"]:
        case["yaml_nrl"] = nrl
    unsorted = json.dumps(py, indent=2)
    try:
        case["json_sorted"] = json.dumps(py, indent=2, sort_keys=True)
    except TypeError:
        pass  # mixed key types: Python cannot sort them
    if case.get("json_sorted") != unsorted:
        case["json_unsorted"] = unsorted
    cases.append(case)


SPECIAL = [
    "", " ", "a", "abc", "hello world", "0", "1", "-1", "+1", "1.5", "1.", ".5", "-.5",
    "1e3", "1E3", "1.0e3", "1.0e+3", "1.0E-3", "1_000", "0x1F", "0b101", "0o17", "017", "09",
    "1:30", "-1:30", "1:30.5", "190:20:30", "12:61", "yes", "Yes", "YES", "no", "No", "on",
    "Off", "true", "True", "TRUE", "false", "y", "Y", "n", "N", "null", "Null", "NULL", "~",
    "nul", "none", "None", ".inf", "-.inf", "+.inf", ".Inf", ".nan", ".NaN", "inf", "nan",
    "2024-01-01", "2024-1-1", "2024-01-01T10:00:00Z", "2024-01-01 10:00:00", "2024-01-01t1:00:00.5 +05:30",
    "20240101", "<<", "<", "=", "==", "!", "&", "*", "!x", "&a", "*a", "%x", "@x", "`x", "|", ">",
    "|x", ">x", "'", '"', "'a'", '"a"', "a'b", 'a"b', "it's", "#", "#a", "a#b", "a #b", "a# b",
    ",", ",a", "a,b", "[", "[a]", "a[b]", "{", "{a}", "a{b}", "?", "? a", "?a", "a?", ":", ": a",
    ":a", "a:", "a:b", "a: b", "a :b", "-", "- a", "-a", "--", "---", "--- a", "...", "... a",
    "....", "a---", "-lc", "$HOME", "${X}", "${oc.env:HOME}", "nvidia.com/gpu", "2.52.0",
    "0.0.0.0", "10.0.0.1:8080", "http://x.y/z?a=b&c=d#frag", "a\tb", "\tlead", "trail\t",
    "a\nb", "a\n\nb", "\na", "a\n", "a\n\n", "\n", "\n\n", "a \nb", "a\n b", "a\r\nb", "a\rb",
    " lead", "trail ", "two  spaces", "  ", "a  ", "caf\u00e9", "em\u2014dash", "\u00a0nbsp",
    "emoji \U0001F600", "\u0085nel", "line\u2028sep", "para\u2029sep", "bom\ufeff", "\x00nul",
    "\x07bell", "\x1bESC", "\x7fdel", "\x80c1", "\u00ff", "\u0100", "\uffff", "back\\slash",
    "q\"uote", "mixed 'single' and \"double\"", "1 2", "- - a", "a - b", "key: value # c",
    "set -eu\ncd /opt\n", "echo \"hi\" >&2\nexit 1\n", "x" * 79, "x" * 80, "x" * 81, "x" * 200,
    "word " * 30, ("word " * 30).strip(), "a" * 122, "a" * 123, "a" * 127, "a" * 128, "a" * 129,
]


def long_texts(rng):
    words = ["alpha", "b", "gamma-delta", "x=1", "--flag", "path/to/a/file.yaml", "\\",
             "\"q\"", "it's", "em\u2014dash", "  ", "\n", "\n\n", " \n", "\t", "${VAR}",
             "a:b", "#", "12345678901234567890", "\u00e9", "\U0001F600"]
    out = []
    for _ in range(200):
        n = rng.randint(1, 40)
        out.append(" ".join(rng.choice(words) for _ in range(n)))
    return out


def random_strings(rng):
    alphabet = list("ab :#-'\"\n\t\\0.e?[{,!&*%@`|>~=<") + [" ", "  ", "\u00e9", "\u2014",
                                                          "\U0001F600", "\x85", "\r"]
    out = []
    for _ in range(700):
        n = rng.randint(1, 12)
        out.append("".join(rng.choice(alphabet) for _ in range(n)))
    return out


def wrap(s, depth):
    """Put a string at various depths and positions so folding sees many columns."""
    doc = {"k": s}
    for i in range(depth):
        doc = {"lvl%d" % i: [doc] if i % 2 else doc}
    return doc


rng = random.Random(20240101)
for s in SPECIAL:
    add({"value": s})
    add([s])
    if s:
        add({s: 1})
    add(wrap(s, 3))
for s in long_texts(rng):
    add(wrap(s, rng.randint(0, 6)))
    add({"containers": [{"name": "c", "args": [s, s[: len(s) // 2]]}]})
for s in random_strings(rng):
    add({"v": s, "l": [s], "m": {s: s}} if s else {"v": s})
# Keys that are not simple (empty, multi-line, long) use the `? key` form.
for k in ["", "a\nb", "k" * 128, "x " * 70, "\u2014" * 130]:
    add({k: "v"})
    add({"outer": {k: ["v"]}})
# Numbers and other scalars.
for v in [0, 1, -1, 2**62, -(2**63), 1.0, -1.5, 0.1, 0.1 + 0.2, 1e-7, 1e-5, 1e-4, 1e15, 1e16,
          1e17, 1.5e300, 5e-324, -0.0, 123456.789, {"$float": "nan"}, {"$float": "inf"},
          {"$float": "-inf"}, True, False, None]:
    add({"v": v, "l": [v, [v]]})
# Root scalars and containers.
for v in ["abc", "", "a b", "true", 1, 1.5, None, True, [], {}, [[]], [{}], {"a": []},
          {"a": {}}, "x " * 60, "\u2014", "a\nb"]:
    add(v)
# Structures.
add({"a": [[1, 2], [3, [4, [5]]]], "b": [{"x": 1, "y": [1, {"z": []}]}, {}], "c": [[], {}]})
add([{"name": "h", "ports": [{"containerPort": 8080}], "env": []}, [[{"a": 1}]]])
add({"spec": {"template": {"spec": {"containers": [{"name": "x", "command": ["/bin/bash", "-lc", "--"],
     "resources": {"limits": {"nvidia.com/gpu": 4, "memory": "100Gi"}}}]}}}})
# Non-string keys as OmegaConf can load them.
add({"$items": [[8080, "http"], [1.5, "f"], [True, "t"], [None, "n"]]})
add({"ports": {"$items": [[10, "a"], [9, "b"], [100, "c"]]}})
add({"ports": {"$items": [[2.5, "a"], [1, "b"], [False, "c"]]}})
add({"b": 1, "a": {"d": [], "c": {}}, "A": "\u00e9", "_": None, "\u00e9": "e"})

# One case per line keeps diffs of the fixture readable.
print("[\n" + ",\n".join(json.dumps(c, ensure_ascii=True) for c in cases) + "\n]")
