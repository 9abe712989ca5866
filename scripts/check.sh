#!/usr/bin/env bash
# The static checks, configured in pyproject.toml: ruff (lint, no formatting), mypy (strict) and the
# import contracts (import-linter: the rooms' layers, no import cycle, private modules kept private)
# over stepguard/ and adapters/. Run by .ci/run before the tests; any finding fails it.
# Needs the dev extra in .venv (bash scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=${PYTHON:-$root/.venv/bin/python}
status=0
"$py" -m ruff check --no-fix stepguard adapters || status=$?
# mypy and import-linter see the package as it installs: adapters/ is stepguard.adapters (setup.py),
# which neither the editable install's import hook nor any mypy_path shows them. So check a tree of
# links laid out as the wheel is, and print the paths as they are in the repository.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/stepguard"
for entry in "$root"/stepguard/*; do
  [ "$(basename "$entry")" = __pycache__ ] || ln -s "$entry" "$tree/stepguard/"
done
ln -s "$root/adapters" "$tree/stepguard/adapters"
cd "$tree"
"$py" -m mypy --config-file "$root/pyproject.toml" --cache-dir "$root/.mypy_cache" \
  --python-executable "$py" -p stepguard > "$tree/mypy.out" 2>&1 || status=$?
sed -e 's#^stepguard/adapters/#adapters/#' "$tree/mypy.out"
PYTHONPATH="$tree" "$py" -c 'import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())' \
  "$root/pyproject.toml" --no-cache > "$tree/imports.out" 2>&1 || {
  status=1
  sed -n '/^Broken contracts/,$p' "$tree/imports.out"
}
exit "$status"
