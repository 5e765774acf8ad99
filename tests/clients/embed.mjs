// node embed.mjs BASE_URL MODEL TEXT...  -> {"model", "vectors", "usage"} on stdout (the official openai npm client)
import OpenAI from "openai";

const [base, model, ...input] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0, timeout: 10000 });
const res = await client.embeddings.create({ model, input }); // the client asks for base64 and decodes it
console.log(JSON.stringify({ model: res.model, vectors: res.data.map((d) => d.embedding), usage: res.usage }));
