from openai import OpenAI

client = OpenAI(base_url="http://localhost:8000/v1", api_key="unused")
res = client.embeddings.create(model="text-embedding-3-small", input=["The cat sat on the mat.", "A dog ran in the park."])
print(res.model, len(res.data), len(res.data[0].embedding), res.usage.prompt_tokens)
