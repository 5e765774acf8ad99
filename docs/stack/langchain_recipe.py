# pip install langchain-openai; once: python -m thoughtvec.service.core.token_ids ~/.cache/tiktoken  (cl100k for tiktoken, offline)
import os

os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.expanduser("~/.cache/tiktoken"))
from langchain_openai import OpenAIEmbeddings

emb = OpenAIEmbeddings(base_url="http://localhost:8000/v1", api_key="unused")  # defaults: text-embedding-ada-002, token ids
chunk = " ".join(["It was the best of times, it was the worst of times."] * 40)  # ~560 tokens: split and pooled
vectors = emb.embed_documents(["The cat sat on the mat.", chunk])
print(len(vectors), len(vectors[0]), round(sum(a * b for a, b in zip(*vectors)), 4))
# without the tiktoken cache: OpenAIEmbeddings(..., check_embedding_ctx_length=False) sends the text itself
