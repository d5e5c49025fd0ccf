"""Validate YAML files against a JSON Schema with an independent validator.

Usage: validate_json_schema.py SCHEMA.json FILE.yaml...

Each file is read the way NeMo-RL reads configs (OmegaConf 2.3's YAML 1.1 loader,
interpolations left as written) and checked with `jsonschema`'s Draft 2020-12 validator.
Prints one JSON object: {"<file>": ["<error>", ...], ...} (an empty list means valid).
The schema itself is checked against the 2020-12 metaschema first; a bad schema exits 2.
"""

import json
import sys

import jsonschema
from omegaconf import OmegaConf


def main() -> int:
    schema_path, *files = sys.argv[1:]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    validator_cls = jsonschema.Draft202012Validator
    try:
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        print(f"not a valid 2020-12 schema: {e.message}", file=sys.stderr)
        return 2
    validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
    results = {}
    for path in files:
        data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        results[path] = sorted(
            f"{'/'.join(str(p) for p in e.absolute_path) or '<top>'}: {e.message}"
            for e in validator.iter_errors(data)
        )
    json.dump(results, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
