"""Regenerate hydra_golden.json: what Hydra 1.3 / OmegaConf 2.3 do with each case.

    python -m venv venv && venv/bin/pip install hydra-core==1.3.8 omegaconf==2.3.0
    venv/bin/python gen_hydra_golden.py > hydra_golden.json

`parse` cases record Hydra's parsed override (op, key, typed value, or that it is a sweep);
`apply` cases record the config after `_apply_overrides_to_config` in struct mode (as
NeMo-RL's `parse_hydra_overrides` does), or that it failed.
"""
import json
import math

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import QuotedString
from omegaconf import OmegaConf

PARSE = [
    "lr=3e-4", "steps=1_000", "name=None", "flag=TrUe", "x=NULL", "x='1'",
    "msg=  hello world  ", "dir=A[B", "dir=A\\[B", 'dir="A[B"', "x=", "~x", "~x=", "~x=1",
    "+x=", "++x=1", "k=a,b", "path=${oc.env:HOME}/x", "path=${oc.env:X,${a}}",
    "path='${oc.env:X,${a}}'", "a.0.b=1", "x=010", "x=0x10", "x=1:30", "x=yes",
    "x=2024-01-01", "x=1e3", "x=.inf", "x=inf", "x=-INF", "x=nan", "x=1.", "x=.5", "x=+1",
    "x=-0", "x=a=b", "x=a\\=b", "x=a#b", "x=~", "x=a b   c", "x='C:\\foo'", "x='a\\\\b'",
    "x='a\\'b'", 'x="abc\\\\\\"def"', "x='abc\\\\'", "x=[1, 2 ,  3]",
    "x={a: 1, b: {c: [1,2]}}", "x=[]", "x={}", "x=int(3.14)", 'x=int("10")',
    'x=int("10.0")', "x=str(true)", "x=str([1,2])", "x=bool(foo)", "x=bool(0)",
    "x=float(10)", "x=int(1e6)", "x=int(inf)", "x=choice(a,b)", "x=range(0,10,3.3)",
    "x=range(5)", "x=glob(*)", "x=sort([3,1,2])", "x=sort(3,1,2)", "x=foo(1)",
    "x=interval(0,1)", " x=1", "x =1", "x= 1", "x=1 ", "a-b=1", "$a=1", "a.$b-c=1",
    "a/b=1", "x=${a.b}", "x=$", "x=${a", "x=${}", "x=a${b}c", "x=\\\\", "x=\\,",
    "x='unterminated", "x=it's", "x=a'b", 'x="a"b', "x=(1)", "x=[1,2", "x=[1,,2]",
    "x=[1,2,]", "x=1,", "x=,1", "x={a}", "x={a:}", "x={:1}", "x={a:1,a:2}",
    "x={a b: c d}", "x={a: 1 2}", "x={${a}: 1}", "x={a: ${b}}", "x=[a b, c]", "x=:",
    "x=a:b", "x=http://x.com:80/a?b=c", "x=1 2", "x='a' 'b'", "x='a'b", "x=%-@?|*/.",
    "x=\\ lead", "x=\\t", "+++x=1", "~~x", "+~x=1", "~+x=1", "x", "x.=1", ".x=1",
    "x..y=1", "x.0=1", "x=TRUE", "x=fAlSe", "x=nULL", "x=Null", "x=1_000.5", "x=1__0",
    "x=0b101", "x=-1_0", "x=1e-3", "x=1E+3", "x=1e3_0", "x=10e3", "x=0.0", "x=-.5",
    "x=+.5e2", "x=1_0e1_0", "x=true false", "x=null null", "x=oc.env:HOME",
    "x=${oc.env:HOME}", "x=choice(1)", "x=choice()", "x=int(value=3.5)", "x=int(a=3.5)",
    "x=int(1,2)", "x=str(1,2)", "x=int(1, value=2)", "x=int(value=1, 2)", "x=str(null)",
    "x=int(null)", 'x=bool("")', 'x=float("1e3")', "x=str(1e6)", "x=str(1.0)",
    "x=str(0.1)", "x=str({a: 1, b: [true, 1.5]})", "x=func (1)", "x=int (1)",
    "x=echo (hi)", "x=sort(list=[3,1,2], reverse=true)", "x=bool(TRUE)", "x=float(nan)",
    "x=str(-0.0)", "x=int(-3.9)", "x=[1,[2,[3]]]", "x={a: {b: {c: d}}}", "x=[{a: 1}, 2]",
    "x=a\\ b", "x=a\\\\b", "x=\\(\\)", "x=${a}${b}", "x=${a} ${b}", "x=-", "x=--foo",
    "x=a.b.c", "x=/abs/path/file.yaml", "x=$HOME", "x=50%", "x=a|b", "x=a?b", "x=a*b",
    "x=a@b", "x=True", "x=FALSE", "x=1_0", "x=0_1", "x=00", "x=-inf", "x=+nan",
    "x=infinity", "x=nanx", "x=1.5e", "x=1.5e+", "x=e5", "x=.e5", "x=1..2", "x=1.2.3",
    "x=v1.2.3", "x=[ ]", "x={ }", "x=[,]", "x=\"\"", "x=''", "x=' '", "x='a,b'",
    "x=[a,'b,c']", "x={'a': 1}", "x=[null, true, 1.5, '2']", "x=a:b:c", "x=1:2",
    "x=sort(choice(3,1,2))", "x=range(1,5,2)", "x=range(start=1, stop=3)",
    "x=tag(log, interval(0,1))", "x=shuffle(choice(1,2))", "a@b=1", "x=café",
    "x=  ' quoted '  ", "x='a' ", "x=[1] ", "x=range(0,3) ",
]

APPLY = [
    ["lr: 1e-4", ["lr=3e-4"]], ["steps: 10", ["steps=1_000"]], ["name: x", ["name=None"]],
    ["a: {x: 1, y: 2}", ["a={x:5}"]], ["l: [1,2,3]", ["l=[9]"]], ["{}", ["foo=1"]],
    ["foo: null", ["+foo=1"]], ["foo: 3", ["+foo=1"]], ["foo: null", ["~foo"]],
    ["foo: 4", ["~foo=3"]], ["foo: 4", ["~foo=4"]], ["foo: 4", ["~foo=4.0"]],
    ["foo: 1", ["~foo=true"]], ["foo: [1,2]", ["~foo=[1,2]"]],
    ["foo: {a: 1}", ["~foo={a: 1}"]], ["foo: {a: 1}", ["~foo={a: 2}"]],
    ["foo: abc", ["~foo="]], ["foo: ''", ["~foo="]], ["a: [{b: 0}]", ["a.0.b=1"]],
    ["x: 5", ["x="]], ["db: {driver: mysql}", ["db={newkey:1}"]],
    ["db: {driver: mysql}", ["++db.newkey=1"]], ["db: {driver: mysql}", ["+db={newkey:1}"]],
    ["db: {driver: mysql, user: x}", ["db={user: root}"]], ["a: abc", ["a.b=1"]],
    ["a: abc", ["++a.b=1"]], ["a: abc", ["+a.b=1"]], ["a: null", ["a.b=1"]],
    ["a: null", ["+a.b=1"]], ["a: {}", ["a.b.c=1"]], ["a: {}", ["+a.b.c=1"]],
    ["a: {x: 1}", ["a=[1,2]"]], ["a: [1]", ["a={x: 1}"]], ["a: 3", ["a={x: 1}"]],
    ["a: 3", ["a=[1]"]], ["a: {x: 1}", ["a=null"]], ["a: {x: 1}", ["a=5"]],
    ["a: {x: 1}", ["+a=5"]], ["a: {x: 1}", ["+a=[1]"]], ["a: 3", ["+a=[1]"]],
    ["a: 3", ["+a={b: 1}"]], ["a: [1,2]", ["a.5=1"]], ["a: [1,2]", ["a.1=9"]],
    ["a: [1,2]", ["a.x=9"]], ["a: [1,2]", ["+a.2=9"]], ["a: {b: {c: 1}}", ["~a.b.c"]],
    ["a: {b: {c: 1}}", ["~a.b.d"]], ["a: {b: {c: 1}}", ["~a.x.d"]], ["a: {b: 1}", ["~a"]],
    ["a: ???", ["~a"]], ["a: ???", ["a=1"]], ["a: ???", ["+a=1"]], ["a: 1", ["a=???"]],
    ["a: {b: 1}", ["a={b: ???}"]], ["a: {b: {c: 1, d: 2}}", ["a={b: {c: 5}}"]],
    ["a: {b: {c: 1, d: 2}}", ["a={b: {e: 5}}"]], ["a: {b: [1, 2]}", ["a={b: {e: 5}}"]],
    ["a: 1", ["a=1,2"]], ["a: 1", ["a=choice(1,2)"]], ["a: {x: 1}", ["a.x=${b}"]],
    ["a: 1", ["a=int(3.7)"]], ["a: {x: 1}", ["++a={y: 2}"]],
    ["a: {x: {y: 1}}", ["a.x={y: null}"]], ["a: {x: {y: 1}}", ["a.x={}"]],
    ["a: {x: 1}", ["a={}"]], ["a: [1, 2]", ["a=[]"]], ["a: {b: 1}", ["+a.b=2"]],
    ["a: {b: null}", ["+a.b=2"]], ["a: {b: null}", ["++a.b.c=2"]],
    ["a: {b: null}", ["a.b.c=2"]], ["a: {b: 1}", ["a.b.c=2"]], ["a: {b: 1}", ["++a.b.c=2"]],
    ["a: {b: 1}", ["a.b.c.d=2"]], ["a: 1", ["~a", "a=2"]], ["a: 1", ["~a", "+a=2"]],
    ["{a: 1}", ["+b.c=2"]], ["{a: 1}", ["++b=[1,{c: 2}]"]],
    ["{a: [{x: 1}, {x: 2}]}", ["a.1.x=5"]], ["{a: [{x: 1}, {x: 2}]}", ["a.1={y: 5}"]],
    ["{a: [{x: 1}, {x: 2}]}", ["a.1={x: 5}"]], ["{a: [1, 2]}", ["a.0=[5]"]],
    ["{a: [1, 2]}", ["~a.5"]], ["{a: [1, 2]}", ["~a.0=2"]], ["{a: 1}", ["a=1_0"]],
    ["{a: {b: 1}, c: 2}", ["a.b=5", "c=6", "+d=7", "~a"]],
    ["{a: {b: 1}}", ["a={b: [1, 2]}"]], ["{a: {b: [1]}}", ["a={b: {c: 1}}"]],
    ["{a: 1}", ["a=[1, {b: 2}]"]], ["{a: {b: c}}", ["a.b=null", "+a.b.x=1"]],
    ["{msg: x}", ["msg=  hello world  "]], ["{x: 1}", ["x=NULL"]], ["{x: 1}", ["x='1'"]],
    ["{a: 1}", ["~a=1", "+a=2"]], ["{a: {b: 1}}", ["~a.b", "a.b=1"]],
    ["{a: [1, 2]}", ["~a.0=1"]],
]


def enc(v):
    if isinstance(v, QuotedString):
        return v.text
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, dict):
        return {("True" if k is True else "False" if k is False else "None" if k is None else str(k)): enc(x) for k, x in v.items()}
    return v


def parse_case(p, text):
    try:
        ov = p.parse_overrides([text])[0]
    except Exception as e:  # noqa: BLE001 - any failure is "error"
        return {"input": text, "error": type(e).__name__}
    vt = str(ov.value_type).split(".")[-1] if ov.value_type else None
    out = {"input": text, "op": str(ov.type).split(".")[-1], "key": ov.key_or_group}
    if ov.package is not None:
        out["package"] = ov.package
    if vt and "SWEEP" in vt:
        out["sweep"] = [enc(x) for x in ov.sweep_iterator()] if vt != "INTERVAL_SWEEP" and vt != "GLOB_CHOICE_SWEEP" else vt
    elif ov.value_type is not None:
        out["value"] = enc(ov.value())
    return out


def apply_case(p, yaml, ovs):
    cfg = OmegaConf.create(yaml)
    OmegaConf.set_struct(cfg, True)
    try:
        ConfigLoaderImpl._apply_overrides_to_config(p.parse_overrides(ovs), cfg)
    except Exception as e:  # noqa: BLE001
        return {"yaml": yaml, "overrides": ovs, "error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
    return {"yaml": yaml, "overrides": ovs, "ok": enc(OmegaConf.to_container(cfg))}


def main():
    p = OverridesParser.create()
    print(json.dumps({
        "parse": [parse_case(p, t) for t in PARSE],
        "apply": [apply_case(p, y, o) for y, o in APPLY],
    }, indent=1))


if __name__ == "__main__":
    main()
