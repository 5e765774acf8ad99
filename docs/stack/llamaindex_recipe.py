# pip install llama-index-embeddings-openai-like
from llama_index.embeddings.openai_like import OpenAILikeEmbedding

emb = OpenAILikeEmbedding(model_name="invertible-linear", api_base="http://localhost:8000/v1", api_key="unused")
v = emb.get_text_embedding("The cat sat on the mat.")
batch = emb.get_text_embedding_batch(["A dog ran in the park.", "Stocks fell sharply."])
print(len(v), len(batch))
