"""A stand-in for a NeMo-RL training driver (stdlib only).

Reads the staged recipe given by --config, prints training-like progress lines (the
launch checklist looks for `Processed prompts: 100%`), and exits 0. Set
QUICKSTART_FAIL=1 to make it fail, for trying failure paths.
"""

import argparse
import os
import re
import sys
import time


def recipe_int(text, key, default):
    m = re.search(r"^\s*" + re.escape(key) + r":\s*(\d+)\s*$", text, re.MULTILINE)
    return int(m.group(1)) if m else default


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    args, overrides = ap.parse_known_args()
    with open(args.config, encoding="utf-8") as f:
        recipe = f.read()
    steps = recipe_int(recipe, "max_num_steps", 1)
    prompts = recipe_int(recipe, "num_prompts_per_step", 4)
    print(f"loaded recipe {args.config} ({len(recipe)} bytes), overrides: {overrides}")
    print("run id:", os.environ.get("NRL_RUN_ID", "<none>"))
    print("greeting:", os.environ.get("QUICKSTART_GREETING", "<unset>"))
    for step in range(1, steps + 1):
        for done in (prompts // 2, prompts):
            pct = 100 * done // prompts
            print(f"Processed prompts: {pct}%| {done}/{prompts} [step {step}/{steps}]", flush=True)
        print(f"step {step}/{steps}: loss={1.0 / step:.4f} reward={0.1 * step:.2f}", flush=True)
        time.sleep(0.05)
    if os.environ.get("QUICKSTART_FAIL") == "1":
        print("QUICKSTART_FAIL=1: failing on purpose", file=sys.stderr)
        return 3
    print("training finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
