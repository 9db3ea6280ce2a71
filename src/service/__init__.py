"""The HTTP service (`paperscope serve`): the knowledge bases over HTTP, with an OpenAI-compatible chat.

- app.py: `create_app(settings)`, the FastAPI app;
- library.py: the knowledge bases, each opened once (store, embedder) and shared;
- jobs.py: uploads ingested in the background by one writer thread;
- uploads.py: uploaded files checked and kept by content; the upload size limit;
- routes/: health, documents and jobs, retrieve and chat;
- events.py: an answer as a stream of events (progress, tool calls, tokens, the Answer);
- openai_compat.py: /v1/chat/completions and /v1/models;
- history.py: a conversation sent over HTTP as the earlier answers;
- auth.py: the bearer key and the loopback rule; errors.py: every error as JSON.

The contract is docs/http-api.md.
"""

from .app import create_app

__all__ = ["create_app"]
