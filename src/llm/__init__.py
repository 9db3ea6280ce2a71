"""The chat-model client: any OpenAI-compatible endpoint through langchain-openai, every call bounded.

It sits below `rag` and `agent` because both talk to the model (query transforms, enrichers and the reranker's
error wording in `rag`; the agent, the router and the writer in `agent`) and imports neither.
"""
