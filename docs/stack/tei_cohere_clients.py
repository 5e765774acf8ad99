# pip install huggingface_hub cohere
import cohere
from huggingface_hub import InferenceClient

tei = InferenceClient(base_url="http://localhost:8000")  # posts TEI's bodies to the server's URL itself
vectors = tei.feature_extraction(["The cat sat.", "A dog ran."])  # (2, 384)
# /health and /info: the server as the model, with the provider that reads TEI's routes at a URL
server = InferenceClient(model="http://localhost:8000", provider="hf-inference")
print(vectors.shape, server.health_check(), server.get_endpoint_info()["model_type"])

co = cohere.ClientV2(api_key="unused", base_url="http://localhost:8000")
docs = ["The cat slept on the sofa.", "Stocks fell."]
ranked = co.rerank(model="all-minilm-l6-v2", query="where do cats sleep?", documents=docs, top_n=1)
codes = co.embed(model="embed-v4.0", input_type="search_document", texts=["The cat sat."], embedding_types=["int8", "ubinary"])
print(ranked.results[0].index, len(codes.embeddings.int8[0]), len(codes.embeddings.ubinary[0]))  # 384 int8 values; 48 bytes
