"""Re-capture the example outputs of the README and the docs from a running server, in place.

    make serve                                  # in one terminal (or any `thoughtvec serve` on the bundled models)
    python docs/capture_examples.py             # in another: rewrites every capture block of README.md and docs/*.md
    python docs/capture_examples.py --port 8010 docs/api.md

A capture block is a ```console fence between ``<!-- capture -->`` and ``<!-- /capture -->``: each
``$ `` line is a command as a user pastes it (against ``localhost:8000``, what ``make serve`` binds);
the lines after it, up to the next ``$ `` line, are its output. The commands of one block run in one
bash (so ``LONG=...`` carries to the next command), against ``localhost:PORT``; their outputs replace
the old ones. ``tests/test_readme.py`` runs the same blocks against a live server and compares shapes.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- capture -->", "<!-- /capture -->"
FENCE = re.compile(r"```console\n(.*?)```\n", re.S)
SHOWN_HOST = "localhost:8000"
MARK = "@@capture-rc"


@dataclass
class Block:
    start: int  # offsets of the fence's body in the file's text
    end: int
    commands: list[str]
    outputs: list[str]  # the shown output of each command ("" for none)


def blocks(text: str) -> list[Block]:
    """Every capture block of a Markdown text, in order."""
    out = []
    for m in re.finditer(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S):
        fence = FENCE.search(text, m.start(1), m.end(1))
        if fence is None:
            raise ValueError(f"a capture block at offset {m.start()} holds no ```console fence")
        commands, outputs = [], []
        for line in fence.group(1).splitlines():
            if line.startswith("$ "):
                commands.append(line[2:])
                outputs.append([])
            elif commands:
                outputs[-1].append(line)
            else:
                raise ValueError(f"a capture block at offset {m.start()} starts with output, not a '$ ' line")
        out.append(Block(fence.start(1), fence.end(1), commands, ["\n".join(o) for o in outputs]))
    return out


def run(commands: list[str], port: int, timeout: float = 300) -> list[tuple[str, int]]:
    """Run a block's commands in one bash against ``localhost:PORT``: (stdout, exit status) of each.
    ``pipefail``, so a pipeline fails when its curl does."""
    script = ["set -o pipefail"]
    for cmd in commands:
        script += [cmd.replace(SHOWN_HOST, f"localhost:{port}"), f'printf "\\n{MARK} %d\\n" $?']
    proc = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    parts = re.split(rf"\n{MARK} (\d+)\n", proc.stdout)  # [out0, rc0, out1, rc1, ..., rest]
    if len(parts) != 2 * len(commands) + 1:
        raise RuntimeError(f"the block stopped early (bash exit {proc.returncode}): {proc.stderr[-2000:]}")
    return [(parts[2 * i].rstrip("\n"), int(parts[2 * i + 1])) for i in range(len(commands))]


def render(commands: list[str], outputs: list[str]) -> str:
    lines = []
    for cmd, out in zip(commands, outputs):
        lines.append("$ " + cmd)
        if out:
            lines.append(out)
    return "\n".join(lines) + "\n"


def capture_file(path: Path, port: int) -> int:
    """Re-run every capture block of ``path`` and write the outputs in place; returns the commands run.
    A command that exits non-zero stops the capture with its output, and the file is left as it was."""
    text = path.read_text(encoding="utf-8")
    pieces, at, count = [], 0, 0
    for b in blocks(text):
        results = run(b.commands, port)
        for cmd, (out, rc) in zip(b.commands, results):
            if rc != 0:
                raise SystemExit(f"{path}: `{cmd}` exited {rc}:\n{out}")
        pieces += [text[at : b.start], render(b.commands, [out for out, _ in results])]
        at, count = b.end, count + len(b.commands)
    new = "".join(pieces) + text[at:]
    if new != text:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(path)  # atomic: a failed capture never leaves half a file
    return count


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8000, help="where the running server listens (default 8000)")
    p.add_argument("files", nargs="*", type=Path, help="Markdown files (default: README.md and docs/*.md)")
    args = p.parse_args(argv)
    files = args.files or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for f in files:
        n = capture_file(f, args.port)
        if n:
            print(f"{f.relative_to(ROOT) if f.is_relative_to(ROOT) else f}: {n} commands re-captured", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
