"""Router, tools, LangGraph loop, searchers, answers: uses rag only through the store/retriever API."""
