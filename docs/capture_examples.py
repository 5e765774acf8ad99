"""Re-capture the README's serving examples from a real server: ``python docs/capture_examples.py [PORT]``.

Each command is shown as a user pastes it (``localhost:8000``, what ``make serve`` binds) and run
against ``localhost:PORT`` (default 8000) in bash; the transcript is printed for the README.
"""

import subprocess
import sys

BLOCKS = {
    "basics": [
        "curl -s localhost:8000/ready",
        "curl -s localhost:8000/info | python3 -m json.tool --compact | cut -c1-400",
        """curl -s localhost:8000/v1/models | python3 -c 'import json,sys; [print(m["id"], m["dimension"], m.get("alias_of", ""), m["default"]) for m in json.load(sys.stdin)["data"]]'""",
    ],
    "embeddings": [
        """curl -s localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d '{"input": ["The cat sat on the mat.", "A dog ran in the park."]}' | cut -c1-200""",
        """curl -s localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d '{"model": "text-embedding-3-small", "input": [[791, 8415, 7731, 389, 279, 5634, 13]]}' | python3 -c 'import json,sys; b=json.load(sys.stdin); print(b["model"], len(b["data"][0]["embedding"]), b["usage"])'""",
        """curl -s localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d '{"model": "mean-max-aae", "input": "The cat sat.", "encoding_format": "base64", "view": "mean", "normalize": false}' | cut -c1-160""",
    ],
    "long": [
        """LONG=$(python3 -c 'print(" ".join(["It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness."] * 12))')""",
        """curl -s -D - -o /tmp/long.json localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d "{\\"input\\": \\"$LONG\\"}" | grep -i '^x-'; python3 -c 'import json; print(json.load(open("/tmp/long.json"))["usage"])'""",
        """curl -s localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d "{\\"input\\": \\"$LONG\\", \\"truncation\\": \\"truncate\\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["usage"])'""",
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d "{\\"input\\": \\"$LONG\\", \\"truncation\\": \\"reject\\"}\"""",
    ],
    "similarity": [
        """curl -s localhost:8000/v1/similarity -H 'Content-Type: application/json' -d '{"pairs": [["A man is playing a guitar.", "A person plays an instrument."], ["A man is playing a guitar.", "A woman is slicing an onion."]]}'""",
        """curl -s localhost:8000/v1/similarity -H 'Content-Type: application/json' -d '{"model": "uni-skip", "source": "The old man walked to the store.", "targets": ["An old woman walked to the shop.", "The cat is sleeping."]}'""",
        """curl -s localhost:8000/v1/rerank -H 'Content-Type: application/json' -d '{"query": "where do cats sleep?", "documents": ["The cat slept on the sofa.", "Stocks fell sharply.", "A dog barked at the mailman."], "top_n": 2, "return_documents": true}'""",
        """curl -s localhost:8000/tokenize -H 'Content-Type: application/json' -d '{"input": "The zorblax cat sat."}'""",
    ],
    "search": [
        """curl -s localhost:8000/v1/search -H 'Content-Type: application/json' -d '{"query": "he closed the door and walked out into the rain .", "k": 3}'""",
        """curl -s localhost:8000/v1/indexes -H 'Content-Type: application/json' -d '{"name": "notes", "factory": "HNSW32", "metric": "cosine"}'""",
        """curl -s localhost:8000/v1/indexes/notes/documents -H 'Content-Type: application/json' -d '{"documents": [{"id": "n1", "text": "The cat sat on the table.", "metadata": {"page": 3}}, {"text": "A dog ran in the city."}, {"id": "n3", "text": "The meeting moved to Friday."}]}'""",
        """curl -s localhost:8000/v1/search -H 'Content-Type: application/json' -d '{"index": "notes", "query": ["a cat sat", "dogs run"], "k": 1}'""",
        """curl -s localhost:8000/v1/indexes/notes/map -H 'Content-Type: application/json' -d '{"query": "a kitten"}' | cut -c1-240""",
        """curl -s localhost:8000/v1/indexes/notes/documents/delete -H 'Content-Type: application/json' -d '{"ids": ["n1", "n9"]}'""",
        """curl -s -o /dev/null -w '%{http_code}\\n' -X DELETE localhost:8000/v1/indexes/notes""",
        """curl -s localhost:8000/metrics | grep -E '^thoughtvec_(tokens|sentences|long_inputs)_total\\{.*invertible-bijection'""",
    ],
    "errors": [
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d '{"input": ["ok", "   "]}'""",
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d '{"input": ["ok", 42]}'""",
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d "{\\"input\\": [\\"$(printf 'cat %.0s' {1..130})\\"], \\"truncation\\": \\"reject\\"}\"""",
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d '{"input": "x", "model": "uni-skp"}'""",
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d '{"input": "x", "encodng_format": "float"}'""",
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d '{"input": ["x",'""",
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/search -H 'Content-Type: application/json' -d '{"query": "x", "k": 5000}'""",
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/search -H 'Content-Type: application/json' -d '{"query": [0.1, 0.2], "k": 3}'""",
        """curl -s -w ' %{http_code}\\n' localhost:8000/v1/embeddings -H 'Content-Type: application/json' -d '{"input": [[100, 99999999]]}'""",
    ],
}


def main() -> None:
    port = sys.argv[1] if len(sys.argv) > 1 else "8000"
    for name in sys.argv[2:] or list(BLOCKS):
        setup, lines = "", []
        for cmd in BLOCKS[name]:
            lines.append("$ " + cmd)
            if cmd.startswith("LONG="):  # a variable the next commands use
                setup += cmd + "\n"
                continue
            run = subprocess.run(["bash", "-c", setup + cmd.replace("localhost:8000", f"localhost:{port}")],
                                 capture_output=True, text=True, timeout=300)
            lines.append(run.stdout.rstrip("\n"))
        print(f"<!-- {name} -->\n```\n" + "\n".join(lines) + "\n```")


if __name__ == "__main__":
    main()
