"""How long does reading test cases take when a file holds them as several `---` documents rather
than one list, whole and with a merge conflict in one of them?

    python benchmarks/bench_yaml_documents.py [--sizes 1000,20000]

For each size it reads, with `qareport.yaml_input.yaml_documents`, the same small cases written as a
list, as `---` documents, and as `---` documents with a merge conflict inside one case (read around
it, document by document). The three should grow alike, linearly: a check repeated over the whole
text for each document once made the second quadratic (20,000 documents: 73 s).
"""

from __future__ import annotations

import argparse
import time

from qareport.yaml_input import yaml_documents

CONFLICT = "<<<<<<< HEAD\nname: ours\n=======\nname: theirs\n>>>>>>> feature\n"


def texts(size: int) -> dict[str, str]:
    documents = [f"id: c{number}\nname: case {number}\n" for number in range(size)]
    conflicted = list(documents)
    conflicted[size // 4] = f"id: c{size // 4}\n" + CONFLICT
    return {"list": "".join(f"- id: c{number}\n  name: case {number}\n" for number in range(size)),
            "documents": "---\n".join(documents), "documents, one conflict": "---\n".join(conflicted)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,20000")
    sizes = [int(size) for size in parser.parse_args(argv).sizes.split(",")]
    print(f"{'cases':>7} {'shape':<24} {'read':>8} {'items':>7}")
    for size in sizes:
        for shape, text in texts(size).items():
            started = time.perf_counter()
            items = sum(1 for _ in yaml_documents(text))
            print(f"{size:>7} {shape:<24} {time.perf_counter() - started:>7.2f}s {items:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
