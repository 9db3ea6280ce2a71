"""Chunking, embeddings, the Milvus store, retrieval and context assembly."""
