# pip install langchain-openai
from langchain_openai import OpenAIEmbeddings

# check_embedding_ctx_length=False: the texts go as they are, and the server splits a long one. LangChain's default
# first tokenizes them with tiktoken's cl100k_base, which tiktoken downloads on first use (see below).
emb = OpenAIEmbeddings(base_url="http://localhost:8000/v1", api_key="unused", check_embedding_ctx_length=False)
chunk = " ".join(["It was the best of times, it was the worst of times."] * 40)  # ~560 tokens: split and pooled
vectors = emb.embed_documents(["The cat sat on the mat.", chunk])  # model text-embedding-ada-002: an alias
print(len(vectors), len(vectors[0]), round(sum(a * b for a, b in zip(*vectors)), 4))
