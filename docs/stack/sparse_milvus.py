# pip install httpx pymilvus  (pymilvus brings Milvus Lite)
import math
import tempfile
from collections import Counter

import httpx
from pymilvus import DataType, MilvusClient

api = httpx.Client(base_url="http://localhost:8000")
docs = ["The cat slept on the sofa all afternoon.", "A dog barked at the mailman every morning.",
        "Stocks fell sharply on Monday.", "Cats sleep most of the day, often on sofas.", "The garden was full of roses."]  # fmt: skip
queries = ["where do cats sleep?", "a barking dog"]


def sparse(texts, **body):  # TEI's /embed_sparse: one {index: value} per text
    return [{x["index"]: x["value"] for x in v} for v in api.post("/embed_sparse", json={"inputs": texts, **body}).json()]


# the documents at the corpus's mean length (a query-side vector's values sum to its text's length in terms)
avgdl = sum(sum(v.values()) for v in sparse(docs, side="query")) / len(docs)
doc_vectors = sparse(docs, side="document", avgdl=avgdl)
# each index's idf over the corpus, by the server's BM25 variant (/info's sparse.method; bm25s's formulas)
method, n = api.get("/info").json()["sparse"]["method"], len(docs)


def idf_of(df):
    r = (n - df + 0.5) / (df + 0.5)
    return {"lucene": math.log(1 + r), "robertson": math.log(max(1.0, r)), "atire": math.log(n / df)}[method]


idf = {i: idf_of(df) for i, df in Counter(i for v in doc_vectors for i in v).items()}

milvus = MilvusClient(tempfile.mkdtemp() + "/bm25.db")  # Milvus Lite, in a file
schema = milvus.create_schema(auto_id=False)
schema.add_field("id", DataType.INT64, is_primary=True)
schema.add_field("bm25", DataType.SPARSE_FLOAT_VECTOR)
index = milvus.prepare_index_params()
index.add_index("bm25", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
milvus.create_collection("docs", schema=schema, index_params=index)
milvus.insert("docs", [{"id": i, "bm25": v} for i, v in enumerate(doc_vectors)])
weighted = [{i: w * idf[i] for i, w in q.items() if i in idf} for q in sparse(queries, side="query")]
found = milvus.search("docs", data=weighted, anns_field="bm25", limit=3, search_params={"metric_type": "IP"})

# the server's own BM25 over the same documents, for comparison
api.post("/v1/indexes", json={"name": "bm25-check", "mode": "lexical"})
api.post("/v1/indexes/bm25-check/documents", json={"documents": [{"id": str(i), "text": t} for i, t in enumerate(docs)]})
own = api.post("/v1/search", json={"index": "bm25-check", "query": queries, "k": 3, "mode": "lexical"}).json()["results"]
api.delete("/v1/indexes/bm25-check")
for query, hits, server in zip(queries, found, own):
    print(query, [(h["id"], round(h["distance"], 4)) for h in hits], [(int(h["id"]), round(h["score"], 4)) for h in server])
