"""Regenerate the alias-free goldens in this folder from the verbatim goldens in ../reference/nrl-k8s-golden.

nrl never writes YAML anchors/aliases (its trees are values, not shared objects), so the
reference's `&id001` / `*id001` on the shared imagePullSecrets list is printed in full at
every site. PyYAML 6.0.3 reloads each golden document and dumps it again with aliases
disabled; documents without anchors must come out byte-identical (asserted below), so
these files differ from the originals only where an alias was expanded.

Run from this folder: python3 gen_no_aliases.py
"""
import glob
import os

import yaml

assert yaml.__version__ == "6.0.3", yaml.__version__


class NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


def redump(doc_text):
    out = yaml.dump(yaml.safe_load(doc_text), Dumper=NoAliasDumper, sort_keys=False)
    if "&id" not in doc_text:
        assert out == doc_text, "round trip changed an anchor-free document"
    return out


def convert(name, text):
    if name.endswith(".check_manifests_only.yaml"):
        return "\n---\n".join(redump(d) for d in text.split("\n---\n"))
    if name.endswith(".cluster_up_dry_run.txt"):
        docs = text.split("\n---\n")
        assert docs[-1] == ""
        return "".join(redump(d + "\n").rstrip() + "\n---\n" for d in docs[:-1])
    if name.endswith(".run_rayjob_dry_run.txt"):
        return redump(text).rstrip() + "\n"
    if name.endswith(".check_bundle.yaml"):
        return redump(text)
    return None


for path in sorted(glob.glob("../reference/nrl-k8s-golden/*.*")):
    name = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = convert(name, text)
    if out is None:
        continue
    with open(name, "w", encoding="utf-8") as f:
        f.write(out)
    print(name, "changed" if out != text else "same")
