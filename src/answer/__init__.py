"""The answer layer every path calls: what a question asks for, the sentences of the evidence, the answer
extracted without a model, the citations of a model's answer, the grounding check of its figures, the claims an
answer is made of, and the Answer itself. It knows the engine's evidence and stored chunks, nothing of agents or
models."""
